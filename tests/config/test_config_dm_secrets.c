/* DM's encrypted passwords (secret.h, "DM's form"): DM's own files decrypt with DM's own keys
 * (known answers, tests/config/dm/README.md), dmhost's DM form decrypts back, the process's key
 * is read as DM's master reads it (decrypt-or-plain) and only that key; a file of the cluster's
 * store is never decrypted so; the master seals the decrypted password; the key file's refusals. */
#include <CUnit/Basic.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "config_test_util.h"
#include "config_update.h"
#include "cunit_run.h"
#include "secret.h"

static char dir[64];

/* dir/name with `text` and `mode`; the path in a static buffer of four. */
static const char *put(const char *name, const char *text, mode_t mode) {
  return test_write(dir, name, text, mode);
}

/* A file of tests/config/dm copied into dir with mode 0600 (git keeps 0644: a key must be 0600). */
static const char *copy_dm(const char *name) {
  char src[PATH_MAX], text[4096];
  snprintf(src, sizeof src, "%s/dm/%s", DMH_TEST_DIR, name);
  FILE *f = fopen(src, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  return put(name, text, 0600);
}

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/dmh-test-dmsecret-XXXXXX");
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
}

static void cleanup(void) {
  CU_ASSERT_EQUAL(dmh_secret_dm_key_load(NULL, NULL, 0), 0);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CU_ASSERT_EQUAL(system(cmd), 0);
}

static void use_key(const char *path) {
  char why[512] = "";
  CU_ASSERT_EQUAL_FATAL(dmh_secret_dm_key_load(path, why, sizeof why), 0);
}

/* DM's own files: each test's source.yaml with the key.txt DM's test gave dm-master decrypts to
 * the password DM's test logs in with (123456), through the YAML reader and the process's key. */
static void test_known_answers(void) {
  setup();
  static const char *const pairs[][2] = {
      {"dmctl_basic-source2.yaml", "dmctl_basic-key.txt"},
      {"import_v10x-source1.yaml", "import_v10x-key.txt"},
  };
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    const char *src = copy_dm(pairs[i][0]);
    char key_path[PATH_MAX];
    snprintf(key_path, sizeof key_path, "%s", copy_dm(pairs[i][1]));
    /* without the key: as written (DM v8+ without secret-key-path), marked DM-shaped */
    dmh_source_config *s = load_source(src);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_STRING_NOT_EQUAL(s->from.ep.password, "123456");
    CU_ASSERT_EQUAL(dmh_secret_dm_shaped(s->from.ep.password), 1);
    CU_ASSERT_EQUAL(s->from.password_dm_form, DMH_DM_FORM_NO_KEY);
    dmh_source_config_free(s);
    /* with it: decrypted */
    use_key(key_path);
    s = load_source(src);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_STRING_EQUAL(s->from.ep.password, "123456");
    CU_ASSERT_EQUAL(s->from.password_dm_form, DMH_DM_FORM_KEYED);
    dmh_source_config_free(s);
    CU_ASSERT_EQUAL(dmh_secret_dm_key_load(NULL, NULL, 0), 0);
  }
  /* each value with the other test's key: CFB decrypts into other bytes, never 123456 */
  unsigned char key[DMH_SECRET_KEY_LEN];
  char why[256], *out = NULL;
  CU_ASSERT_EQUAL_FATAL(dmh_secret_key_load(copy_dm("dmctl_basic-key.txt"), key, why, sizeof why),
                        0);
  CU_ASSERT_EQUAL(dmh_secret_dm_decrypt(key, "viX954280ZzTAxr2BN1qD0B5EIiUw9U=", &out), 0);
  CU_ASSERT_STRING_EQUAL(out, "123456");
  dmh_secret_free(out);
  if (dmh_secret_dm_decrypt(key, "/Q7B9DizNLLTTfiZHv9WoEAKamfpIUs=", &out) == 0)
    CU_ASSERT_STRING_NOT_EQUAL(out, "123456");
  dmh_secret_free(out);
  cleanup();
}

/* dmhost's DM form: a fresh iv each time, the '@' at byte 16, and it decrypts back; values not of
 * DM's shape (plain passwords, base64 without the '@', a cut value) are not decrypted. */
static void test_dm_form(void) {
  static const unsigned char key[DMH_SECRET_KEY_LEN] = {7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  char *a = dmh_secret_dm_encrypt(key, "pw with spaces & ünïcode"),
       *b = dmh_secret_dm_encrypt(key, "pw with spaces & ünïcode"), *out = NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(a);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_STRING_NOT_EQUAL(a, b);
  CU_ASSERT_EQUAL(dmh_secret_dm_shaped(a), 1);
  CU_ASSERT_EQUAL(dmh_secret_dm_decrypt(key, b, &out), 0);
  CU_ASSERT_STRING_EQUAL(out, "pw with spaces & ünïcode");
  dmh_secret_free(out);
  char *empty = dmh_secret_dm_encrypt(key, "");
  CU_ASSERT_PTR_NOT_NULL_FATAL(empty);
  CU_ASSERT_EQUAL(dmh_secret_dm_decrypt(key, empty, &out), 0);
  CU_ASSERT_STRING_EQUAL(out, "");
  dmh_secret_free(out);
  static const char *const plain[] = {
      "123456",
      "",
      "not base64 at all!!!!!!!",
      "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY", /* no '@' */
      "viX954280ZzTAxr2BN1qD0B5EIiUw9U",  /* cut */
  };
  for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
    CU_ASSERT_EQUAL(dmh_secret_dm_shaped(plain[i]), 0);
    CU_ASSERT_EQUAL(dmh_secret_dm_decrypt(key, plain[i], &out), -1);
    CU_ASSERT_PTR_NULL(out);
  }
  free(a);
  free(b);
  free(empty);
}

/* The process's key as DM's master uses it: every `password` of a source or task file (libconfig
 * or YAML) of DM's shape decrypts; a plain one stays; a wrong key gives other bytes (DM's
 * behaviour: the server then refuses the account); `password-encrypted` keeps its own key. */
static void test_process_key(void) {
  setup();
  static const unsigned char key[DMH_SECRET_KEY_LEN] = {0xa5, 0x29, 0xb7, 0x66, 0x59, 0x97, 0xf0};
  char hex[80] = "";
  for (int i = 0; i < DMH_SECRET_KEY_LEN; i++)
    snprintf(hex + 2 * i, 3, "%02x", key[i]);
  strcat(hex, "\n");
  char key_path[PATH_MAX], other_path[PATH_MAX];
  snprintf(key_path, sizeof key_path, "%s", put("dm.key", hex, 0600));
  hex[0] = hex[0] == '0' ? '1' : '0';
  snprintf(other_path, sizeof other_path, "%s", put("other.key", hex, 0600));
  char *src_enc = dmh_secret_dm_encrypt(key, "Src-pw-1"),
       *tgt_enc = dmh_secret_dm_encrypt(key, "Tgt-pw-2");
  CU_ASSERT_PTR_NOT_NULL_FATAL(src_enc);
  CU_ASSERT_PTR_NOT_NULL_FATAL(tgt_enc);
  char text[2048];
  snprintf(
      text, sizeof text,
      "source-id = \"s1\";\nfrom = { host = \"127.0.0.1\"; user = \"u\"; password = \"%s\"; };\n",
      src_enc);
  const char *src_cfg = put("source.cfg", text, 0600);
  snprintf(text, sizeof text,
           "name: t\ntask-mode: full\ntarget-database:\n  host: 127.0.0.1\n  user: u\n"
           "  password: %s\nmysql-instances:\n  - source-id: s1\n",
           tgt_enc);
  const char *task_yaml = put("task.yaml", text, 0600);

  use_key(key_path);
  dmh_source_config *s = load_source(src_cfg);
  dmh_task_config *t = load_task(task_yaml);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, "Src-pw-1");
  CU_ASSERT_STRING_EQUAL(t->target.ep.password, "Tgt-pw-2");
  CU_ASSERT_EQUAL(t->target.password_dm_form, DMH_DM_FORM_KEYED);

  /* the master's seal: the decrypted password, under the cluster key, nothing of DM's form */
  static const unsigned char cluster[DMH_SECRET_KEY_LEN] = {0x11, 0x22, 0x33};
  char *sealed = NULL, *back = NULL;
  dm_error err;
  snprintf(
      text, sizeof text,
      "source-id = \"s1\";\nfrom = { host = \"127.0.0.1\"; user = \"u\"; password = \"%s\"; };\n",
      src_enc);
  CU_ASSERT_EQUAL_FATAL(
      dmh_config_seal_password(text, "from", s->from.ep.password, cluster, &sealed, &err), 0);
  CU_ASSERT_PTR_NULL(strstr(sealed, src_enc));
  const char *at = strstr(sealed, "password-encrypted = \"");
  CU_ASSERT_PTR_NOT_NULL_FATAL(at);
  at += strlen("password-encrypted = \"");
  char val[512];
  snprintf(val, sizeof val, "%.*s", (int)strcspn(at, "\""), at);
  CU_ASSERT_EQUAL(dmh_secret_decrypt(cluster, val, &back), 0);
  CU_ASSERT_STRING_EQUAL(back, "Src-pw-1");
  dmh_secret_free(back);
  free(sealed);
  dmh_source_config_free(s);
  dmh_task_config_free(t);

  /* a text of the cluster's store: never decrypted with the process's key */
  dmh_secret_cluster_scope(1);
  s = load_source(src_cfg);
  dmh_secret_cluster_scope(0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, src_enc);
  dmh_source_config_free(s);

  /* sent text (HTTP content): the daemon's key only when it lies below --secrets-dir, which
   * realpath gives (dir is under /tmp, maybe a link) */
  dmh_cfg_trust sent = {.origin = DMH_CFG_SUBMITTED};
  dm_error lerr;
  s = NULL;
  CU_ASSERT_EQUAL(dmh_source_config_load_as(src_cfg, &sent, &s, &lerr), -1);
  CU_ASSERT_EQUAL(lerr.code, DM_ERR_CONFIG_SUBMITTED_SECRET);
  CU_ASSERT_PTR_NOT_NULL(strstr(lerr.message, ":2: `from.password` in a source file sent to the "
                                              "daemon (not a file the operator placed) is DM's "
                                              "encrypted form"));
  CU_ASSERT_PTR_NULL(strstr(lerr.message, src_enc));
  char *real_dir = realpath(dir, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(real_dir);
  sent.secrets_dir = real_dir;
  CU_ASSERT_EQUAL_FATAL(dmh_source_config_load_as(src_cfg, &sent, &s, &lerr), 0);
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, "Src-pw-1");
  dmh_source_config_free(s);
  free(real_dir);

  /* another key: other bytes, or (a NUL in them) the value as written; never the password */
  use_key(other_path);
  s = load_source(src_cfg);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_STRING_NOT_EQUAL(s->from.ep.password, "Src-pw-1");
  CU_ASSERT_EQUAL(s->from.password_dm_form, DMH_DM_FORM_KEYED);
  dmh_source_config_free(s);

  /* a plain password with the key: as written */
  put("source.cfg",
      "source-id = \"s1\";\nfrom = { host = \"127.0.0.1\"; user = \"u\"; password = \"123456\"; "
      "};\n",
      0600);
  s = load_source(src_cfg);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, "123456");
  CU_ASSERT_EQUAL(s->from.password_dm_form, DMH_DM_FORM_NONE);
  dmh_source_config_free(s);
  free(src_enc);
  free(tgt_enc);
  cleanup();
}

/* The flag's file is read as every key file: a regular file of the owner only holding 64 hex
 * digits; the refusal names the file and why, never key bytes, and leaves no key set. */
static void test_key_refused(void) {
  setup();
  const char *hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";
  char open_key[PATH_MAX], fifo[PATH_MAX], why[512];
  snprintf(open_key, sizeof open_key, "%s", put("open.key", hex, 0644));
  CU_ASSERT_EQUAL(dmh_secret_dm_key_load(open_key, why, sizeof why), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "readable by others (mode 0644)"));
  CU_ASSERT_PTR_NULL(strstr(why, "00112233"));
  snprintf(fifo, sizeof fifo, "%s/fifo.key", dir);
  CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
  CU_ASSERT_EQUAL(dmh_secret_dm_key_load(fifo, why, sizeof why), -1); /* at once, not blocked */
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "not a regular file"));
  CU_ASSERT_EQUAL(dmh_secret_dm_key_load(put("short.key", "0011\n", 0600), why, sizeof why), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "64 hex digits"));
  CU_ASSERT_EQUAL(dmh_secret_dm_key_load("/nonexistent/dm.key", why, sizeof why), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "cannot read the key file /nonexistent/dm.key"));
  /* none was set: a DM-shaped password stays as written */
  char *out = NULL;
  int form = -1;
  CU_ASSERT_EQUAL(dmh_secret_dm_password("viX954280ZzTAxr2BN1qD0B5EIiUw9U=", &out, &form), 0);
  CU_ASSERT_STRING_EQUAL(out, "viX954280ZzTAxr2BN1qD0B5EIiUw9U=");
  CU_ASSERT_EQUAL(form, DMH_DM_FORM_NO_KEY);
  dmh_secret_free(out);
  cleanup();
}

/* update-task in a cluster (master_update.c): the master seals the target's password with a fresh
 * nonce each time it stores a file, so two sealings of one password differ as text; the identity
 * check compares target-database by the password it gives, not by its form. */
static void test_sealed_target_identity(void) {
  setup();
  static const unsigned char cluster[DMH_SECRET_KEY_LEN] = {0x44, 0x55, 0x66};
  static const char fmt[] = "name = \"t\";\ntask-mode = \"full\";\ntarget-database = { host = "
                            "\"127.0.0.1\"; user = \"u\"; password = \"%s\"; };\n"
                            "mysql-instances = ( { source-id = \"s1\"; } );\n";
  char text[1024];
  char *sealed[3] = {NULL, NULL, NULL};
  dm_error err;
  const char *pw[3] = {"Tgt-pw-1", "Tgt-pw-1", "Tgt-pw-2"};
  for (int i = 0; i < 3; i++) {
    snprintf(text, sizeof text, fmt, pw[i]);
    CU_ASSERT_EQUAL_FATAL(
        dmh_config_seal_password(text, "target-database", pw[i], cluster, &sealed[i], &err), 0);
  }
  CU_ASSERT_STRING_NOT_EQUAL(sealed[0], sealed[1]); /* fresh nonces */
  snprintf(text, sizeof text, fmt, "Tgt-pw-1");
  dmh_task_config *plain = load_task(put("plain.cfg", text, 0600));
  dmh_secret_cluster_key_set(cluster);
  dmh_secret_cluster_scope(1);
  dmh_task_config *t0 = load_task(put("s0.cfg", sealed[0], 0600));
  dmh_task_config *t1 = load_task(put("s1.cfg", sealed[1], 0600));
  dmh_task_config *t2 = load_task(put("s2.cfg", sealed[2], 0600));
  dmh_secret_cluster_scope(0);
  dmh_secret_cluster_key_set(NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(plain);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t2);
  CU_ASSERT_EQUAL(dmh_task_config_same_identity(t0, t1, &err), 0);    /* the worker's check */
  CU_ASSERT_EQUAL(dmh_task_config_same_identity(t0, plain, &err), 0); /* the master's */
  CU_ASSERT_EQUAL(dmh_task_config_same_identity(t0, t2, &err), -1);   /* another password */
  CU_ASSERT_EQUAL(err.code, DM_ERR_UPDATE_IDENTITY);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "`target-database`"));
  CU_ASSERT_PTR_NULL(strstr(err.message, "Tgt-pw"));
  for (int i = 0; i < 3; i++)
    free(sealed[i]);
  dmh_task_config_free(plain);
  dmh_task_config_free(t0);
  dmh_task_config_free(t1);
  dmh_task_config_free(t2);
  cleanup();
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"DM's files decrypt with DM's keys (known answers)", test_known_answers},
      {"DM's form: encrypt, decrypt, what is not DM's", test_dm_form},
      {"the process's key: decrypt-or-plain, cluster texts, the seal", test_process_key},
      {"the key file's refusals", test_key_refused},
      {"update-task: a sealed target password compares by its password",
       test_sealed_target_identity},
  };
  return dmh_cunit_run("config_dm_secrets", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
