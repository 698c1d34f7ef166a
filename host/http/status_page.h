/*
 * The status page (docs/status-page.md): the files of host/http/web/, embedded in the binary at
 * build time (host/http/web/embed.cmake writes them into a generated C source), served by the HTTP
 * control plane at GET / (index.html) and GET /<file>, after the same admission as /control. The
 * page itself reads POST /control (query-status, pause-task, resume-task) and GET /metrics.
 */
#ifndef DMH_STATUS_PAGE_H
#define DMH_STATUS_PAGE_H

#include <stdbool.h>
#include <stddef.h>

struct MHD_Connection;

typedef struct dmh_web_file {
  const char *path; /* "/index.html" */
  const unsigned char *data;
  size_t len;
} dmh_web_file;

/* The embedded files, ended by a NULL path (generated). */
extern const dmh_web_file dmh_web_files[];

/* The file served at `url` ("/" is /index.html), or NULL. */
const dmh_web_file *dmh_status_page_find(const char *url);

/* Queue the answer for `url` (a path dmh_status_page_find knows): the file for GET and HEAD, 405
 * for another method. Returns libmicrohttpd's MHD_YES/MHD_NO. */
int dmh_status_page_serve(struct MHD_Connection *conn, const char *url, const char *method);

#endif /* DMH_STATUS_PAGE_H */
