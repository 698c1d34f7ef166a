/* The HTTP server's answers (http_server_internal.h): a command's answer as the socket's JSON or
 * as DM's (http_dm.h), the transport's refusals in the shape of the path's set of routes, the
 * OpenAPI document and its page. */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "http_api.h"
#include "http_dm.h"
#include "http_server_internal.h"

/* Queue `body` (freed) as the JSON answer; a refusal (a status of 400 or more) also closes the
 * connection, so a refused client keeps no slot. */
enum MHD_Result http_send(struct MHD_Connection *conn, unsigned status, char *body,
                          const char *allow) {
  if (!body)
    return MHD_NO;
  size_t len = strlen(body);
  char *line = realloc(body, len + 2); /* the socket's line, newline included */
  if (!line) {
    free(body);
    return MHD_NO;
  }
  line[len] = '\n';
  line[len + 1] = '\0';
  struct MHD_Response *resp = MHD_create_response_from_buffer(len + 1, line, MHD_RESPMEM_MUST_FREE);
  if (!resp) {
    free(line);
    return MHD_NO;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
  if (status >= 400)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
  if (allow)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
  enum MHD_Result rc = MHD_queue_response(conn, status, resp);
  MHD_destroy_response(resp);
  return rc;
}

/* `status` with no body: no Content-Type (DM's c.Status). */
static enum MHD_Result http_send_empty(struct MHD_Connection *conn, unsigned status) {
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (!resp)
    return MHD_NO;
  enum MHD_Result rc = MHD_queue_response(conn, status, resp);
  MHD_destroy_response(resp);
  return rc;
}

enum MHD_Result http_reply(struct MHD_Connection *conn, const dmh_api_route *route, char *answer,
                           const char *request) {
  if (!route || route->shape == DMH_API_OWN)
    return http_send(conn, MHD_HTTP_OK, answer, NULL);
  unsigned status = MHD_HTTP_OK;
  bool empty = false;
  char *body = dmh_dm_answer(route, answer, request, &status, &empty);
  return empty ? http_send_empty(conn, status) : http_send(conn, status, body, NULL);
}

char *http_refusal_body(dmh_control_http *h, const char *url, const dm_error *err) {
  char *body = h->opts.refusal ? h->opts.refusal(err) : NULL;
  return url && dmh_dm_path(url) ? dmh_dm_refusal(body) : body;
}

enum MHD_Result http_refuse_allow(dmh_control_http *h, struct MHD_Connection *conn, const char *url,
                                  unsigned status, const dm_error *err, const char *allow) {
  if (status == MHD_HTTP_FORBIDDEN)
    dmh_log(DM_LOG_WARN, "control", "%s", err->message);
  return http_send(conn, status, http_refusal_body(h, url, err), allow);
}

enum MHD_Result http_refuse(dmh_control_http *h, struct MHD_Connection *conn, const char *url,
                            unsigned status, const dm_error *err) {
  return http_refuse_allow(h, conn, url, status, err, NULL);
}

int http_api_route(dmh_control_http *h, struct MHD_Connection *conn, const char *url,
                   const char *method, const dmh_api_route **route, enum MHD_Result *rc) {
  dm_error err;
  char allow[64];
  int status = dmh_api_match(method, url, route, allow, sizeof allow, &err);
  if (status != 0) {
    *rc = http_refuse_allow(h, conn, url, (unsigned)status, &err, status == 405 ? allow : NULL);
    return -1;
  }
  if ((*route)->cmd)
    return 0;
  bool page = strcmp((*route)->path, DMH_API_DOCS_PATH) == 0;
  size_t len;
  const char *doc = page ? dmh_api_docs_html(&len) : dmh_api_openapi(&len);
  struct MHD_Response *resp =
      doc ? MHD_create_response_from_buffer(len, (void *)doc, MHD_RESPMEM_PERSISTENT) : NULL;
  if (!resp) {
    *rc = MHD_NO;
    return -1;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                          page ? "text/html; charset=utf-8" : "application/json");
  if (page) /* the page loads nothing and runs nothing (http_docs.c) */
    MHD_add_response_header(resp, "Content-Security-Policy",
                            "default-src 'none'; frame-ancestors 'none'");
  *rc = MHD_queue_response(conn, MHD_HTTP_OK, resp);
  MHD_destroy_response(resp);
  return -1;
}
