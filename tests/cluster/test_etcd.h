/* Shared by the cluster's tests (etcd_util.c): the fixture's endpoints, keys of this run, the
 * script. */
#ifndef TEST_ETCD_H
#define TEST_ETCD_H

#include "cunit_run.h"
#include <stddef.h>
#include <stdint.h>

#include "etcd.h"

/* Client port of member i (0..2) of the fixture's cluster (DMH_ETCD_PORT_BASE). */
int te_port(int i);
/* "http://127.0.0.1:P" of the members, in the order given (e.g. "120": e2, e3, e1). */
void te_endpoints(const char *order, char *buf, size_t size);
/* A client of all three members in order 0,1,2; asserted non-NULL. */
dmh_etcd *te_client(void);
/* A key of this run: "/dmh-test/<pid>/<name>". */
void te_key(char *buf, size_t size, const char *name);
/* The value of key as a C string (test keys hold text), or NULL when absent; malloc'd.
 * *revision (may be NULL): the store's revision. Asserts the range worked. */
char *te_get(dmh_etcd *c, const char *key, int64_t *revision);
/* Monotonic milliseconds. */
int64_t te_now_ms(void);
/* Runs scripts/etcd.sh with args; its exit status. */
int te_etcd_sh(const char *args);

extern const dmh_cunit_test te_watch_tests[];
extern const size_t te_watch_n;

#endif
