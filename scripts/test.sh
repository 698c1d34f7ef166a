#!/usr/bin/env bash
# The test command: install what is missing, then build and run every test three ways:
#   1. a plain build (-Wall -Wextra -Werror) with the whole suite;
#   2. -fsanitize=address,undefined with the whole suite;
#   3. -fsanitize=thread with the supervisor's stage-machine tests (the concurrency core; the
#      stress test's storm is 10,000 commands there, 2,500 in the other builds: see
#      tests/supervisor/CMakeLists.txt) and the sync unit's (coordinator, workers, status from
#      other threads) against the real servers, the etcd client's (a watch and a lease keeper
#      on threads of their own) and the cluster master's (election, guard and scheduling threads,
#      control requests from the test's thread) against the project's etcd.
# Also checks formatting against .clang-format, the host's layers (scripts/check-layers.sh: no
# folder includes a header of a folder above it), that a Release build (-O2, what bench/ and the
# README's demo use) compiles: GCC warns about more there (format truncation), and builds the
# libFuzzer targets with clang (DMHOST_FUZZ: every fuzz target over the library it fuzzes), each
# run 5 s from its stored corpus. BUILD_ROOT (default ./build) holds the builds.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
root=${BUILD_ROOT:-build}
# CI starts from servers of its own: the folders of an earlier run cut short on this machine (its
# servers' data kept: a prepared XA transaction holding its locks, half-made databases) must not
# decide this run. Outside CI the servers and their data are the developer's, kept.
if [ "${CI:-}" = true ]; then
  echo "== CI: fresh servers (MariaDB ${DMH_DB_DIR:-/tmp/dmhost-db}, etcd ${DMH_ETCD_DIR:-/tmp/dmhost-etcd})"
  bash scripts/mariadb.sh stop >/dev/null 2>&1 || true
  bash scripts/etcd.sh stop >/dev/null 2>&1 || true
  DMH_ETCD_TLS=1 bash scripts/etcd.sh stop >/dev/null 2>&1 || true
  rm -rf "${DMH_DB_DIR:-/tmp/dmhost-db}" "${DMH_ETCD_DIR:-/tmp/dmhost-etcd}" "${DMH_ETCD_DIR:-/tmp/dmhost-etcd}-tls"
fi
jobs=$(nproc)

echo "== format check"
files=$(git ls-files '*.c' '*.h' 2>/dev/null || find sdk host plugins tests examples -name '*.[ch]')
clang-format --dry-run --Werror $files

echo "== layers (docs/architecture.md): no host folder includes a header of a folder above it"
bash scripts/check-layers.sh --self-test
bash scripts/check-layers.sh

run_suite() { # name, cmake flags..., -- ctest args...
  local name=$1; shift
  local flags=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do flags+=("$1"); shift; done
  [ "${1:-}" = "--" ] && shift
  echo "== build: $name"
  cmake -S . -B "$root/$name" -DCMAKE_BUILD_TYPE=Debug "${flags[@]}" >/dev/null
  cmake --build "$root/$name" -j "$jobs"
  echo "== test: $name"
  (cd "$root/$name" && ctest --output-on-failure -j "$jobs" "$@")
}

echo "== build: release (compile only)"
cmake -S . -B "$root/release" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/release" -j "$jobs" >"$root/release.log" 2>&1 ||
  { grep -E "error|warning" "$root/release.log" | head -30; exit 1; }
echo "== build: fuzz (clang, libFuzzer; each target 5 s from its corpus)"
CC=clang cmake -S . -B "$root/fuzz" -DCMAKE_BUILD_TYPE=Debug -DDMHOST_FUZZ=ON \
  -DDMHOST_FUZZ_SECONDS=5 >/dev/null
cmake --build "$root/fuzz" -j "$jobs" --target fuzz
(cd "$root/fuzz" && ctest --output-on-failure -L fuzz)
run_suite plain
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite asan -DDMHOST_SANITIZE=address,undefined
# The suites of the concurrent code run under ThreadSanitizer, by name: a suite renamed or split
# would drop out of the run silently, so the count found must be the count named.
tsan_suites='supervisor|stress|sync|sync_validator|sync_all_writes|sync_all_restart|etcd|master|master_leader|master_members|control_http_transport|control_http_lag|control_http_slots|control_validation|shard_coord'
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  run_suite tsan -DDMHOST_SANITIZE=thread -- -R "^test_($tsan_suites)\$"
found=$(cd "$root/tsan" && ctest -N | grep -cE "Test +#[0-9]+: test_($tsan_suites)\$")
named=$(echo "$tsan_suites" | tr '|' '\n' | grep -c .)
[ "$found" = "$named" ] ||
  { echo "scripts/test.sh: $named suites named for ThreadSanitizer, $found found: fix tsan_suites" >&2; exit 1; }
echo "== all tests passed"
