/*
 * What the files of the YAML reader share (config_yaml.c: values, members, the file;
 * config_yaml_doc.c: the text written and the YAML document; config_yaml_dm.c: DM's keys that
 * dmhost names otherwise or does not do; config_yaml_units.c: mydumpers, loaders, syncers).
 * Internal to host/config.
 */
#ifndef DMH_CONFIG_YAML_INTERNAL_H
#define DMH_CONFIG_YAML_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#include "config_util.h"
#include "config_yaml.h"
#include "dmhost/buf.h"

/* The text written: the SDK's buffer (b.oom when memory ran out), with the line being written
 * and a cap. */
typedef struct yout {
  dm_buf b;
  int line; /* the line being written, from 1 */
  bool big; /* beyond YAML_OUT_MAX: aliases expanded into too much text */
} yout;

/* More output than this is an alias bomb (a few lines of anchors that expand a billion times). */
#define YAML_OUT_MAX (4 * DMH_CFG_TEXT_MAX)

/* A translation: the document, the text, what is being read. */
typedef struct ytr {
  dmh_cfg_ctx *c;
  yaml_document_t doc;
  yaml_node_t *root;
  yout o;
  bool task;
  int depth;
} ytr;

/* Deeper than this is an alias loop or not a config. */
#define YAML_DEPTH_MAX 32

typedef enum ykind { YS_NULL, YS_BOOL, YS_INT, YS_FLOAT, YS_STR } ykind;

/* The members of a mapping in order, merge keys (`<<: *anchor`) resolved as go-yaml does: the
 * merged ones first, a key given in the mapping itself wins. */
typedef struct ypair {
  yaml_node_t *k, *v;
} ypair;

typedef struct yunit_kind {
  const char *dm;      /* "mydumper": the instance's inline config, the rows' ctx */
  const char *map;     /* "mydumpers" */
  const char *name;    /* "mydumper-config-name" */
  const char *thread;  /* "mydumper-thread" */
  const char *to;      /* "threads": what the thread count sets */
  const char *section; /* "dump" */
} yunit_kind;

#define YUNIT_MAX 16

/* One unit's effective settings for one instance: key, libconfig literal, YAML line. */
typedef struct yunit {
  struct {
    const char *key;
    char lit[400]; /* the sync's `validator` group is the longest (yval_read) */
    int line;
    bool extra; /* from extra-args: the mydumper's own keys do not override it */
  } e[YUNIT_MAX];
  int n;
} yunit;

/*
 * ctx: where the key is ("task", "source", "db" for target-database and from, "instance", the unit
 * configs "mydumper", "loader", "syncer", and a group's own name for its members: "checker").
 * to:  the unit section's setting it becomes (unit configs only), NULL: none.
 * ok:  NULL refused whatever it holds; "*" accepted, no effect here; "{}" accepted empty;
 *      "group" a group whose members are judged by the rows of ctx = this key; else the values
 *      accepted (DM's default, or what dmhost does anyway), '|'-separated, "" the empty string,
 *      compared without regard to case.
 * why: said in the refusal (and docs/config.md, "DM's YAML files", lists every row).
 */
typedef struct ydm_key {
  const char *ctx, *key, *to, *ok, *why;
} ydm_key;

extern const yunit_kind ykinds[3];

/* DM's validators entry (ValidatorConfig) at `cfg` as the sync's `validator` group literal,
 * "{ mode = \"full\"; ... }", into out[size] (config_yaml_units.c). 0, or -1 (refused, naming
 * path). */
int yval_read(ytr *t, const yaml_node_t *cfg, const char *path, char *out, size_t size);

void yo_put(yout *o, const char *s, size_t n);

void yo_puts(yout *o, const char *s);

void yo_fmt(yout *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Go on to `line` (never back: a line already passed keeps what follows on the current one). */
void yo_at(yout *o, int line);

/* A libconfig string literal: C escapes, a control byte as \xNN, so a multi-line YAML string
 * stays on its line. */
void yo_string(yout *o, const char *s, size_t n);

int yline(const yaml_node_t *n);

const char *ytext(const yaml_node_t *n);

yaml_node_t *ynode(ytr *t, int id);

/* What a scalar is, as DM's YAML library (go-yaml, YAML 1.1) reads it: a plain `true`, `on`, `123`
 * is a bool or int; a quoted one is a string. (libyaml's document API gives every scalar without a
 * tag the str tag, so an explicit `!!str 1` cannot be told apart: it reads as 1.) */
ykind yscalar(const yaml_node_t *n, bool *b, long long *iv);

bool ynull(const yaml_node_t *n);

/* NULL with *n = -1 on failure (c->err filled); the caller frees. */
ypair *ypairs(ytr *t, const yaml_node_t *map, int *n);

yaml_node_t *ymember(ytr *t, const yaml_node_t *map, const char *key);

/* A setting's path for messages ("mysql-instances.[0].meta"): `path` then `.key`, or `.[idx]`
 * when key is NULL. A path longer than the buffer is cut (it is only said, never looked up). */
void ysub(char *out, size_t size, const char *path, const char *key, int idx);

const ydm_key *ydm_find(const char *ctx, const char *key);

/* A DM key of `ctx` with value `v`: 1 accepted with no effect (not written), 0 not a key of this
 * table, -1 refused (c->err). */
int ydm_judge(ytr *t, const char *ctx, const yaml_node_t *k, const yaml_node_t *v,
              const char *path);

int ydm_refuse(ytr *t, const yaml_node_t *at, const char *path, const char *ok, const char *why);

void yemit_scalar(ytr *t, const yaml_node_t *n, int want);

/* dmhost runs one dump, load and sync section per task: every instance must resolve to the same
 * settings; they are written after the last line of the file (or on it). */
int yemit_units(ytr *t);

/* A DM unit config (a mydumpers entry, an instance's mydumper) into `u`. */
int yunit_read(ytr *t, const yunit_kind *k, const yaml_node_t *cfg, const char *path, yunit *u);
/* Settings from a mydumper's extra-args (over the mydumper's own keys), and one's literal. */
void yunit_set_extra(yunit *u, const char *key, const char *lit, int line);
const char *yunit_extra(const yunit *u, const char *key);
/* A mydumper's `extra-args` (dumpling's options) into `u` (config_yaml_extra.c); -1 refused. */
int yextra_args(ytr *t, const yaml_node_t *k, const yaml_node_t *v, const char *path, yunit *u);

#endif
