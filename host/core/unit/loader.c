/*
 * The unit loader. Nothing of a unit runs before its descriptor has passed every check; a refused
 * library is closed before the error is filled, so the message is built from copies taken while
 * the library was still mapped (kind_name and friends point into it).
 */
#include "loader.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmhost/sdk.h"

#ifndef DMHOST_PLUGIN_DIR
#define DMHOST_PLUGIN_DIR "/usr/local/lib/dmhost/plugins"
#endif

struct dmh_unit_lib {
  void *handle;
  const dm_unit_descriptor *desc;
  char *path; /* as given to open, not the private copy */
  atomic_int refs;
  atomic_bool pinned;
};

/* The smallest descriptor each ABI minor of this major may have, indexed by minor. */
static const size_t loader_min_size[] = {DM_UNIT_DESCRIPTOR_SIZE_1_0, DM_UNIT_DESCRIPTOR_SIZE_1_1,
                                         DM_UNIT_DESCRIPTOR_SIZE_1_2, DM_UNIT_DESCRIPTOR_SIZE_1_3};
_Static_assert(sizeof loader_min_size / sizeof loader_min_size[0] == DMH_ABI_MINOR + 1,
               "give the descriptor size of every ABI minor the host accepts");

static const char *loader_kind_name(uint32_t kind) {
  switch (kind) {
  case DM_UNIT_DUMP:
    return "dump";
  case DM_UNIT_LOAD:
    return "load";
  case DM_UNIT_SYNC:
    return "sync";
  case DM_UNIT_RELAY:
    return "relay";
  case DM_UNIT_CUSTOM:
    return "custom";
  default:
    return NULL;
  }
}

static void loader_describe_kind(uint32_t kind, const char *kind_name, char *out, size_t len) {
  if (kind == DM_UNIT_CUSTOM)
    snprintf(out, len, "custom kind `%s`", kind_name);
  else if (loader_kind_name(kind))
    snprintf(out, len, "%s", loader_kind_name(kind));
  else
    snprintf(out, len, "unknown kind %u", (unsigned)kind);
}

/*
 * Refuse a library: the message is formatted first (its arguments may point into the library),
 * then the library is closed, then the error filled.
 */
static int loader_refuse(void *handle, dm_error *err, int32_t code, const char *raw_cause,
                         const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int loader_refuse(void *handle, dm_error *err, int32_t code, const char *raw_cause,
                         const char *fmt, ...) {
  char msg[DM_ERROR_MESSAGE_MAX];
  char raw[DM_ERROR_RAW_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  dm_strlcpy(raw, raw_cause, sizeof raw);
  if (handle)
    dlclose(handle);
  dm_error_set(err, code, raw[0] ? raw : NULL, "%s", msg);
  return -1;
}

/* Shows the first bytes of a file that is not ELF the way a user recognises them: '#!/b'. */
static void loader_show_bytes(const unsigned char *b, size_t n, char *out, size_t len) {
  size_t o = 0;
  out[o++] = '\'';
  for (size_t i = 0; i < n && o + 6 < len; i++) {
    if (b[i] >= 0x20 && b[i] < 0x7f && b[i] != '\'' && b[i] != '\\')
      out[o++] = (char)b[i];
    else
      o += (size_t)snprintf(out + o, len - o, "\\x%02x", b[i]);
  }
  out[o++] = '\'';
  out[o] = '\0';
}

/*
 * Is `path` an ELF file? Looked at before dlopen because dlopen's own message for a text file or a
 * directory ("invalid ELF header", "cannot read file data") does not tell the user what they
 * pointed at.
 */
static int loader_check_elf(const char *path, dm_error *err) {
  /* O_NONBLOCK: a FIFO named by mistake must not hang the host. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    return loader_refuse(NULL, err, DM_ERR_UNIT_OPEN, strerror(e),
                         "unit %s cannot be opened: %s: check the path in unit-paths (or "
                         "--plugin-dir) and its permissions",
                         path, strerror(e));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return loader_refuse(NULL, err, DM_ERR_UNIT_OPEN, strerror(e), "unit %s cannot be read: %s",
                         path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return loader_refuse(NULL, err, DM_ERR_UNIT_NOT_ELF, NULL,
                         "unit %s is not an ELF shared object: it is %s: point unit-paths at the "
                         "built .so file",
                         path, S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
  }
  unsigned char head[4];
  ssize_t n;
  do
    n = pread(fd, head, sizeof head, 0);
  while (n < 0 && errno == EINTR);
  int e = errno;
  close(fd);
  if (n < 0)
    return loader_refuse(NULL, err, DM_ERR_UNIT_OPEN, strerror(e), "unit %s cannot be read: %s",
                         path, strerror(e));
  if (n == 0)
    return loader_refuse(NULL, err, DM_ERR_UNIT_NOT_ELF, NULL,
                         "unit %s is not an ELF shared object: it is empty: point unit-paths at "
                         "the built .so file (was the build interrupted?)",
                         path);
  if (n < 4 || memcmp(head,
                      "\x7f"
                      "ELF",
                      4) != 0) {
    char shown[32];
    loader_show_bytes(head, (size_t)n, shown, sizeof shown);
    return loader_refuse(NULL, err, DM_ERR_UNIT_NOT_ELF, NULL,
                         "unit %s is not an ELF shared object: it starts with %s%s where a shared "
                         "object starts with '\\x7fELF': point unit-paths at the built .so file",
                         path, shown, n < 4 ? " and ends there" : "");
  }
  return 0;
}

/*
 * A file named over the control socket is run inside the daemon: it must be as trustworthy as the
 * daemon's own binary. Refuse one owned by another user than root or the daemon's, or that a user
 * other than those could have rewritten (writable by others, or by a group other than root's and
 * the daemon's). Checked on the descriptor the copy is read from, so what is checked is what runs.
 */
static int loader_check_trust(const char *path, int fd, dm_error *err) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    return loader_refuse(NULL, err, DM_ERR_UNIT_OPEN, strerror(e), "unit %s cannot be read: %s",
                         path, strerror(e));
  }
  uid_t me = geteuid();
  gid_t my_group = getegid();
  unsigned mode = (unsigned)(st.st_mode & 07777);
  if (st.st_uid != 0 && st.st_uid != me)
    return loader_refuse(NULL, err, DM_ERR_UNTRUSTED_FILE, NULL,
                         "unit %s is owned by uid %u, not by root or the daemon's uid %u: another "
                         "user could change the code the daemon runs; `chown root %s` (and check "
                         "its contents) before loading it",
                         path, (unsigned)st.st_uid, (unsigned)me, path);
  bool group_can = (st.st_mode & S_IWGRP) && st.st_gid != 0 && st.st_gid != my_group;
  if ((st.st_mode & S_IWOTH) || group_can)
    return loader_refuse(NULL, err, DM_ERR_UNTRUSTED_FILE, NULL,
                         "unit %s has mode %04o: it is writable by %s, so another user could "
                         "change the code the daemon runs; `chmod go-w %s` before loading it",
                         path, mode, (st.st_mode & S_IWOTH) ? "others" : "its group", path);
  return 0;
}

bool dmh_path_below(const char *real, const char *dir) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/')
    n--;
  if (n == 1 && dir[0] == '/')
    return real[0] == '/';
  return strncmp(real, dir, n) == 0 && (real[n] == '/' || real[n] == '\0');
}

/* The folder rule (loader.h, dmh_unit_folders) on the descriptor the copy is made from: its real
 * path (the kernel's name of the open file, so no link or rename between check and read can change
 * which file it is) below an allowed folder, every folder above it trusted, and not a folder the
 * daemon writes into. */
static int loader_check_folder(const char *path, int fd, const dmh_unit_folders *f, dm_error *err) {
  char link[64], real[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, real, sizeof real - 1);
  if (n <= 0 || real[0] != '/')
    return loader_refuse(NULL, err, DM_ERR_UNIT_FOLDER, NULL,
                         "unit %s: cannot tell which folder it is in (%s)", path,
                         n < 0 ? strerror(errno) : "no path");
  real[n] = '\0';
  char which[512] = "";
  if (f->daemon_writes && f->daemon_writes(f->ud, real, which, sizeof which))
    return loader_refuse(NULL, err, DM_ERR_UNIT_FOLDER, NULL,
                         "unit %s (%s) is in %s, a folder the daemon writes into from what servers "
                         "send: the daemon never loads code from there; install the build into "
                         "--plugin-dir or a --unit-dir folder",
                         path, real, which);
  const char *home = NULL;
  for (int i = 0; i < f->n_allowed && !home; i++)
    if (f->allowed[i] && dmh_path_below(real, f->allowed[i]))
      home = f->allowed[i];
  if (!home) {
    char list[1024] = "";
    size_t len = 0;
    for (int i = 0; i < f->n_allowed && len < sizeof list; i++)
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", f->allowed[i]);
    return loader_refuse(NULL, err, DM_ERR_UNIT_FOLDER, NULL,
                         "unit %s (%s) is not in a unit folder of the daemon (%s): the daemon "
                         "loads builds only from --plugin-dir and --unit-dir folders; install it "
                         "there, or start the daemon with --unit-dir naming its folder",
                         path, real, list[0] ? list : "none");
  }
  /* Every folder up to /: one another user could write to could swap the file (or a folder).
   * A sticky folder (/tmp: mode 1777, root's) lets others add entries but not rename or remove
   * one they do not own, and what lies below it on this path is checked to be root's or ours:
   * it cannot swap anything here. */
  uid_t me = geteuid();
  gid_t my_group = getegid();
  char dir[4096];
  dm_strlcpy(dir, real, sizeof dir);
  for (char *slash = strrchr(dir, '/'); slash; slash = strrchr(dir, '/')) {
    if (slash == dir)
      slash[1] = '\0';
    else
      *slash = '\0';
    struct stat st;
    if (stat(dir, &st) != 0)
      return loader_refuse(NULL, err, DM_ERR_UNIT_FOLDER, NULL, "unit %s: folder %s: %s", path, dir,
                           strerror(errno));
    bool group_can = (st.st_mode & S_IWGRP) && st.st_gid != 0 && st.st_gid != my_group;
    bool sticky = (st.st_mode & S_ISVTX) != 0;
    if ((st.st_uid != 0 && st.st_uid != me) || (!sticky && ((st.st_mode & S_IWOTH) || group_can)))
      return loader_refuse(NULL, err, DM_ERR_UNIT_FOLDER, NULL,
                           "unit %s: folder %s is owned by uid %u, mode %04o: another user could "
                           "replace what it holds; a unit folder and every folder above it must "
                           "be owned by root or the daemon's user and writable by no one else, "
                           "unless sticky as /tmp is (chown root, chmod go-w)",
                           path, dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    if (strcmp(dir, "/") == 0)
      break;
  }
  return 0;
}

/* Copies `path` to a fresh file in `dir` whose name keeps the basename, after loader_check_trust
 * (and the folder rule when `folders` is given) when `trusted` is asked. Returns a malloc'd
 * name. */
static char *loader_copy(const char *path, const char *dir, bool trusted,
                         const dmh_unit_folders *folders, dm_error *err) {
  int in = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (in < 0) {
    int e = errno;
    loader_refuse(NULL, err, DM_ERR_UNIT_OPEN, strerror(e), "unit %s cannot be opened: %s", path,
                  strerror(e));
    return NULL;
  }
  if (trusted && (loader_check_trust(path, in, err) < 0 ||
                  (folders && loader_check_folder(path, in, folders, err) < 0))) {
    close(in);
    return NULL;
  }
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  char *tmpl = NULL;
  if (asprintf(&tmpl, "%s/%s.XXXXXX", dir, base) < 0) {
    dm_error_set(err, DM_ERR_NO_MEMORY, NULL, "unit %s: no memory for its private copy", path);
    close(in);
    return NULL;
  }
  int out = mkostemp(tmpl, O_CLOEXEC);
  if (out < 0) {
    int e = errno;
    dm_error_set(err, DM_ERR_IO, strerror(e),
                 "unit %s: cannot create its private copy in %s: %s: make the folder writable "
                 "or set TMPDIR",
                 path, dir, strerror(e));
    free(tmpl);
    close(in);
    return NULL;
  }
  int e = 0;
  char buf[65536];
  while (!e) {
    ssize_t r = read(in, buf, sizeof buf);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      e = r < 0 ? errno : 0;
      break;
    }
    for (ssize_t off = 0; off < r && !e;) {
      ssize_t w = write(out, buf + off, (size_t)(r - off));
      if (w < 0 && errno != EINTR)
        e = errno;
      else if (w > 0)
        off += w;
    }
  }
  close(in);
  if (close(out) != 0 && !e)
    e = errno;
  if (e) {
    dm_error_set(err, DM_ERR_IO, strerror(e),
                 "unit %s: cannot copy it to %s: %s: check free space in the folder or set "
                 "TMPDIR",
                 path, tmpl, strerror(e));
    unlink(tmpl);
    free(tmpl);
    return NULL;
  }
  return tmpl;
}

static const char *loader_copy_dir(const dmh_load_opts *opts) {
  if (opts->copy_dir && opts->copy_dir[0])
    return opts->copy_dir;
  const char *t = getenv("TMPDIR");
  return t && t[0] ? t : "/tmp";
}

/* The descriptor checks after the entry returned; 0 or -1 with the library closed. */
static int loader_check_descriptor(void *handle, const char *path, const dm_unit_descriptor *d,
                                   const dmh_load_opts *opts, dm_error *err) {
  if (!d)
    return loader_refuse(handle, err, DM_ERR_UNIT_BAD_MAGIC, NULL,
                         "unit %s: dm_unit_entry returned NULL, not a descriptor: return the "
                         "address of a descriptor built with DM_UNIT_DESCRIPTOR_HEADER",
                         path);
  if (d->magic != DM_UNIT_MAGIC)
    return loader_refuse(handle, err, DM_ERR_UNIT_BAD_MAGIC, NULL,
                         "unit %s: descriptor magic is 0x%08x, host expects 0x%08x (\"DMUT\"): "
                         "open the descriptor with DM_UNIT_DESCRIPTOR_HEADER",
                         path, (unsigned)d->magic, (unsigned)DM_UNIT_MAGIC);
  if (d->abi_major != DMH_ABI_MAJOR)
    return loader_refuse(handle, err, DM_ERR_UNIT_ABI_MAJOR, NULL,
                         "unit %s: ABI %u.%u, host accepts %d.0-%d.%d: rebuild the unit against "
                         "SDK %d.x",
                         path, (unsigned)d->abi_major, (unsigned)d->abi_minor, DMH_ABI_MAJOR,
                         DMH_ABI_MAJOR, DMH_ABI_MINOR, DMH_ABI_MAJOR);
  if (d->abi_minor > DMH_ABI_MINOR)
    return loader_refuse(handle, err, DM_ERR_UNIT_ABI_MINOR, NULL,
                         "unit %s: ABI %u.%u, host accepts %d.0-%d.%d: upgrade dmhost, or rebuild "
                         "the unit against SDK %d.%d",
                         path, (unsigned)d->abi_major, (unsigned)d->abi_minor, DMH_ABI_MAJOR,
                         DMH_ABI_MAJOR, DMH_ABI_MINOR, DMH_ABI_MAJOR, DMH_ABI_MINOR);
  size_t need = loader_min_size[d->abi_minor];
  if (d->struct_size < need)
    return loader_refuse(handle, err, DM_ERR_UNIT_SHORT, NULL,
                         "unit %s: descriptor is %u bytes, ABI %u.%u needs at least %zu: rebuild "
                         "the unit against SDK %d.%d",
                         path, (unsigned)d->struct_size, (unsigned)d->abi_major,
                         (unsigned)d->abi_minor, need, DMH_ABI_MAJOR, DMH_ABI_MINOR);

  /* Kinds as the user knows them: "sync", "custom kind `audit`". Copied: kind_name is the unit's.
   */
  const char *exp_name = opts->kind_name ? opts->kind_name : "";
  const char *got_name = d->kind_name ? d->kind_name : "";
  /* kind 0: any kind (dmhost-unit-check checks whatever unit it is given) */
  bool same = opts->kind == 0 ||
              (d->kind == (uint32_t)opts->kind &&
               (opts->kind != DM_UNIT_CUSTOM || (exp_name[0] && strcmp(got_name, exp_name) == 0)));
  if (!same) {
    char want[96], have[96];
    loader_describe_kind((uint32_t)opts->kind, exp_name, want, sizeof want);
    loader_describe_kind(d->kind, got_name, have, sizeof have);
    const char *key = opts->kind == DM_UNIT_CUSTOM ? exp_name : want;
    return loader_refuse(handle, err, DM_ERR_UNIT_KIND, NULL,
                         "unit %s is %s%s, the task configured it as %s: point unit-paths.%s at "
                         "a %s unit",
                         path,
                         loader_kind_name(d->kind) && d->kind != DM_UNIT_CUSTOM ? "kind " : "",
                         have, want, key, want);
  }

  static const struct {
    size_t offset;
    const char *name;
  } required[] = {
      {offsetof(dm_unit_ops, init), "init"},
      {offsetof(dm_unit_ops, process), "process"},
      {offsetof(dm_unit_ops, close), "close"},
      {offsetof(dm_unit_ops, is_fresh_task), "is_fresh_task"},
  };
  char missing[128] = "";
  int n_missing = 0;
  for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
    void (*slot)(void);
    memcpy(&slot, (const char *)&d->ops + required[i].offset, sizeof slot);
    if (!slot) {
      size_t len = strlen(missing);
      snprintf(missing + len, sizeof missing - len, "%s`%s`", n_missing ? ", " : "",
               required[i].name);
      n_missing++;
    }
  }
  if (n_missing)
    return loader_refuse(handle, err, DM_ERR_UNIT_MISSING_OP, NULL,
                         "unit %s: required slot%s %s %s NULL: implement %s in the unit's ops "
                         "table and rebuild it",
                         path, n_missing > 1 ? "s" : "", missing, n_missing > 1 ? "are" : "is",
                         n_missing > 1 ? "them" : "it");
  if (d->abi_minor >= 1) {
    const uint32_t known = DM_UNIT_TAKES_POSITION | DM_UNIT_GIVES_POSITION | DM_UNIT_READS_RELAY;
    if (d->handover & ~known)
      return loader_refuse(handle, err, DM_ERR_UNIT_KIND, NULL,
                           "unit %s: handover 0x%x has flags ABI %d.%d does not know (0x%x): use "
                           "only DM_UNIT_TAKES_POSITION, DM_UNIT_GIVES_POSITION, "
                           "DM_UNIT_READS_RELAY",
                           path, (unsigned)d->handover, DMH_ABI_MAJOR, DMH_ABI_MINOR,
                           (unsigned)(d->handover & ~known));
    if ((d->handover & DM_UNIT_GIVES_POSITION) && !d->end_position)
      return loader_refuse(handle, err, DM_ERR_UNIT_MISSING_OP, NULL,
                           "unit %s: handover has DM_UNIT_GIVES_POSITION but the slot "
                           "`end_position` is NULL: implement it (unit.h) or drop the flag",
                           path);
  }
  return 0;
}

uint32_t dmh_unit_handover(const dm_unit_descriptor *d) {
  if (d->abi_minor >= 1)
    return d->handover;
  /* ABI 1.0 had no handover field: what the built-in kinds did then */
  switch (d->kind) {
  case DM_UNIT_DUMP:
  case DM_UNIT_LOAD:
    return DM_UNIT_GIVES_POSITION;
  case DM_UNIT_SYNC:
    return DM_UNIT_TAKES_POSITION | DM_UNIT_READS_RELAY;
  default:
    return 0;
  }
}

dm_unit_end_position_fn dmh_unit_end_position(const dm_unit_descriptor *d) {
  return d->abi_minor >= 1 ? d->end_position : NULL;
}

dm_unit_schema_op_fn dmh_unit_schema_op(const dm_unit_descriptor *d) {
  return d->abi_minor >= 2 ? d->schema_op : NULL;
}

dm_unit_validation_op_fn dmh_unit_validation_op(const dm_unit_descriptor *d) {
  return d->abi_minor >= 3 ? d->validation_op : NULL;
}

int dmh_unit_lib_open(const char *path, const dmh_load_opts *opts, dmh_unit_lib **out,
                      dm_error *err) {
  *out = NULL;
  if (!opts)
    return loader_refuse(NULL, err, DM_ERR_INTERNAL, NULL,
                         "unit %s: loaded without options (no expected kind)", path ? path : "");
  if (!path || !path[0])
    return loader_refuse(NULL, err, DM_ERR_UNIT_OPEN, NULL,
                         "no unit path given: set unit-paths in the task file or --plugin-dir");
  if (loader_check_elf(path, err) != 0)
    return -1;

  char *dl_name = NULL; /* what dlopen gets when it is not `path`: the private copy, or "./path" */
  if (opts->unique_copy) {
    dl_name = loader_copy(path, loader_copy_dir(opts), opts->trusted_only, opts->folders, err);
    if (!dl_name)
      return -1;
  } else if (!strchr(path, '/')) {
    /* dlopen searches the library path for a bare name; the file checked above is in the current
     * folder, and that is the one to load. */
    if (asprintf(&dl_name, "./%s", path) < 0)
      return loader_refuse(NULL, err, DM_ERR_NO_MEMORY, NULL, "unit %s: no memory", path);
  }
  void *handle = dlopen(dl_name ? dl_name : path, RTLD_NOW | RTLD_LOCAL);
  /* The mapping outlives the name; removing it now leaves nothing behind whatever happens next. */
  if (opts->unique_copy)
    unlink(dl_name);
  if (!handle) {
    const char *why = dlerror();
    loader_refuse(NULL, err, DM_ERR_UNIT_OPEN, why,
                  "unit %s cannot be loaded%s%s: %s: check it is a shared object built for this "
                  "host (dmhost_add_unit or `cc -shared -fPIC`)%s",
                  path, opts->unique_copy ? " from its private copy " : "",
                  opts->unique_copy ? dl_name : "", why ? why : "unknown dlopen error",
                  opts->unique_copy ? "; if the copy's folder is mounted noexec, set TMPDIR" : "");
    free(dl_name);
    return -1;
  }
  free(dl_name);

  dlerror();
  void *sym = dlsym(handle, DM_UNIT_ENTRY_SYMBOL);
  if (!sym)
    return loader_refuse(handle, err, DM_ERR_UNIT_NO_ENTRY, dlerror(),
                         "unit %s does not export " DM_UNIT_ENTRY_SYMBOL
                         ": define it with DM_UNIT_EXPORT(descriptor) and rebuild the unit",
                         path);
  dm_unit_entry_fn entry;
  memcpy(&entry, &sym, sizeof entry); /* object to function pointer, as POSIX allows for dlsym */
  const dm_unit_descriptor *desc = entry();
  if (loader_check_descriptor(handle, path, desc, opts, err) != 0)
    return -1;

  dmh_unit_lib *lib = calloc(1, sizeof *lib);
  char *p = strdup(path);
  if (!lib || !p) {
    free(lib);
    free(p);
    return loader_refuse(handle, err, DM_ERR_NO_MEMORY, NULL, "unit %s: no memory to track it",
                         path);
  }
  lib->handle = handle;
  lib->desc = desc;
  lib->path = p;
  atomic_init(&lib->refs, 1);
  atomic_init(&lib->pinned, false);
  *out = lib;
  return 0;
}

const dm_unit_descriptor *dmh_unit_lib_descriptor(const dmh_unit_lib *lib) {
  return lib->desc;
}

const char *dmh_unit_lib_path(const dmh_unit_lib *lib) {
  return lib->path;
}

void dmh_unit_lib_ref(dmh_unit_lib *lib) {
  atomic_fetch_add_explicit(&lib->refs, 1, memory_order_relaxed);
}

void dmh_unit_lib_unref(dmh_unit_lib *lib) {
  if (!lib)
    return;
  /* acq_rel: everything done with the library by other holders happens before the dlclose. */
  if (atomic_fetch_sub_explicit(&lib->refs, 1, memory_order_acq_rel) != 1)
    return;
  /* A pinned library stays mapped for the life of the process: an abandoned thread may still be
   * running its code. Only the bookkeeping goes. */
  if (!atomic_load(&lib->pinned))
    dlclose(lib->handle);
  free(lib->path);
  free(lib);
}

void dmh_unit_lib_pin(dmh_unit_lib *lib) {
  atomic_store(&lib->pinned, true);
}

char *dmh_unit_default_path(const char *plugin_dir, dm_unit_kind kind) {
  const char *name = loader_kind_name((uint32_t)kind);
  if (!name)
    return NULL;
  const char *dir = plugin_dir && plugin_dir[0] ? plugin_dir : dmh_plugin_dir_default();
  size_t len = strlen(dir);
  while (len > 1 && dir[len - 1] == '/')
    len--;
  char *out = NULL;
  if (asprintf(&out, "%.*s%sdmhost-%s.so", (int)len, dir, (len == 1 && dir[0] == '/') ? "" : "/",
               name) < 0)
    return NULL;
  return out;
}

const char *dmh_plugin_dir_default(void) {
  const char *env = getenv("DMHOST_PLUGIN_DIR");
  return env && env[0] ? env : DMHOST_PLUGIN_DIR;
}
