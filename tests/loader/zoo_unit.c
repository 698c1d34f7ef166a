/*
 * The loader's zoo: one source, one bad unit per -D flag, each broken in exactly one way so that
 * each test sees exactly one refusal. Without a flag it is a good dump unit.
 */
#include <dmhost/dmhost.h>

/* A slot left out of a broken variant is still defined; that is the point, not a mistake. */
#define ZOO_SLOT __attribute__((unused)) static

ZOO_SLOT int zoo_init(const dm_host_services *host, dm_ctx *ctx, void **self, dm_error *err) {
  (void)host;
  (void)ctx;
  (void)err;
  *self = NULL;
  return 0;
}

ZOO_SLOT int zoo_is_fresh_task(void *self, bool *fresh, dm_error *err) {
  (void)self;
  (void)err;
  *fresh = true;
  return 0;
}

ZOO_SLOT void zoo_process(void *self, dm_result *result) {
  (void)self;
  result->outcome = DM_OUTCOME_FINISHED;
}

ZOO_SLOT void zoo_close(void *self) {
  (void)self;
}

#if defined(ZOO_KIND_SYNC)
#define ZOO_KIND DM_UNIT_SYNC
#elif defined(ZOO_CUSTOM)
#define ZOO_KIND DM_UNIT_CUSTOM
#else
#define ZOO_KIND DM_UNIT_DUMP
#endif

/* The header written out field by field (not DM_UNIT_DESCRIPTOR_HEADER) so one can be broken. */
#if defined(ZOO_BAD_MAGIC)
#define ZOO_MAGIC 0x4b4f4f5au /* "ZOOK" */
#else
#define ZOO_MAGIC DM_UNIT_MAGIC
#endif
#if defined(ZOO_ABI_MAJOR_PLUS)
#define ZOO_ABI_MAJOR (DM_ABI_MAJOR + 1)
#else
#define ZOO_ABI_MAJOR DM_ABI_MAJOR
#endif
#if defined(ZOO_ABI_MINOR_PLUS)
#define ZOO_ABI_MINOR (DM_ABI_MINOR + 1)
#elif defined(ZOO_SHORT_1_1)
#define ZOO_ABI_MINOR 1
#elif defined(ZOO_SHORT_1_2)
#define ZOO_ABI_MINOR 2
#elif defined(ZOO_SHORT_1_3)
#define ZOO_ABI_MINOR 3
#else
#define ZOO_ABI_MINOR DM_ABI_MINOR
#endif
#if defined(ZOO_SHORT)
/* As if built against an SDK whose descriptor ended before the ops table. */
#define ZOO_STRUCT_SIZE offsetof(dm_unit_descriptor, ops)
#elif defined(ZOO_SHORT_1_1)
/* Claims ABI 1.1 with the descriptor of 1.0: its handover and end_position would be read past its
 * end. */
#define ZOO_STRUCT_SIZE DM_UNIT_DESCRIPTOR_SIZE_1_0
#elif defined(ZOO_SHORT_1_2)
/* Claims ABI 1.2 with the descriptor of 1.1: its schema_op would be read past its end. */
#define ZOO_STRUCT_SIZE DM_UNIT_DESCRIPTOR_SIZE_1_1
#elif defined(ZOO_SHORT_1_3)
/* Claims ABI 1.3 with the descriptor of 1.2: its validation_op would be read past its end. */
#define ZOO_STRUCT_SIZE DM_UNIT_DESCRIPTOR_SIZE_1_2
#else
#define ZOO_STRUCT_SIZE sizeof(dm_unit_descriptor)
#endif

static const dm_unit_descriptor zoo_unit = {
    .magic = ZOO_MAGIC,
    .abi_major = ZOO_ABI_MAJOR,
    .abi_minor = ZOO_ABI_MINOR,
    .struct_size = ZOO_STRUCT_SIZE,
    .kind = ZOO_KIND,
#if defined(ZOO_CUSTOM)
    .kind_name = "zoo-kind",
#endif
    .name = "zoo",
    .version = "0.0.1",
    .ops =
        {
#ifndef ZOO_NO_INIT
            .init = zoo_init,
#endif
#ifndef ZOO_NO_PROCESS
            .process = zoo_process,
#endif
#ifndef ZOO_NO_CLOSE
            .close = zoo_close,
#endif
#ifndef ZOO_NO_FRESH
            .is_fresh_task = zoo_is_fresh_task,
#endif
        },
#if defined(ZOO_GIVES_NO_END)
    .handover = DM_UNIT_GIVES_POSITION, /* and no end_position to say where */
#elif defined(ZOO_BAD_HANDOVER)
    .handover = DM_UNIT_TAKES_POSITION | 0x100u,
#endif
};

#if defined(ZOO_NO_ENTRY)
/* Keep the descriptor referenced so the only difference is the missing export. */
__attribute__((visibility("default"))) const dm_unit_descriptor *zoo_not_the_entry(void);
__attribute__((visibility("default"))) const dm_unit_descriptor *zoo_not_the_entry(void) {
  return &zoo_unit;
}
#elif defined(ZOO_NULL_ENTRY)
__attribute__((visibility("default"))) const dm_unit_descriptor *dm_unit_entry(void);
__attribute__((visibility("default"))) const dm_unit_descriptor *dm_unit_entry(void) {
  return zoo_unit.magic ? NULL : &zoo_unit;
}
#else
DM_UNIT_EXPORT(zoo_unit)
#endif
