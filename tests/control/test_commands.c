/*
 * The command table (host/control/commands.def) against what is read from it by hand:
 * docs/control.md's usage block (every command's usage, no other), docs/api.md's routes table
 * (every route of the table, no other), README.md's list of dmctl commands (every one); and the
 * table itself (every option argument has its spelling, every route's command is a row taking the
 * route's arguments, the daemon's table builds). A failure names what differs.
 */
#include <CUnit/Basic.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "control.h"
#include "cunit_run.h"
#include "dmhost/fs.h"
#include "http_api.h"

static char *read_doc(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", DMHOST_SOURCE_DIR, name);
  char *text = dm_fs_read_all(path, NULL);
  if (!text)
    fprintf(stderr, "\n  cannot read %s", path);
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  return text;
}

/* The lines of `text` after the lines `start` up to the next line "```", as a
 * NULL-ended array of malloc'd strings. */
static char **block_lines(const char *text, const char *start) {
  const char *at = strstr(text, start);
  if (!at)
    fprintf(stderr, "\n  no line \"%s\"", start);
  CU_ASSERT_PTR_NOT_NULL_FATAL(at);
  at = strchr(at + strlen(start), '\n') + 1;
  char **lines = calloc(128, sizeof *lines);
  size_t n = 0;
  while (*at && n < 127) {
    size_t len = strcspn(at, "\n");
    if (len == 3 && strncmp(at, "```", 3) == 0)
      break;
    lines[n++] = strndup(at, len);
    at += len + (at[len] == '\n');
  }
  return lines;
}

static void free_lines(char **lines) {
  for (size_t i = 0; lines[i]; i++)
    free(lines[i]);
  free(lines);
}

/* docs/control.md's usage block: each row's usage once, each line a row's usage. */
#define USAGE_BLOCK                                                                                \
  "<!-- the usage of every command: host/control/commands.def (test_control_commands) -->"
static void test_control_md(void) {
  char *doc = read_doc("docs/control.md");
  char **lines = block_lines(doc, USAGE_BLOCK "\n```");
  int bad = 0;
  for (size_t i = 0; i < DMH_CMD_COUNT; i++) {
    bool found = false;
    for (size_t k = 0; lines[k] && !found; k++)
      found = strcmp(lines[k], dmh_commands[i].usage) == 0;
    if (!found) {
      fprintf(stderr, "\n  docs/control.md's usage block lacks %s: \"%s\"", dmh_commands[i].name,
              dmh_commands[i].usage);
      bad++;
    }
  }
  for (size_t k = 0; lines[k]; k++) {
    bool found = false;
    for (size_t i = 0; i < DMH_CMD_COUNT && !found; i++)
      found = strcmp(lines[k], dmh_commands[i].usage) == 0;
    if (!found) {
      fprintf(stderr, "\n  docs/control.md's usage block has \"%s\", no command's usage", lines[k]);
      bad++;
    }
  }
  /* and the commands table names each one */
  for (size_t i = 0; i < DMH_CMD_COUNT; i++) {
    char name[64];
    snprintf(name, sizeof name, "| `%s", dmh_commands[i].name);
    bool named = strstr(doc, name) != NULL;
    snprintf(name, sizeof name, "/ `%s", dmh_commands[i].name);
    named |= strstr(doc, name) != NULL;
    if (!named) {
      fprintf(stderr, "\n  docs/control.md's commands table has no row of %s",
              dmh_commands[i].name);
      bad++;
    }
  }
  CU_ASSERT_EQUAL(bad, 0);
  free_lines(lines);
  free(doc);
}

/* docs/api.md's routes table ("| `METHOD PATH` | ..."): exactly the route table. */
static void test_api_md(void) {
  char *doc = read_doc("docs/api.md");
  size_t n;
  const dmh_api_route *r = dmh_api_routes(&n);
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    char cell[256];
    snprintf(cell, sizeof cell, "\n| `%s %s` |", r[i].method, r[i].path);
    if (!strstr(doc, cell)) {
      fprintf(stderr, "\n  docs/api.md's routes table lacks %s %s", r[i].method, r[i].path);
      bad++;
    }
  }
  for (const char *at = doc; (at = strstr(at, "\n| `")); at++) {
    char method[16], path[256];
    if (sscanf(at, "\n| `%15[A-Z] %255[^`]`", method, path) != 2 || path[0] != '/')
      continue;
    bool found = false;
    for (size_t i = 0; i < n && !found; i++)
      found = strcmp(r[i].method, method) == 0 && strcmp(r[i].path, path) == 0;
    if (!found) {
      fprintf(stderr, "\n  docs/api.md has a route %s %s the table does not", method, path);
      bad++;
    }
  }
  CU_ASSERT_EQUAL(bad, 0);
  free(doc);
}

/* README.md's list ("| command | does |"): every dmctl command but help has a row. */
static void test_readme(void) {
  char *doc = read_doc("README.md");
  const char *start = strstr(doc, "\n| command | does |\n");
  CU_ASSERT_PTR_NOT_NULL_FATAL(start);
  const char *end = strstr(start + 1, "\n\n");
  size_t len = end ? (size_t)(end - start) : strlen(start);
  char *table = strndup(start, len);
  int bad = 0;
  for (size_t i = 0; i < DMH_CMD_COUNT; i++) {
    const dmh_command *c = &dmh_commands[i];
    if ((c->flags & DMH_CMD_NO_DMCTL) || i == DMH_CMD_HELP)
      continue;
    char name[64];
    snprintf(name, sizeof name, "`%s ", c->name);
    bool named = strstr(table, name) != NULL;
    snprintf(name, sizeof name, "`%s`", c->name);
    named |= strstr(table, name) != NULL;
    if (!named) {
      fprintf(stderr, "\n  README.md's list of commands lacks %s", c->name);
      bad++;
    }
  }
  CU_ASSERT_EQUAL(bad, 0);
  free(table);
  free(doc);
}

/* The table holds together: options spelled, routes onto rows that take their arguments. */
static void test_table(void) {
  size_t n_opts;
  const dmh_cmd_option *opts = dmh_cmd_options(&n_opts);
  for (size_t i = 0; i < DMH_CMD_COUNT; i++) {
    const dmh_command *c = &dmh_commands[i];
    CU_ASSERT_PTR_EQUAL(dmh_command_find(c->name), c);
    CU_ASSERT(c->summary && *c->summary);
    CU_ASSERT_EQUAL(strncmp(c->usage, c->name, strlen(c->name)), 0);
    /* a master refuses a daemon's own command: its usage there says so */
    if (c->flags & DMH_CMD_DAEMON_ONLY)
      CU_ASSERT_PTR_NOT_NULL(c->master_usage);
    for (int a = 0; a < DMH_CMD_MAX_ARGS && c->args[a].name; a++) {
      if (!(c->args[a].flags & DMH_ARG_OPT))
        continue;
      bool spelled = false;
      for (size_t o = 0; o < n_opts && !spelled; o++)
        spelled = strcmp(opts[o].arg, c->args[a].name) == 0;
      if (!spelled)
        fprintf(stderr, "\n  %s: option argument %s has no DMH_OPTION row", c->name,
                c->args[a].name);
      CU_ASSERT(spelled);
    }
  }
  size_t n;
  const dmh_api_route *r = dmh_api_routes(&n);
  for (size_t i = 0; i < n; i++) {
    if (!r[i].cmd)
      continue;
    const dmh_command *c = dmh_command_find(r[i].cmd);
    if (!c)
      fprintf(stderr, "\n  %s %s: no command %s", r[i].method, r[i].path, r[i].cmd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    for (size_t a = 0; a < DMH_API_MAX_ARGS && r[i].args[a].arg; a++) {
      if (r[i].args[a].from == DMH_API_REFUSED || r[i].args[a].from == DMH_API_IGNORED)
        continue; /* no argument: a member of DM's request refused or taken as nothing */
      bool takes = false;
      for (int k = 0; k < DMH_CMD_MAX_ARGS && c->args[k].name && !takes; k++)
        takes = strcmp(c->args[k].name, r[i].args[a].arg) == 0;
      if (!takes)
        fprintf(stderr, "\n  %s %s: %s takes no argument %s", r[i].method, r[i].path, r[i].cmd,
                r[i].args[a].arg);
      CU_ASSERT(takes);
    }
  }
  /* the daemon's table: every row has a handler (else this aborts) */
  json_object *req = json_tokener_parse("{\"cmd\": \"help\"}"), *cmds;
  json_object *resp = dmh_control_handle(NULL, req);
  CU_ASSERT_FATAL(json_object_object_get_ex(resp, "commands", &cmds));
  CU_ASSERT_EQUAL(json_object_array_length(cmds), DMH_CMD_COUNT);
  json_object_put(resp);
  json_object_put(req);
}

static int ok_fn(void *ud, const dmh_control_cmd *cmd, json_object *args, json_object *resp,
                 dm_error *err) {
  (void)ud, (void)cmd, (void)args, (void)resp, (void)err;
  return 0;
}

/* resume-task's start-time and safe-mode-duration (DM's OpenAPI start, issue 23) were the
 * daemon's only (a master's table refused them naming the argument); a master serves them too
 * now (master_start.c, master_resume_prepare): both tables take them. */
static void test_daemon_args(void) {
  static dmh_control_fn fns[DMH_CMD_COUNT];
  static dmh_control_cmd daemon[DMH_CMD_COUNT], master[DMH_CMD_COUNT];
  for (size_t i = 0; i < DMH_CMD_COUNT; i++)
    fns[i] = ok_fn;
  size_t nd = dmh_control_table(DMH_ROLE_DAEMON, fns, daemon);
  size_t nm = dmh_control_table(DMH_ROLE_MASTER, fns, master);
  const char *args[] = {"start-time", "safe-mode-duration"};
  for (size_t k = 0; k < 2; k++) {
    char line[200];
    snprintf(line, sizeof line,
             "{\"cmd\": \"resume-task\", \"args\": {\"name\": \"t\", \"%s\": \"1s\"}}", args[k]);
    json_object *req = json_tokener_parse(line), *v;
    for (int m = 0; m < 2; m++) {
      json_object *resp = m ? dmh_control_dispatch(master, nm, NULL, req)
                            : dmh_control_dispatch(daemon, nd, NULL, req);
      if (!(json_object_object_get_ex(resp, "result", &v) && json_object_get_boolean(v)))
        fprintf(stderr, "\n  the %s's answer: %s", m ? "master" : "daemon",
                json_object_to_json_string(resp));
      CU_ASSERT(json_object_object_get_ex(resp, "result", &v) && json_object_get_boolean(v));
      json_object_put(resp);
    }
    json_object_put(req);
  }
}

/* One reader of a duration argument for the daemon and a master (resume-task's
 * safe-mode-duration): Go's form taken, another text or one longer than its field refused naming
 * the argument and DM's name, absent is NULL. */
static void test_arg_duration(void) {
  static const dmh_control_cmd cmd = {.name = "resume-task", .usage = "resume-task NAME"};
  static const struct {
    const char *json;
    size_t max;
    int rc;
  } cases[] = {
      {"{\"d\": \"1m30s\"}", 0, 0},
      {"{\"d\": \"0s\"}", 8, 0},
      {"{\"d\": \"ten seconds\"}", 0, -1},
      {"{\"d\": \"-5s\"}", 0, -1},
      {"{\"d\": \"1m30s\"}", 5, -1},
      {"{\"d\": 90}", 0, -1},
      {"{}", 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_object *args = json_tokener_parse(cases[i].json);
    const char *out = "unset";
    dm_error err = {0};
    int rc = dmh_control_arg_duration(&cmd, args, "d", "start's safe_mode_time_duration",
                                      cases[i].max, &out, &err);
    CU_ASSERT_EQUAL(rc, cases[i].rc);
    if (rc < 0) {
      CU_ASSERT_EQUAL(err.code, DM_ERR_CONTROL_REQUEST);
      /* the argument by name; DM's name too, but for a value that is no string at all */
      CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "\"d\""));
      CU_ASSERT(strstr(err.message, "safe_mode_time_duration") || strstr(cases[i].json, "90"));
    } else if (strcmp(cases[i].json, "{}") == 0) {
      CU_ASSERT_PTR_NULL(out);
    } else {
      CU_ASSERT_PTR_NOT_NULL(out);
    }
    json_object_put(args);
  }
}

/* dmctl's parser, read from the rows: a few lines and the request each makes. */
static void test_parser(void) {
  static const struct {
    const char *line, *want; /* want NULL: refused, `line`'s error text after "msg" */
    const char *error;
  } cases[] = {
      {"pause-task t", "{\"cmd\":\"pause-task\",\"args\":{\"name\":\"t\"}}", NULL},
      {"start-relay -s s w1 w2",
       "{\"cmd\":\"start-relay\",\"args\":{\"worker\":[\"w1\",\"w2\"],\"source\":\"s\"}}", NULL},
      {"list-member --worker", "{\"cmd\":\"list-member\",\"args\":{\"worker\":true}}", NULL},
      /* DM's one-letter flags (DMH_ARG_SHORT) */
      {"list-member -l -m", "{\"cmd\":\"list-member\",\"args\":{\"leader\":true,\"master\":true}}",
       NULL},
      {"offline-member -w -n w1",
       "{\"cmd\":\"offline-member\",\"args\":{\"worker\":true,\"name\":\"w1\"}}", NULL},
      {"offline-member --master --name m1",
       "{\"cmd\":\"offline-member\",\"args\":{\"master\":true,\"name\":\"m1\"}}", NULL},
      {"offline-member -w", NULL, "offline-member: -n NAME is required"},
      {"pause-task -w t", NULL, "pause-task: unknown option -w"},
      {"transfer-source s w",
       "{\"cmd\":\"transfer-source\",\"args\":{\"source\":\"s\",\"worker\":"
       "\"w\"}}",
       NULL},
      {"operate-source show s",
       "{\"cmd\":\"operate-source\",\"args\":{\"op\":\"show\",\"source\":"
       "\"s\"}}",
       NULL},
      {"purge-relay -s s -f mysql-bin.1",
       "{\"cmd\":\"purge-relay\",\"args\":{\"source\":\"s\",\"file\":\"mysql-bin.1\"}}", NULL},
      {"query-lag t", NULL, "unknown command \"query-lag\""},
      {"pause-task -s a --source b,c t",
       "{\"cmd\":\"pause-task\",\"args\":{\"name\":\"t\",\"source\":[\"a\",\"b\",\"c\"]}}", NULL},
      {"query-status -s a", "{\"cmd\":\"query-status\",\"args\":{\"source\":[\"a\"]}}", NULL},
      {"stop-task -s a, t", NULL, "stop-task: -s: an empty name in \"a,\""},
      {"pause-task", NULL, "pause-task: missing argument (usage: pause-task [-s SOURCE ...] NAME)"},
      {"query-status a b", NULL, "query-status: too many arguments"},
      {"purge-relay -s s", NULL, "purge-relay: -f FILE is required"},
      {"check-task -s s t.cfg", NULL, "check-task: -s is not an option of this command"},
      {"swap-unit t --unit sync", NULL, "--unit KIND and --path NEW.so are required"},
      {"operate-source create -s s a.cfg", NULL, "-s is not an option of this command"},
      /* issue 23: update takes the file (and --keep-password), enable/disable the source */
      {"operate-source update /a.cfg --keep-password",
       "{\"cmd\":\"operate-source\",\"args\":{\"keep-password\":true,\"op\":\"update\","
       "\"path\":\"\\/a.cfg\"}}",
       NULL},
      {"operate-source disable s",
       "{\"cmd\":\"operate-source\",\"args\":{\"op\":\"disable\",\"source\":\"s\"}}", NULL},
      {"operate-source enable", NULL, "operate-source: -s SOURCE is required"},
      {"operate-source update", NULL, "operate-source: missing argument"},
      {"source-schemas -s s", NULL, "unknown command \"source-schemas\""},
      {"list-member --nope", NULL, "list-member: unknown option --nope"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char buf[256], *argv[16];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", cases[i].line);
    for (char *t = strtok(buf, " "); t && argc < 16; t = strtok(NULL, " "))
      argv[argc++] = t;
    dm_error err;
    json_object *req = dmh_command_request(argc, argv, &err);
    if (cases[i].want) {
      CU_ASSERT_PTR_NOT_NULL_FATAL(req);
      const char *got = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
      if (strcmp(got, cases[i].want) != 0)
        fprintf(stderr, "\n  %s: got %s", cases[i].line, got);
      CU_ASSERT_STRING_EQUAL(got, cases[i].want);
    } else {
      CU_ASSERT_PTR_NULL(req);
      CU_ASSERT_EQUAL(err.code, DM_ERR_CONTROL_REQUEST);
      if (!strstr(err.message, cases[i].error))
        fprintf(stderr, "\n  %s: got \"%s\"", cases[i].line, err.message);
      CU_ASSERT_PTR_NOT_NULL(strstr(err.message, cases[i].error));
    }
    json_object_put(req);
  }
}

int main(void) {
  const dmh_cunit_test tests[] = {
      {"docs/control.md has every command's usage, and no other", test_control_md},
      {"docs/api.md has every route, and no other", test_api_md},
      {"README.md lists every dmctl command", test_readme},
      {"the table holds together; the daemon's table builds", test_table},
      {"dmctl's parser from the rows", test_parser},
      {"resume-task's start options: the daemon and a master take them", test_daemon_args},
      {"a duration argument: Go's form, bounded, refusals name DM's setting", test_arg_duration},
  };
  return dmh_cunit_run("commands", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
