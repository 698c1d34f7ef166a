/*
 * The etcd client (host/cluster/etcd/etcd*.c) against the fixture's real 3-member etcd
 * (scripts/etcd.sh): keys, prefixes, binary bytes, txn with every compare, the 128-op limit, leases
 * (IDs above 2^53, keepalive, expiry, reuse of an ID). The watch tests are in test_etcd_watch.c.
 */
#include "test_etcd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void test_kv_put_range_delete(void) {
  dmh_etcd *c = te_client();
  dm_error err;
  char pre[128], ka[160], kb[160], kc[160];
  te_key(pre, sizeof pre, "kv/");
  snprintf(ka, sizeof ka, "%sa", pre);
  snprintf(kb, sizeof kb, "%sb", pre);
  snprintf(kc, sizeof kc, "%sc", pre);
  dmh_etcd_result r;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_put(c, DMH_ETCD_S(ka), DMH_ETCD_S("1"), 0, 0, &r, &err), 0);
  int64_t rev1 = r.revision;
  CU_ASSERT(rev1 > 0);
  CU_ASSERT_EQUAL(r.n_kvs, 0); /* no prev_kv asked */
  dmh_etcd_result_free(&r);
  CU_ASSERT_EQUAL(dmh_etcd_put(c, DMH_ETCD_S(kb), DMH_ETCD_S("2"), 0, 0, NULL, &err), 0);
  CU_ASSERT_EQUAL(dmh_etcd_put(c, DMH_ETCD_S(kc), DMH_ETCD_S("3"), 0, 0, NULL, &err), 0);
  /* overwrite with prev_kv: the old pair comes back */
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_put(c, DMH_ETCD_S(ka), DMH_ETCD_S("1b"), 0, 1, &r, &err), 0);
  CU_ASSERT_EQUAL_FATAL(r.n_kvs, 1);
  CU_ASSERT_STRING_EQUAL(r.kvs[0].value, "1");
  CU_ASSERT_EQUAL(r.kvs[0].mod_revision, rev1);
  dmh_etcd_result_free(&r);

  CU_ASSERT_EQUAL_FATAL(dmh_etcd_range(c, DMH_ETCD_S(ka), 0, 0, 0, &r, &err), 0);
  CU_ASSERT_EQUAL_FATAL(r.n_kvs, 1);
  CU_ASSERT_STRING_EQUAL(r.kvs[0].value, "1b");
  CU_ASSERT_EQUAL(r.kvs[0].version, 2);
  CU_ASSERT_EQUAL(r.kvs[0].create_revision, rev1);
  CU_ASSERT_EQUAL(r.count, 1);
  dmh_etcd_result_free(&r);
  /* at the first revision: the first value */
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_range(c, DMH_ETCD_S(ka), 0, 0, rev1, &r, &err), 0);
  CU_ASSERT_EQUAL_FATAL(r.n_kvs, 1);
  CU_ASSERT_STRING_EQUAL(r.kvs[0].value, "1");
  dmh_etcd_result_free(&r);
  /* the prefix, in key order; with a limit, count still says all and more is set */
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_range(c, DMH_ETCD_S(pre), 1, 0, 0, &r, &err), 0);
  CU_ASSERT_EQUAL_FATAL(r.n_kvs, 3);
  CU_ASSERT_STRING_EQUAL(r.kvs[0].key, ka);
  CU_ASSERT_STRING_EQUAL(r.kvs[2].key, kc);
  CU_ASSERT_EQUAL(r.more, 0);
  dmh_etcd_result_free(&r);
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_range(c, DMH_ETCD_S(pre), 1, 2, 0, &r, &err), 0);
  CU_ASSERT_EQUAL(r.n_kvs, 2);
  CU_ASSERT_EQUAL(r.count, 3);
  CU_ASSERT_EQUAL(r.more, 1);
  dmh_etcd_result_free(&r);

  /* delete one, then the prefix; an absent key answers no kvs (etcd omits the field) */
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_delete(c, DMH_ETCD_S(ka), 0, &r, &err), 0);
  CU_ASSERT_EQUAL(r.count, 1);
  dmh_etcd_result_free(&r);
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_delete(c, DMH_ETCD_S(pre), 1, &r, &err), 0);
  CU_ASSERT_EQUAL(r.count, 2);
  dmh_etcd_result_free(&r);
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_range(c, DMH_ETCD_S(pre), 1, 0, 0, &r, &err), 0);
  CU_ASSERT_EQUAL(r.n_kvs, 0);
  CU_ASSERT_EQUAL(r.count, 0);
  dmh_etcd_result_free(&r);
  dmh_etcd_close(c);
}

/* Keys and values are bytes: NUL and 0xff survive base64 both ways, and a prefix ending in 0xff
 * covers only its own keys. */
static void test_kv_binary(void) {
  dmh_etcd *c = te_client();
  dm_error err;
  char pre[128];
  te_key(pre, sizeof pre, "bin/");
  size_t pn = strlen(pre);
  unsigned char key[160], key2[160], val[] = {0, 'v', 0, 0xff, 0xfe, '\n', 0};
  memcpy(key, pre, pn);
  memcpy(key + pn, "\xff\0k\0", 4);
  memcpy(key2, pre, pn);
  memcpy(key2 + pn, "\xff\xff", 2);
  dmh_etcd_bytes k = {key, pn + 4}, k2 = {key2, pn + 2}, v = {val, sizeof val};
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_put(c, k, v, 0, 0, NULL, &err), 0);
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_put(c, k2, DMH_ETCD_S(""), 0, 0, NULL, &err), 0);
  dmh_etcd_result r;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_range(c, k, 0, 0, 0, &r, &err), 0);
  CU_ASSERT_EQUAL_FATAL(r.n_kvs, 1);
  CU_ASSERT_EQUAL(r.kvs[0].key_len, k.n);
  CU_ASSERT(memcmp(r.kvs[0].key, key, k.n) == 0);
  CU_ASSERT_EQUAL(r.kvs[0].value_len, sizeof val);
  CU_ASSERT(memcmp(r.kvs[0].value, val, sizeof val) == 0);
  dmh_etcd_result_free(&r);
  /* prefix pre + 0xff: both keys; prefix pre + 0xff 0xff: only the second */
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_range(c, (dmh_etcd_bytes){key, pn + 1}, 1, 0, 0, &r, &err), 0);
  CU_ASSERT_EQUAL(r.n_kvs, 2);
  dmh_etcd_result_free(&r);
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_range(c, k2, 1, 0, 0, &r, &err), 0);
  CU_ASSERT_EQUAL_FATAL(r.n_kvs, 1);
  CU_ASSERT_EQUAL(r.kvs[0].key_len, k2.n);
  CU_ASSERT_EQUAL(r.kvs[0].value_len, 0);
  dmh_etcd_result_free(&r);
  CU_ASSERT_EQUAL(dmh_etcd_delete(c, DMH_ETCD_S(pre), 1, NULL, &err), 0);
  dmh_etcd_close(c);
}

/* Every compare target with every operator, once holding and once not: the success list runs
 * when it holds, the failure list when not, and the answer says which (absent succeeded = no). */
static void test_txn_compares(void) {
  dmh_etcd *c = te_client();
  dm_error err;
  char key[128], other[128];
  te_key(key, sizeof key, "txn/k");
  te_key(other, sizeof other, "txn/other");
  int64_t lease = 0;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_grant(c, 30, 0, &lease, NULL, &err), 0);
  dmh_etcd_result r;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_put(c, DMH_ETCD_S(key), DMH_ETCD_S("m1"), 0, 0, &r, &err), 0);
  int64_t create = r.revision;
  dmh_etcd_result_free(&r);
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_put(c, DMH_ETCD_S(key), DMH_ETCD_S("m2"), lease, 0, &r, &err), 0);
  int64_t mod = r.revision;
  dmh_etcd_result_free(&r);
  /* the key now: version 2, create, mod, value "m2", lease */
  const int64_t actual[] = {2, create, mod, 0, lease};
  static const struct {
    dmh_etcd_cmp_target target;
    dmh_etcd_cmp_result result;
    int delta; /* number = actual + delta; for VALUE: "m2" (0), "m3" (+1), "m1" (-1) */
    int holds;
  } rows[] = {
#define TE_ROWS(t)                                                                                 \
  {t, DMH_ETCD_EQUAL, 0, 1}, {t, DMH_ETCD_EQUAL, 1, 0}, {t, DMH_ETCD_NOT_EQUAL, 1, 1},             \
      {t, DMH_ETCD_NOT_EQUAL, 0, 0}, {t, DMH_ETCD_LESS, 1, 1}, {t, DMH_ETCD_LESS, 0, 0},           \
      {t, DMH_ETCD_GREATER, -1, 1}, {t, DMH_ETCD_GREATER, 0, 0}
      TE_ROWS(DMH_ETCD_CMP_VERSION), TE_ROWS(DMH_ETCD_CMP_CREATE), TE_ROWS(DMH_ETCD_CMP_MOD),
      TE_ROWS(DMH_ETCD_CMP_VALUE),   TE_ROWS(DMH_ETCD_CMP_LEASE),
#undef TE_ROWS
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char val[3] = {'m', (char)('2' + rows[i].delta), 0};
    dmh_etcd_cmp cmp = {.key = DMH_ETCD_S(key),
                        .target = rows[i].target,
                        .result = rows[i].result,
                        .number = actual[rows[i].target] + rows[i].delta,
                        .value = DMH_ETCD_S(val)};
    char sval[16];
    snprintf(sval, sizeof sval, "s%zu", i);
    const dmh_etcd_op success[] = {
        {.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(other), .value = DMH_ETCD_S(sval), .prev_kv = 1},
        {.kind = DMH_ETCD_RANGE, .key = DMH_ETCD_S(key)}};
    const dmh_etcd_op failure[] = {{.kind = DMH_ETCD_DELETE, .key = DMH_ETCD_S(other)},
                                   {.kind = DMH_ETCD_RANGE, .key = DMH_ETCD_S(key)}};
    dmh_etcd_txn_result t;
    int rc = dmh_etcd_txn(c, &cmp, 1, success, 2, failure, 2, &t, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    if (t.succeeded != rows[i].holds)
      fprintf(stderr, "row %zu: target %d result %d delta %d: succeeded %d\n", i,
              (int)rows[i].target, (int)rows[i].result, rows[i].delta, t.succeeded);
    CU_ASSERT_EQUAL(t.succeeded, rows[i].holds);
    CU_ASSERT(t.revision >= mod);
    CU_ASSERT_EQUAL_FATAL(t.n_results, 2);
    CU_ASSERT_EQUAL(t.results[0].kind, rows[i].holds ? DMH_ETCD_PUT : DMH_ETCD_DELETE);
    CU_ASSERT_EQUAL(t.results[1].kind, DMH_ETCD_RANGE);
    CU_ASSERT_EQUAL_FATAL(t.results[1].n_kvs, 1);
    CU_ASSERT_STRING_EQUAL(t.results[1].kvs[0].value, "m2");
    CU_ASSERT_EQUAL(t.results[1].kvs[0].lease, lease);
    dmh_etcd_txn_result_free(&t);
    char *got = te_get(c, other, NULL);
    CU_ASSERT(rows[i].holds ? got && !strcmp(got, sval) : got == NULL);
    free(got);
  }
  /* a missing key: create_revision 0 (the test-and-set of an election) */
  char missing[128];
  te_key(missing, sizeof missing, "txn/missing");
  dmh_etcd_cmp cmp = {.key = DMH_ETCD_S(missing),
                      .target = DMH_ETCD_CMP_CREATE,
                      .result = DMH_ETCD_EQUAL,
                      .number = 0};
  const dmh_etcd_op put = {.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(missing), .value = {"x", 1}};
  dmh_etcd_txn_result t;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_txn(c, &cmp, 1, &put, 1, NULL, 0, &t, &err), 0);
  CU_ASSERT_EQUAL(t.succeeded, 1);
  dmh_etcd_txn_result_free(&t);
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_txn(c, &cmp, 1, &put, 1, NULL, 0, &t, &err), 0);
  CU_ASSERT_EQUAL(t.succeeded, 0); /* the second time it exists */
  CU_ASSERT_EQUAL(t.n_results, 0); /* empty failure list: no responses */
  dmh_etcd_txn_result_free(&t);
  char pre[128];
  te_key(pre, sizeof pre, "txn/");
  CU_ASSERT_EQUAL(dmh_etcd_delete(c, DMH_ETCD_S(pre), 1, NULL, &err), 0);
  CU_ASSERT_EQUAL(dmh_etcd_lease_revoke(c, lease, &err), 0);
  dmh_etcd_close(c);
}

/* etcd's limit: 128 ops in a list pass, 129 are refused as a limit (and nothing is written). */
static void test_txn_128_ops(void) {
  dmh_etcd *c = te_client();
  dm_error err;
  char pre[128];
  te_key(pre, sizeof pre, "ops/");
  static char keys[DMH_ETCD_TXN_MAX_OPS + 1][160];
  dmh_etcd_op ops[DMH_ETCD_TXN_MAX_OPS + 1];
  for (int i = 0; i <= DMH_ETCD_TXN_MAX_OPS; i++) {
    snprintf(keys[i], sizeof keys[i], "%s%03d", pre, i);
    ops[i] = (dmh_etcd_op){.kind = DMH_ETCD_PUT, .key = DMH_ETCD_S(keys[i]), .value = {"v", 1}};
  }
  dmh_etcd_txn_result t;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_txn(c, NULL, 0, ops, DMH_ETCD_TXN_MAX_OPS + 1, NULL, 0, &t, &err),
                        -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_ETCD_LIMIT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.raw_cause, "too many operations"));
  CU_ASSERT_EQUAL(err.resumable, 0);
  dmh_etcd_result r;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_range(c, DMH_ETCD_S(pre), 1, 0, 0, &r, &err), 0);
  CU_ASSERT_EQUAL(r.count, 0);
  dmh_etcd_result_free(&r);
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_txn(c, NULL, 0, ops, DMH_ETCD_TXN_MAX_OPS, NULL, 0, &t, &err), 0);
  CU_ASSERT_EQUAL(t.succeeded, 1); /* no compare: holds */
  CU_ASSERT_EQUAL(t.n_results, DMH_ETCD_TXN_MAX_OPS);
  dmh_etcd_txn_result_free(&t);
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_range(c, DMH_ETCD_S(pre), 1, 0, 0, &r, &err), 0);
  CU_ASSERT_EQUAL(r.count, DMH_ETCD_TXN_MAX_OPS);
  dmh_etcd_result_free(&r);
  CU_ASSERT_EQUAL(dmh_etcd_delete(c, DMH_ETCD_S(pre), 1, NULL, &err), 0);
  dmh_etcd_close(c);
}

/* A lease ID above 2^53 (a double would round it) is granted, attached and read back exactly;
 * granted twice it is refused as existing; after revoke the same ID is granted again. */
static void test_lease_big_id_reuse(void) {
  dmh_etcd *c = te_client();
  dm_error err;
  const int64_t id = ((int64_t)1 << 53) + 1 + 2 * (int64_t)getpid();
  CU_ASSERT((int64_t)(double)id != id); /* the precondition: not exact as a double */
  int64_t got = 0, ttl = 0;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_grant(c, 10, id, &got, &ttl, &err), 0);
  CU_ASSERT_EQUAL(got, id);
  CU_ASSERT_EQUAL(ttl, 10);
  CU_ASSERT_EQUAL(dmh_etcd_lease_grant(c, 10, id, NULL, NULL, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_ETCD_LEASE_EXISTS);
  char key[128];
  te_key(key, sizeof key, "lease/big");
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_put(c, DMH_ETCD_S(key), DMH_ETCD_S("x"), id, 0, NULL, &err), 0);
  dmh_etcd_result r;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_range(c, DMH_ETCD_S(key), 0, 0, 0, &r, &err), 0);
  CU_ASSERT_EQUAL_FATAL(r.n_kvs, 1);
  CU_ASSERT_EQUAL(r.kvs[0].lease, id);
  dmh_etcd_result_free(&r);
  /* revoke takes the key with it */
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_revoke(c, id, &err), 0);
  char *v = te_get(c, key, NULL);
  CU_ASSERT_PTR_NULL(v);
  free(v);
  CU_ASSERT_EQUAL(dmh_etcd_lease_revoke(c, id, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_ETCD_LEASE_NOT_FOUND);
  CU_ASSERT_EQUAL(dmh_etcd_lease_keepalive(c, id, NULL, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_ETCD_LEASE_NOT_FOUND);
  int64_t left = 0;
  CU_ASSERT_EQUAL(dmh_etcd_lease_ttl(c, id, &left, NULL, &err), 0);
  CU_ASSERT_EQUAL(left, -1);
  /* a restarted process takes its ID again */
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_grant(c, 10, id, &got, NULL, &err), 0);
  CU_ASSERT_EQUAL(got, id);
  CU_ASSERT_EQUAL(dmh_etcd_lease_revoke(c, id, &err), 0);
  dmh_etcd_close(c);
}

/* keepalive renews to the full TTL; a lease left alone expires (with its key) after its TTL, and
 * its ID can then be granted again. The one test that waits: about 11 s. */
static void test_lease_keepalive_expiry(void) {
  dmh_etcd *c = te_client();
  dm_error err;
  int64_t id = 0, ttl = 0, granted = 0;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_grant(c, 10, 0, &id, &ttl, &err), 0);
  CU_ASSERT(id != 0);
  char key[128];
  te_key(key, sizeof key, "lease/expiring");
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_put(c, DMH_ETCD_S(key), DMH_ETCD_S("x"), id, 0, NULL, &err), 0);
  usleep(2100 * 1000);
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_ttl(c, id, &ttl, &granted, &err), 0);
  CU_ASSERT(ttl > 0 && ttl <= 8); /* time passed: the precondition of the renewal below */
  CU_ASSERT_EQUAL(granted, 10);
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_keepalive(c, id, &ttl, &err), 0);
  CU_ASSERT_EQUAL(ttl, 10);
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_ttl(c, id, &ttl, NULL, &err), 0);
  CU_ASSERT(ttl >= 9);
  /* now left alone: gone within TTL + a little */
  int64_t t0 = te_now_ms(), gone_ms = -1;
  while (te_now_ms() - t0 < 15000) {
    CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_ttl(c, id, &ttl, NULL, &err), 0);
    if (ttl == -1) {
      gone_ms = te_now_ms() - t0;
      break;
    }
    usleep(250 * 1000);
  }
  fprintf(stderr, "lease expired %" PRId64 " ms after its last keepalive\n", gone_ms);
  CU_ASSERT(gone_ms >= 8000);
  char *v = te_get(c, key, NULL);
  CU_ASSERT_PTR_NULL(v);
  free(v);
  CU_ASSERT_EQUAL(dmh_etcd_lease_keepalive(c, id, NULL, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_ETCD_LEASE_NOT_FOUND);
  int64_t again = 0;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_grant(c, 10, id, &again, NULL, &err), 0);
  CU_ASSERT_EQUAL(again, id);
  CU_ASSERT_EQUAL(dmh_etcd_lease_revoke(c, id, &err), 0);
  dmh_etcd_close(c);
}

/* etcd's request limit (1.5 MiB): a put of 1.5 MiB is refused as a limit, one of 1.4 MiB passes
 * and comes back whole. */
static void test_kv_too_large(void) {
  dmh_etcd *c = te_client();
  dm_error err;
  char key[128];
  te_key(key, sizeof key, "big");
  size_t n = 1536 * 1024;
  char *v = malloc(n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(v);
  memset(v, 'x', n);
  CU_ASSERT_EQUAL(dmh_etcd_put(c, DMH_ETCD_S(key), (dmh_etcd_bytes){v, n}, 0, 0, NULL, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_ETCD_LIMIT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.raw_cause, "request is too large"));
  n = 1400 * 1024;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_put(c, DMH_ETCD_S(key), (dmh_etcd_bytes){v, n}, 0, 0, NULL, &err),
                        0);
  dmh_etcd_result r;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_range(c, DMH_ETCD_S(key), 0, 0, 0, &r, &err), 0);
  CU_ASSERT_EQUAL_FATAL(r.n_kvs, 1);
  CU_ASSERT_EQUAL(r.kvs[0].value_len, n);
  CU_ASSERT(memcmp(r.kvs[0].value, v, n) == 0);
  dmh_etcd_result_free(&r);
  free(v);
  CU_ASSERT_EQUAL(dmh_etcd_delete(c, DMH_ETCD_S(key), 0, NULL, &err), 0);
  dmh_etcd_close(c);
}

/* The keeper renews every TTL/3 (the TTL left is back near 10 s after 4 s), says how fresh the
 * lease is, and reports it lost once the lease is revoked behind its back. */
static void test_lease_keeper(void) {
  dmh_etcd *c = te_client();
  dm_error err, last;
  int64_t id = 0, ttl = 0;
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_grant(c, 10, 0, &id, NULL, &err), 0);
  char eps[256];
  te_endpoints("012", eps, sizeof eps);
  dmh_etcd_keeper *k = dmh_etcd_keeper_start(eps, NULL, id, 10, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(k);
  usleep(4000 * 1000);
  int lost = 1;
  long age = dmh_etcd_keeper_age_ms(k, &lost, &last);
  CU_ASSERT(age < 1500); /* renewed at ~3.3 s */
  CU_ASSERT_EQUAL(lost, 0);
  CU_ASSERT_EQUAL(last.code, 0);
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_ttl(c, id, &ttl, NULL, &err), 0);
  CU_ASSERT(ttl >= 8); /* unrenewed it would be at most 6 */
  CU_ASSERT_EQUAL_FATAL(dmh_etcd_lease_revoke(c, id, &err), 0);
  for (int i = 0; i < 50 && !lost; i++) {
    usleep(100 * 1000);
    age = dmh_etcd_keeper_age_ms(k, &lost, &last);
  }
  CU_ASSERT_EQUAL(lost, 1);
  CU_ASSERT_EQUAL(last.code, DM_ERR_ETCD_LEASE_NOT_FOUND);
  CU_ASSERT(age >= 3000);
  dmh_etcd_keeper_stop(k);
  dmh_etcd_close(c);
}

/* A plain http:// endpoint on another host is refused at open (15042: the keys, the token and the
 * password would cross the network in clear) unless insecure_transport says so; loopback is
 * plain; with a CA an endpoint without a scheme is https. */
static void test_insecure_endpoint(void) {
  dm_error err;
  static const char *const refused[] = {"http://10.1.2.3:2379", "192.0.2.1:2379",
                                        "http://127.0.0.1:1,http://127.example.com:2379",
                                        "http://localhost.example.com:2379", "http://[::2]:2379"};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    CU_ASSERT_PTR_NULL(dmh_etcd_open(refused[i], NULL, &err));
    CU_ASSERT_EQUAL(err.code, DM_ERR_CLUSTER_INSECURE_ETCD);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "--etcd-insecure-transport"));
  }
  dmh_etcd_opts o = {.insecure_transport = 1};
  dmh_etcd *c = dmh_etcd_open("http://10.1.2.3:2379", &o, &err);
  CU_ASSERT_PTR_NOT_NULL(c);
  dmh_etcd_close(c);
  static const char *const loopback[] = {"http://127.0.0.1:2379", "127.1.2.3:2379",
                                         "http://localhost:2379", "http://[::1]:2379"};
  for (size_t i = 0; i < sizeof loopback / sizeof loopback[0]; i++) {
    c = dmh_etcd_open(loopback[i], NULL, &err);
    CU_ASSERT_PTR_NOT_NULL(c);
    dmh_etcd_close(c);
  }
  dmh_etcd_security sec = {.cacert = "/nonexistent/ca.pem"};
  o = (dmh_etcd_opts){.sec = &sec};
  c = dmh_etcd_open("10.1.2.3:2379", &o, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_STRING_EQUAL(dmh_etcd_endpoint(c), "https://10.1.2.3:2379");
  dmh_etcd_close(c);
}

/* Errors name the endpoint and say what to do; an endpoint list without one is refused. */
static void test_errors(void) {
  dm_error err;
  CU_ASSERT_PTR_NULL(dmh_etcd_open(" , ", NULL, &err));
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_INVALID);
  /* nothing listens on port 1: refused at once, every endpoint tried */
  dmh_etcd *c = dmh_etcd_open("127.0.0.1:1,http://127.0.0.1:2/", NULL, &err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_EQUAL(dmh_etcd_put(c, DMH_ETCD_S("k"), DMH_ETCD_S("v"), 0, 0, NULL, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_ETCD_UNAVAILABLE);
  CU_ASSERT_EQUAL(err.cls, DM_CLASS_CLUSTER);
  CU_ASSERT_EQUAL(err.resumable, 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "put of key 'k'"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.raw_cause, "127.0.0.1:2"));
  CU_ASSERT(err.workaround[0] != '\0');
  dmh_etcd_close(c);
  /* an empty key is etcd's refusal, mapped with etcd's words */
  c = te_client();
  CU_ASSERT_EQUAL(dmh_etcd_put(c, DMH_ETCD_S(""), DMH_ETCD_S("v"), 0, 0, NULL, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_ETCD_REQUEST);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.raw_cause, "key is not provided"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "http://127.0.0.1:"));
  dmh_etcd_close(c);
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"kv_put_range_delete", test_kv_put_range_delete},
      {"kv_binary", test_kv_binary},
      {"txn_compares", test_txn_compares},
      {"txn_128_ops", test_txn_128_ops},
      {"lease_big_id_reuse", test_lease_big_id_reuse},
      {"lease_keepalive_expiry", test_lease_keepalive_expiry},
      {"kv_too_large", test_kv_too_large},
      {"lease_keeper", test_lease_keeper},
      {"errors", test_errors},
      {"insecure_endpoint", test_insecure_endpoint},
  };
  const dmh_cunit_suite suites[] = {
      {"etcd", NULL, NULL, tests, sizeof tests / sizeof tests[0]},
      {"etcd_watch", NULL, NULL, te_watch_tests, te_watch_n},
  };
  return dmh_cunit_run_suites(suites, 2, "ETCD_TEST_ONLY");
}
