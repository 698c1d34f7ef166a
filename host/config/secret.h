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

/* `dmhost encrypt --secret-key-path FILE [PLAINTEXT]`: the plain text from stdin (first line)
 * unless given; prints the encrypted form. Exit status. */
int dmh_encrypt_main(int argc, char **argv);

#endif /* DMH_SECRET_H */
