/* config|get-config's output file. See dmctl_cfg_file.h. */
#include "dmctl_cfg_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dmhost/sdk.h"
#include "error_json.h"

int dmctl_cfg_file_take(int *argc, char **argv, const char **out, dm_error *err) {
  *out = NULL;
  if (strcmp(argv[0], "config") != 0 && strcmp(argv[0], "get-config") != 0)
    return 0;
  for (int i = 1; i < *argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-p") != 0 && strcmp(a, "--path") != 0 && strcmp(a, "-f") != 0 &&
        strcmp(a, "--file") != 0)
      continue;
    if (i + 1 >= *argc || *out) {
      dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
                   "%s: %s %s (usage: %s task|source NAME [-p FILE])", argv[0], a,
                   *out ? "is given twice" : "needs a file name", argv[0]);
      return -1;
    }
    *out = argv[i + 1];
    memmove(&argv[i], &argv[i + 2], (size_t)(*argc - i - 2) * sizeof *argv);
    *argc -= 2;
    i--;
  }
  return 0;
}

/* The whole of text to fd: 0, or -1 with errno. */
static int cfg_file_write_all(int fd, const char *text, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, text, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -1;
    text += n;
    len -= (size_t)n;
  }
  return 0;
}

void dmctl_cfg_file_write(json_object *resp, const char *path) {
  json_object *v = NULL;
  if (!json_object_object_get_ex(resp, "result", &v) || !json_object_get_boolean(v) ||
      !json_object_object_get_ex(resp, "cfg", &v) || !json_object_is_type(v, json_type_string))
    return; /* a failed answer is printed as it is */
  const char *text = json_object_get_string(v);
  /* O_EXCL: an existing file (or a link planted at the name) is never written through */
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  int rc = fd < 0 ? -1 : cfg_file_write_all(fd, text, strlen(text));
  int e = errno;
  if (fd >= 0 && (close(fd) != 0 || rc < 0)) {
    e = rc < 0 ? e : errno;
    rc = -1;
    unlink(path); /* a cut copy is not left as if whole */
  }
  dm_error err;
  if (rc < 0) {
    dm_error_set(&err, DM_ERR_CONFIG_IO, strerror(e), "cannot write the config to %s: %s%s", path,
                 strerror(e),
                 e == EEXIST ? " (an existing file is never overwritten: give a new name)" : "");
    json_object_object_del(resp, "cfg");
    dmh_control_set_error(resp, &err);
    return;
  }
  char msg[4200];
  snprintf(msg, sizeof msg, "write config to file %s succeed", path);
  json_object_object_add(resp, "msg", json_object_new_string(msg));
  json_object_object_add(resp, "cfg", json_object_new_string(""));
}
