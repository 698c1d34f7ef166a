/* The HTTP server's checks of the browser's headers (http_server_internal.h): Host, Origin,
 * Sec-Fetch-Site and Content-Type, against the names the daemon answers to (the host-name list). */
#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_server_internal.h"

/* ---- the browser: Host, Origin, Sec-Fetch-Site, Content-Type ---- */

/* A browser sends the operator's requests for any page it shows: the peer's uid or certificate is
 * the operator's whichever site wrote the request. These checks keep the API to the daemon's own
 * origin (docs/security.md, "The web browser"). */

/* Add `name` (lowercased; an IPv6 address bracketed) to the names a Host may give. */
void http_add_host(dmh_control_http *h, const char *name) {
  char n[256];
  bool v6 = strchr(name, ':') != NULL && name[0] != '[';
  if (!*name || strlen(name) + 3 > sizeof n || h->n_hosts >= HTTP_HOSTS_MAX)
    return;
  snprintf(n, sizeof n, v6 ? "[%s]" : "%s", name);
  for (char *c = n; *c; c++)
    if (*c >= 'A' && *c <= 'Z')
      *c = (char)(*c - 'A' + 'a');
  for (int i = 0; i < h->n_hosts; i++)
    if (strcmp(h->hosts[i], n) == 0)
      return;
  snprintf(h->hosts[h->n_hosts++], sizeof h->hosts[0], "%s", n);
}

/* The names the server's certificate is made for: its subjectAltName DNS names and addresses (a
 * client that verifies the certificate reached the daemon by one of them), else its CN. */
void http_add_cert_hosts(dmh_control_http *h) {
  gnutls_x509_crt_t crt;
  if (gnutls_x509_crt_init(&crt) < 0)
    return;
  if (gnutls_x509_crt_import(crt, &h->cert, GNUTLS_X509_FMT_PEM) < 0) {
    gnutls_x509_crt_deinit(crt);
    return;
  }
  bool san = false;
  for (unsigned i = 0;; i++) {
    unsigned char buf[256];
    size_t size = sizeof buf - 1;
    int type = gnutls_x509_crt_get_subject_alt_name(crt, i, buf, &size, NULL);
    if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
      break;
    if (type == GNUTLS_SAN_DNSNAME) {
      buf[size] = '\0';
      http_add_host(h, (const char *)buf);
      san = true;
    } else if (type == GNUTLS_SAN_IPADDRESS && (size == 4 || size == 16)) {
      char ip[INET6_ADDRSTRLEN];
      if (inet_ntop(size == 4 ? AF_INET : AF_INET6, buf, ip, sizeof ip))
        http_add_host(h, ip);
      san = true;
    }
  }
  char cn[256];
  size_t size = sizeof cn;
  if (!san && gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &size) == 0)
    http_add_host(h, cn);
  gnutls_x509_crt_deinit(crt);
}

/* `hp` (a Host header, or an Origin's authority) names the daemon: one of h->hosts with h->port,
 * or without a port when the port is the scheme's default. */
static bool http_host_ok(const dmh_control_http *h, const char *hp) {
  const char *end;
  if (hp[0] == '[')
    end = strchr(hp, ']') ? strchr(hp, ']') + 1 : hp + strlen(hp);
  else
    end = hp + strcspn(hp, ":");
  size_t hlen = (size_t)(end - hp);
  int port = h->tls ? 443 : 80;
  if (*end == ':') {
    const char *p = end + 1;
    if (!*p || strspn(p, "0123456789") != strlen(p) || strlen(p) > 5)
      return false;
    port = atoi(p);
  } else if (*end) {
    return false;
  }
  if (port != h->port || hlen == 0)
    return false;
  for (int i = 0; i < h->n_hosts; i++)
    if (strlen(h->hosts[i]) == hlen && strncasecmp(h->hosts[i], hp, hlen) == 0)
      return true;
  return false;
}

/* A header's value as shown in a message: at most 80 bytes, other than printable ASCII as '?'. */
static const char *http_shown(const char *v, char *buf, size_t size) {
  size_t n = 0;
  for (; v[n] && n + 1 < size && n < 80; n++)
    buf[n] = v[n] >= 0x20 && v[n] < 0x7f ? v[n] : '?';
  if (v[n] && n >= 3)
    memcpy(buf + n - 3, "...", 3);
  buf[n] = '\0';
  return buf;
}

/* The request's Host, Origin, Sec-Fetch-Site and (for a method that is not GET, HEAD or OPTIONS)
 * Content-Type, checked before any route. 0, or the HTTP status with *err:
 * 403 DM_ERR_CONTROL_HOST (a Host that is not the daemon's, missing included: DNS rebinding),
 * 403 DM_ERR_CONTROL_CROSS_SITE (an Origin that is not the daemon's, Sec-Fetch-Site cross-site, or
 * same-site without the daemon's Origin), 415 DM_ERR_CONTROL_CONTENT_TYPE (a write that is not
 * application/json: the only types a page of another origin may send without a CORS preflight are
 * text/plain, forms and multipart, and the daemon never answers a preflight; a write with no
 * body, no Content-Type and no Origin is admitted: a script's, never a page's). */
unsigned http_check_site(const dmh_control_http *h, struct MHD_Connection *conn, const char *url,
                         const char *method, dm_error *err) {
  char shown[96], path[96];
  url = http_shown(url, path, sizeof path); /* as every header: the client's bytes */
  const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
  if (!host || !http_host_ok(h, host)) {
    dm_error_set(err, DM_ERR_CONTROL_HOST, NULL,
                 "control plane %s: refused %s %s with %s%s%s: the daemon answers only to the "
                 "address it listens on (a page of another name that resolves to this address "
                 "is DNS rebinding)",
                 h->where, method, url, host ? "Host \"" : "no Host header",
                 host ? http_shown(host, shown, sizeof shown) : "", host ? "\"" : "");
    return MHD_HTTP_FORBIDDEN;
  }
  const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
  const char *scheme = h->tls ? "https://" : "http://";
  bool own_origin = origin && strncasecmp(origin, scheme, strlen(scheme)) == 0 &&
                    http_host_ok(h, origin + strlen(scheme));
  if (origin && !own_origin) {
    dm_error_set(err, DM_ERR_CONTROL_CROSS_SITE, NULL,
                 "control plane %s: refused %s %s from the web page of Origin \"%s\": only the "
                 "daemon's own origin (%s%s) may call it",
                 h->where, method, url, http_shown(origin, shown, sizeof shown), scheme, h->where);
    return MHD_HTTP_FORBIDDEN;
  }
  const char *site = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-Fetch-Site");
  if (site && (strcasecmp(site, "cross-site") == 0 ||
               (strcasecmp(site, "same-site") == 0 && !own_origin))) {
    dm_error_set(err, DM_ERR_CONTROL_CROSS_SITE, NULL,
                 "control plane %s: refused %s %s sent by the browser for a page of another "
                 "site (Sec-Fetch-Site: %s)",
                 h->where, method, url, http_shown(site, shown, sizeof shown));
    return MHD_HTTP_FORBIDDEN;
  }
  if (strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0 ||
      strcmp(method, MHD_HTTP_METHOD_OPTIONS) == 0)
    return 0;
  const char *type =
      MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
  /* A write with no body, no type and no Origin is a script's (DM's own do `curl -X POST
   * .../tasks/t/stop`): a browser sends Origin with every POST, PUT and DELETE, so a page's write
   * never passes here, and with no body it carries nothing a type would describe. */
  const char *clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
  const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Transfer-Encoding");
  if (!type && !origin && !te && (!clen || strcmp(clen, "0") == 0))
    return 0;
  static const char json[] = "application/json";
  size_t tl = strlen(json);
  if (type) {
    type += strspn(type, " \t");
    if (strncasecmp(type, json, tl) == 0 && strchr(" \t;", type[tl]))
      return 0;
  }
  dm_error_set(err, DM_ERR_CONTROL_CONTENT_TYPE, NULL,
               "control plane %s: refused %s %s with %s%s%s: a request that is not a GET must "
               "be Content-Type: application/json",
               h->where, method, url, type ? "Content-Type \"" : "no Content-Type",
               type ? http_shown(type, shown, sizeof shown) : "", type ? "\"" : "");
  return MHD_HTTP_UNSUPPORTED_MEDIA_TYPE;
}
