/*
 * The unit loader: dlopen a unit's shared object, check its descriptor before anything of it runs,
 * and keep the library loaded while any instance of it lives.
 *
 * Checks, in order, each refused with a coded error naming the file, both versions and the fix, the
 * library closed before returning: not an ELF file (DM_ERR_UNIT_NOT_ELF), dlopen failure
 * (DM_ERR_UNIT_OPEN), no dm_unit_entry (DM_ERR_UNIT_NO_ENTRY), entry returned NULL or bad magic
 * (DM_ERR_UNIT_BAD_MAGIC), other ABI major (DM_ERR_UNIT_ABI_MAJOR), newer ABI minor
 * (DM_ERR_UNIT_ABI_MINOR), struct_size below what its minor needs (DM_ERR_UNIT_SHORT), kind other
 * than expected (DM_ERR_UNIT_KIND), a required slot NULL (DM_ERR_UNIT_MISSING_OP).
 */
#ifndef DMH_LOADER_H
#define DMH_LOADER_H

#include <stdbool.h>

#include "dmhost/error.h"
#include "dmhost/unit.h"

/* The ABI range this host accepts: major DMH_ABI_MAJOR, minor 0..DMH_ABI_MINOR. */
#define DMH_ABI_MAJOR DM_ABI_MAJOR
#define DMH_ABI_MINOR DM_ABI_MINOR

typedef struct dmh_unit_lib dmh_unit_lib;

/* Where the daemon takes unit builds from (docs/security.md, "Unit builds the daemon loads"): the
 * real path of the file opened must lie below one of `allowed` (real paths: --plugin-dir and each
 * --unit-dir), every folder from it up to / must be owned by root or the daemon's user and
 * writable by no one else, and `daemon_writes` (may be NULL) must not claim it: a folder the
 * daemon itself writes into (state dir, work dirs, dump and relay folders) holds bytes that came
 * from upstream, whoever owns them. `daemon_writes` fills `which` with the folder's name and
 * returns true when `real` lies below one. Refusals are DM_ERR_UNIT_FOLDER. */
typedef struct dmh_unit_folders {
  const char *const *allowed;
  int n_allowed;
  bool (*daemon_writes)(void *ud, const char *real, char *which, size_t size);
  void *ud;
} dmh_unit_folders;

/* Is `real` (a real path) below `dir` (a real path), or `dir` itself? */
bool dmh_path_below(const char *real, const char *dir);

typedef struct dmh_load_opts {
  dm_unit_kind kind;     /* the kind the configuration expects; 0: any (dmhost-unit-check) */
  const char *kind_name; /* for DM_UNIT_CUSTOM: the expected kind_name; else NULL */
  /* Load a private copy under a unique file name (for hot-swap: the dynamic loader de-duplicates by
   * path and inode, so a rebuilt file at the same path would otherwise give back the old library).
   * The copy is made in copy_dir (default $TMPDIR or /tmp) and removed once
   * mapped. */
  bool unique_copy;
  const char *copy_dir;
  /* With unique_copy: refuse (DM_ERR_UNTRUSTED_FILE) a file not owned by root or the host's user,
   * or writable by others or by a group other than root's and the host's, checked on the
   * descriptor the copy is made from, so the file checked is the file loaded. The daemon loads
   * every build this way: swap-unit's, and at start the ones named by task files or kept from a
   * swap. (Not through /proc/self/fd/N: dlopen matches names before files, and a reused number
   * gives back the library loaded under it before.) */
  bool trusted_only;
  /* With trusted_only: the folders the file must come from (above), checked on the same
   * descriptor; NULL: any folder (the tests' harnesses). */
  const dmh_unit_folders *folders;
} dmh_load_opts;

/* Load and check. Returns 0 and *out with one reference, or -1 with *err filled. */
int dmh_unit_lib_open(const char *path, const dmh_load_opts *opts, dmh_unit_lib **out,
                      dm_error *err);

/* The checked descriptor; valid while a reference is held. */
const dm_unit_descriptor *dmh_unit_lib_descriptor(const dmh_unit_lib *lib);
/* The path given to open (not the private copy). */
const char *dmh_unit_lib_path(const dmh_unit_lib *lib);

/* The descriptor's handover flags (DM_UNIT_*_POSITION, DM_UNIT_READS_RELAY): its own from ABI 1.1;
 * for a unit of ABI 1.0, what its kind did then (dump and load give a position, sync takes one and
 * reads the relay, a custom kind neither). */
uint32_t dmh_unit_handover(const dm_unit_descriptor *d);
/* Its end_position slot: NULL for a unit of ABI 1.0 (the host reads metaBinlog from its status). */
dm_unit_end_position_fn dmh_unit_end_position(const dm_unit_descriptor *d);
/* Its schema_op slot: NULL for a unit older than ABI 1.2 (its descriptor has no such field). */
dm_unit_schema_op_fn dmh_unit_schema_op(const dm_unit_descriptor *d);
/* Its validation_op slot: NULL for a unit older than ABI 1.3. */
dm_unit_validation_op_fn dmh_unit_validation_op(const dm_unit_descriptor *d);

/* References: every unit instance holds one. The library is dlclose'd when the last one goes,
 * unless it was pinned (a unit whose thread was abandoned may still run code of it). */
void dmh_unit_lib_ref(dmh_unit_lib *lib);
void dmh_unit_lib_unref(dmh_unit_lib *lib);
void dmh_unit_lib_pin(dmh_unit_lib *lib);

/* The default file of a kind in a plugin folder: "<dir>/dmhost-<kind>.so". Caller frees. */
char *dmh_unit_default_path(const char *plugin_dir, dm_unit_kind kind);

/* The plugin folder installed with the host (DMHOST_PLUGIN_DIR at build time). */
const char *dmh_plugin_dir_default(void);

#endif /* DMH_LOADER_H */
