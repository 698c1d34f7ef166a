/* The replay driver of the fuzz targets (fuzz_replay.h). */
#include "fuzz_replay.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static int fuzz_replay_file(const char *path, fuzz_target_fn target, size_t first_flip) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    return -1;
  }
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = malloc(cap);
  size_t n;
  while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
    len += n;
    if (len == cap) {
      uint8_t *grown = realloc(buf, cap *= 2);
      if (!grown)
        free(buf);
      buf = grown;
    }
  }
  fclose(f);
  if (!buf)
    return -1;
  target(buf, len);
  /* every prefix and a few flipped bytes too: cut inputs and damage, as the fuzzer would */
  for (size_t cut = 0; cut < len; cut += 1 + len / 64)
    target(buf, cut);
  for (size_t at = first_flip; at < len; at += 1 + len / 32) {
    buf[at] ^= 0xff;
    target(buf, len);
    buf[at] ^= 0xff;
  }
  free(buf);
  return 0;
}

int fuzz_replay_main(int argc, char **argv, fuzz_target_fn target, size_t first_flip) {
  int files = 0, failed = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
      DIR *d = opendir(argv[i]);
      struct dirent *de;
      while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
          continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", argv[i], de->d_name);
        files++;
        failed += fuzz_replay_file(p, target, first_flip) < 0;
      }
      if (d)
        closedir(d);
    } else {
      files++;
      failed += fuzz_replay_file(argv[i], target, first_flip) < 0;
    }
  }
  printf("%d passed, %d failed\n", files - failed, failed);
  return failed || files == 0 ? 1 : 0;
}
