/*
 * Secrets: passwords kept out of config files in clear text. A key file (`secret-key-path`) holds
 * 32 bytes as 64 hex digits; a password encrypted with it (`dmhost encrypt`) is
 * base64(nonce[12] || AES-256-GCM ciphertext || tag[16]), so a wrong key or a damaged value is
 * detected, never used as a password. The crypto is OpenSSL's libcrypto.
 */
#ifndef DMH_SECRET_H
#define DMH_SECRET_H

#include <stddef.h>

#define DMH_SECRET_KEY_LEN 32

/* Read the key from `path`: its first line is 64 hex digits, and the file is readable by its owner
 * only (no group or other permission bits). 0, or -1 with the reason in why (never key bytes). */
int dmh_secret_key_load(const char *path, unsigned char key[DMH_SECRET_KEY_LEN], char *why,
                        size_t why_size);

/* The encrypted form of `plain` (a fresh random nonce each call), malloc'd; NULL on failure. */
char *dmh_secret_encrypt(const unsigned char key[DMH_SECRET_KEY_LEN], const char *plain);

/* The plain text of `enc`, malloc'd, in *out: 0, or -1 when it is not this key's encryption of a
 * text (wrong key, damaged or not base64) or memory ran out (*out NULL either way). */
int dmh_secret_decrypt(const unsigned char key[DMH_SECRET_KEY_LEN], const char *enc, char **out);

/* The end of a decryption (secret.c, secret_dm.c): frees raw; when ok and the len bytes of plain
 * (malloc'd with room for a NUL) hold no NUL, terminates plain into *out and returns 0, else
 * overwrites and frees it and returns -1. */
int dmh_secret_text(unsigned char *raw, char *plain, size_t len, int ok, char **out);

/* Overwrite and free a secret string. */
void dmh_secret_free(char *s);

/* The cluster key (docs/cluster.md, "The cluster key"): the passwords of the files a master keeps
 * in etcd are `password-encrypted` with the key given to every master and worker out of band
 * (--cluster-key), never with a `secret-key-path` named in the text, which whoever writes etcd
 * chooses. set: once at start (NULL: none). While texts are the cluster's (process-wide: a worker,
 * all of whose files come from etcd; or on the calling thread between scope(1) and scope(0): a
 * master reading a stored file), `password-encrypted` decrypts with the cluster key only and a
 * `secret-key-path` in the text is refused (DM_ERR_CLUSTER_KEY). */
void dmh_secret_cluster_key_set(const unsigned char key[DMH_SECRET_KEY_LEN]);
void dmh_secret_cluster_texts(int process_wide);
void dmh_secret_cluster_scope(int on);
/* 0: texts are not the cluster's now; 1: they are and key holds the cluster key; -1: they are and
 * the process has no cluster key. */
int dmh_secret_cluster_key(unsigned char key[DMH_SECRET_KEY_LEN]);

/* ---- DM's form (secret_dm.c) ----
 * What `dmctl encrypt` prints and DM decrypts in `from.password` and `target-database.password`:
 * base64(iv[16] || '@' || AES-256-CFB128(key, iv, plain)). No tag: a wrong key decrypts too, into
 * other bytes. The key is the process's (the --secret-key-path flag, DM's master setting), never a
 * file's; without one a password is used as written, as current DM (v8+) does. */

/* DM's form of `plain` (a fresh random iv), malloc'd; NULL on failure (over 4096 bytes, memory). */
char *dmh_secret_dm_encrypt(const unsigned char key[DMH_SECRET_KEY_LEN], const char *plain);
/* 1 when value has DM's shape (base64, at least 17 bytes, '@' at byte 16), else 0. */
int dmh_secret_dm_shaped(const char *value);
/* The plain text of DM's form `value` with key, malloc'd in *out: 0, or -1 when value is not DM's
 * shape, the result holds a NUL byte or memory ran out (*out NULL). */
int dmh_secret_dm_decrypt(const unsigned char key[DMH_SECRET_KEY_LEN], const char *value,
                          char **out);

/* The process's key for DM's form: read from path (dmh_secret_key_load's rules; NULL: none). Once
 * at start. 0, or -1 with why (never key bytes). */
int dmh_secret_dm_key_load(const char *path, char *why, size_t why_size);
/* 1 and the path the key was read from in buf, or 0 when the process has no key. */
int dmh_secret_dm_key_path(char *buf, size_t size);
/* The same for a program's --secret-key-path (NULL: nothing to do): 0, or -1 with the reason on
 * stderr as "dmhost PROG: ..." (exit 2). */
int dmh_secret_dm_key_flag(const char *prog, const char *path);

/* What dmh_secret_dm_password saw, for the hint of a refused account (never the password). */
enum {
  DMH_DM_FORM_NONE = 0,   /* not DM's shape: plain text */
  DMH_DM_FORM_NO_KEY = 1, /* DM's shape, but the process has no key: used as written */
  DMH_DM_FORM_KEYED = 2,  /* DM's shape, decrypted with the process's key (or, a NUL in the
                           * result, used as written): a wrong key shows only as access denied */
};
/* DM's DecryptOrPlaintext of a `password` value: with the process's key, a value of DM's shape is
 * replaced by its decryption; anything else, and everything in a text of the cluster's store
 * (which a master sealed after decrypting), is the password as written. *out malloc'd (free with
 * dmh_secret_free); *dm_form one of the above. 0, or -1 out of memory. */
int dmh_secret_dm_password(const char *value, char **out, int *dm_form);

/* `dmhost encrypt --secret-key-path FILE [--dm] [PLAINTEXT]`: the plain text from stdin (first line)
 * unless given; prints the encrypted form. Exit status. */
int dmh_encrypt_main(int argc, char **argv);

#endif /* DMH_SECRET_H */
