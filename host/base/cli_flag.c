/* A command-line flag with a value (cli_flag.h), shared by dmctl and `dmhost binlog`. */
#include "cli_flag.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int dmh_cli_flag(int argc, char **argv, int *i, const char *short_name, const char *long_name,
                 const char **out) {
  const char *a = argv[*i];
  size_t sl = strlen(short_name), ll = strlen(long_name);
  if (strcmp(a, short_name) == 0 || strcmp(a, long_name) == 0) {
    if (*i + 1 >= argc)
      return -1;
    *out = argv[++*i];
    return 1;
  }
  if ((strncmp(a, short_name, sl) == 0 && a[sl] == '=') ||
      (strncmp(a, long_name, ll) == 0 && a[ll] == '=')) {
    *out = strchr(a, '=') + 1;
    return 1;
  }
  return 0;
}

int dmh_cli_int(const char *v, long min, long max, long *out) {
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (!*v || *end || errno == ERANGE || n < min || n > max)
    return -1;
  *out = n;
  return 0;
}
