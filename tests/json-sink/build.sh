#!/bin/bash
# The json-sink example as a third party builds it: install this build's SDK to a scratch prefix,
# then configure and build examples/json-sink out of tree against that prefix only (find_package),
# twice: version 1 and version 2 (-DJSON_SINK_VERSION=2, for the hot-swap of e2e.sh). Each must
# export dm_unit_entry and nothing else.
#
#   build.sh <build dir> <source dir> <work dir> <cmake> <cc>
set -euo pipefail
build_dir=$1 source_dir=$2 work=$3 cmake=$4 cc=$5
fail() { printf 'json_sink_build: FAILED: %s\n' "$*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
"$cmake" --install "$build_dir" --prefix "$prefix" >/dev/null
[[ -f $prefix/include/dmhost/relay_log.h ]] || fail "the installed SDK has no dmhost/relay_log.h"
# a sanitized build's SDK says so in its .pc (its runtime must be linked): the unit is built with
# the same sanitizers, so its own code is checked too when the tests run it
san=$(grep -o -- '-fsanitize=[a-z,]*' "$prefix/lib/pkgconfig/dmhost-sdk.pc" | head -1 || true)
for v in 1 2; do
  # a copy of the sources: nothing of the source tree is on any path the build sees
  cp -r "$source_dir/examples/json-sink" "$work/src-v$v"
  "$cmake" -S "$work/src-v$v" -B "$work/build-v$v" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS="-Werror ${san:+$san -fno-omit-frame-pointer}" \
    -DJSON_SINK_VERSION=$v >/dev/null
  "$cmake" --build "$work/build-v$v" -j2 >/dev/null || "$cmake" --build "$work/build-v$v"
  so=$work/build-v$v/libjson_sink.so
  [[ -f $so ]] || fail "no $so"
  exports=$(nm -D --defined-only "$so" | awk '{print $NF}' | sort)
  [[ $exports == dm_unit_entry ]] || fail "$so exports more than dm_unit_entry: $exports"
  # nothing of the source tree's SDK or examples (the prefix and the copy only)
  ! grep -rqE "$source_dir/(sdk|examples|host)|$build_dir/sdk" "$work/build-v$v/CMakeCache.txt" \
    "$work/build-v$v/CMakeFiles/json_sink.dir/flags.make" ||
    fail "the out-of-tree build of v$v refers to the source tree"
  grep -q -- "-I$prefix/include\|-isystem $prefix/include" "$work/build-v$v/CMakeFiles/json_sink.dir/flags.make" ||
    fail "the build of v$v does not take the installed SDK's headers"
  cp "$so" "$work/libjson_sink-v$v.so"
done
echo "json_sink_build: ok ($work/libjson_sink-v1.so, $work/libjson_sink-v2.so)"
