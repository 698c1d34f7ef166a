/*
 * The replay driver of the fuzz targets (tests/binlog/fuzz_binlog.c, tests/sync/fuzz_ddl.c):
 * built with the normal compiler, it runs a target's stored corpus as a plain CTest entry, so CI
 * exercises the target on every build without libFuzzer. Each input is run whole, then every
 * prefix (a cut every 1 + len/64 bytes) and with a byte flipped (every 1 + len/32 bytes from
 * first_flip on), as the fuzzer would mutate it.
 */
#ifndef DMH_FUZZ_REPLAY_H
#define DMH_FUZZ_REPLAY_H

#include <stddef.h>
#include <stdint.h>

typedef int (*fuzz_target_fn)(const uint8_t *data, size_t size);

/* argv: files or folders of inputs. Prints "N passed, N failed"; returns the exit code (non-zero
 * when a file could not be read or none was given). */
int fuzz_replay_main(int argc, char **argv, fuzz_target_fn target, size_t first_flip);

#endif /* DMH_FUZZ_REPLAY_H */
