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
 * Matching is read-only, safe from any number of threads, and allocation-free (but for a
 * dmh_regex of more than 15 groups, whose sub-match slots are allocated per call).
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

/*
 * An expression in DM's dialect whose groups are used (the routes' extract regexps, the online
 * DDL's shadow-table-rules). The translation writes every group as a POSIX '(', "(?:re)" too, so
 * the POSIX group numbers are not RE2's: capture[k - 1] is the POSIX number of RE2's capturing
 * group k ('(' and named groups, in the order they open; "(?:" is not counted).
 *
 * What a group holds follows POSIX's leftmost-longest rule where RE2 takes the leftmost-first
 * alternative: the same for the usual shapes ("orders_(.*)", "^_(.+)_(?:new|gho)$"), not for an
 * alternative that is a prefix of a later one ("(a|ab)" on "ab": "ab" here, "a" in DM). Non-greedy
 * quantifiers are refused here (they would change what a group holds).
 */
typedef struct dmh_regex {
  regex_t re;
  bool compiled;
  size_t n_capture; /* RE2's capturing groups */
  size_t *capture;  /* n_capture POSIX group numbers */
} dmh_regex;

/* Compiles expr keeping sub-matches (REG_EXTENDED, REG_ICASE when icase or a leading (?i)).
 * Returns 0, or -1 with why filled; nothing is left to free then. */
int dmh_regex_compile_groups(dmh_regex *rx, const char *expr, bool icase, char *why,
                             size_t why_len);

/* DM's extractVal (tidb's table-router): the concatenation of all capturing groups of the first
 * match of rx in s, "" when it does not match or has no capturing group (a group that took no part
 * adds nothing). Written into out as far as out_len allows (always NUL-terminated when out_len >
 * 0); returns the full length, so a result >= out_len was cut. */
size_t dmh_regex_extract(const dmh_regex *rx, const char *s, char *out, size_t out_len);

/* Capturing group k (1-based, RE2's numbering) of the first match of rx in s, as Go's
 * FindStringSubmatch(s)[k]: written into out as dmh_regex_extract does; returns its full length
 * ("" and 0 when the group took no part), or -1 when rx does not match s or has fewer than k
 * capturing groups. */
long dmh_regex_group(const dmh_regex *rx, const char *s, size_t k, char *out, size_t out_len);

/* Whether rx matches anywhere in s. */
bool dmh_regex_matches(const dmh_regex *rx, const char *s);

/* Frees what dmh_regex_compile_groups made (safe on a zeroed or freed one). */
void dmh_regex_free(dmh_regex *rx);

#endif /* DMH_MATCH_H */
