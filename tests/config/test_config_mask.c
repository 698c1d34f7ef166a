/* get-config's masking (config_mask.h): for libconfig and DM's YAML, with passwords written every
 * way each allows (quotes and newlines inside, libconfig's adjacent strings, YAML's single quotes,
 * blocks and values on the next line), the masked text holds no byte run of the password, and it
 * still loads, with from.password "******" and every other setting as before. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "config_mask.h"
#include "config_test_util.h"
#include "cunit_run.h"

static char mask_dir[64];

/* `text` (a source file named `name`) masked: no `secret` in it, and it loads with password
 * "******", the host, user and port of the original, and `keep` (NULL: none) in the text. */
static void mask_check(const char *name, const char *text, const char *secret, const char *keep) {
  dmh_source_config *orig = load_source(test_write(mask_dir, name, text, 0600));
  CU_ASSERT_PTR_NOT_NULL_FATAL(orig);
  /* precondition: the file's password is the secret (else the test proves nothing) */
  if (secret)
    CU_ASSERT_STRING_EQUAL(orig->from.ep.password, secret);
  char *masked = dmh_config_masked(text, dmh_config_is_yaml(name));
  CU_ASSERT_PTR_NOT_NULL_FATAL(masked);
  if (secret && strstr(masked, secret))
    printf("\n%s: the password is in the masked text:\n%s\n", name, masked);
  CU_ASSERT_PTR_NULL(secret ? strstr(masked, secret) : NULL);
  if (keep)
    CU_ASSERT_PTR_NOT_NULL(strstr(masked, keep));
  /* config import's check: the mask is seen in the masked text, never in the original */
  CU_ASSERT(!dmh_config_mask_left(text, dmh_config_is_yaml(name)));
  CU_ASSERT_EQUAL(dmh_config_mask_left(masked, dmh_config_is_yaml(name)), secret != NULL);
  dmh_source_config *m = load_source(test_write(mask_dir, name, masked, 0600));
  if (!m)
    printf("\n%s: the masked text does not load:\n%s\n", name, masked);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  if (secret)
    CU_ASSERT_STRING_EQUAL(m->from.ep.password, "******");
  CU_ASSERT_STRING_EQUAL(m->source_id, orig->source_id);
  CU_ASSERT_STRING_EQUAL(m->from.ep.host, orig->from.ep.host);
  CU_ASSERT_STRING_EQUAL(m->from.ep.user, orig->from.ep.user);
  CU_ASSERT_EQUAL(m->from.ep.port, orig->from.ep.port);
  dmh_source_config_free(m);
  dmh_source_config_free(orig);
  free(masked);
}

/* `text` masked holds no `piece` (a part of a password the file splits). */
static void mask_lacks(const char *text, bool yaml, const char *piece) {
  char *m = dmh_config_masked(text, yaml);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_PTR_NULL(strstr(m, piece));
  free(m);
}

static void test_libconfig(void) {
  mask_check("plain.cfg",
             "source-id = \"s1\";\nfrom = {\n  host = \"127.0.0.1\";\n  user = \"u\";\n"
             "  password = \"Sec-ret-1\";\n  port = 3306;\n};\n",
             "Sec-ret-1", "password = \"******\";");
  /* quotes, a newline escape and a backslash in the password; one line with other settings */
  mask_check("quoted.cfg",
             "source-id = \"s1\";\nfrom = { host = \"127.0.0.1\"; password = \"a\\\"b\\nc\\\\d\"; "
             "user = \"u\"; port = 3307; };\n",
             "a\"b\nc\\d", NULL);
  /* adjacent strings, one per line, and the key's `=` on the next line */
  mask_check("adjacent.cfg",
             "source-id = \"s1\";\nfrom = {\n  host = \"127.0.0.1\";\n  password\n    = "
             "\"first-half\"\n    \"second-half\";\n  user = \"u\";\n  port = 3306;\n};\n",
             "first-halfsecond-half", NULL);
  /* the value on the next line, and comments between the halves */
  mask_check("gaps.cfg",
             "source-id = \"s1\";\nfrom = {\n  host = \"127.0.0.1\";\n  password = # why\n"
             "    \"gap-one\" /* c */ \"gap-two\" // c\n    \"gap-three\";\n  user = \"u\";\n"
             "  port = 3306;\n};\n",
             "gap-onegap-twogap-three", NULL);
  mask_lacks("password =\n  \"gap-one\" /* c */ \"gap-two\" # c\n \"gap-three\";\n", false, "gap-");
  /* the halves themselves: */
  mask_lacks("password = \"first-half\"\n  \"second-half\";\n", false, "half");
  /* the other forms name no clear text: kept */
  setenv("MASK_TEST_PW", "from-the-env", 1);
  mask_check("env.cfg",
             "source-id = \"s1\";\nfrom = {\n  host = \"127.0.0.1\";\n  user = \"u\";\n"
             "  password-env = \"MASK_TEST_PW\";\n  port = 3306;\n};\n",
             NULL, "password-env = \"MASK_TEST_PW\";");
}

static void test_yaml(void) {
  mask_check("dm.yaml",
             "source-id: mysql-replica-01\nfrom:\n  host: 127.0.0.1\n  user: root\n"
             "  password: '12''3456'\n  port: 3306\n",
             "12'3456", "password: \"******\"");
  mask_check("plain.yaml",
             "source-id: s1\nfrom:\n  host: 127.0.0.1\n  password: Plain-Secret # why\n"
             "  user: root\n  port: 3306\n",
             "Plain-Secret", NULL);
  mask_check("double.yaml",
             "source-id: s1\nfrom:\n  host: 127.0.0.1\n  password: \"q\\\"uo\\nte\"\n"
             "  user: root\n  port: 3306\n",
             "q\"uo\nte", NULL);
  /* a folded value over two lines, and a block scalar whose lines hold the secret */
  mask_check("folded.yaml",
             "source-id: s1\nfrom:\n  host: 127.0.0.1\n  password:\n    Folded-One\n\n"
             "    Folded-Two\n  user: root\n  port: 3306\n",
             "Folded-One\nFolded-Two", NULL);
  mask_check("block.yaml",
             "source-id: s1\nfrom:\n  host: 127.0.0.1\n  password: |-\n    Block-Line-1\n"
             "    Block-Line-2\n  user: root\n  port: 3306\n",
             "Block-Line-1\nBlock-Line-2", NULL);
  mask_lacks("from:\n  password: |-\n    Block-Line-1\n    Block-Line-2\n", true, "Block-Line");
  /* DM's example source file (tests/config/dm/README.md) */
  char *text = NULL;
  FILE *f = fopen(DMH_TEST_DIR "/dm/all_mode-source1.yaml", "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  size_t cap = 0;
  CU_ASSERT(getdelim(&text, &cap, '\0', f) > 0);
  fclose(f);
  mask_check("source1.yaml", text, "123456", "  password: \"******\"\n  port: 3306");
  free(text);
}

/* config import's check (dmh_config_mask_left) on the mask written by hand, and on look-alikes
 * that are passwords of their own or not passwords at all */
static void test_mask_left(void) {
  static const struct {
    const char *text;
    bool yaml, left;
  } cases[] = {
      {"from = { password = \"******\"; };", false, true},
      {"from = { password = \"******\" };", false, true},
      {"from:\n  password: ******\n  port: 1\n", true, true},
      {"from:\n  password: '******'  \n", true, true},
      {"from:\n  password: \"******\"", true, true},
      {"from = { password = \"******x\"; };", false, false},
      {"from = { password = \"**\" \"****\"; };", false, false},
      {"from = { password-env = \"******\"; };", false, false},
      {"from:\n  password: '*******'\n", true, false},
      /* the masker's reading: no comment is told apart, so the safe side (import refuses) */
      {"# password: ******\nfrom:\n  password: x\n", true, true},
      {"from = { password = \"\"; user = \"******\"; };", false, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (dmh_config_mask_left(cases[i].text, cases[i].yaml) != cases[i].left)
      printf("\ncase %zu: %s\n", i, cases[i].text);
    CU_ASSERT_EQUAL(dmh_config_mask_left(cases[i].text, cases[i].yaml), cases[i].left);
  }
}

static int mask_init(void) {
  snprintf(mask_dir, sizeof mask_dir, "/tmp/dmh-test-mask-XXXXXX");
  return mkdtemp(mask_dir) ? 0 : 1;
}

static int mask_clean(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", mask_dir);
  return system(cmd) == 0 ? 0 : 1;
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"libconfig", test_libconfig}, {"yaml", test_yaml}, {"mask left", test_mask_left}};
  return dmh_cunit_run("config_mask", mask_init, mask_clean, tests, sizeof tests / sizeof tests[0]);
}
