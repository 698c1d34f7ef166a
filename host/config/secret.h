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

/* `dmhost encrypt --secret-key-path FILE [PLAINTEXT]`: the plain text from stdin (first line)
 * unless given; prints the encrypted form. Exit status. */
int dmh_encrypt_main(int argc, char **argv);

#endif /* DMH_SECRET_H */
