/* Passwords of source files given as password-encrypted (the key file), password-file and
 * password-env: what decrypts, every refusal with its code and message, and
 * examples/source-secret.cfg. */
#include <CUnit/Basic.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "config_test_util.h"
#include "cunit_run.h"
#include "secret.h"

/* ---- secrets: password-encrypted, password-file, password-env ---- */

static char sec_dir[64];
static const char sec_plain[] = "Pw-in-the-clear-7391";
static const unsigned char sec_key[DMH_SECRET_KEY_LEN] = {
    0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe,
    0x0f, 0x1e, 0x2d, 0x3c, 0x4b, 0x5a, 0x69, 0x78, 0x87, 0x96, 0xa5, 0xb4, 0xc3, 0xd2, 0xe1, 0xf0};

/* sec_dir/name with `text`, mode `mode`; returns the path (one of test_buf). */
static const char *sec_write(const char *name, const char *text, mode_t mode) {
  return test_write(sec_dir, name, text, mode);
}

/* A source file whose `from` group carries `pw` (one or more password settings), after `top`. */
static const char *sec_source(const char *top, const char *pw) {
  char text[1024];
  int len = snprintf(
      text, sizeof text,
      "source-id = \"s1\";\n%s\nfrom = {\n  host = \"127.0.0.1\";\n  user = \"u\";\n  %s\n};\n",
      top, pw);
  CU_ASSERT_FATAL(len > 0 && (size_t)len < sizeof text); /* whole: a cut file would test another */
  return sec_write("source.cfg", text, 0600);
}

static void sec_expect(const char *path, int32_t code, const char *want_tail) {
  char want[PATH_MAX + 512];
  if (snprintf(want, sizeof want, "%s:%s", path, want_tail) >= (int)sizeof want)
    CU_FAIL("sec_expect: path and tail too long");
  expect_failure(path, true, code, want);
}

static void sec_setup(void) {
  snprintf(sec_dir, sizeof sec_dir, "/tmp/dmh-test-secret-XXXXXX");
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(sec_dir));
  char hex[2 * DMH_SECRET_KEY_LEN + 2];
  for (int i = 0; i < DMH_SECRET_KEY_LEN; i++)
    snprintf(hex + 2 * i, 3, "%02x", sec_key[i]);
  strcat(hex, "\n");
  sec_write("key", hex, 0600);
  hex[0] = hex[0] == '0' ? '1' : '0'; /* another key */
  sec_write("other.key", hex, 0600);
  sec_write("open.key", hex, 0644);
  sec_write("short.key", "0123abcd\n", 0600);
}

static void sec_cleanup(void) {
  static const char *const names[] = {"key",        "other.key", "open.key", "short.key", "pw.txt",
                                      "source.cfg", "task.cfg",  "dm.key",   NULL};
  char p[PATH_MAX + 16];
  for (int i = 0; names[i]; i++) {
    snprintf(p, sizeof p, "%s/%s", sec_dir, names[i]);
    unlink(p);
  }
  rmdir(sec_dir);
}

/* An encrypted password decrypts to the endpoint's password, in `from` and in target-database;
 * the key file resolves next to the file. */
static void test_secret_encrypted(void) {
  sec_setup();
  char *enc = dmh_secret_encrypt(sec_key, sec_plain);
  CU_ASSERT_PTR_NOT_NULL_FATAL(enc);
  CU_ASSERT_PTR_NULL(strstr(enc, sec_plain));
  char pw[512];
  snprintf(pw, sizeof pw, "password-encrypted = \"%s\";", enc);
  dmh_source_config *s = load_source(sec_source("secret-key-path = \"key\";", pw));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, sec_plain);
  dmh_source_config_free(s);

  char text[1024];
  snprintf(text, sizeof text,
           "name = \"t\";\ntask-mode = \"full\";\nsecret-key-path = \"%s/key\";\n"
           "target-database = { host = \"127.0.0.1\"; user = \"u\"; %s };\n"
           "mysql-instances = ( { source-id = \"s1\"; } );\n",
           sec_dir, pw);
  dmh_task_config *t = load_task(sec_write("task.cfg", text, 0600));
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_STRING_EQUAL(t->target.ep.password, sec_plain);
  dmh_task_config_free(t);

  /* Two encryptions of one password differ (a fresh nonce), both decrypt. */
  char *enc2 = dmh_secret_encrypt(sec_key, sec_plain), *back = NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(enc2);
  CU_ASSERT_STRING_NOT_EQUAL(enc, enc2);
  CU_ASSERT_EQUAL(dmh_secret_decrypt(sec_key, enc2, &back), 0);
  CU_ASSERT_STRING_EQUAL(back, sec_plain);
  dmh_secret_free(back);
  free(enc2);
  free(enc);
  sec_cleanup();
}

/* A wrong, open, short or missing key, or a damaged value: a coded error naming the setting and
 * file:line, never the password. */
static void test_secret_refused(void) {
  sec_setup();
  char *enc = dmh_secret_encrypt(sec_key, sec_plain);
  CU_ASSERT_PTR_NOT_NULL_FATAL(enc);
  char pw[512], tail[PATH_MAX + 512];
  snprintf(pw, sizeof pw, "password-encrypted = \"%s\";", enc);

  const char *path = sec_source("secret-key-path = \"other.key\";", pw);
  snprintf(tail, sizeof tail,
           "6: `from.password-encrypted` in the source file does not decrypt with the key in "
           "secret-key-path (%s/other.key): it was encrypted with another key or is damaged; "
           "encrypt the password again with `dmhost encrypt --secret-key-path %s/other.key` "
           "(plain text on stdin)",
           sec_dir, sec_dir);
  sec_expect(path, DM_ERR_CONFIG_INVALID, tail);

  /* One character changed: the tag does not match. */
  char damaged[512];
  snprintf(damaged, sizeof damaged, "password-encrypted = \"%s\";", enc);
  char *c = strchr(damaged, '"') + 5;
  *c = *c == 'A' ? 'B' : 'A';
  path = sec_source("secret-key-path = \"key\";", damaged);
  snprintf(tail, sizeof tail,
           "6: `from.password-encrypted` in the source file does not decrypt with the key in "
           "secret-key-path (%s/key): it was encrypted with another key or is damaged; "
           "encrypt the password again with `dmhost encrypt --secret-key-path %s/key` "
           "(plain text on stdin)",
           sec_dir, sec_dir);
  sec_expect(path, DM_ERR_CONFIG_INVALID, tail);

  path = sec_source("", pw);
  sec_expect(path, DM_ERR_CONFIG_MISSING,
             "6: `from.password-encrypted` in the source file needs the key it was encrypted "
             "with: add `secret-key-path = \"/path/to/key\";` at the top of the file");

  path = sec_source("secret-key-path = \"open.key\";", pw);
  snprintf(tail, sizeof tail,
           "2: `secret-key-path` (needed by `from.password-encrypted`): the key file "
           "%s/open.key is readable by others (mode 0644): `chmod 600 %s/open.key` (owner only)",
           sec_dir, sec_dir);
  sec_expect(path, DM_ERR_CONFIG_IO, tail);

  path = sec_source("secret-key-path = \"short.key\";", pw);
  snprintf(tail, sizeof tail,
           "2: `secret-key-path` (needed by `from.password-encrypted`): the key file "
           "%s/short.key must hold one line of 64 hex digits (32 bytes; make one with `openssl "
           "rand -hex 32`)",
           sec_dir);
  sec_expect(path, DM_ERR_CONFIG_IO, tail);

  path = sec_source("", "password = \"x\"; password-env = \"HOME\";");
  sec_expect(path, DM_ERR_CONFIG_INVALID,
             "6: `from.password` and `from.password-env` in the source file both give the "
             "password: keep one");
  free(enc);
  sec_cleanup();
}

/* password-file (its first line, relative to the file) and password-env. */
static void test_secret_file_env(void) {
  sec_setup();
  char pwline[128];
  snprintf(pwline, sizeof pwline, "%s\nsecond line\n", sec_plain);
  sec_write("pw.txt", pwline, 0600);
  dmh_source_config *s = load_source(sec_source("", "password-file = \"pw.txt\";"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, sec_plain);
  dmh_source_config_free(s);

  char tail[PATH_MAX + 256];
  const char *path = sec_source("", "password-file = \"none.txt\";");
  snprintf(tail, sizeof tail,
           "6: `from.password-file` in the source file: cannot read %s/none.txt: No such file or "
           "directory",
           sec_dir);
  sec_expect(path, DM_ERR_CONFIG_IO, tail);

  CU_ASSERT_EQUAL_FATAL(setenv("DMH_TEST_SECRET_PW", sec_plain, 1), 0);
  s = load_source(sec_source("", "password-env = \"DMH_TEST_SECRET_PW\";"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, sec_plain);
  dmh_source_config_free(s);
  unsetenv("DMH_TEST_SECRET_PW");
  path = sec_source("", "password-env = \"DMH_TEST_SECRET_PW\";");
  sec_expect(path, DM_ERR_CONFIG_MISSING,
             "6: `from.password-env` in the source file names the environment variable "
             "DMH_TEST_SECRET_PW, which is not set: export it in the environment dmhost starts "
             "in");
  sec_cleanup();
}

/* examples/source-secret.cfg, next to the key of these tests, decrypts to its documented password.
 */
static void test_example_source_secret(void) {
  sec_setup();
  char hex[2 * DMH_SECRET_KEY_LEN + 2];
  for (int i = 0; i < DMH_SECRET_KEY_LEN; i++)
    snprintf(hex + 2 * i, 3, "%02x", sec_key[i]);
  strcat(hex, "\n");
  sec_write("dm.key", hex, 0600);
  FILE *f = fopen(ex("source-secret.cfg"), "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  char text[4096];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  dmh_source_config *s = load_source(sec_write("source.cfg", text, 0600));
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, "example-password");
  CU_ASSERT_STRING_EQUAL(s->from.ep.user, "dm_user");
  dmh_source_config_free(s);
  sec_cleanup();
}

/* One load's error code, and it came back in bounded time. */
static int32_t sec_code(const char *path, const dmh_cfg_trust *trust, const char *want) {
  dmh_source_config *s = NULL;
  dm_error err;
  memset(&err, 0, sizeof err);
  time_t t0 = time(NULL);
  int rc = dmh_source_config_load_as(path, trust, &s, &err);
  CU_ASSERT(time(NULL) - t0 < 5);
  dmh_source_config_free(s);
  if (rc == 0)
    return 0;
  if (want && !strstr(err.message, want)) {
    fprintf(stderr, "\n  %s: no \"%s\" in: %s\n", path, want, err.message);
    CU_FAIL("message");
  }
  return err.code;
}

/* Issue 20, items 4 and 7: every read bounded and non-blocking; sent text's settings. */
static void test_secret_limits(void) {
  sec_setup();
  char p[PATH_MAX + 32], fifo[PATH_MAX + 32], top[PATH_MAX + 64], pw[PATH_MAX + 64];
  snprintf(fifo, sizeof fifo, "%s/fifo", sec_dir);
  CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
  /* password-file: /dev/zero, a FIFO, a link, a 0644 file, over 4 KiB */
  CU_ASSERT_EQUAL(
      sec_code(sec_source("", "password-file = \"/dev/zero\";"), NULL, "a character device"),
      DM_ERR_CONFIG_UNSAFE_FILE);
  snprintf(pw, sizeof pw, "password-file = \"%s\";", fifo);
  CU_ASSERT_EQUAL(sec_code(sec_source("", pw), NULL, "a FIFO"), DM_ERR_CONFIG_UNSAFE_FILE);
  const char *real = sec_write("pw.txt", "secret\n", 0600);
  snprintf(p, sizeof p, "%s/pw-link", sec_dir);
  CU_ASSERT_EQUAL_FATAL(symlink(real, p), 0);
  snprintf(pw, sizeof pw, "password-file = \"%s\";", p);
  CU_ASSERT_EQUAL(sec_code(sec_source("", pw), NULL, "symbolic link"), DM_ERR_CONFIG_UNSAFE_FILE);
  unlink(p);
  sec_write("pw.txt", "secret\n", 0644);
  CU_ASSERT_EQUAL(sec_code(sec_source("", "password-file = \"pw.txt\";"), NULL, "mode is 0644"),
                  DM_ERR_CONFIG_UNSAFE_FILE);
  char big[5000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  sec_write("pw.txt", big, 0600);
  CU_ASSERT_EQUAL(sec_code(sec_source("", "password-file = \"pw.txt\";"), NULL, "over the limit"),
                  DM_ERR_CONFIG_UNSAFE_FILE);
  /* a 2 MiB config; @include of /dev/zero and of a FIFO */
  size_t n = 2u * 1024 * 1024;
  char *huge = malloc(n + 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(huge);
  memset(huge, '#', n);
  huge[n] = '\0';
  CU_ASSERT_EQUAL(sec_code(sec_write("task.cfg", huge, 0600), NULL, "over the limit"),
                  DM_ERR_CONFIG_UNSAFE_FILE);
  free(huge);
  CU_ASSERT_EQUAL(sec_code(sec_source("@include \"/dev/zero\"", "password = \"\";"), NULL,
                           "a character device"),
                  DM_ERR_CONFIG_UNSAFE_FILE);
  snprintf(top, sizeof top, "@include \"%s\"", fifo);
  CU_ASSERT_EQUAL(sec_code(sec_source(top, "password = \"\";"), NULL, "a FIFO"),
                  DM_ERR_CONFIG_UNSAFE_FILE);
  /* sent text: secrets only below --secrets-dir, no unit-paths, no include */
  sec_write("pw.txt", "secret\n", 0600);
  dmh_cfg_trust sent = {.origin = DMH_CFG_SUBMITTED};
  const char *src = sec_source("", "password-file = \"pw.txt\";");
  CU_ASSERT_EQUAL(sec_code(src, &sent, "--secrets-dir"), DM_ERR_CONFIG_SUBMITTED_SECRET);
  char *dir = realpath(sec_dir, NULL);
  dmh_cfg_trust below = {.origin = DMH_CFG_SUBMITTED, .secrets_dir = dir};
  CU_ASSERT_EQUAL(sec_code(src, &below, NULL), 0);
  CU_ASSERT_EQUAL(sec_code(sec_source("unit-paths = { relay = \"/x.so\"; };", "password = \"\";"),
                           &sent, "--allow-submitted-unit-paths"),
                  DM_ERR_CONFIG_SUBMITTED_UNIT_PATH);
  CU_ASSERT_EQUAL(
      sec_code(sec_source("file-mode = \"0640\";", "password = \"\";"), &sent, "file-mode"),
      DM_ERR_CONFIG_SUBMITTED_FILE_MODE);
  CU_ASSERT_EQUAL(sec_code(sec_source("file-mode = \"0640\";", "password = \"\";"), NULL, NULL), 0);
  free(dir);
  unlink(fifo);
  sec_cleanup();
}

/* The cluster's store (docs/cluster.md, "The cluster key"): dmh_config_seal_password replaces a
 * clear or encrypted password by password-encrypted with the cluster key and drops
 * secret-key-path; an empty one and references are kept byte for byte; without a key a clear
 * password is 15043 and password-encrypted 15044. A sealed text loads, as a text from etcd, with
 * the cluster key only; a secret-key-path in such a text, a missing or another key: 15044. */
static void test_cluster_seal(void) {
  sec_setup();
  char text[2048], *out = NULL;
  dm_error err;
  snprintf(text, sizeof text,
           "# a comment\nsource-id = \"s1\";\nfrom = { host = \"127.0.0.1\"; user = \"u\"; "
           "password = \"%s\"; };\n",
           sec_plain);
  /* no key: refused, the text not given out */
  CU_ASSERT_EQUAL(dmh_config_seal_password(text, "from", sec_plain, NULL, &out, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CLUSTER_CLEAR_PASSWORD);
  CU_ASSERT_PTR_NULL(out);
  CU_ASSERT_PTR_NULL(strstr(err.message, sec_plain));
  /* sealed: no clear password, password-encrypted that the cluster key decrypts */
  CU_ASSERT_EQUAL_FATAL(dmh_config_seal_password(text, "from", sec_plain, sec_key, &out, &err), 0);
  CU_ASSERT_PTR_NULL(strstr(out, sec_plain));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "password-encrypted"));
  const char *path = sec_write("source.cfg", out, 0600);
  free(out);
  /* not a text of the cluster: password-encrypted without secret-key-path is refused as before */
  dmh_source_config *s = NULL;
  CU_ASSERT_EQUAL(dmh_source_config_load(path, &s, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CONFIG_MISSING);
  /* a text of the cluster on this thread, the process without a key: 15044 */
  dmh_secret_cluster_scope(1);
  CU_ASSERT_EQUAL(dmh_source_config_load(path, &s, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CLUSTER_KEY);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "--cluster-key"));
  /* with the key: the password */
  dmh_secret_cluster_key_set(sec_key);
  CU_ASSERT_EQUAL_FATAL(dmh_source_config_load(path, &s, &err), 0);
  CU_ASSERT_STRING_EQUAL(s->from.ep.password, sec_plain);
  dmh_source_config_free(s);
  s = NULL;
  /* another key: 15044 */
  unsigned char other[DMH_SECRET_KEY_LEN];
  memcpy(other, sec_key, sizeof other);
  other[0] ^= 1;
  dmh_secret_cluster_key_set(other);
  CU_ASSERT_EQUAL(dmh_source_config_load(path, &s, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CLUSTER_KEY);
  dmh_secret_cluster_key_set(sec_key);
  /* a key path in a text of the cluster is never used, even one that would decrypt */
  char *enc = dmh_secret_encrypt(sec_key, sec_plain);
  CU_ASSERT_PTR_NOT_NULL_FATAL(enc);
  char pw[512];
  snprintf(pw, sizeof pw, "password-encrypted = \"%s\";", enc);
  path = sec_source("secret-key-path = \"key\";", pw);
  CU_ASSERT_EQUAL(dmh_source_config_load(path, &s, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CLUSTER_KEY);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "secret-key-path"));
  dmh_secret_cluster_scope(0);
  dmh_secret_cluster_key_set(NULL);
  /* an operator's file with its own key: sealed with the cluster key, secret-key-path dropped */
  FILE *f = fopen(path, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  CU_ASSERT_EQUAL(dmh_config_seal_password(text, "from", sec_plain, NULL, &out, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CLUSTER_KEY);
  CU_ASSERT_EQUAL_FATAL(dmh_config_seal_password(text, "from", sec_plain, other, &out, &err), 0);
  CU_ASSERT_PTR_NULL(strstr(out, "secret-key-path"));
  CU_ASSERT_PTR_NULL(strstr(out, enc));
  free(out);
  free(enc);
  /* an empty password, a password-file: kept as they are, with or without a key */
  static const char *const kept[] = {
      "source-id = \"s1\";\nfrom = { host = \"h\"; user = \"root\"; password = \"\"; };\n",
      "source-id = \"s1\";\nfrom = { host = \"h\"; user = \"u\"; password-file = \"/p\"; };\n",
      "source-id = \"s1\";\nfrom = { host = \"h\"; user = \"u\"; };\n"};
  for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
    CU_ASSERT_EQUAL_FATAL(dmh_config_seal_password(kept[i], "from", "", NULL, &out, &err), 0);
    CU_ASSERT_STRING_EQUAL(out, kept[i]);
    free(out);
  }
  /* a task's target-database */
  snprintf(text, sizeof text,
           "name = \"t\";\ntarget-database = { host = \"h\"; user = \"u\"; password = \"%s\"; };\n",
           sec_plain);
  CU_ASSERT_EQUAL(dmh_config_seal_password(text, "target-database", sec_plain, NULL, &out, &err),
                  -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_CLUSTER_CLEAR_PASSWORD);
  CU_ASSERT_EQUAL_FATAL(
      dmh_config_seal_password(text, "target-database", sec_plain, sec_key, &out, &err), 0);
  CU_ASSERT_PTR_NULL(strstr(out, sec_plain));
  free(out);
  sec_cleanup();
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"secrets: limits and provenance", test_secret_limits},
      {"secrets: password-encrypted", test_secret_encrypted},
      {"secrets: wrong key, damaged value", test_secret_refused},
      {"secrets: password-file, password-env", test_secret_file_env},
      {"example source-secret.cfg", test_example_source_secret},
      {"the cluster key: sealed for etcd, decrypted from etcd", test_cluster_seal},
  };
  return dmh_cunit_run("config_secrets", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
