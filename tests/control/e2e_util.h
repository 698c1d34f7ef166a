/*
 * Helpers of the daemon end-to-end tests (test_e2e.c, test_binlog_ops.c): `dmhost serve` as a
 * child process with its own state dir under a fresh /tmp folder, driven by the dmctl executable
 * (DMCTL_BIN) and by raw requests on the socket, with the fake units of tests/fixtures (FAKE_*).
 * e2e_setup/e2e_teardown are a suite's init and cleanup; the folder is kept when a test failed.
 */
#ifndef DMH_TEST_E2E_UTIL_H
#define DMH_TEST_E2E_UTIL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

extern char e2e_dir[256];   /* this test's folder: cfg files and state/ */
extern char e2e_state[300]; /* <dir>/state */
extern pid_t e2e_pid;       /* the daemon, or -1 */

bool e2e_contains(const char *haystack, const char *needle);
void e2e_sleep_ms(int ms);
double e2e_now(void);
/* Write <dir>/name. */
void e2e_write(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *e2e_read_file(const char *path);
/* The source file: source `id` with the fake relay. */
void e2e_source(const char *file, const char *id, bool enable_relay);
/* A task file with the fake units; `units` holds the unit sections (dump = {...}; ...). */
void e2e_task(const char *file, const char *name, const char *mode, const char *source,
              const char *units);
int e2e_setup(void);
/* The daemon's output (serve.log), malloc'd, or NULL. */
char *e2e_serve_log(void);
/* The daemon's output once it holds `needle`, or as it is after `secs` (the caller's assert then
 * fails on it): a line the daemon writes after the socket event a test saw, e.g. a reap logged
 * after the connections it closed. Malloc'd, or NULL. */
char *e2e_wait_log(const char *needle, double secs);
void e2e_show_log(void);
/* 127.0.0.1:PORT of the daemon's --listen, the port read from its log ("control plane on
 * http[s]://ADDR:PORT/control"); false when not logged. */
bool e2e_http_addr(char *addr, size_t size);
int e2e_teardown(void);
/* Start the daemon on the state dir and wait until it answers. */
bool e2e_start_ex(bool quiet);
/* The same with more arguments for `dmhost serve` (NULL-terminated, may be NULL). */
bool e2e_start_with(const char *const *extra, bool quiet);
bool e2e_start(void);
/* SIGTERM the daemon; its exit status, or -1 if it did not exit within 30 s. */
int e2e_stop(void);
/* Where e2e_dmctl sends: NULL-terminated dmctl flags (e.g. --master-addr A and the --tls-* ones);
 * empty: --state-dir e2e_state. */
extern const char *e2e_dmctl_target[9];
/* dmctl --state-dir (or e2e_dmctl_target) with the arguments (NULL-terminated); *out gets the
 * parsed stdout. Returns dmctl's exit status. */
int e2e_dmctl(json_object **out, ...);
pid_t e2e_dmctl_async(const char *a1, const char *a2);
json_object *e2e_raw(const char *request);
/* Read the read end `fd` of a child's pipe to EOF into buf (NUL-terminated, cut at size - 1),
 * close it and reap `pid`. Returns the child's exit status, or -1 when it did not exit. */
int e2e_collect_child(pid_t pid, int fd, char *buf, size_t size);
/* Follow "a.b.0.c" (numbers index arrays). */
json_object *e2e_get(json_object *o, const char *path);
const char *e2e_str(json_object *o, const char *path);
int64_t e2e_int(json_object *o, const char *path);
bool e2e_bool(json_object *o, const char *path);
bool e2e_str_is(json_object *o, const char *path, const char *want);
/* The stage of `task` on its first source (query-status NAME); caller frees. */
char *e2e_stage(const char *task);
bool e2e_wait_stage(const char *task, const char *want, double secs);
/* The items in a fake unit's out.log: count, and whether they are exactly 1..count in order. */
int e2e_items(const char *task, const char *unit, bool *in_order);
/* Source file written, daemon started / the source created. */
void e2e_begin(void);
void e2e_create_source(void);

#endif /* DMH_TEST_E2E_UTIL_H */
