/*
 * The settings table (host/config/config_settings.def) against what it governs.
 * - docs/config.md: every setting of a documented scope has a row under its scope's heading with
 *   the table's type and default, and no row names a setting the table does not have. The checker
 *   is also run on copies of the page with a row dropped, one renamed and a default and a type
 *   changed, each of which it must catch.
 * - The parser: every setting the table accepts is read (a value of the wrong type is refused
 *   naming it), so a row without its use is caught rather than silently accepted and ignored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_util.h"
#include "cunit_run.h"
#include "dmhost/fs.h"
#include "test_file.h"

#define DOC_CELLS 8

/* The docs' page, read once. */
static char *doc_text;

static char *doc_read(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s)
    s[n] = '\0';
  fclose(f);
  return s;
}

/* The cells of a table line ("| a | b |"), trimmed, into cells[]; returns how many. */
static int doc_cells(const char *line, size_t len, char cells[][512], int max) {
  int n = 0;
  const char *p = line + 1, *end = line + len;
  while (p < end && n < max) {
    const char *bar = memchr(p, '|', (size_t)(end - p));
    if (!bar)
      break;
    const char *a = p, *b = bar;
    while (a < b && *a == ' ')
      a++;
    while (b > a && b[-1] == ' ')
      b--;
    snprintf(cells[n++], 512, "%.*s", (int)(b - a), a);
    p = bar + 1;
  }
  return n;
}

/* The scope whose rows sit in `parent`'s table as `path.key`, or DMH_SCOPE_NONE. */
static dmh_cfg_scope doc_child(dmh_cfg_scope parent, const char *path, size_t len) {
  for (int s = 0; s < DMH_SCOPE_COUNT; s++) {
    const dmh_cfg_scope_info *i = &dmh_cfg_scopes[s];
    if (i->parent == parent && i->heading && !i->heading[0] && strlen(i->path) == len &&
        strncmp(i->path, path, len) == 0)
      return (dmh_cfg_scope)s;
  }
  return DMH_SCOPE_NONE;
}

/* A scope is documented in a table: its own, or its parent's (heading ""). */
static bool doc_scope_tabled(dmh_cfg_scope s) {
  const char *h = dmh_cfg_scopes[s].heading;
  if (!h)
    return false;
  return h[0] || doc_scope_tabled(dmh_cfg_scopes[s].parent);
}

static int doc_problem(char *report, size_t size, const char *fmt, const char *a, const char *b,
                       const char *c) {
  size_t len = strlen(report);
  snprintf(report + len, size - len, fmt, a, b, c);
  return 1;
}

/* One row of the docs' table of `scope`: each `key` of its first cell. */
static int doc_row(dmh_cfg_scope scope, char cells[][512], int n, int col_type, int col_default,
                   bool *seen, char *report, size_t size) {
  int problems = 0;
  const char *heading = dmh_cfg_scopes[scope].heading;
  for (const char *p = strchr(cells[0], '`'); p; p = strchr(p, '`')) {
    const char *q = strchr(p + 1, '`');
    if (!q)
      break;
    char key[128];
    snprintf(key, sizeof key, "%.*s", (int)(q - p - 1), p + 1);
    p = q + 1;
    dmh_cfg_scope in = scope;
    const char *name = key;
    const char *dot = strchr(key, '.');
    if (dot) {
      in = doc_child(scope, key, (size_t)(dot - key));
      name = dot + 1;
    }
    const dmh_cfg_setting *s = in == DMH_SCOPE_NONE ? NULL : dmh_cfg_setting_in(in, name);
    if (!s) {
      problems += doc_problem(report, size,
                              "  under \"%s\": `%s` is no setting there (config_settings.def)%s\n",
                              heading, key, "");
      continue;
    }
    seen[s - dmh_cfg_settings] = true;
    char want[256];
    if (col_type >= 0 && col_type < n && strcmp(cells[col_type], dmh_cfg_type_doc(s->type)) != 0)
      problems +=
          doc_problem(report, size, "  `%s`: type \"%s\" in the docs, \"%s\" in the table\n", key,
                      cells[col_type], dmh_cfg_type_doc(s->type));
    if (col_default >= 0 && col_default < n &&
        strcmp(cells[col_default], dmh_cfg_default_doc(s, want, sizeof want)) != 0)
      problems +=
          doc_problem(report, size, "  `%s`: default \"%s\" in the docs, \"%s\" in the table\n",
                      key, cells[col_default], want);
  }
  return problems;
}

/* The problems of `text` against the table, described in report; 0 when they agree. */
static int doc_check(const char *text, char *report, size_t size) {
  bool seen[DMH_SET_COUNT] = {false};
  int problems = 0;
  report[0] = '\0';
  for (int scope = 0; scope < DMH_SCOPE_COUNT; scope++) {
    const char *heading = dmh_cfg_scopes[scope].heading;
    if (!heading || !heading[0])
      continue;
    const char *at = text;
    size_t hl = strlen(heading);
    while ((at = strstr(at, heading)) && !((at == text || at[-1] == '\n') && at[hl] == '\n'))
      at += hl;
    if (!at) {
      problems += doc_problem(report, size, "  no heading \"%s\"%s%s\n", heading, "", "");
      continue;
    }
    /* the first table after the heading: a header, the |---| line, the rows */
    const char *line = at;
    while (*line && *line != '|')
      line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line);
    char cells[DOC_CELLS][512];
    int col_type = -1, col_default = -1;
    bool header = true;
    while (*line == '|') {
      const char *eol = strchr(line, '\n');
      size_t len = eol ? (size_t)(eol - line) : strlen(line);
      int n = doc_cells(line, len, cells, DOC_CELLS);
      if (header) {
        for (int i = 0; i < n; i++) {
          if (strcmp(cells[i], "type") == 0)
            col_type = i;
          if (strcmp(cells[i], "default") == 0)
            col_default = i;
        }
        header = false;
      } else if (n > 0 && strncmp(cells[0], "---", 3) != 0) {
        problems +=
            doc_row((dmh_cfg_scope)scope, cells, n, col_type, col_default, seen, report, size);
      }
      line += len + (eol ? 1 : 0);
    }
  }
  for (int i = 0; i < DMH_SET_COUNT; i++) {
    const dmh_cfg_setting *s = &dmh_cfg_settings[i];
    if (seen[i] || !doc_scope_tabled(s->scope))
      continue;
    const dmh_cfg_scope_info *sc = &dmh_cfg_scopes[s->scope];
    problems += doc_problem(report, size, "  `%s` (%s) is in no row under \"%s\"\n", s->key, sc->id,
                            sc->heading[0] ? sc->heading : dmh_cfg_scopes[sc->parent].heading);
  }
  return problems;
}

static void test_docs_agree(void) {
  char report[8192];
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc_text);
  int problems = doc_check(doc_text, report, sizeof report);
  if (problems)
    fprintf(stderr, "\ndocs/config.md disagrees with host/config/config_settings.def:\n%s", report);
  CU_ASSERT_EQUAL(problems, 0);
}

/* A copy of the page with `from` (once) replaced by `to`. */
static char *doc_edit(const char *from, const char *to) {
  const char *at = strstr(doc_text, from);
  CU_ASSERT_PTR_NOT_NULL_FATAL(at);
  size_t head = (size_t)(at - doc_text), fl = strlen(from), tl = strlen(to);
  char *s = malloc(strlen(doc_text) - fl + tl + 1);
  memcpy(s, doc_text, head);
  memcpy(s + head, to, tl);
  strcpy(s + head + tl, at + fl);
  return s;
}

static void doc_expect(const char *from, const char *to, const char *problem) {
  char report[8192];
  char *edited = doc_edit(from, to);
  int problems = doc_check(edited, report, sizeof report);
  free(edited);
  if (problems < 1 || !strstr(report, problem)) {
    fprintf(stderr, "\n  replacing %s: want \"%s\", got %d:\n%s", from, problem, problems, report);
    CU_FAIL("the check missed a drift");
  }
}

static void test_docs_drift_caught(void) {
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc_text);
  /* a row dropped, a row for a setting that does not exist, a default or a type changed */
  doc_expect("| `stop-timeout` |", "| stop-timeout |", "`stop-timeout` (SUPERVISOR) is in no row");
  doc_expect("| `socket` |", "| `sockets` |", "`sockets` is no setting there");
  doc_expect("| `port` | integer | `3306` |", "| `port` | integer | `3307` |",
             "`port`: default \"`3307`\"");
  doc_expect("| `enable-gtid` | boolean |", "| `enable-gtid` | string |",
             "`enable-gtid`: type \"string\"");
  doc_expect("| `meta.binlog-pos` |", "| `meta.binlog-post` |", "`meta.binlog-post` is no setting");
}

/* The table itself: each key once per scope, ranges around their defaults, file-mode's default the
 * SDK's. */
static void test_table_consistent(void) {
  for (int i = 0; i < DMH_SET_COUNT; i++) {
    const dmh_cfg_setting *s = &dmh_cfg_settings[i];
    CU_ASSERT_PTR_EQUAL(dmh_cfg_setting_in(s->scope, s->key), s);
    if (s->type == DMH_CFG_T_INT) {
      CU_ASSERT(s->min <= s->max);
      CU_ASSERT(s->dnum == 0 || (s->dnum >= s->min && s->dnum <= s->max));
    }
    if (s->update == DMH_CFG_UPD_FREE)
      CU_ASSERT_PTR_NULL(s->why);
  }
  const dmh_cfg_setting *modes[] = {&dmh_cfg_settings[DMH_SET_SRC_FILE_MODE],
                                    &dmh_cfg_settings[DMH_SET_TASK_FILE_MODE]};
  for (size_t i = 0; i < 2; i++)
    CU_ASSERT_EQUAL(strtoul(modes[i]->dstr, NULL, 8), DM_FS_FILE_MODE);
}

/* ---- every row is read ---- */

#define SRC_BASE "source-id = \"s\";\nfrom = { host = \"h\"; user = \"u\"; };\n"
#define TASK_BASE                                                                                  \
  "name = \"t\";\ntask-mode = \"all\";\n"                                                          \
  "target-database = { host = \"h\"; user = \"u\"; };\n"                                           \
  "mysql-instances = ( { source-id = \"s\"; } );\n"

/* Where a scope's settings go in a file that is valid without them: the file (source or task), the
 * text around the group's members, and the members it needs (a setting under test replaces its
 * own). */
typedef struct scope_frame {
  bool source;
  const char *before, *after;
  const char *base[5][2];
} scope_frame;

static const scope_frame frames[DMH_SCOPE_COUNT] = {
    [DMH_SCOPE_SOURCE] = {true,
                          "",
                          "",
                          {{"source-id", "\"s\""}, {"from", "{ host = \"h\"; user = \"u\"; }"}}},
    [DMH_SCOPE_TASK] = {false,
                        "",
                        "",
                        {{"name", "\"t\""},
                         {"task-mode", "\"all\""},
                         {"target-database", "{ host = \"h\"; user = \"u\"; }"},
                         {"mysql-instances", "( { source-id = \"s\"; } )"}}},
    [DMH_SCOPE_DB] = {true,
                      "source-id = \"s\";\nfrom = {\n",
                      "};\n",
                      {{"host", "\"h\""}, {"user", "\"u\""}}},
    [DMH_SCOPE_SECURITY] =
        {true,
         "source-id = \"s\";\nfrom = { host = \"h\"; user = \"u\"; security = {\n",
         "}; };\n",
         {{"ssl-ca", "\"" DMH_DOCS_DIR "/config.md\""}}},
    [DMH_SCOPE_SOURCE_UNIT_PATHS] = {true, SRC_BASE "unit-paths = {\n", "};\n", {{NULL, NULL}}},
    [DMH_SCOPE_TASK_UNIT_PATHS] = {false, TASK_BASE "unit-paths = {\n", "};\n", {{NULL, NULL}}},
    [DMH_SCOPE_INSTANCE] =
        {false,
         "name = \"t\";\ntask-mode = \"all\";\ntarget-database = { host = \"h\"; "
         "user = \"u\"; };\nmysql-instances = ( {\n",
         "} );\n",
         {{"source-id", "\"s\""}}},
    [DMH_SCOPE_META] = {false,
                        "name = \"t\";\ntask-mode = \"all\";\ntarget-database = { host = \"h\"; "
                        "user = \"u\"; };\nmysql-instances = ( { source-id = \"s\"; meta = {\n",
                        "}; } );\n",
                        {{"binlog-name", "\"f\""}}},
    [DMH_SCOPE_BAL] = {false, TASK_BASE "block-allow-list = { b = {\n", "}; };\n", {{NULL, NULL}}},
    [DMH_SCOPE_TABLE] = {false,
                         TASK_BASE "block-allow-list = { b = { do-tables = ( {\n",
                         "} ); }; };\n",
                         {{"db-name", "\"d\""}, {"tbl-name", "\"t\""}}},
    [DMH_SCOPE_ROUTE] = {false,
                         TASK_BASE "routes = { r = {\n",
                         "}; };\n",
                         {{"schema-pattern", "\"s\""}, {"target-schema", "\"t\""}}},
    [DMH_SCOPE_EXTRACT_TABLE] = {false,
                                 TASK_BASE "routes = { r = { schema-pattern = \"s\"; "
                                           "target-schema = \"t\"; extract-table = {\n",
                                 "}; }; };\n",
                                 {{"table-regexp", "\"t_(.*)\""}, {"target-column", "\"c\""}}},
    [DMH_SCOPE_EXTRACT_SCHEMA] = {false,
                                  TASK_BASE "routes = { r = { schema-pattern = \"s\"; "
                                            "target-schema = \"t\"; extract-schema = {\n",
                                  "}; }; };\n",
                                  {{"schema-regexp", "\"s_(.*)\""}, {"target-column", "\"c\""}}},
    [DMH_SCOPE_EXTRACT_SOURCE] = {false,
                                  TASK_BASE "routes = { r = { schema-pattern = \"s\"; "
                                            "target-schema = \"t\"; extract-source = {\n",
                                  "}; }; };\n",
                                  {{"source-regexp", "\"(.*)\""}, {"target-column", "\"c\""}}},
    [DMH_SCOPE_FILTER] = {false,
                          TASK_BASE "filters = { f = {\n",
                          "}; };\n",
                          {{"schema-pattern", "\"s\""}, {"action", "\"Do\""}}},
    [DMH_SCOPE_EXPR] = {false,
                        TASK_BASE "expression-filter = { e = {\n",
                        "}; };\n",
                        {{"schema", "\"s\""},
                         {"table", "\"t\""},
                         {"insert-value-expr", "\"c > 1\""}}},
    [DMH_SCOPE_SUPERVISOR] = {false, TASK_BASE "supervisor = {\n", "};\n", {{NULL, NULL}}},
    [DMH_SCOPE_AUTO_RESUME] = {false,
                               TASK_BASE "supervisor = { auto-resume = {\n",
                               "}; };\n",
                               {{NULL, NULL}}},
};

/* The file of `frame` with setting `s` given a value of the wrong type. */
static void frame_text(const scope_frame *f, const dmh_cfg_setting *s, char *out, size_t size) {
  bool scalar =
      s->type == DMH_CFG_T_INT || s->type == DMH_CFG_T_BOOL || s->type == DMH_CFG_T_SECONDS;
  size_t len = (size_t)snprintf(out, size, "%s", f->before);
  for (int i = 0; i < 5 && f->base[i][0]; i++) {
    const char *key = f->base[i][0], *value = f->base[i][1];
    if (strcmp(key, s->key) == 0)
      continue;
    /* the two ways to name a chain exclude each other */
    if (strcmp(s->key, "units") == 0 && strcmp(key, "task-mode") == 0)
      continue;
    /* secret-key-path is read for an encrypted password */
    if (strcmp(s->key, "secret-key-path") == 0 &&
        (strcmp(key, "from") == 0 || strcmp(key, "target-database") == 0))
      value = "{ host = \"h\"; user = \"u\"; password-encrypted = \"x\"; }";
    len += (size_t)snprintf(out + len, size - len, "%s = %s;\n", key, value);
  }
  len += (size_t)snprintf(out + len, size - len, "%s = %s;\n", s->key, scalar ? "\"x\"" : "7");
  snprintf(out + len, size - len, "%s", f->after);
}

static void test_every_setting_read(void) {
  char dir[] = "/tmp/dmh-settings-XXXXXX";
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  char path[sizeof dir + 16];
  snprintf(path, sizeof path, "%s/f.cfg", dir);
  /* each frame is valid as it is */
  for (int sc = 0; sc < DMH_SCOPE_COUNT; sc++) {
    const scope_frame *f = &frames[sc];
    char text[2048];
    size_t len = (size_t)snprintf(text, sizeof text, "%s", f->before);
    for (int i = 0; i < 5 && f->base[i][0]; i++)
      len += (size_t)snprintf(text + len, sizeof text - len, "%s = %s;\n", f->base[i][0],
                              f->base[i][1]);
    snprintf(text + len, sizeof text - len, "%s", f->after);
    dmh_test_writef(dir, "f.cfg", "%s", text);
    dm_error err;
    memset(&err, 0, sizeof err);
    dmh_source_config *s = NULL;
    dmh_task_config *t = NULL;
    int rc =
        f->source ? dmh_source_config_load(path, &s, &err) : dmh_task_config_load(path, &t, &err);
    if (rc != 0) {
      fprintf(stderr, "\n  the frame of %s does not load: %s\n%s", dmh_cfg_scopes[sc].id,
              err.message, text);
      CU_FAIL("a frame");
    }
    dmh_source_config_free(s);
    dmh_task_config_free(t);
  }
  for (int i = 0; i < DMH_SET_COUNT; i++) {
    const dmh_cfg_setting *set = &dmh_cfg_settings[i];
    char text[2048], want[160];
    frame_text(&frames[set->scope], set, text, sizeof text);
    dmh_test_writef(dir, "f.cfg", "%s", text);
    dm_error err;
    memset(&err, 0, sizeof err);
    dmh_source_config *s = NULL;
    dmh_task_config *t = NULL;
    int rc = frames[set->scope].source ? dmh_source_config_load(path, &s, &err)
                                       : dmh_task_config_load(path, &t, &err);
    snprintf(want, sizeof want, "%s` in the ", set->key);
    if (rc != -1 || err.code != DM_ERR_CONFIG_INVALID || !strstr(err.message, want)) {
      fprintf(stderr, "\n  `%s` (%s) of the wrong type is not refused as such: rc %d [%d] %s\n%s",
              set->key, dmh_cfg_scopes[set->scope].id, rc, err.code, err.message, text);
      CU_FAIL("a setting the parser does not read");
    }
    dmh_source_config_free(s);
    dmh_task_config_free(t);
  }
  unlink(path);
  rmdir(dir);
}

static int docs_init(void) {
  doc_text = doc_read(DMH_DOCS_DIR "/config.md");
  return doc_text ? 0 : -1;
}

static int docs_clean(void) {
  free(doc_text);
  return 0;
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"docs/config.md agrees with the settings table", test_docs_agree},
      {"a drift of the docs is caught", test_docs_drift_caught},
      {"the settings table is consistent", test_table_consistent},
      {"the parser reads every setting of the table", test_every_setting_read},
  };
  return dmh_cunit_run("config-settings", docs_init, docs_clean, tests,
                       sizeof tests / sizeof tests[0]);
}
