/*
 * Helpers of the source and task file tests (test_config_*.c): paths under examples/ and
 * tests/config/files/, loads that must succeed, and a load that must fail with a code and an exact
 * message. DMH_TEST_DIR and DMH_EXAMPLES_DIR come from tests/config/CMakeLists.txt.
 */
#ifndef DMH_CONFIG_TEST_UTIL_H
#define DMH_CONFIG_TEST_UTIL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#ifndef DMH_TEST_DIR
#error "DMH_TEST_DIR must name tests/config"
#endif
#ifndef DMH_EXAMPLES_DIR
#error "DMH_EXAMPLES_DIR must name examples/"
#endif

/* The path buffers ex, fx (and the secrets tests' files) take in turn: a few live at once. */
extern char test_buf[4][PATH_MAX];
extern int test_next;

/* dir/name written with `text` and `mode` (asserted); the path (one of test_buf). */
const char *test_write(const char *dir, const char *name, const char *text, unsigned mode);
/* A path under examples/ or tests/config/files/ (a few may be live at once). */
const char *ex(const char *name);
const char *fx(const char *name);
/* realpath of a folder joined with a relative name: what relative paths in a file resolve to. */
void real_join(const char *dir, const char *rel, char *out, size_t size);
/* Loads that must succeed (asserted; the error printed when not). */
dmh_task_config *load_task(const char *path);
dmh_source_config *load_source(const char *path);
/* Load `path` as a source or task file; it must fail with `code` and exactly `want`. */
void expect_failure(const char *path, bool source, int32_t code, const char *want);

#endif /* DMH_CONFIG_TEST_UTIL_H */
