/*
 * The join of shard table structures (shard_join.h): the JSON form, the order of column
 * definitions, the join and compare of tables, partially dropped columns.
 */
#include "shard_join.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void sj_why(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void sj_why(char *why, size_t len, const char *fmt, ...) {
  if (!why || !len)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, len, fmt, ap);
  va_end(ap);
}

static void sj_column_free(dmh_sj_column *c) {
  free(c->default_value);
  for (uint32_t i = 0; i < c->n_members; i++)
    free(c->members[i]);
  free(c->members);
  memset(c, 0, sizeof *c);
}

void dmh_sj_table_free(dmh_sj_table *t) {
  if (!t)
    return;
  for (uint32_t i = 0; i < t->n_cols; i++)
    sj_column_free(&t->cols[i]);
  for (uint32_t i = 0; i < t->n_idx; i++)
    free(t->idx[i].columns);
  free(t->cols);
  free(t->idx);
  memset(t, 0, sizeof *t);
}

static char *sj_strdup(const char *s) {
  return s ? strdup(s) : NULL;
}

/* A deep copy of one column into *out (zeroed first). 0 or -1. */
static int sj_column_copy(const dmh_sj_column *c, dmh_sj_column *out) {
  *out = *c;
  out->default_value = NULL;
  out->members = NULL;
  out->n_members = 0;
  if (c->default_value && !(out->default_value = strdup(c->default_value)))
    return -1;
  if (c->n_members) {
    if (!(out->members = calloc(c->n_members, sizeof *out->members)))
      return -1;
    for (; out->n_members < c->n_members; out->n_members++)
      if (!(out->members[out->n_members] = strdup(c->members[out->n_members])))
        return -1;
  }
  return 0;
}

/* Appends a copy of c (the table grows by one). 0 or -1. */
static int sj_add_column(dmh_sj_table *t, const dmh_sj_column *c) {
  dmh_sj_column *p = realloc(t->cols, (t->n_cols + 1) * sizeof *p);
  if (!p)
    return -1;
  t->cols = p;
  memset(&p[t->n_cols], 0, sizeof *p);
  int rc = sj_column_copy(c, &p[t->n_cols]);
  t->n_cols++; /* counted even when the copy failed half-way, so that free releases it */
  return rc;
}

static int sj_add_index(dmh_sj_table *t, const dmh_sj_index *x) {
  dmh_sj_index *p = realloc(t->idx, (t->n_idx + 1) * sizeof *p);
  if (!p)
    return -1;
  t->idx = p;
  p[t->n_idx] = *x;
  p[t->n_idx].columns = sj_strdup(x->columns);
  if (!p[t->n_idx].columns)
    return -1;
  t->n_idx++;
  return 0;
}

int dmh_sj_table_copy(const dmh_sj_table *t, dmh_sj_table *out) {
  memset(out, 0, sizeof *out);
  for (uint32_t i = 0; i < t->n_cols; i++)
    if (sj_add_column(out, &t->cols[i]) != 0)
      goto fail;
  for (uint32_t i = 0; i < t->n_idx; i++)
    if (sj_add_index(out, &t->idx[i]) != 0)
      goto fail;
  return 0;
fail:
  dmh_sj_table_free(out);
  return -1;
}

const dmh_sj_column *dmh_sj_column_find(const dmh_sj_table *t, const char *name) {
  for (uint32_t i = 0; i < t->n_cols; i++)
    if (strcasecmp(t->cols[i].name, name) == 0)
      return &t->cols[i];
  return NULL;
}

static const dmh_sj_index *sj_index_find(const dmh_sj_table *t, const char *name) {
  for (uint32_t i = 0; i < t->n_idx; i++)
    if (strcasecmp(t->idx[i].name, name) == 0)
      return &t->idx[i];
  return NULL;
}

/* ---- JSON ---------------------------------------------------------------------------------- */

/* A string field into a fixed buffer: 0, -1 when missing (and required), not a string or too
 * long. */
static int sj_json_name(json_object *o, const char *key, char *out, size_t len, bool required) {
  json_object *v;
  out[0] = '\0';
  if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
    return required ? -1 : 0;
  if (!json_object_is_type(v, json_type_string))
    return -1;
  const char *s = json_object_get_string(v);
  if (strlen(s) >= len)
    return -1;
  memcpy(out, s, strlen(s) + 1);
  return 0;
}

static int64_t sj_json_int(json_object *o, const char *key) {
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
    return -1;
  return json_object_get_int64(v);
}

static bool sj_json_bool(json_object *o, const char *key) {
  json_object *v;
  return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

/* One column from its object into *c (zeroed by the caller). 0, -1 bad (why), -2 memory. */
static int sj_column_from(json_object *o, dmh_sj_column *c, char *why, size_t why_len) {
  if (!json_object_is_type(o, json_type_object) ||
      sj_json_name(o, "name", c->name, sizeof c->name, true) != 0 || !c->name[0]) {
    sj_why(why, why_len, "a column without a valid \"name\"");
    return -1;
  }
  if (sj_json_name(o, "type", c->type, sizeof c->type, true) != 0 || !c->type[0]) {
    sj_why(why, why_len, "column `%s` without a valid \"type\"", c->name);
    return -1;
  }
  for (char *p = c->type; *p; p++)
    if (*p >= 'A' && *p <= 'Z')
      *p = (char)(*p - 'A' + 'a');
  if (sj_json_name(o, "charset", c->charset, sizeof c->charset, false) != 0) {
    sj_why(why, why_len, "column `%s`: \"charset\" is not a character set name", c->name);
    return -1;
  }
  c->length = sj_json_int(o, "length");
  c->scale = sj_json_int(o, "scale");
  c->is_unsigned = sj_json_bool(o, "unsigned");
  c->nullable = sj_json_bool(o, "nullable");
  json_object *v;
  if (json_object_object_get_ex(o, "default", &v) && !json_object_is_type(v, json_type_null)) {
    if (!json_object_is_type(v, json_type_string)) {
      sj_why(why, why_len, "column `%s`: \"default\" is not a string", c->name);
      return -1;
    }
    if (!(c->default_value = strdup(json_object_get_string(v))))
      return -2;
  }
  if (json_object_object_get_ex(o, "members", &v) && json_object_is_type(v, json_type_array)) {
    size_t n = json_object_array_length(v);
    if (n && !(c->members = calloc(n, sizeof *c->members)))
      return -2;
    for (size_t i = 0; i < n; i++) {
      json_object *m = json_object_array_get_idx(v, i);
      if (!json_object_is_type(m, json_type_string)) {
        sj_why(why, why_len, "column `%s`: a member is not a string", c->name);
        return -1;
      }
      if (!(c->members[c->n_members] = strdup(json_object_get_string(m))))
        return -2;
      c->n_members++;
    }
  }
  return 0;
}

/* One index from its object into *x (zeroed). 0, -1 bad, -2 memory. */
static int sj_index_from(json_object *o, dmh_sj_index *x, char *why, size_t why_len) {
  json_object *cols;
  if (!json_object_is_type(o, json_type_object) ||
      sj_json_name(o, "name", x->name, sizeof x->name, true) != 0 || !x->name[0]) {
    sj_why(why, why_len, "an index without a valid \"name\"");
    return -1;
  }
  x->unique = sj_json_bool(o, "unique");
  if (!json_object_object_get_ex(o, "columns", &cols) ||
      !json_object_is_type(cols, json_type_array) || !json_object_array_length(cols)) {
    sj_why(why, why_len, "index `%s` without \"columns\"", x->name);
    return -1;
  }
  size_t need = 1, n = json_object_array_length(cols);
  for (size_t i = 0; i < n; i++) {
    json_object *c = json_object_array_get_idx(cols, i);
    if (!json_object_is_type(c, json_type_string)) {
      sj_why(why, why_len, "index `%s`: a column is not a string", x->name);
      return -1;
    }
    need += strlen(json_object_get_string(c)) + 1;
  }
  if (!(x->columns = malloc(need)))
    return -2;
  x->columns[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    if (i)
      strcat(x->columns, ",");
    strcat(x->columns, json_object_get_string(json_object_array_get_idx(cols, i)));
  }
  return 0;
}

int dmh_sj_table_from_json(const char *json, dmh_sj_table *out, char *why, size_t why_len) {
  memset(out, 0, sizeof *out);
  json_object *root = json ? json_tokener_parse(json) : NULL, *cols, *idx;
  int rc = -1;
  if (!root || !json_object_is_type(root, json_type_object)) {
    sj_why(why, why_len, "a table structure is not a JSON object");
    goto done;
  }
  if (!json_object_object_get_ex(root, "columns", &cols) ||
      !json_object_is_type(cols, json_type_array)) {
    sj_why(why, why_len, "a table structure without \"columns\"");
    goto done;
  }
  size_t n = json_object_array_length(cols);
  if (n && !(out->cols = calloc(n, sizeof *out->cols)))
    goto nomem;
  for (size_t i = 0; i < n; i++) {
    int r =
        sj_column_from(json_object_array_get_idx(cols, i), &out->cols[out->n_cols], why, why_len);
    out->n_cols++;
    if (r == -2)
      goto nomem;
    if (r != 0)
      goto done;
    for (size_t j = 0; j + 1 < out->n_cols; j++)
      if (strcasecmp(out->cols[j].name, out->cols[i].name) == 0) {
        sj_why(why, why_len, "column `%s` appears twice", out->cols[i].name);
        goto done;
      }
  }
  if (json_object_object_get_ex(root, "indexes", &idx) &&
      json_object_is_type(idx, json_type_array)) {
    n = json_object_array_length(idx);
    if (n && !(out->idx = calloc(n, sizeof *out->idx)))
      goto nomem;
    for (size_t i = 0; i < n; i++) {
      int r = sj_index_from(json_object_array_get_idx(idx, i), &out->idx[out->n_idx], why, why_len);
      out->n_idx++;
      if (r == -2)
        goto nomem;
      if (r != 0)
        goto done;
    }
  }
  rc = 0;
  goto done;
nomem:
  sj_why(why, why_len, "out of memory reading a table structure");
done:
  json_object_put(root);
  if (rc != 0)
    dmh_sj_table_free(out);
  return rc;
}

char *dmh_sj_table_to_json(const dmh_sj_table *t) {
  json_object *root = json_object_new_object(), *cols = json_object_new_array(),
              *idx = json_object_new_array();
  char *out = NULL;
  if (!root || !cols || !idx) {
    json_object_put(cols);
    json_object_put(idx);
    goto done;
  }
  json_object_object_add(root, "columns", cols);
  json_object_object_add(root, "indexes", idx);
  for (uint32_t i = 0; i < t->n_cols; i++) {
    const dmh_sj_column *c = &t->cols[i];
    json_object *o = json_object_new_object();
    if (!o || json_object_array_add(cols, o) != 0)
      goto done;
    json_object_object_add(o, "name", json_object_new_string(c->name));
    json_object_object_add(o, "type", json_object_new_string(c->type));
    if (c->length >= 0)
      json_object_object_add(o, "length", json_object_new_int64(c->length));
    if (c->scale >= 0)
      json_object_object_add(o, "scale", json_object_new_int64(c->scale));
    json_object_object_add(o, "unsigned", json_object_new_boolean(c->is_unsigned));
    json_object_object_add(o, "nullable", json_object_new_boolean(c->nullable));
    if (c->default_value)
      json_object_object_add(o, "default", json_object_new_string(c->default_value));
    if (c->charset[0])
      json_object_object_add(o, "charset", json_object_new_string(c->charset));
    if (c->n_members) {
      json_object *m = json_object_new_array();
      json_object_object_add(o, "members", m);
      for (uint32_t j = 0; m && j < c->n_members; j++)
        json_object_array_add(m, json_object_new_string(c->members[j]));
    }
  }
  for (uint32_t i = 0; i < t->n_idx; i++) {
    json_object *o = json_object_new_object(), *ic = json_object_new_array();
    if (!o || !ic || json_object_array_add(idx, o) != 0) {
      json_object_put(o);
      json_object_put(ic);
      goto done;
    }
    json_object_object_add(o, "name", json_object_new_string(t->idx[i].name));
    json_object_object_add(o, "unique", json_object_new_boolean(t->idx[i].unique));
    json_object_object_add(o, "columns", ic);
    /* the columns' text back into its parts: names hold no ',' in what the tracker writes
     * (information_schema's COLUMN_NAME with a SUB_PART), so the split is exact */
    const char *p = t->idx[i].columns;
    while (*p) {
      size_t k = strcspn(p, ",");
      json_object_array_add(ic, json_object_new_string_len(p, (int)k));
      p += k + (p[k] == ',');
    }
  }
  const char *s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
  out = s ? strdup(s) : NULL;
done:
  json_object_put(root);
  return out;
}

/* ---- the order of column definitions ------------------------------------------------------- */

/* Types that grow into each other: their family and rank (0: a type of its own). */
typedef struct sj_family {
  const char *type;
  int family;
  int rank;
} sj_family;

enum { SJ_F_NONE, SJ_F_INT, SJ_F_CHAR, SJ_F_BINARY, SJ_F_TEXT, SJ_F_BLOB };

static const sj_family sj_families[] = {
    {"tinyint", SJ_F_INT, 1},     {"smallint", SJ_F_INT, 2},  {"mediumint", SJ_F_INT, 3},
    {"int", SJ_F_INT, 4},         {"bigint", SJ_F_INT, 5},    {"char", SJ_F_CHAR, 1},
    {"varchar", SJ_F_CHAR, 2},    {"binary", SJ_F_BINARY, 1}, {"varbinary", SJ_F_BINARY, 2},
    {"tinytext", SJ_F_TEXT, 1},   {"text", SJ_F_TEXT, 2},     {"mediumtext", SJ_F_TEXT, 3},
    {"longtext", SJ_F_TEXT, 4},   {"tinyblob", SJ_F_BLOB, 1}, {"blob", SJ_F_BLOB, 2},
    {"mediumblob", SJ_F_BLOB, 3}, {"longblob", SJ_F_BLOB, 4},
};

static sj_family sj_family_of(const char *type) {
  for (size_t i = 0; i < sizeof sj_families / sizeof sj_families[0]; i++)
    if (strcmp(sj_families[i].type, type) == 0)
      return sj_families[i];
  return (sj_family){type, SJ_F_NONE, 0};
}

/* utf8 is utf8mb3 (MariaDB's name since 10.6); other names compare as they are. */
static const char *sj_charset_norm(const char *cs) {
  return strcmp(cs, "utf8") == 0 ? "utf8mb3" : cs;
}

void dmh_sj_column_text(const dmh_sj_column *c, char *out, size_t len) {
  size_t n = (size_t)snprintf(out, len, "%s", c->type);
#define SJ_ADD(...)                                                                                \
  do {                                                                                             \
    if (n < len)                                                                                   \
      n += (size_t)snprintf(out + n, len - n, __VA_ARGS__);                                        \
  } while (0)
  if (c->n_members) {
    SJ_ADD("(");
    for (uint32_t i = 0; i < c->n_members; i++)
      SJ_ADD("%s'%s'", i ? "," : "", c->members[i]);
    SJ_ADD(")");
  } else if (c->length >= 0 && c->scale > 0)
    SJ_ADD("(%lld,%lld)", (long long)c->length, (long long)c->scale);
  else if (c->length >= 0 && sj_family_of(c->type).family != SJ_F_INT)
    SJ_ADD("(%lld)", (long long)c->length);
  else if (c->scale > 0)
    SJ_ADD("(%lld)", (long long)c->scale);
  if (c->is_unsigned)
    SJ_ADD(" unsigned");
  if (c->charset[0])
    SJ_ADD(" CHARACTER SET %s", c->charset);
  SJ_ADD("%s", c->nullable ? " NULL" : " NOT NULL");
  if (c->default_value)
    SJ_ADD(" DEFAULT %s", c->default_value);
#undef SJ_ADD
}

/* The join of two definitions of one column into *out (zeroed by the caller). 0, 1 conflict
 * (why), -1 memory. */
static int sj_column_join(const dmh_sj_column *a, const dmh_sj_column *b, dmh_sj_column *out,
                          char *why, size_t why_len) {
  char ta[160], tb[160];
  dmh_sj_column_text(a, ta, sizeof ta);
  dmh_sj_column_text(b, tb, sizeof tb);
  if (sj_column_copy(a, out) != 0)
    return -1;
  sj_family fa = sj_family_of(a->type), fb = sj_family_of(b->type);
  if (fa.family != fb.family || (fa.family == SJ_F_NONE && strcmp(a->type, b->type) != 0)) {
    sj_why(why, why_len, "column `%s`: %s and %s do not join (different kinds of type)", a->name,
           ta, tb);
    return 1;
  }
  if (a->is_unsigned != b->is_unsigned) {
    sj_why(why, why_len, "column `%s`: %s and %s do not join (signedness differs)", a->name, ta,
           tb);
    return 1;
  }
  switch (fa.family) {
  case SJ_F_INT:
    if (fb.rank > fa.rank)
      memcpy(out->type, b->type, strlen(b->type) + 1);
    break;
  case SJ_F_CHAR:
  case SJ_F_BINARY:
  case SJ_F_TEXT:
  case SJ_F_BLOB:
    if (fb.rank > fa.rank)
      memcpy(out->type, b->type, strlen(b->type) + 1);
    if (b->length > out->length)
      out->length = b->length;
    break;
  default:
    if (strcmp(a->type, "enum") == 0 || strcmp(a->type, "set") == 0) {
      const dmh_sj_column *shorter = a->n_members <= b->n_members ? a : b;
      const dmh_sj_column *longer = shorter == a ? b : a;
      for (uint32_t i = 0; i < shorter->n_members; i++)
        if (strcmp(shorter->members[i], longer->members[i]) != 0) {
          sj_why(why, why_len,
                 "column `%s`: %s and %s do not join (members grow only by appending)", a->name, ta,
                 tb);
          return 1;
        }
      if (longer == b) { /* b's members replace a's (a's are a prefix of them) */
        for (uint32_t i = 0; i < out->n_members; i++)
          free(out->members[i]);
        free(out->members);
        out->members = NULL;
        out->n_members = 0;
        if (!(out->members = calloc(b->n_members, sizeof *out->members)))
          return -1;
        for (; out->n_members < b->n_members; out->n_members++)
          if (!(out->members[out->n_members] = strdup(b->members[out->n_members])))
            return -1;
        out->length = a->length > b->length ? a->length : b->length;
      }
    } else if (a->length != b->length || a->scale != b->scale) {
      sj_why(why, why_len, "column `%s`: %s and %s do not join (%s joins only with itself)",
             a->name, ta, tb, a->type);
      return 1;
    }
    break;
  }
  if (a->scale != b->scale && fa.family != SJ_F_NONE)
    out->scale = a->scale > b->scale ? a->scale : b->scale;
  if (strcmp(sj_charset_norm(a->charset), sj_charset_norm(b->charset)) != 0) {
    const char *ca = sj_charset_norm(a->charset), *cb = sj_charset_norm(b->charset);
    if (strcmp(ca, "utf8mb3") == 0 && strcmp(cb, "utf8mb4") == 0)
      memcpy(out->charset, b->charset, strlen(b->charset) + 1);
    else if (!(strcmp(ca, "utf8mb4") == 0 && strcmp(cb, "utf8mb3") == 0)) {
      sj_why(why, why_len,
             "column `%s`: %s and %s do not join (character sets %s and %s: only utf8 grows, "
             "into utf8mb4)",
             a->name, ta, tb, a->charset[0] ? a->charset : "none",
             b->charset[0] ? b->charset : "none");
      return 1;
    }
  }
  out->nullable = a->nullable || b->nullable;
  if (a->default_value && b->default_value && strcmp(a->default_value, b->default_value) != 0) {
    sj_why(why, why_len, "column `%s`: %s and %s do not join (different defaults)", a->name, ta,
           tb);
    return 1;
  }
  if (!a->default_value && b->default_value && !(out->default_value = strdup(b->default_value)))
    return -1;
  return 0;
}

static bool sj_column_equal(const dmh_sj_column *a, const dmh_sj_column *b) {
  if (strcasecmp(a->name, b->name) != 0 || strcmp(a->type, b->type) != 0 ||
      a->length != b->length || a->scale != b->scale || a->is_unsigned != b->is_unsigned ||
      a->nullable != b->nullable || a->n_members != b->n_members ||
      strcmp(sj_charset_norm(a->charset), sj_charset_norm(b->charset)) != 0 ||
      !a->default_value != !b->default_value ||
      (a->default_value && strcmp(a->default_value, b->default_value) != 0))
    return false;
  for (uint32_t i = 0; i < a->n_members; i++)
    if (strcmp(a->members[i], b->members[i]) != 0)
      return false;
  return true;
}

static bool sj_index_equal(const dmh_sj_index *a, const dmh_sj_index *b) {
  return strcasecmp(a->name, b->name) == 0 && a->unique == b->unique &&
         strcasecmp(a->columns, b->columns) == 0;
}

bool dmh_sj_equal(const dmh_sj_table *a, const dmh_sj_table *b) {
  if (a->n_cols != b->n_cols || a->n_idx != b->n_idx)
    return false;
  for (uint32_t i = 0; i < a->n_cols; i++) {
    const dmh_sj_column *c = dmh_sj_column_find(b, a->cols[i].name);
    if (!c || !sj_column_equal(&a->cols[i], c))
      return false;
  }
  for (uint32_t i = 0; i < a->n_idx; i++) {
    const dmh_sj_index *x = sj_index_find(b, a->idx[i].name);
    if (!x || !sj_index_equal(&a->idx[i], x))
      return false;
  }
  return true;
}

/* A column that one table lacks: it joins only if the target can fill it for that table's rows. */
static int sj_column_alone(const dmh_sj_column *c, char *why, size_t why_len) {
  if (c->nullable || c->default_value)
    return 0;
  char t[160];
  dmh_sj_column_text(c, t, sizeof t);
  sj_why(why, why_len,
         "column `%s`: %s is missing in a table: NOT NULL without a default, the target could "
         "not write that table's rows",
         c->name, t);
  return 1;
}

int dmh_sj_join(const dmh_sj_table *a, const dmh_sj_table *b, dmh_sj_table *out, char *why,
                size_t why_len) {
  memset(out, 0, sizeof *out);
  int rc = 0;
  for (uint32_t i = 0; i < a->n_cols && rc == 0; i++) {
    const dmh_sj_column *cb = dmh_sj_column_find(b, a->cols[i].name);
    if (!cb) {
      if ((rc = sj_column_alone(&a->cols[i], why, why_len)) == 0)
        rc = sj_add_column(out, &a->cols[i]);
      continue;
    }
    dmh_sj_column j = {0};
    rc = sj_column_join(&a->cols[i], cb, &j, why, why_len);
    if (rc == 0) {
      dmh_sj_column *p = realloc(out->cols, (out->n_cols + 1) * sizeof *p);
      if (p) {
        out->cols = p;
        p[out->n_cols++] = j;
        continue;
      }
      rc = -1;
    }
    sj_column_free(&j);
  }
  for (uint32_t i = 0; i < b->n_cols && rc == 0; i++)
    if (!dmh_sj_column_find(a, b->cols[i].name) &&
        (rc = sj_column_alone(&b->cols[i], why, why_len)) == 0)
      rc = sj_add_column(out, &b->cols[i]);
  for (uint32_t i = 0; i < a->n_idx && rc == 0; i++) {
    const dmh_sj_index *x = sj_index_find(b, a->idx[i].name);
    if (x && sj_index_equal(&a->idx[i], x))
      rc = sj_add_index(out, &a->idx[i]);
  }
  if (rc < 0)
    sj_why(why, why_len, "out of memory joining table structures");
  if (rc != 0)
    dmh_sj_table_free(out);
  return rc;
}

int dmh_sj_compare(const dmh_sj_table *a, const dmh_sj_table *b, int *cmp, char *why,
                   size_t why_len) {
  dmh_sj_table j;
  int rc = dmh_sj_join(a, b, &j, why, why_len);
  if (rc != 0)
    return rc;
  bool ea = dmh_sj_equal(&j, a), eb = dmh_sj_equal(&j, b);
  dmh_sj_table_free(&j);
  if (!ea && !eb) {
    sj_why(why, why_len, "neither table contains the other (their join is larger than both)");
    return 1;
  }
  *cmp = ea && eb ? 0 : eb ? -1 : 1;
  return 0;
}

int dmh_sj_join_all(const dmh_sj_table *const *tabs, size_t n, dmh_sj_table *out, size_t *bad_index,
                    char *why, size_t why_len) {
  if (dmh_sj_table_copy(tabs[0], out) != 0) {
    sj_why(why, why_len, "out of memory joining table structures");
    return -1;
  }
  for (size_t i = 1; i < n; i++) {
    dmh_sj_table next;
    int rc = dmh_sj_join(out, tabs[i], &next, why, why_len);
    dmh_sj_table_free(out);
    if (rc != 0) {
      if (bad_index)
        *bad_index = i;
      return rc;
    }
    *out = next;
  }
  return 0;
}

/* ---- partially dropped columns ------------------------------------------------------------- */

void dmh_sj_dropped_free(dmh_sj_dropped *d) {
  for (size_t i = 0; i < d->n; i++)
    free(d->e[i].member);
  free(d->e);
  memset(d, 0, sizeof *d);
}

bool dmh_sj_dropped_has(const dmh_sj_dropped *d, const char *column, const char *member) {
  for (size_t i = 0; i < d->n; i++)
    if (strcasecmp(d->e[i].column, column) == 0 && strcmp(d->e[i].member, member) == 0)
      return true;
  return false;
}

int dmh_sj_dropped_add(dmh_sj_dropped *d, const char *column, const char *member) {
  if (dmh_sj_dropped_has(d, column, member))
    return 0;
  if (d->n == d->cap) {
    size_t cap = d->cap ? 2 * d->cap : 8;
    void *p = realloc(d->e, cap * sizeof *d->e);
    if (!p)
      return -1;
    d->e = p;
    d->cap = cap;
  }
  snprintf(d->e[d->n].column, sizeof d->e[d->n].column, "%s", column);
  if (!(d->e[d->n].member = strdup(member)))
    return -1;
  d->n++;
  return 0;
}

/* Removes the entries of one column (by_column) or of one member (name compared as each is). */
static void sj_dropped_remove_if(dmh_sj_dropped *d, bool by_column, const char *name) {
  size_t k = 0;
  for (size_t i = 0; i < d->n; i++) {
    bool drop =
        by_column ? strcasecmp(d->e[i].column, name) == 0 : strcmp(d->e[i].member, name) == 0;
    if (drop)
      free(d->e[i].member);
    else
      d->e[k++] = d->e[i];
  }
  d->n = k;
}

void dmh_sj_dropped_clear_column(dmh_sj_dropped *d, const char *column) {
  sj_dropped_remove_if(d, true, column);
}

void dmh_sj_dropped_clear_member(dmh_sj_dropped *d, const char *member) {
  sj_dropped_remove_if(d, false, member);
}
