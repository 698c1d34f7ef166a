/*
 * The programs' common flag groups (host/cli_flag.h): a program's getopt options are its own and
 * those of the groups it lists, each once; a group's option is taken only by a program listing the
 * group (a master's -p is its --etcd-prefix, not --plugin-dir); dmctl's form of the same groups
 * ("-d X", "--state-dir=X", "--tls-ca X"); the TLS group's all-three-or-none.
 */
#include <CUnit/Basic.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli_flag.h"
#include "cunit_run.h"
#include "dmhost/sdk.h"
#include "log.h"

static int count(const struct option *o, const char *name) {
  int n = 0;
  for (; o->name; o++)
    n += strcmp(o->name, name) == 0;
  return n;
}

static void test_longopts(void) {
  static const struct option own[] = {{"socket", required_argument, NULL, 's'}, {NULL, 0, NULL, 0}};
  dmh_cli_common f = {.groups = DMH_CLI_STATE_DIR | DMH_CLI_LOG | DMH_CLI_TLS, .prog = "test"};
  struct option out[DMH_CLI_MAX_LONGOPTS];
  const struct option *o = dmh_cli_longopts(&f, own, out);
  CU_ASSERT_EQUAL(count(o, "socket"), 1);
  CU_ASSERT_EQUAL(count(o, "state-dir"), 1);
  CU_ASSERT_EQUAL(count(o, "log-level"), 1);
  CU_ASSERT_EQUAL(count(o, "log-format"), 1);
  CU_ASSERT_EQUAL(count(o, "tls-ca"), 1);
  CU_ASSERT_EQUAL(count(o, "tls-allowed-cn"), 0); /* not listed */
  CU_ASSERT_EQUAL(count(o, "plugin-dir"), 0);

  char *argv[] = {"prog",        "--state-dir", "/s", "-s", "sock", "--tls-ca=ca.pem",
                  "--log-level", "warn",        NULL};
  int argc = 8, c;
  const char *sock = NULL;
  optind = 1;
  while ((c = getopt_long(argc, argv, "d:s:", o, NULL)) != -1) {
    int r = dmh_cli_common_flag(&f, c, optarg);
    CU_ASSERT(r >= 0);
    if (r == 0 && c == 's')
      sock = optarg;
  }
  CU_ASSERT_STRING_EQUAL(f.state_dir, "/s");
  CU_ASSERT_STRING_EQUAL(f.tls.ca, "ca.pem");
  CU_ASSERT_STRING_EQUAL(sock, "sock");
  CU_ASSERT_EQUAL(dmh_log_set_level(DM_LOG_INFO), DM_LOG_WARN);
  /* a bad value is a usage error, printed */
  CU_ASSERT_EQUAL(dmh_cli_common_flag(&f, 'l', "loud"), -1);
  /* a program without the plugin group keeps its own 'p' */
  CU_ASSERT_EQUAL(dmh_cli_common_flag(&f, 'p', "/prefix"), 0);
  CU_ASSERT_PTR_NULL(f.plugin_dir);
}

static void test_dmctl_form(void) {
  dmh_cli_common f = {.groups = DMH_CLI_STATE_DIR | DMH_CLI_TLS, .prog = "dmctl"};
  char *argv[] = {"-d", "/a", "--state-dir=/b", "--tls-key", "k", "--tls-allowed-cn", "x", "-d"};
  int argc = 8, i = 0;
  CU_ASSERT_EQUAL(dmh_cli_common_arg(&f, argc, argv, &i), 1);
  CU_ASSERT_STRING_EQUAL(f.state_dir, "/a");
  CU_ASSERT_EQUAL(i, 1);
  i = 2;
  CU_ASSERT_EQUAL(dmh_cli_common_arg(&f, argc, argv, &i), 1);
  CU_ASSERT_STRING_EQUAL(f.state_dir, "/b");
  i = 3;
  CU_ASSERT_EQUAL(dmh_cli_common_arg(&f, argc, argv, &i), 1);
  CU_ASSERT_STRING_EQUAL(f.tls.key, "k");
  i = 5; /* a server's flag: not dmctl's */
  CU_ASSERT_EQUAL(dmh_cli_common_arg(&f, argc, argv, &i), 0);
  i = 7; /* the value is missing */
  CU_ASSERT_EQUAL(dmh_cli_common_arg(&f, argc, argv, &i), -1);

  dm_error err;
  CU_ASSERT_EQUAL(dmh_cli_tls_given(&f.tls, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONTROL_REQUEST);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "--tls-ca --tls-cert missing"));
  dmh_cli_tls none = {0}, all = {"a", "b", "c", NULL};
  CU_ASSERT_EQUAL(dmh_cli_tls_given(&none, &err), 0);
  CU_ASSERT_EQUAL(dmh_cli_tls_given(&all, &err), 1);
}

/* config master|worker's text: the command line again, under the table's long names */
static void test_settings_text(void) {
  static const struct option own[] = {
      {"name", required_argument, NULL, 'n'}, {"listen", required_argument, NULL, 'L'},
      {"http", required_argument, NULL, 'L'}, {"flag", no_argument, NULL, 'f'},
      {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
  };
  dmh_cli_common f = {.groups = DMH_CLI_STATE_DIR | DMH_CLI_TLS, .prog = "serve"};
  struct option longopts[DMH_CLI_MAX_LONGOPTS];
  dmh_cli_longopts(&f, own, longopts);
  char *argv[] = {"serve",     "-n",   "m1", "--http=127.0.0.1:0", "-d", "/s d", "--flag",
                  "--tls-key", "it's", "-h", "--state-dir",        ""};
  char *text = dmh_cli_settings_text(12, argv, "n:L:fhd:", longopts);
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  /* short forms and the alias under the first long name; quoted where not plain; no --help */
  CU_ASSERT_STRING_EQUAL(text, "--name m1\n--listen 127.0.0.1:0\n--state-dir '/s d'\n--flag\n"
                               "--tls-key 'it'\\''s'\n--state-dir ''\n");
  /* the effective value replaces the first line of the flag; one not given is added */
  CU_ASSERT_EQUAL(dmh_cli_settings_put(&text, "listen", "127.0.0.1:4000"), 0);
  CU_ASSERT_EQUAL(dmh_cli_settings_put(&text, "state", "/x"), 0); /* not --state-dir's line */
  CU_ASSERT_STRING_EQUAL(text, "--name m1\n--listen 127.0.0.1:4000\n--state-dir '/s d'\n"
                               "--flag\n--tls-key 'it'\\''s'\n--state-dir ''\n--state /x\n");
  free(text);
}

int main(void) {
  const dmh_cunit_test tests[] = {
      {"a program's options: its own and its groups', each group's parse", test_longopts},
      {"dmctl's form of the groups; TLS all three or none", test_dmctl_form},
      {"a daemon's settings: its command line, one flag a line", test_settings_text},
  };
  return dmh_cunit_run("cli_flag", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
