/* A command-line flag with a value, and the programs' common flag groups (cli_flag.h). */
#include "cli_flag.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmhost/sdk.h"
#include "log.h"

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

/* ---- the common flag groups ---- */

/* Each group's options: getopt's value (the short letter), the short form dmctl's parser takes
 * (NULL: none; getopt's short forms are the program's optstring), the long name, and where the
 * value goes (NULL: a log flag, applied at once). */
static const struct cli_common_opt {
  unsigned group;
  int val;
  const char *short_name, *long_name;
  size_t field; /* offsetof in dmh_cli_common; 0: none */
} cli_common_opts[] = {
    {DMH_CLI_LOG, 'l', NULL, "log-level", 0},
    {DMH_CLI_LOG, 'j', NULL, "log-format", 0},
    {DMH_CLI_STATE_DIR, 'd', "-d", "state-dir", offsetof(dmh_cli_common, state_dir)},
    {DMH_CLI_PLUGIN_DIR, 'p', NULL, "plugin-dir", offsetof(dmh_cli_common, plugin_dir)},
    {DMH_CLI_TLS, 'A', NULL, "tls-ca", offsetof(dmh_cli_common, tls.ca)},
    {DMH_CLI_TLS, 'C', NULL, "tls-cert", offsetof(dmh_cli_common, tls.cert)},
    {DMH_CLI_TLS, 'K', NULL, "tls-key", offsetof(dmh_cli_common, tls.key)},
    {DMH_CLI_TLS_CN, 'N', NULL, "tls-allowed-cn", offsetof(dmh_cli_common, tls.allowed_cn)},
    {DMH_CLI_SECRET_KEY, DMH_CLI_SECRET_KEY_VAL, NULL, "secret-key-path",
     offsetof(dmh_cli_common, secret_key_path)},
};
#define CLI_N_COMMON (sizeof cli_common_opts / sizeof cli_common_opts[0])

int dmh_cli_tls_given(const dmh_cli_tls *tls, dm_error *err) {
  int n = (tls->ca != NULL) + (tls->cert != NULL) + (tls->key != NULL);
  if (n == 0 || n == 3)
    return n / 3;
  dm_error_set(err, DM_ERR_CONTROL_REQUEST, NULL,
               "mutual TLS needs all of --tls-ca, --tls-cert and --tls-key; %s%s%smissing",
               tls->ca ? "" : "--tls-ca ", tls->cert ? "" : "--tls-cert ",
               tls->key ? "" : "--tls-key ");
  return -1;
}

const struct option *dmh_cli_longopts(const dmh_cli_common *f, const struct option *own,
                                      struct option *out) {
  size_t n = 0;
  for (; own[n].name && n < DMH_CLI_MAX_LONGOPTS - CLI_N_COMMON - 1; n++)
    out[n] = own[n];
  for (size_t k = 0; k < CLI_N_COMMON; k++)
    if (f->groups & cli_common_opts[k].group)
      out[n++] = (struct option){cli_common_opts[k].long_name, required_argument, NULL,
                                 cli_common_opts[k].val};
  out[n] = (struct option){NULL, 0, NULL, 0};
  return out;
}

static int cli_common_set(dmh_cli_common *f, const struct cli_common_opt *o, const char *arg) {
  if (o->field) {
    *(const char **)((char *)f + o->field) = arg;
    return 1;
  }
  int rc = o->val == 'l' ? dmh_log_level_flag(f->prog, arg) : dmh_log_format_flag(f->prog, arg);
  return rc < 0 ? -1 : 1;
}

int dmh_cli_common_flag(dmh_cli_common *f, int c, const char *arg) {
  for (size_t k = 0; k < CLI_N_COMMON; k++)
    if ((f->groups & cli_common_opts[k].group) && cli_common_opts[k].val == c)
      return cli_common_set(f, &cli_common_opts[k], arg);
  return 0;
}

int dmh_cli_common_arg(dmh_cli_common *f, int argc, char **argv, int *i) {
  for (size_t k = 0; k < CLI_N_COMMON; k++) {
    const struct cli_common_opt *o = &cli_common_opts[k];
    if (!(f->groups & o->group))
      continue;
    char long_name[32];
    snprintf(long_name, sizeof long_name, "--%s", o->long_name);
    const char *v = NULL;
    int r = dmh_cli_flag(argc, argv, i, o->short_name ? o->short_name : long_name, long_name, &v);
    if (r != 0)
      return r < 0 ? -1 : cli_common_set(f, o, v);
  }
  return 0;
}

/* ---- a daemon's settings ---- */

/* "--name VALUE\n" (or "--name\n" when value is NULL) into f, the value a shell word. */
static void cli_settings_line(FILE *f, const char *name, const char *value) {
  fprintf(f, "--%s", name);
  if (value) {
    bool plain = *value != '\0';
    for (const char *p = value; plain && *p; p++)
      plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("_./:,=@+-", *p);
    if (plain)
      fprintf(f, " %s", value);
    else {
      fputs(" '", f);
      for (const char *p = value; *p; p++)
        *p == '\'' ? fputs("'\\''", f) : fputc(*p, f);
      fputc('\'', f);
    }
  }
  fputc('\n', f);
}

/* The text written into f (open_memstream's buffer *out, set by the close), or NULL when a write
 * failed. */
static char *cli_settings_end(FILE *f, char **out) {
  bool failed = ferror(f) != 0;
  if (fclose(f) != 0 || failed) {
    free(*out);
    return NULL;
  }
  return *out;
}

char *dmh_cli_settings_text(int argc, char **argv, const char *shortopts,
                            const struct option *longopts) {
  char *out = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&out, &size);
  if (!f)
    return NULL;
  int saved_opterr = opterr, c;
  opterr = 0; /* parsed once already: nothing to report */
  optind = 1;
  while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
    const struct option *o = NULL;
    for (const struct option *l = longopts; l->name && !o; l++)
      if (!l->flag && l->val == c)
        o = l;
    if (c == '?' || c == ':' || (o && strcmp(o->name, "help") == 0))
      continue;
    char short_name[2] = {(char)c, '\0'};
    cli_settings_line(f, o ? o->name : short_name, optarg);
  }
  opterr = saved_opterr;
  return cli_settings_end(f, &out);
}

int dmh_cli_settings_put(char **text, const char *name, const char *value) {
  char *out = NULL;
  size_t size = 0, n = strlen(name);
  FILE *f = open_memstream(&out, &size);
  if (!f)
    return -1;
  bool put = false;
  for (const char *p = *text; p && *p;) {
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) + 1 : strlen(p);
    if (!put && strncmp(p, "--", 2) == 0 && strncmp(p + 2, name, n) == 0 &&
        (p[2 + n] == ' ' || p[2 + n] == '\n' || !p[2 + n])) {
      cli_settings_line(f, name, value);
      put = true;
    } else
      fwrite(p, 1, len, f);
    p += len;
  }
  if (!put)
    cli_settings_line(f, name, value);
  if (!cli_settings_end(f, &out))
    return -1;
  free(*text);
  *text = out;
  return 0;
}
