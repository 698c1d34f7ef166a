/*
 * DM's name matching, the one place the block-allow-list, the routes and the binlog event filters
 * (rules.c, filters.c) and the task file's checks (config_rules.c) get it from:
 *
 *  - A wildcard (any name not starting with '~'; the only kind routes and filters know): '*' any
 *    run of bytes, '?' one byte, "[a-z0-9_]" one byte of a set, "[!0-9]" one byte outside it
 *    ("[!]" is a literal '!', a '[' without a closing ']' a literal '['). A name without those
 *    characters is compared whole. DM only allows one '*', last; anywhere here is a superset.
 *  - A regular expression ('~' and then the expression, block-allow-list only), in DM's dialect
 *    (Go's RE2), searched anywhere in the name (anchor it with ^ and $). It is translated into a
 *    POSIX extended expression once, when it is compiled: \d \w \s \D \W \S (also inside [...]),
 *    [[:alpha:]] and the other ASCII classes, \A \z, \Q...\E, \n \t \xHH, (?:...) and named
 *    groups, the non-greedy *? +? ?? {n,m}? (same yes/no answer), a leading (?i) / (?s) / (?is),
 *    and '.' not matching a newline, as in RE2. What has no POSIX equivalent is refused, naming
 *    it: \b \B, \pL / \p{..}, lookarounds (RE2 refuses those too), flags anywhere else.
 *  - Case: unless the task says `case-sensitive = true`, names and patterns are compared without
 *    regard to ASCII case (MySQL's identifiers; bytes >= 0x80 are compared as they are).
 *
 * Matching is read-only and allocation-free, safe from any number of threads.
 */
#ifndef DMH_MATCH_H
#define DMH_MATCH_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct dmh_match {
  const char *pattern; /* borrowed: must outlive the matcher */
  bool regex;          /* re is compiled (and regfree'd by dmh_match_free) */
  bool fold;           /* compare without regard to ASCII case */
  regex_t re;
} dmh_match;

/* A name pattern; a leading '~' makes it a regular expression when allow_regex (the
 * block-allow-list), else it is part of the wildcard. Returns 0, or -1 with why filled (what is
 * wrong with it, for the caller's message). */
int dmh_match_init(dmh_match *m, const char *pattern, bool allow_regex, bool case_sensitive,
                   char *why, size_t why_len);
bool dmh_match_name(const dmh_match *m, const char *name);
void dmh_match_free(dmh_match *m);

/* DM's wildcards (above); not case_sensitive: without regard to ASCII case. */
bool dmh_wildcard_match(const char *pattern, const char *s, bool case_sensitive);

/* Compiles an expression in DM's (RE2) dialect with regcomp (REG_EXTENDED | REG_NOSUB, REG_ICASE
 * when icase or the expression starts with (?i)). Returns 0, or -1 with why filled; nothing is
 * left to free then. */
int dmh_regex_compile(regex_t *re, const char *expr, bool icase, char *why, size_t why_len);

#endif /* DMH_MATCH_H */
