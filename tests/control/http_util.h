/*
 * Helpers of the control plane's tests over TCP (test_http_*.c), on top of e2e_util.h: the
 * daemon started with --listen (dmctl then goes through --master-addr), requests made with
 * libcurl below dmctl, GET /metrics checked with promtool, and dmctl's answers compared over the
 * socket and over HTTP. The daemon picks a free port (--listen 127.0.0.1:0) and the tests read it
 * from its log.
 */
#ifndef DMH_TEST_HTTP_UTIL_H
#define DMH_TEST_HTTP_UTIL_H

#include <curl/curl.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "cunit_run.h"

extern char http_addr[64]; /* 127.0.0.1:PORT of the daemon started last */
/* The TLS files http_start passes with `tls` (test_http_access.c makes them). */
extern char tls_ca[400], tls_cert[400], tls_key[400];

/* When nonzero, raw_http's connections are made from this local port (SO_REUSEADDR). */
extern int raw_local_port;
/* When set, raw_http sends its body chunked (no Content-Length). */
extern bool raw_chunked;
/* When set, raw_http asks "Expect: 100-continue" and sends its body only once the server says
 * so: a refusal at the headers then reaches the client before any body is on the wire. */
extern bool raw_expect;
/* The Content-Type raw_http sends with a method other than GET and HEAD: "application/json"
 * unless a test sets another (NULL: none). */
extern const char *raw_content_type;
/* Header lines raw_http adds (up to 4, NULL-ended; "Host:" sends none, "Host: x" replaces it). */
extern const char *raw_headers[5];
/* The Allow header of raw_http's last answer ("" when none). */
extern char raw_allow[128];
/* The header lines of raw_http's last answer, as received. */
extern char raw_answer_headers[4096];

/* e2e_dir/tls: the CAs and certificates of http_make_certs (openssl, at test time): ca.pem
 * signs server-cert.pem (127.0.0.1, localhost), client-cert.pem (CN client) and
 * intruder-cert.pem (CN intruder); other-ca.pem signs stranger-cert.pem (CN stranger). Sets
 * tls_ca, tls_cert and tls_key to the CA and the server's pair. */
extern char tls_dir[320];
void http_make_certs(void);
/* tls_dir/name in buf. */
char *tls_file(char *buf, size_t size, const char *name);

/* http_addr read from the daemon's log; false when not logged. */
bool http_find_port(void);
/* Start the daemon with --listen and the `extra` flags; dmctl then goes through --master-addr
 * (with the TLS files when `tls`). */
void http_start(const char *listen, bool tls);
/* http_start with more flags after the TLS ones (NULL-ended; NULL: none). */
void http_start_with(const char *listen, bool tls, const char *const *more);
/* dmctl goes through the socket again. */
void http_use_socket(void);
/* A request with libcurl, below dmctl: `method` on `path` of the daemon (https with `ca`: the
 * client certificate cert/key may be NULL). Returns the parsed body (NULL if none or not JSON);
 * *status the HTTP status (0: no answer), *rc curl's code. */
json_object *raw_http(const char *method, const char *path, const char *body, size_t len,
                      const char *ca, const char *cert, const char *key, long *status,
                      CURLcode *rc);
/* GET `path` as text (the daemon's /metrics): the body (malloc'd; NULL when none), *status, and
 * the Content-Type in ctype. */
char *raw_get_text(const char *path, long *status, char *ctype, size_t ctype_len);
/* GET /metrics, 200 with Prometheus' content type, passing promtool. */
char *scrape(void);
/* POST `body` to the control path: the answer, *status. */
json_object *raw_post(const char *body, long *status);
/* Remove the members that depend on the moment of asking (a progress's rate and eta), at any
 * depth. */
void strip_moment(json_object *o);
/* dmctl with the arguments (up to 7, NULL-terminated) over the socket and over --master-addr: the
 * same exit status `want` and the same JSON (but for the moment's rate and eta). */
void both(int want, const char *a0, const char *a1, const char *a2, const char *a3);
/* dmctl over --master-addr: exit status `want`. */
void over_http(int want, const char *a0, const char *a1, const char *a2, const char *a3);
/* Stop the daemon while a client is connected and silent (no request, no TLS handshake): it is
 * served around, and holds up neither the next request nor the exit. */
void http_stop_with_silent_client(void);

/* The main of a test_http_* program: SIGPIPE ignored, libcurl set up around dmh_cunit_run of
 * `tests` as the suite `suite`; the exit status. */
int http_run_tests(const char *suite, const dmh_cunit_test *tests, size_t n);

#endif /* DMH_TEST_HTTP_UTIL_H */
