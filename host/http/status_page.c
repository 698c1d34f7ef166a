/* The status page's files over HTTP, see status_page.h. */
#include "status_page.h"

#include <microhttpd.h>
#include <string.h>

const dmh_web_file *dmh_status_page_find(const char *url) {
  if (strcmp(url, "/") == 0)
    url = "/index.html";
  for (const dmh_web_file *f = dmh_web_files; f->path; f++)
    if (strcmp(f->path, url) == 0)
      return f;
  return NULL;
}

static const char *page_type(const char *path) {
  const char *dot = strrchr(path, '.');
  if (dot && strcmp(dot, ".html") == 0)
    return "text/html; charset=utf-8";
  if (dot && strcmp(dot, ".js") == 0)
    return "text/javascript; charset=utf-8";
  if (dot && strcmp(dot, ".css") == 0)
    return "text/css; charset=utf-8";
  return "application/octet-stream";
}

int dmh_status_page_serve(struct MHD_Connection *conn, const char *url, const char *method) {
  const dmh_web_file *f = dmh_status_page_find(url);
  bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
  static const char not_allowed[] = "only GET\n";
  struct MHD_Response *resp =
      f && get ? MHD_create_response_from_buffer(f->len, (void *)f->data, MHD_RESPMEM_PERSISTENT)
               : MHD_create_response_from_buffer(sizeof not_allowed - 1, (void *)not_allowed,
                                                 MHD_RESPMEM_PERSISTENT);
  if (!resp)
    return MHD_NO;
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                          f && get ? page_type(f->path) : "text/plain; charset=utf-8");
  /* The page reads the daemon's state: never served from another origin's frame, no cache. */
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  MHD_add_response_header(resp, "X-Frame-Options", "DENY");
  MHD_add_response_header(resp, "Content-Security-Policy",
                          "default-src 'self'; frame-ancestors 'none'");
  if (!(f && get)) {
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
  }
  enum MHD_Result rc =
      MHD_queue_response(conn, f && get ? MHD_HTTP_OK : MHD_HTTP_METHOD_NOT_ALLOWED, resp);
  MHD_destroy_response(resp);
  return rc;
}
