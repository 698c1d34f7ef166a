#include "secret.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base64.h"
#include "cli_flag.h"

#define SECRET_NONCE_LEN 12
#define SECRET_TAG_LEN 16

static int secret_hex(int ch) {
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

int dmh_secret_key_load(const char *path, unsigned char key[DMH_SECRET_KEY_LEN], char *why,
                        size_t why_size) {
  /* O_NONBLOCK and a regular file only: a FIFO named as the key must not hold the thread. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) {
    snprintf(why, why_size, "cannot read the key file %s: %s", path, strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    snprintf(why, why_size, "the key file %s is not a regular file", path);
    return -1;
  }
  if (st.st_mode & 077) {
    close(fd);
    snprintf(why, why_size,
             "the key file %s is readable by others (mode %04o): `chmod 600 %s` (owner only)", path,
             (unsigned)(st.st_mode & 07777), path);
    return -1;
  }
  char buf[2 * DMH_SECRET_KEY_LEN + 3];
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  size_t len = n > 0 ? (size_t)n : 0;
  while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
    len--;
  int ok = len == 2 * DMH_SECRET_KEY_LEN;
  for (size_t i = 0; ok && i < DMH_SECRET_KEY_LEN; i++) {
    int hi = secret_hex((unsigned char)buf[2 * i]), lo = secret_hex((unsigned char)buf[2 * i + 1]);
    if (hi < 0 || lo < 0)
      ok = 0;
    else
      key[i] = (unsigned char)(hi << 4 | lo);
  }
  OPENSSL_cleanse(buf, sizeof buf);
  if (!ok) {
    OPENSSL_cleanse(key, DMH_SECRET_KEY_LEN);
    snprintf(why, why_size,
             "the key file %s must hold one line of 64 hex digits (32 bytes; make one with "
             "`openssl rand -hex 32`)",
             path);
    return -1;
  }
  return 0;
}

/* One AES-256-GCM pass over in[0..len) into out; tag read (decrypt) or written (encrypt). */
static int secret_gcm(int enc, const unsigned char *key, const unsigned char *nonce,
                      const unsigned char *in, int len, unsigned char *out, unsigned char *tag) {
  EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
  int outl = 0, fin = 0;
  int ok = ctx && EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) == 1 &&
           EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, SECRET_NONCE_LEN, NULL) == 1 &&
           EVP_CipherInit_ex(ctx, NULL, NULL, key, nonce, enc) == 1 &&
           (len == 0 || EVP_CipherUpdate(ctx, out, &outl, in, len) == 1) &&
           (enc || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, SECRET_TAG_LEN, tag) == 1) &&
           EVP_CipherFinal_ex(ctx, out + outl, &fin) == 1 &&
           (!enc || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, SECRET_TAG_LEN, tag) == 1);
  EVP_CIPHER_CTX_free(ctx);
  return ok ? 0 : -1;
}

char *dmh_secret_encrypt(const unsigned char key[DMH_SECRET_KEY_LEN], const char *plain) {
  size_t plen = strlen(plain);
  if (plen > 4096)
    return NULL;
  size_t raw_len = SECRET_NONCE_LEN + plen + SECRET_TAG_LEN;
  unsigned char *raw = malloc(raw_len);
  if (!raw || RAND_bytes(raw, SECRET_NONCE_LEN) != 1 ||
      secret_gcm(1, key, raw, (const unsigned char *)plain, (int)plen, raw + SECRET_NONCE_LEN,
                 raw + SECRET_NONCE_LEN + plen) < 0) {
    free(raw);
    return NULL;
  }
  char *b64 = dmh_base64_encode(raw, raw_len);
  free(raw);
  return b64;
}

int dmh_secret_decrypt(const unsigned char key[DMH_SECRET_KEY_LEN], const char *enc, char **out) {
  *out = NULL;
  size_t elen = strlen(enc);
  if (elen == 0 || elen % 4 != 0 || elen > 8192)
    return -1;
  size_t raw_len = 0;
  unsigned char *raw = dmh_base64_decode(enc, elen, &raw_len);
  if (!raw)
    return -1;
  int n = (int)raw_len;
  if (n < SECRET_NONCE_LEN + SECRET_TAG_LEN) {
    free(raw);
    return -1;
  }
  int clen = n - SECRET_NONCE_LEN - SECRET_TAG_LEN;
  char *plain = malloc((size_t)clen + 1);
  int ok = plain && secret_gcm(0, key, raw, raw + SECRET_NONCE_LEN, clen, (unsigned char *)plain,
                               raw + SECRET_NONCE_LEN + clen) == 0;
  return dmh_secret_text(raw, plain, (size_t)clen, ok, out);
}

int dmh_secret_text(unsigned char *raw, char *plain, size_t len, int ok, char **out) {
  free(raw);
  if (!ok || !plain || memchr(plain, '\0', len)) {
    if (plain)
      OPENSSL_cleanse(plain, len);
    free(plain);
    return -1;
  }
  plain[len] = '\0';
  *out = plain;
  return 0;
}

void dmh_secret_free(char *s) {
  if (s) {
    OPENSSL_cleanse(s, strlen(s));
    free(s);
  }
}

static void encrypt_usage(FILE *out) {
  fprintf(out,
          "usage: dmhost encrypt -k|--secret-key-path KEYFILE [--dm] [PLAINTEXT]\n"
          "Prints PLAINTEXT encrypted with the key in KEYFILE (64 hex digits, mode 0600; make one\n"
          "with `(umask 077; openssl rand -hex 32 > KEYFILE)`), for `password-encrypted` in the\n"
          "`from` and `target-database` groups. Without PLAINTEXT the first line of stdin is\n"
          "read: prefer that, since arguments are visible to other users in ps.\n"
          "  --dm   DM's form instead (what `dmctl encrypt` prints), for `password` in a file\n"
          "         read by a process started with --secret-key-path KEYFILE (or by DM).\n");
}

int dmh_encrypt_main(int argc, char **argv) {
  const char *key_path = NULL, *plain_arg = NULL;
  int dm = 0;
  for (int i = 1; i < argc; i++) {
    int rc = dmh_cli_flag(argc, argv, &i, "-k", "--secret-key-path", &key_path);
    if (rc < 0) {
      fprintf(stderr, "dmhost encrypt: --secret-key-path needs a value\n");
      return 2;
    }
    if (rc > 0)
      continue;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      encrypt_usage(stdout);
      return 0;
    }
    if (strcmp(argv[i], "--dm") == 0) {
      dm = 1;
      continue;
    }
    if (argv[i][0] == '-' && argv[i][1] != '\0') {
      fprintf(stderr, "dmhost encrypt: unknown option '%s'\n", argv[i]);
      encrypt_usage(stderr);
      return 2;
    }
    if (plain_arg) {
      fprintf(stderr, "dmhost encrypt: give one plain text (quote it), or none to read stdin\n");
      return 2;
    }
    plain_arg = argv[i];
  }
  if (!key_path) {
    fprintf(stderr, "dmhost encrypt: --secret-key-path KEYFILE is required\n");
    encrypt_usage(stderr);
    return 2;
  }
  unsigned char key[DMH_SECRET_KEY_LEN];
  char why[512];
  if (dmh_secret_key_load(key_path, key, why, sizeof why) < 0) {
    fprintf(stderr, "dmhost encrypt: %s\n", why);
    return 1;
  }
  char line[4098];
  const char *plain = plain_arg;
  if (!plain) {
    if (!fgets(line, sizeof line, stdin)) {
      OPENSSL_cleanse(key, sizeof key);
      fprintf(stderr, "dmhost encrypt: no plain text on stdin\n");
      return 1;
    }
    line[strcspn(line, "\r\n")] = '\0';
    plain = line;
  }
  char *enc = dm ? dmh_secret_dm_encrypt(key, plain) : dmh_secret_encrypt(key, plain);
  OPENSSL_cleanse(key, sizeof key);
  OPENSSL_cleanse(line, sizeof line);
  if (!enc) {
    fprintf(stderr, "dmhost encrypt: cannot encrypt (over 4096 bytes, or out of memory)\n");
    return 1;
  }
  printf("%s\n", enc);
  free(enc);
  return fflush(stdout) == 0 ? 0 : 1;
}

/* ---- the cluster key ---- */

static pthread_mutex_t secret_cluster_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned char secret_cluster[DMH_SECRET_KEY_LEN];
static int secret_cluster_set;
static atomic_int secret_cluster_all;
static _Thread_local int secret_cluster_thread;

void dmh_secret_cluster_key_set(const unsigned char key[DMH_SECRET_KEY_LEN]) {
  pthread_mutex_lock(&secret_cluster_mu);
  if (key)
    memcpy(secret_cluster, key, DMH_SECRET_KEY_LEN);
  else
    OPENSSL_cleanse(secret_cluster, sizeof secret_cluster);
  secret_cluster_set = key != NULL;
  pthread_mutex_unlock(&secret_cluster_mu);
}

void dmh_secret_cluster_texts(int process_wide) {
  atomic_store(&secret_cluster_all, process_wide != 0);
}

void dmh_secret_cluster_scope(int on) {
  secret_cluster_thread = on != 0;
}

int dmh_secret_cluster_key(unsigned char key[DMH_SECRET_KEY_LEN]) {
  if (!secret_cluster_thread && !atomic_load(&secret_cluster_all))
    return 0;
  pthread_mutex_lock(&secret_cluster_mu);
  int rc = secret_cluster_set ? 1 : -1;
  if (rc > 0)
    memcpy(key, secret_cluster, DMH_SECRET_KEY_LEN);
  pthread_mutex_unlock(&secret_cluster_mu);
  return rc;
}
