/* GET /api/v1/docs (http_api.h): the OpenAPI document's operations as one HTML page. DM serves a
 * Swagger UI loaded from a CDN there; this page is built from the embedded document alone, with no
 * script, style, font or image from anywhere (the daemon's page rules, docs/security.md), so that
 * it works on a machine without network and runs nothing. */
#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_api.h"

static char *docs_page;
static size_t docs_len;
static pthread_once_t docs_once = PTHREAD_ONCE_INIT;

/* `s` into `f` with HTML's five special characters escaped. */
static void docs_escaped(FILE *f, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '&':
      fputs("&amp;", f);
      break;
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '"':
      fputs("&quot;", f);
      break;
    case '\'':
      fputs("&#39;", f);
      break;
    default:
      fputc(*s, f);
    }
  }
}

static const char *docs_str(json_object *o, const char *key) {
  json_object *v = NULL;
  return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
             ? json_object_get_string(v)
             : "";
}

static void docs_build(void) {
  size_t len;
  const char *text = dmh_api_openapi(&len);
  json_object *doc = json_tokener_parse(text), *paths = NULL, *info = NULL;
  char *buf = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&buf, &size);
  if (!f) {
    json_object_put(doc);
    return;
  }
  json_object_object_get_ex(doc, "info", &info);
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>", f);
  docs_escaped(f, docs_str(info, "title"));
  fputs("</title></head><body>\n<h1>", f);
  docs_escaped(f, docs_str(info, "title"));
  fputs("</h1>\n<p>", f);
  docs_escaped(f, docs_str(info, "description"));
  fputs("</p>\n<p>The document: <a href=\"" DMH_API_DM_JSON_PATH "\">" DMH_API_DM_JSON_PATH
        "</a>.</p>\n<table border=\"1\" cellpadding=\"4\">\n<tr><th>method</th><th>path</th>"
        "<th>operationId</th><th>summary</th><th>dmhost command</th></tr>\n",
        f);
  if (json_object_object_get_ex(doc, "paths", &paths)) {
    json_object_object_foreach(paths, path, methods) {
      json_object_object_foreach(methods, method, op) {
        fputs("<tr><td>", f);
        for (const char *m = method; *m; m++) /* "get" -> "GET" */
          fputc(*m >= 'a' && *m <= 'z' ? *m - 'a' + 'A' : *m, f);
        fputs("</td><td><code>", f);
        docs_escaped(f, path);
        fputs("</code></td><td>", f);
        docs_escaped(f, docs_str(op, "operationId"));
        fputs("</td><td>", f);
        docs_escaped(f, docs_str(op, "summary"));
        fputs("</td><td>", f);
        docs_escaped(f, docs_str(op, "x-dmhost-command"));
        fputs("</td></tr>\n", f);
      }
    }
  }
  fputs("</table>\n</body></html>\n", f);
  bool ok = !ferror(f);
  fclose(f);
  json_object_put(doc);
  if (!ok) {
    free(buf);
    return;
  }
  docs_page = buf;
  docs_len = size;
}

const char *dmh_api_docs_html(size_t *len) {
  pthread_once(&docs_once, docs_build);
  *len = docs_len;
  return docs_page;
}
