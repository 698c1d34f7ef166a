/* The etcd client's JSON: int64 as strings, base64 keys and values, kv objects, prefix ends. */
#define DMH_ETCD_INTERNAL
#include "etcd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "base64.h"

int64_t etcd_json_int64(json_object *o, const char *field) {
  json_object *v = NULL;
  if (!o || !json_object_object_get_ex(o, field, &v) || !v)
    return 0;
  if (json_object_is_type(v, json_type_string))
    return strtoll(json_object_get_string(v), NULL, 10);
  /* a number: json-c reads integers as int64 (never through double) */
  return json_object_get_int64(v);
}

uint64_t etcd_json_uint64(json_object *o, const char *field) {
  json_object *v = NULL;
  if (!o || !json_object_object_get_ex(o, field, &v) || !v)
    return 0;
  if (json_object_is_type(v, json_type_string))
    return strtoull(json_object_get_string(v), NULL, 10);
  return json_object_get_uint64(v);
}

void etcd_json_add_int64(json_object *o, const char *field, int64_t v) {
  char num[24];
  snprintf(num, sizeof num, "%" PRId64, v);
  json_object_object_add(o, field, json_object_new_string(num));
}

int etcd_json_add_bytes(json_object *o, const char *field, dmh_etcd_bytes b) {
  char *text = dmh_base64_encode(b.p ? b.p : "", b.p ? b.n : 0);
  if (!text)
    return -1;
  json_object_object_add(o, field, json_object_new_string(text));
  free(text);
  return 0;
}

int etcd_json_add_prefix_end(json_object *o, dmh_etcd_bytes key) {
  unsigned char *end = malloc(key.n ? key.n : 1);
  if (!end)
    return -1;
  size_t n = key.n;
  if (n)
    memcpy(end, key.p, n);
  while (n && end[n - 1] == 0xff)
    n--;
  if (n)
    end[n - 1]++;
  else
    end[n++] = 0; /* "\0": every key from key on */
  int rc = etcd_json_add_bytes(o, "range_end", (dmh_etcd_bytes){end, n});
  free(end);
  return rc;
}

static int etcd_json_bytes(json_object *o, const char *field, char **out, size_t *len) {
  json_object *v = NULL;
  const char *text = "";
  size_t tlen = 0;
  if (json_object_object_get_ex(o, field, &v) && json_object_is_type(v, json_type_string)) {
    text = json_object_get_string(v);
    tlen = (size_t)json_object_get_string_len(v);
  }
  *out = (char *)dmh_base64_decode(text, tlen, len);
  return *out ? 0 : -1;
}

int etcd_kv_parse(json_object *o, dmh_etcd_kv *kv) {
  memset(kv, 0, sizeof *kv);
  if (!o || !json_object_is_type(o, json_type_object))
    return -1;
  if (etcd_json_bytes(o, "key", &kv->key, &kv->key_len) < 0 ||
      etcd_json_bytes(o, "value", &kv->value, &kv->value_len) < 0) {
    dmh_etcd_kv_free(kv);
    return -1;
  }
  kv->create_revision = etcd_json_int64(o, "create_revision");
  kv->mod_revision = etcd_json_int64(o, "mod_revision");
  kv->version = etcd_json_int64(o, "version");
  kv->lease = etcd_json_int64(o, "lease");
  return 0;
}

void dmh_etcd_kv_free(dmh_etcd_kv *kv) {
  if (!kv)
    return;
  free(kv->key);
  free(kv->value);
  memset(kv, 0, sizeof *kv);
}

void etcd_key_text(dmh_etcd_bytes key, char *buf, size_t size) {
  if (!size)
    return;
  const unsigned char *p = key.p;
  size_t room = size - 1, j = 0;
  int cut = key.n > room;
  size_t take = cut ? (room > 3 ? room - 3 : 0) : key.n;
  for (size_t i = 0; p && i < take; i++)
    buf[j++] = p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\'' ? (char)p[i] : '?';
  while (cut && j < room)
    buf[j++] = '.';
  buf[j] = '\0';
}
