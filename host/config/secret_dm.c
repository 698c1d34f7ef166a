/*
 * DM's encrypted passwords (secret.h, "DM's form"): what `dmctl encrypt` prints and DM's master
 * decrypts with the key of its `secret-key-path`, and the process's copy of that key (the
 * `--secret-key-path` flag of dmhost run|check|serve|master). The form is DM's
 * (dm/pkg/encrypt/encrypt.go, dm/pkg/utils/encrypt.go): base64(iv[16] || '@' || AES-256-CFB128).
 * CFB has no tag: a wrong key decrypts into other bytes, which DM then uses as the password; the
 * server's "access denied" is the only sign, hence the hint the precheck adds (dm_form below).
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "secret.h"

#define DM_IV_LEN 16 /* the AES block */
#define DM_SEP '@'
#define DM_PLAIN_MAX 4096

/* One AES-256-CFB128 pass (OpenSSL's EVP_aes_256_cfb128 is Go's cipher.NewCFBEncrypter). */
static int dm_cfb(int enc, const unsigned char *key, const unsigned char *iv,
                  const unsigned char *in, int len, unsigned char *out) {
  EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
  int outl = 0, fin = 0;
  int ok = ctx && EVP_CipherInit_ex(ctx, EVP_aes_256_cfb128(), NULL, key, iv, enc) == 1 &&
           (len == 0 || EVP_CipherUpdate(ctx, out, &outl, in, len) == 1) &&
           EVP_CipherFinal_ex(ctx, out + outl, &fin) == 1;
  EVP_CIPHER_CTX_free(ctx);
  return ok ? 0 : -1;
}

char *dmh_secret_dm_encrypt(const unsigned char key[DMH_SECRET_KEY_LEN], const char *plain) {
  size_t plen = strlen(plain);
  if (plen > DM_PLAIN_MAX)
    return NULL;
  size_t raw_len = DM_IV_LEN + 1 + plen;
  unsigned char *raw = malloc(raw_len);
  if (!raw || RAND_bytes(raw, DM_IV_LEN) != 1) {
    free(raw);
    return NULL;
  }
  raw[DM_IV_LEN] = DM_SEP;
  char *b64 = NULL;
  if (dm_cfb(1, key, raw, (const unsigned char *)plain, (int)plen, raw + DM_IV_LEN + 1) == 0)
    b64 = dmh_base64_encode(raw, raw_len);
  free(raw);
  return b64;
}

/* The raw bytes of `value` when it has DM's shape (base64 of at least iv + '@', the '@' at byte
 * 16: DM's checks before it decrypts), malloc'd, their count in *n; NULL otherwise. */
static unsigned char *dm_raw(const char *value, size_t *n) {
  size_t vlen = strlen(value);
  if (vlen < 24 || vlen % 4 != 0 || vlen > 2 * DM_PLAIN_MAX)
    return NULL;
  unsigned char *raw = dmh_base64_decode(value, vlen, n);
  if (raw && (*n < DM_IV_LEN + 1 || raw[DM_IV_LEN] != DM_SEP)) {
    free(raw);
    raw = NULL;
  }
  return raw;
}

int dmh_secret_dm_shaped(const char *value) {
  size_t n = 0;
  unsigned char *raw = dm_raw(value, &n);
  free(raw);
  return raw != NULL;
}

int dmh_secret_dm_decrypt(const unsigned char key[DMH_SECRET_KEY_LEN], const char *value,
                          char **out) {
  *out = NULL;
  size_t n = 0;
  unsigned char *raw = dm_raw(value, &n);
  if (!raw)
    return -1;
  size_t clen = n - DM_IV_LEN - 1;
  char *plain = malloc(clen + 1);
  /* A NUL in the result cannot be a C password: taken as "does not decrypt" (used as written). */
  int ok =
      plain && dm_cfb(0, key, raw, raw + DM_IV_LEN + 1, (int)clen, (unsigned char *)plain) == 0;
  return dmh_secret_text(raw, plain, clen, ok, out);
}

/* ---- the process's key (DM's master `secret-key-path`) ---- */

static pthread_mutex_t dm_key_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned char dm_key[DMH_SECRET_KEY_LEN];
static int dm_key_set;
static char dm_key_path[4096];

int dmh_secret_dm_key_load(const char *path, char *why, size_t why_size) {
  unsigned char key[DMH_SECRET_KEY_LEN];
  if (path && dmh_secret_key_load(path, key, why, why_size) < 0)
    return -1;
  pthread_mutex_lock(&dm_key_mu);
  if (path)
    memcpy(dm_key, key, sizeof key);
  else
    OPENSSL_cleanse(dm_key, sizeof dm_key);
  snprintf(dm_key_path, sizeof dm_key_path, "%s", path ? path : "");
  dm_key_set = path != NULL;
  pthread_mutex_unlock(&dm_key_mu);
  OPENSSL_cleanse(key, sizeof key);
  return 0;
}

int dmh_secret_dm_key_path(char *buf, size_t size) {
  pthread_mutex_lock(&dm_key_mu);
  int set = dm_key_set;
  snprintf(buf, size, "%s", dm_key_path);
  pthread_mutex_unlock(&dm_key_mu);
  return set;
}

int dmh_secret_dm_password(const char *value, char **out, int *dm_form) {
  *out = NULL;
  *dm_form = dmh_secret_dm_shaped(value) ? DMH_DM_FORM_NO_KEY : DMH_DM_FORM_NONE;
  unsigned char key[DMH_SECRET_KEY_LEN];
  /* texts of the cluster's store were sealed by a master, which decrypted DM's form already */
  int have = 0;
  if (*dm_form && dmh_secret_cluster_key(key) == 0) {
    pthread_mutex_lock(&dm_key_mu);
    if ((have = dm_key_set))
      memcpy(key, dm_key, sizeof key);
    pthread_mutex_unlock(&dm_key_mu);
  }
  if (have) {
    int rc = dmh_secret_dm_decrypt(key, value, out);
    OPENSSL_cleanse(key, sizeof key);
    *dm_form = DMH_DM_FORM_KEYED;
    if (rc == 0)
      return 0;
  }
  OPENSSL_cleanse(key, sizeof key);
  *out = strdup(value);
  return *out ? 0 : -1;
}

int dmh_secret_dm_key_flag(const char *prog, const char *path) {
  char why[512];
  if (!path || dmh_secret_dm_key_load(path, why, sizeof why) == 0)
    return 0;
  fprintf(stderr, "dmhost %s: --secret-key-path: %s\n", prog, why);
  return -1;
}
