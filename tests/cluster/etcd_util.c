/* The fixture's endpoints and the small helpers the cluster tests share (test_etcd.h). */
#include "test_etcd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int te_port(int i) {
  const char *b = getenv("DMH_ETCD_PORT_BASE");
  return (b && *b ? atoi(b) : 22379) + 100 * i;
}

void te_endpoints(const char *order, char *buf, size_t size) {
  size_t off = 0;
  buf[0] = '\0';
  for (const char *o = order; *o && off < size; o++)
    off += (size_t)snprintf(buf + off, size - off, "%shttp://127.0.0.1:%d", o == order ? "" : ",",
                            te_port(*o - '0'));
}

dmh_etcd *te_client(void) {
  char eps[256];
  te_endpoints("012", eps, sizeof eps);
  dm_error err;
  dmh_etcd *c = dmh_etcd_open(eps, NULL, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  return c;
}

void te_key(char *buf, size_t size, const char *name) {
  snprintf(buf, size, "/dmh-test/%ld/%s", (long)getpid(), name);
}

int te_etcd_sh(const char *args) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "bash '%s' %s", ETCD_SH, args);
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int64_t te_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

char *te_get(dmh_etcd *c, const char *key, int64_t *revision) {
  dmh_etcd_result r;
  dm_error err;
  int rc = dmh_etcd_range(c, DMH_ETCD_S(key), 0, 0, 0, &r, &err);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  char *v = r.n_kvs ? strdup(r.kvs[0].value) : NULL;
  if (revision)
    *revision = r.revision;
  dmh_etcd_result_free(&r);
  return v;
}
