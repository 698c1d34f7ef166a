/*
 * For tests of what the host and units create (issue 9, item 4): every folder of a tree has one
 * mode and every file another. Header-only, with CUnit assertions; each mismatch is printed.
 */
#ifndef DMH_TEST_FS_MODES_H
#define DMH_TEST_FS_MODES_H

#include <CUnit/Basic.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Every folder below (and including) `dir` has dir_mode, every other entry file_mode. Returns the
 * number of files; *n_suffix (when not NULL) counts those whose name ends with `suffix`. */
static inline int fsm_check_tree(const char *dir, mode_t file_mode, mode_t dir_mode,
                                 const char *suffix, int *n_suffix) {
  struct stat sb;
  CU_ASSERT_EQUAL_FATAL(lstat(dir, &sb), 0);
  CU_ASSERT_EQUAL(sb.st_mode & 07777, dir_mode);
  if ((sb.st_mode & 07777) != dir_mode)
    fprintf(stderr, "\n  %s: %o, want %o\n", dir, sb.st_mode & 07777, dir_mode);
  DIR *d = opendir(dir);
  CU_ASSERT_PTR_NOT_NULL_FATAL(d);
  int files = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    char path[1024];
    CU_ASSERT_FATAL(snprintf(path, sizeof path, "%s/%s", dir, de->d_name) < (int)sizeof path);
    CU_ASSERT_EQUAL_FATAL(lstat(path, &sb), 0);
    if (S_ISDIR(sb.st_mode)) {
      files += fsm_check_tree(path, file_mode, dir_mode, suffix, n_suffix);
      continue;
    }
    files++;
    size_t n = strlen(de->d_name), k = suffix ? strlen(suffix) : 0;
    if (n_suffix && suffix && n > k && strcmp(de->d_name + n - k, suffix) == 0)
      (*n_suffix)++;
    CU_ASSERT_EQUAL(sb.st_mode & 07777, file_mode);
    if ((sb.st_mode & 07777) != file_mode)
      fprintf(stderr, "\n  %s: %o, want %o\n", path, sb.st_mode & 07777, file_mode);
  }
  closedir(d);
  return files;
}

#endif /* DMH_TEST_FS_MODES_H */
