/*
 * The loader against its zoo (tests/loader/zoo_unit.c built once per refusal): every refusal has
 * its code, a message naming the file, both sides' values and the fix, and leaves the library
 * unmapped. Whether a library is mapped is read from /proc/self/maps, the kernel's view, so a
 * forgotten dlclose cannot hide.
 */
#include <CUnit/Basic.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cunit_run.h"
#include "dmhost/sdk.h"
#include "loader.h"

/* Is a file whose path contains `needle` mapped into this process? */
static bool test_mapped(const char *needle) {
  FILE *f = fopen("/proc/self/maps", "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  char line[PATH_MAX + 256];
  bool found = false;
  while (!found && fgets(line, sizeof line, f))
    found = strstr(line, needle) != NULL;
  fclose(f);
  return found;
}

/* The kernel shows resolved paths in maps; the fixtures' paths may go through a symlink. */
static bool test_fixture_mapped(const char *path) {
  char real[PATH_MAX];
  CU_ASSERT_PTR_NOT_NULL_FATAL(realpath(path, real));
  return test_mapped(real);
}

static bool test_contains(const char *haystack, const char *needle) {
  if (strstr(haystack, needle))
    return true;
  fprintf(stderr, "\n  expected \"%s\" in \"%s\"\n", needle, haystack);
  return false;
}

static const dmh_load_opts test_dump = {.kind = DM_UNIT_DUMP};

/* Opens `path` expecting a refusal with `code`; returns the error for the message checks. */
static dm_error test_refused(const char *path, const dmh_load_opts *opts, int32_t code) {
  dm_error err;
  memset(&err, 0xab, sizeof err); /* the loader must fill every field, not rely on a zeroed one */
  dmh_unit_lib *lib = (dmh_unit_lib *)&err;
  CU_ASSERT_EQUAL(dmh_unit_lib_open(path, opts, &lib, &err), -1);
  CU_ASSERT_PTR_NULL(lib);
  CU_ASSERT_EQUAL(err.code, code);
  if (err.code != code)
    fprintf(stderr, "\n  got %s: %s\n", dm_error_code_name(err.code), err.message);
  CU_ASSERT(test_contains(err.message, path));
  CU_ASSERT(err.workaround[0] != '\0');
  CU_ASSERT(memchr(err.message, '\0', sizeof err.message) != NULL);
  if (code != DM_ERR_NO_MEMORY)
    CU_ASSERT_EQUAL(err.cls, DM_CLASS_LOADER);
  return err;
}

/* ---- files that never reach dlopen, or that dlopen refuses ---- */

static void test_missing_file(void) {
  const char *path = ZOO_DIR "/no-such-unit.so";
  dm_error err = test_refused(path, &test_dump, DM_ERR_UNIT_OPEN);
  CU_ASSERT(test_contains(err.message, "No such file or directory"));
  CU_ASSERT_STRING_EQUAL(err.raw_cause, "No such file or directory");
}

static void test_not_elf(void) {
  dm_error err = test_refused(ZOO_NOT_ELF_PATH, &test_dump, DM_ERR_UNIT_NOT_ELF);
  CU_ASSERT(test_contains(err.message, "starts with '#!/b'"));
  CU_ASSERT(test_contains(err.message, "point unit-paths at the built .so file"));
}

static void test_empty(void) {
  dm_error err = test_refused(ZOO_EMPTY_PATH, &test_dump, DM_ERR_UNIT_NOT_ELF);
  CU_ASSERT(test_contains(err.message, "is empty"));
}

static void test_directory(void) {
  dm_error err = test_refused(ZOO_DIR, &test_dump, DM_ERR_UNIT_NOT_ELF);
  CU_ASSERT(test_contains(err.message, "is a directory"));
}

static void test_short_file(void) {
  char path[] = ZOO_DIR "/zoo_short_file.XXXXXX";
  int fd = mkstemp(path);
  CU_ASSERT_FATAL(fd >= 0);
  CU_ASSERT_EQUAL(write(fd,
                        "\x7f"
                        "E",
                        2),
                  2);
  close(fd);
  dm_error err = test_refused(path, &test_dump, DM_ERR_UNIT_NOT_ELF);
  CU_ASSERT(test_contains(err.message, "starts with '\\x7fE' and ends there"));
  unlink(path);
}

/* ELF magic but no ELF inside: past our own check, dlopen must refuse and its reason be kept. */
static void test_dlopen_fails(void) {
  char path[] = ZOO_DIR "/zoo_fake_elf.XXXXXX";
  int fd = mkstemp(path);
  CU_ASSERT_FATAL(fd >= 0);
  static const char fake[] = "\x7f"
                             "ELF and then nothing that makes sense to ld.so";
  CU_ASSERT_EQUAL(write(fd, fake, sizeof fake), (ssize_t)sizeof fake);
  close(fd);
  dm_error err = test_refused(path, &test_dump, DM_ERR_UNIT_OPEN);
  CU_ASSERT(err.raw_cause[0] != '\0');
  CU_ASSERT(test_contains(err.message, err.raw_cause));
  CU_ASSERT(test_contains(err.message, "shared object built for this host"));
  unlink(path);
}

/* ---- libraries refused after dlopen: each must be unmapped again ---- */

static void test_no_entry(void) {
  dm_error err = test_refused(ZOO_NO_ENTRY_PATH, &test_dump, DM_ERR_UNIT_NO_ENTRY);
  CU_ASSERT(test_contains(err.message, "does not export dm_unit_entry"));
  CU_ASSERT(test_contains(err.message, "DM_UNIT_EXPORT"));
  CU_ASSERT(test_contains(err.raw_cause, "dm_unit_entry"));
  CU_ASSERT_FALSE(test_fixture_mapped(ZOO_NO_ENTRY_PATH));
}

static void test_null_entry(void) {
  dm_error err = test_refused(ZOO_NULL_ENTRY_PATH, &test_dump, DM_ERR_UNIT_BAD_MAGIC);
  CU_ASSERT(test_contains(err.message, "dm_unit_entry returned NULL"));
  CU_ASSERT_FALSE(test_fixture_mapped(ZOO_NULL_ENTRY_PATH));
}

static void test_bad_magic(void) {
  dm_error err = test_refused(ZOO_BAD_MAGIC_PATH, &test_dump, DM_ERR_UNIT_BAD_MAGIC);
  CU_ASSERT(test_contains(err.message, "magic is 0x4b4f4f5a"));
  CU_ASSERT(test_contains(err.message, "host expects 0x444d5554"));
  CU_ASSERT(test_contains(err.message, "DM_UNIT_DESCRIPTOR_HEADER"));
  CU_ASSERT_FALSE(test_fixture_mapped(ZOO_BAD_MAGIC_PATH));
}

static void test_abi_major(void) {
  dm_error err = test_refused(ZOO_ABI_MAJOR_PATH, &test_dump, DM_ERR_UNIT_ABI_MAJOR);
  char want[96];
  snprintf(want, sizeof want, "ABI 2.%d, host accepts 1.0-1.%d", DM_ABI_MINOR, DM_ABI_MINOR);
  CU_ASSERT(test_contains(err.message, want));
  CU_ASSERT(test_contains(err.message, "rebuild the unit against SDK 1.x"));
  CU_ASSERT_FALSE(test_fixture_mapped(ZOO_ABI_MAJOR_PATH));
}

static void test_abi_minor(void) {
  dm_error err = test_refused(ZOO_ABI_MINOR_PATH, &test_dump, DM_ERR_UNIT_ABI_MINOR);
  char want[96];
  snprintf(want, sizeof want, "ABI 1.%d, host accepts 1.0-1.%d", DM_ABI_MINOR + 1, DM_ABI_MINOR);
  CU_ASSERT(test_contains(err.message, want));
  CU_ASSERT(test_contains(err.message, "upgrade dmhost"));
  CU_ASSERT_FALSE(test_fixture_mapped(ZOO_ABI_MINOR_PATH));
}

static void test_short_struct(void) {
  dm_error err = test_refused(ZOO_SHORT_PATH, &test_dump, DM_ERR_UNIT_SHORT);
  char want[128];
  snprintf(want, sizeof want, "descriptor is %zu bytes, ABI 1.%d needs at least %zu",
           offsetof(dm_unit_descriptor, ops), DM_ABI_MINOR, sizeof(dm_unit_descriptor));
  CU_ASSERT(test_contains(err.message, want));
  CU_ASSERT_FALSE(test_fixture_mapped(ZOO_SHORT_PATH));
  /* ABI 1.1 with a 1.0-sized descriptor: handover and end_position are not read past its end */
  err = test_refused(ZOO_SHORT_1_1_PATH, &test_dump, DM_ERR_UNIT_SHORT);
  snprintf(want, sizeof want, "descriptor is %zu bytes, ABI 1.1 needs at least %zu",
           DM_UNIT_DESCRIPTOR_SIZE_1_0, DM_UNIT_DESCRIPTOR_SIZE_1_1);
  CU_ASSERT(test_contains(err.message, want));
  /* ABI 1.2 with a 1.1-sized descriptor: schema_op is not read past its end */
  err = test_refused(ZOO_SHORT_1_2_PATH, &test_dump, DM_ERR_UNIT_SHORT);
  snprintf(want, sizeof want, "descriptor is %zu bytes, ABI 1.2 needs at least %zu",
           DM_UNIT_DESCRIPTOR_SIZE_1_1, DM_UNIT_DESCRIPTOR_SIZE_1_2);
  CU_ASSERT(test_contains(err.message, want));
  /* ABI 1.3 with a 1.2-sized descriptor: validation_op is not read past its end */
  err = test_refused(ZOO_SHORT_1_3_PATH, &test_dump, DM_ERR_UNIT_SHORT);
  snprintf(want, sizeof want, "descriptor is %zu bytes, ABI 1.3 needs at least %zu",
           DM_UNIT_DESCRIPTOR_SIZE_1_2, DM_UNIT_DESCRIPTOR_SIZE_1_3);
  CU_ASSERT(test_contains(err.message, want));
}

/* ABI 1.1's handover: a unit that says it gives a position must say where (end_position), and
 * flags this host does not know are refused. */
static void test_handover_checked(void) {
  dm_error err = test_refused(ZOO_GIVES_NO_END_PATH, &test_dump, DM_ERR_UNIT_MISSING_OP);
  CU_ASSERT(test_contains(err.message, "`end_position` is NULL"));
  err = test_refused(ZOO_BAD_HANDOVER_PATH, &test_dump, DM_ERR_UNIT_KIND);
  char want[64];
  snprintf(want, sizeof want, "flags ABI 1.%d does not know (0x100)", DM_ABI_MINOR);
  CU_ASSERT(test_contains(err.message, want));
}

static void test_wrong_kind(void) {
  dm_error err = test_refused(ZOO_KIND_SYNC_PATH, &test_dump, DM_ERR_UNIT_KIND);
  CU_ASSERT(test_contains(err.message, "is kind sync, the task configured it as dump"));
  CU_ASSERT(test_contains(err.message, "point unit-paths.dump at a dump unit"));
  CU_ASSERT_FALSE(test_fixture_mapped(ZOO_KIND_SYNC_PATH));
}

static void test_custom_wrong_name(void) {
  dmh_load_opts opts = {.kind = DM_UNIT_CUSTOM, .kind_name = "audit"};
  dm_error err = test_refused(ZOO_CUSTOM_PATH, &opts, DM_ERR_UNIT_KIND);
  CU_ASSERT(test_contains(err.message,
                          "is custom kind `zoo-kind`, the task configured it as custom kind "
                          "`audit`"));
  CU_ASSERT_FALSE(test_fixture_mapped(ZOO_CUSTOM_PATH));
}

static void test_custom_as_dump(void) {
  dm_error err = test_refused(ZOO_CUSTOM_PATH, &test_dump, DM_ERR_UNIT_KIND);
  CU_ASSERT(
      test_contains(err.message, "is custom kind `zoo-kind`, the task configured it as dump"));
  CU_ASSERT_FALSE(test_fixture_mapped(ZOO_CUSTOM_PATH));
}

static void test_dump_as_custom(void) {
  dmh_load_opts opts = {.kind = DM_UNIT_CUSTOM, .kind_name = "zoo-kind"};
  dm_error err = test_refused(ZOO_GOOD_PATH, &opts, DM_ERR_UNIT_KIND);
  CU_ASSERT(test_contains(err.message, "is kind dump, the task configured it as custom kind "
                                       "`zoo-kind`"));
  CU_ASSERT_FALSE(test_fixture_mapped(ZOO_GOOD_PATH));
}

static void test_missing_slots(void) {
  static const struct {
    const char *path;
    const char *want;
  } cases[] = {
      {ZOO_NO_INIT_PATH, "required slot `init` is NULL"},
      {ZOO_NO_PROCESS_PATH, "required slot `process` is NULL"},
      {ZOO_NO_CLOSE_PATH, "required slot `close` is NULL"},
      {ZOO_NO_FRESH_PATH, "required slot `is_fresh_task` is NULL"},
      {ZOO_NO_INIT_PROCESS_PATH, "required slots `init`, `process` are NULL"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    dm_error err = test_refused(cases[i].path, &test_dump, DM_ERR_UNIT_MISSING_OP);
    CU_ASSERT(test_contains(err.message, cases[i].want));
    CU_ASSERT_FALSE(test_fixture_mapped(cases[i].path));
  }
}

/* ---- accepted units, references ---- */

static void test_good(void) {
  dmh_unit_lib *lib = NULL;
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_unit_lib_open(ZOO_GOOD_PATH, &test_dump, &lib, &err), 0);
  const dm_unit_descriptor *d = dmh_unit_lib_descriptor(lib);
  CU_ASSERT_STRING_EQUAL(d->name, "zoo");
  CU_ASSERT_STRING_EQUAL(d->version, "0.0.1");
  CU_ASSERT_EQUAL(d->kind, DM_UNIT_DUMP);
  CU_ASSERT_STRING_EQUAL(dmh_unit_lib_path(lib), ZOO_GOOD_PATH);
  bool fresh = false;
  CU_ASSERT_EQUAL(d->ops.is_fresh_task(NULL, &fresh, &err), 0);
  CU_ASSERT_TRUE(fresh);
  CU_ASSERT_TRUE(test_fixture_mapped(ZOO_GOOD_PATH));
  dmh_unit_lib_unref(lib);
  CU_ASSERT_FALSE(test_fixture_mapped(ZOO_GOOD_PATH));
}

static void test_custom_accepted(void) {
  dmh_load_opts opts = {.kind = DM_UNIT_CUSTOM, .kind_name = "zoo-kind"};
  dmh_unit_lib *lib = NULL;
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_unit_lib_open(ZOO_CUSTOM_PATH, &opts, &lib, &err), 0);
  CU_ASSERT_STRING_EQUAL(dmh_unit_lib_descriptor(lib)->kind_name, "zoo-kind");
  dmh_unit_lib_unref(lib);
  CU_ASSERT_FALSE(test_fixture_mapped(ZOO_CUSTOM_PATH));
}

static void test_ref_unref(void) {
  dmh_unit_lib *lib = NULL;
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_unit_lib_open(ZOO_GOOD_PATH, &test_dump, &lib, &err), 0);
  dmh_unit_lib_ref(lib);
  dmh_unit_lib_unref(lib);
  CU_ASSERT_TRUE(test_fixture_mapped(ZOO_GOOD_PATH));
  CU_ASSERT_STRING_EQUAL(dmh_unit_lib_descriptor(lib)->name, "zoo");
  dmh_unit_lib_unref(lib);
  CU_ASSERT_FALSE(test_fixture_mapped(ZOO_GOOD_PATH));
}

/* Its own fixture: a pinned library stays for the life of the process. */
static void test_pin(void) {
  dmh_unit_lib *lib = NULL;
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_unit_lib_open(ZOO_PINNED_PATH, &test_dump, &lib, &err), 0);
  const dm_unit_descriptor *d = dmh_unit_lib_descriptor(lib);
  dmh_unit_lib_pin(lib);
  dmh_unit_lib_unref(lib);
  CU_ASSERT_TRUE(test_fixture_mapped(ZOO_PINNED_PATH));
  CU_ASSERT_STRING_EQUAL(d->name, "zoo"); /* still readable: the mapping is really there */
}

/* Why unique_copy exists: the same path opened twice is one library. */
static void test_same_path_is_one_library(void) {
  dmh_unit_lib *a = NULL, *b = NULL;
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_unit_lib_open(ZOO_GOOD_PATH, &test_dump, &a, &err), 0);
  CU_ASSERT_EQUAL_FATAL(dmh_unit_lib_open(ZOO_GOOD_PATH, &test_dump, &b, &err), 0);
  CU_ASSERT_PTR_EQUAL(dmh_unit_lib_descriptor(a), dmh_unit_lib_descriptor(b));
  dmh_unit_lib_unref(a);
  CU_ASSERT_TRUE(test_fixture_mapped(ZOO_GOOD_PATH)); /* dlopen counts too */
  dmh_unit_lib_unref(b);
  CU_ASSERT_FALSE(test_fixture_mapped(ZOO_GOOD_PATH));
}

static int test_dir_entries(const char *dir) {
  DIR *d = opendir(dir);
  CU_ASSERT_PTR_NOT_NULL_FATAL(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  closedir(d);
  return n;
}

static void test_unique_copy(void) {
  char dir[] = ZOO_DIR "/zoo_copies.XXXXXX";
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  dmh_load_opts opts = {.kind = DM_UNIT_DUMP, .unique_copy = true, .copy_dir = dir};
  dmh_unit_lib *a = NULL, *b = NULL;
  dm_error err;
  CU_ASSERT_EQUAL_FATAL(dmh_unit_lib_open(ZOO_GOOD_PATH, &opts, &a, &err), 0);
  CU_ASSERT_EQUAL_FATAL(dmh_unit_lib_open(ZOO_GOOD_PATH, &opts, &b, &err), 0);
  CU_ASSERT_PTR_NOT_EQUAL(dmh_unit_lib_descriptor(a), dmh_unit_lib_descriptor(b));
  CU_ASSERT_STRING_EQUAL(dmh_unit_lib_path(a), ZOO_GOOD_PATH);
  CU_ASSERT_STRING_EQUAL(dmh_unit_lib_path(b), ZOO_GOOD_PATH);
  /* The copies are mapped under names that keep the basename, and already unlinked. */
  char real[PATH_MAX], copy_prefix[PATH_MAX + 32];
  CU_ASSERT_PTR_NOT_NULL_FATAL(realpath(dir, real));
  snprintf(copy_prefix, sizeof copy_prefix, "%s/zoo_good.so.", real);
  CU_ASSERT_TRUE(test_mapped(copy_prefix));
  CU_ASSERT_FALSE(test_fixture_mapped(ZOO_GOOD_PATH));
  CU_ASSERT_EQUAL(test_dir_entries(dir), 0);
  dmh_unit_lib_unref(a);
  CU_ASSERT_TRUE(test_mapped(copy_prefix));
  dmh_unit_lib_unref(b);
  CU_ASSERT_FALSE(test_mapped(copy_prefix));
  CU_ASSERT_EQUAL(rmdir(dir), 0);
}

static void test_unique_copy_unwritable_dir(void) {
  dmh_load_opts opts = {.kind = DM_UNIT_DUMP, .unique_copy = true, .copy_dir = ZOO_DIR "/nope"};
  dmh_unit_lib *lib = NULL;
  dm_error err;
  CU_ASSERT_EQUAL(dmh_unit_lib_open(ZOO_GOOD_PATH, &opts, &lib, &err), -1);
  CU_ASSERT_PTR_NULL(lib);
  CU_ASSERT_EQUAL(err.code, DM_ERR_IO);
  CU_ASSERT(test_contains(err.message, ZOO_DIR "/nope"));
  CU_ASSERT(test_contains(err.message, ZOO_GOOD_PATH));
  CU_ASSERT_STRING_EQUAL(err.raw_cause, "No such file or directory");
}

/* The folder rule (issue 20): a build is loaded only from an allowed folder none of whose
 * parents another user can write to. A folder that is world-writable without the sticky bit
 * refuses the build below it; a sticky one (as /tmp, where CI's clone lives) does not: others can
 * add entries there but not rename or remove ours. */
static bool folder_copy(const char *from, const char *to) {
  int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
  char buf[65536];
  ssize_t n = 0;
  bool ok = in >= 0 && out >= 0;
  while (ok && (n = read(in, buf, sizeof buf)) > 0)
    ok = write(out, buf, (size_t)n) == n;
  ok = ok && n == 0;
  if (in >= 0)
    close(in);
  if (out >= 0)
    close(out);
  return ok;
}

static void test_folder_rule_sticky(void) {
  char outer[] = "/tmp/dmh-loader-folder.XXXXXX";
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(outer));
  char units[256], lib_path[300], real_units[PATH_MAX];
  snprintf(units, sizeof units, "%s/units", outer);
  snprintf(lib_path, sizeof lib_path, "%s/zoo_good.so", units);
  CU_ASSERT_EQUAL_FATAL(mkdir(units, 0755), 0);
  CU_ASSERT_FATAL(folder_copy(ZOO_GOOD_PATH, lib_path));
  CU_ASSERT_EQUAL_FATAL(chmod(lib_path, 0755), 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(realpath(units, real_units));
  const char *allowed[] = {real_units};
  dmh_unit_folders folders = {.allowed = allowed, .n_allowed = 1};
  dmh_load_opts opts = {.kind = DM_UNIT_DUMP,
                        .unique_copy = true,
                        .trusted_only = true,
                        .copy_dir = units,
                        .folders = &folders};
  struct {
    mode_t mode;
    bool loads;
  } cases[] = {{0700, true}, {01777, true}, {0777, false}, {0775, true}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    CU_ASSERT_EQUAL_FATAL(chmod(outer, cases[i].mode), 0);
    struct stat st;
    CU_ASSERT_EQUAL_FATAL(stat(outer, &st), 0);
    CU_ASSERT_EQUAL_FATAL(st.st_mode & 07777, cases[i].mode); /* the precondition */
    dmh_unit_lib *lib = NULL;
    dm_error err;
    int rc = dmh_unit_lib_open(lib_path, &opts, &lib, &err);
    if (cases[i].loads) {
      CU_ASSERT_EQUAL(rc, 0);
      if (rc != 0)
        fprintf(stderr, "\n  mode %04o: %s\n", (unsigned)cases[i].mode, err.message);
      else
        dmh_unit_lib_unref(lib);
    } else {
      CU_ASSERT_EQUAL(rc, -1);
      CU_ASSERT_EQUAL(err.code, DM_ERR_UNIT_FOLDER);
      CU_ASSERT(test_contains(err.message, outer));
      CU_ASSERT(test_contains(err.message, "mode 0777"));
    }
  }
  CU_ASSERT_EQUAL(unlink(lib_path), 0);
  CU_ASSERT_EQUAL(rmdir(units), 0);
  CU_ASSERT_EQUAL(rmdir(outer), 0);
}

/* A bare file name is the file in the current folder, as the ELF check saw it, not a search of
 * the library path. */
static void test_bare_name(void) {
  char cwd[PATH_MAX];
  CU_ASSERT_PTR_NOT_NULL_FATAL(getcwd(cwd, sizeof cwd));
  CU_ASSERT_EQUAL_FATAL(chdir(ZOO_DIR), 0);
  dmh_unit_lib *lib = NULL;
  dm_error err;
  int rc = dmh_unit_lib_open("zoo_good.so", &test_dump, &lib, &err);
  CU_ASSERT_EQUAL(chdir(cwd), 0);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  CU_ASSERT_STRING_EQUAL(dmh_unit_lib_path(lib), "zoo_good.so");
  CU_ASSERT_TRUE(test_fixture_mapped(ZOO_GOOD_PATH));
  dmh_unit_lib_unref(lib);
  CU_ASSERT_FALSE(test_fixture_mapped(ZOO_GOOD_PATH));
}

static void test_no_path_no_opts(void) {
  dmh_unit_lib *lib = NULL;
  dm_error err;
  CU_ASSERT_EQUAL(dmh_unit_lib_open("", &test_dump, &lib, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_UNIT_OPEN);
  CU_ASSERT(test_contains(err.message, "no unit path given"));
  CU_ASSERT_EQUAL(dmh_unit_lib_open(NULL, &test_dump, &lib, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_UNIT_OPEN);
  CU_ASSERT_EQUAL(dmh_unit_lib_open(ZOO_GOOD_PATH, NULL, &lib, &err), -1);
  CU_ASSERT_EQUAL(err.code, DM_ERR_INTERNAL);
  CU_ASSERT(test_contains(err.message, ZOO_GOOD_PATH));
  CU_ASSERT_PTR_NULL(lib);
}

/* ---- paths ---- */

static void test_default_path(void) {
  static const struct {
    const char *dir;
    dm_unit_kind kind;
    const char *want;
  } cases[] = {
      {"/opt/dm", DM_UNIT_DUMP, "/opt/dm/dmhost-dump.so"},
      {"/opt/dm/", DM_UNIT_LOAD, "/opt/dm/dmhost-load.so"},
      {"plugins", DM_UNIT_SYNC, "plugins/dmhost-sync.so"},
      {"/", DM_UNIT_RELAY, "/dmhost-relay.so"},
      {"/opt/dm", DM_UNIT_CUSTOM, "/opt/dm/dmhost-custom.so"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *p = dmh_unit_default_path(cases[i].dir, cases[i].kind);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_STRING_EQUAL(p, cases[i].want);
    free(p);
  }
  CU_ASSERT_PTR_NULL(dmh_unit_default_path("/opt/dm", (dm_unit_kind)42));
}

static void test_plugin_dir_default(void) {
  CU_ASSERT_EQUAL_FATAL(unsetenv("DMHOST_PLUGIN_DIR"), 0);
  const char *built_in = dmh_plugin_dir_default();
  CU_ASSERT_EQUAL(built_in[0], '/');
  CU_ASSERT(test_contains(built_in, "dmhost/plugins"));

  CU_ASSERT_EQUAL_FATAL(setenv("DMHOST_PLUGIN_DIR", "/srv/units", 1), 0);
  CU_ASSERT_STRING_EQUAL(dmh_plugin_dir_default(), "/srv/units");
  char *p = dmh_unit_default_path(NULL, DM_UNIT_SYNC); /* no folder: the default one */
  CU_ASSERT_STRING_EQUAL(p, "/srv/units/dmhost-sync.so");
  free(p);

  CU_ASSERT_EQUAL_FATAL(setenv("DMHOST_PLUGIN_DIR", "", 1), 0);
  CU_ASSERT_STRING_EQUAL(dmh_plugin_dir_default(), built_in);
  unsetenv("DMHOST_PLUGIN_DIR");
}

int main(void) {
  static const dmh_cunit_test tests[] = {
      {"missing file", test_missing_file},
      {"not ELF", test_not_elf},
      {"empty file", test_empty},
      {"directory", test_directory},
      {"file shorter than the ELF magic", test_short_file},
      {"dlopen fails", test_dlopen_fails},
      {"no entry symbol", test_no_entry},
      {"entry returns NULL", test_null_entry},
      {"bad magic", test_bad_magic},
      {"ABI major + 1", test_abi_major},
      {"ABI minor + 1", test_abi_minor},
      {"short descriptor", test_short_struct},
      {"handover checked", test_handover_checked},
      {"sync unit configured as dump", test_wrong_kind},
      {"custom kind with another name", test_custom_wrong_name},
      {"custom unit configured as dump", test_custom_as_dump},
      {"dump unit configured as custom", test_dump_as_custom},
      {"missing required slots", test_missing_slots},
      {"good unit", test_good},
      {"custom kind accepted", test_custom_accepted},
      {"ref and unref", test_ref_unref},
      {"pin keeps the library", test_pin},
      {"same path is one library", test_same_path_is_one_library},
      {"unique copy gives two libraries", test_unique_copy},
      {"unique copy into a missing folder", test_unique_copy_unwritable_dir},
      {"folder rule: world-writable refuses, sticky does not", test_folder_rule_sticky},
      {"bare file name", test_bare_name},
      {"no path, no options", test_no_path_no_opts},
      {"default unit path", test_default_path},
      {"plugin dir default", test_plugin_dir_default},
  };
  return dmh_cunit_run("loader", NULL, NULL, tests, sizeof tests / sizeof tests[0]);
}
