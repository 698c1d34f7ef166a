#!/bin/bash
# The SDK as a unit author gets it: install the build to a scratch prefix, build the reference unit
# out of tree twice (find_package and the pkg-config one-liner), check that each exports
# dm_unit_entry and nothing else, and load each through the host's loader.
#
# run.sh <build dir> <source dir> <check_unit> <work dir> <cmake> <cc> <pkg-config>
set -euo pipefail

build_dir=$1 source_dir=$2 check_unit=$3 work=$4 cmake=$5 cc=$6 pkg_config=$7
unit_src=$source_dir/examples/reference-unit

step() { printf '\n== %s\n' "$*"; }
fail() { printf 'sdk_install: FAILED: %s\n' "$*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

step "install the build to $prefix"
"$cmake" --install "$build_dir" --prefix "$prefix"
for f in include/dmhost/dmhost.h include/dmhost/unit.h lib/libdmhost-sdk.a \
  lib/pkgconfig/dmhost-sdk.pc lib/cmake/dmhost-sdk/dmhost-sdk-config.cmake \
  lib/cmake/dmhost-sdk/dmhost-sdk-targets.cmake; do
  [[ -f $prefix/$f ]] || fail "cmake --install did not install $f"
done

step "the umbrella dmhost.h includes every installed header, and compiles alone"
for h in "$prefix"/include/dmhost/*.h; do
  name=$(basename "$h")
  [[ $name == dmhost.h ]] && continue
  grep -qx "#include \"$name\"" "$prefix/include/dmhost/dmhost.h" ||
    fail "include/dmhost/$name is not included by the umbrella header dmhost.h"
done
printf '#include <dmhost/dmhost.h>\nint main(void) { return 0; }\n' >"$work/umbrella.c"
"$cc" -std=c11 -Wall -Wextra -Werror -I"$prefix/include" -c "$work/umbrella.c" -o "$work/umbrella.o" ||
  fail "dmhost.h does not compile on its own"

step "build $unit_src with find_package(dmhost-sdk)"
"$cmake" -S "$unit_src" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS=-Werror
"$cmake" --build "$work/cmake-build"
cmake_unit=$work/cmake-build/reference-counter.so

step "build $unit_src with pkg-config"
mkdir -p "$work/pc-build"
pc_unit=$work/pc-build/reference-counter.so
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# Sources before --libs: the SDK is a static archive, searched only for what is undefined so far.
set -x
"$cc" -shared -fPIC -fvisibility=hidden -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror \
  $("$pkg_config" --cflags dmhost-sdk) "$unit_src/reference_counter.c" -o "$pc_unit" \
  $("$pkg_config" --libs dmhost-sdk) -Wl,-z,defs
set +x

for so in "$cmake_unit" "$pc_unit"; do
  step "exports of $so"
  exports=$(nm -D --defined-only "$so" | awk '{print $NF}' | sort)
  printf '%s\n' "$exports"
  [[ $exports == dm_unit_entry ]] || fail "$so must export exactly dm_unit_entry"
done

for so in "$cmake_unit" "$pc_unit"; do
  step "load $so through the host's loader and run it on a fake host"
  run_dir=$work/run-$(basename "$(dirname "$so")")
  mkdir -p "$run_dir"
  out=$("$check_unit" "$so" --run "$run_dir")
  printf '%s\n' "$out"
  grep -qx 'name=reference-counter version=1.0.0 abi=1.3 kind=dump' <<<"$out" ||
    fail "unexpected identity from $so"
done

step "the installed conformance suite on $cmake_unit"
[[ -x $prefix/bin/dmhost-unit-check ]] || fail "cmake --install did not install bin/dmhost-unit-check"
printf 'dump = { count = 200000; batch = 100; };\n' >"$work/unit-check.cfg"
"$prefix/bin/dmhost-unit-check" "$cmake_unit" --config "$work/unit-check.cfg" ||
  fail "the reference unit does not pass dmhost-unit-check"

step "run $cmake_unit through dmhost run"
dmhost=$build_dir/host/dmhost
host_dir=$work/host-run
mkdir -p "$host_dir"
cat >"$host_dir/source.cfg" <<CFG
source-id = "ref-src";
from = { host = "127.0.0.1"; port = 1; user = "root"; password = ""; };
CFG
write_task() { # count batch
  cat >"$host_dir/task.cfg" <<CFG
name = "ref";
task-mode = "dump";
target-database = { host = "127.0.0.1"; port = 2; user = "root"; password = ""; };
mysql-instances = ( { source-id = "ref-src"; } );
unit-paths = { dump = "$cmake_unit"; };
dump = { count = $1; batch = $2; };
ignore-checking-items = ["all"]; # the reference unit talks to no server
CFG
}
numbers=$host_dir/work/tasks/ref/ref-src/dump/numbers.txt
write_task 20000 10
"$dmhost" run --source "$host_dir/source.cfg" --task "$host_dir/task.cfg" \
  --work-dir "$host_dir/work" --quiet || fail "dmhost run of the reference unit failed"
cmp -s "$numbers" <(seq 1 20000) || fail "numbers.txt is not exactly 1..20000"
# finished units are not run again: is_fresh_task says so and process returns at once
"$dmhost" run --source "$host_dir/source.cfg" --task "$host_dir/task.cfg" \
  --work-dir "$host_dir/work" --quiet || fail "second dmhost run failed"
cmp -s "$numbers" <(seq 1 20000) || fail "a second run changed numbers.txt"

step "SIGTERM pauses dmhost run at a safe point; the next run continues from the checkpoint"
rm -rf "$host_dir/work"
write_task 3000000 500
"$dmhost" run --source "$host_dir/source.cfg" --task "$host_dir/task.cfg" \
  --work-dir "$host_dir/work" --quiet &
pid=$!
for _ in $(seq 1 100); do [[ -s $numbers ]] && break; sleep 0.05; done
sleep 0.3
kill -TERM "$pid"
wait "$pid" || fail "dmhost run did not exit 0 after SIGTERM"
done_at=$(cat "$host_dir/work/tasks/ref/ref-src/dump/checkpoint")
echo "paused after $done_at numbers"
(( done_at > 0 && done_at < 3000000 )) || fail "SIGTERM did not stop mid-run (checkpoint $done_at)"
"$dmhost" run --source "$host_dir/source.cfg" --task "$host_dir/task.cfg" \
  --work-dir "$host_dir/work" --quiet || fail "the resumed dmhost run failed"
cmp -s "$numbers" <(seq 1 3000000) || fail "numbers.txt is not exactly 1..3000000 after resume"

step "sdk_install: ok"
