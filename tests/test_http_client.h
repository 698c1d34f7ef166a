/*
 * One HTTP request with libcurl for the CUnit programs that talk to a daemon's --listen (the API,
 * /metrics): `method` on `url` with `body` (NULL: none). Returns the answer's body (malloc'd, ""
 * when empty; NULL without an answer), *status (0: no answer) and, when `ctype` is given, its
 * Content-Type. Header-only; every test program gets tests/ on its include path.
 */
#ifndef DMH_TEST_HTTP_CLIENT_H
#define DMH_TEST_HTTP_CLIENT_H

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline char *dmh_test_http(const char *url, const char *method, const char *body,
                                  long *status, char *ctype, size_t ctype_len) {
  CURL *c = curl_easy_init();
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
  if (body)
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  /* the daemon takes writes only as JSON (docs/security.md, "The web browser") */
  struct curl_slist *headers = NULL;
  if (body || (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0))
    headers = curl_slist_append(headers, "Content-Type: application/json");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  *status = 0;
  if (ctype)
    ctype[0] = '\0';
  if (curl_easy_perform(c) == CURLE_OK) {
    char *ct = NULL;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
    if (ctype)
      snprintf(ctype, ctype_len, "%s", ct ? ct : "");
  }
  curl_easy_cleanup(c);
  curl_slist_free_all(headers);
  fclose(out);
  if (*status == 0) {
    free(text);
    return NULL;
  }
  return text;
}

#endif /* DMH_TEST_HTTP_CLIENT_H */
