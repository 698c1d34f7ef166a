#!/bin/bash
# expect.sh TOOL UNIT CONFIG EXPECT
# Runs dmhost-unit-check on UNIT (CONFIG: a --config file, or - for none) and asserts its verdict:
# EXPECT "pass": exit 0 and every check printed as passed; EXPECT a check's name: exit status not
# 0, that check failed, and every other check passed or was skipped (a check that cannot run after
# that breach, e.g. no resume after a process only kill stopped, says so).
set -uo pipefail
tool=$1 unit=$2 config=$3 expect=$4
checks=(load init-close init-fail fresh stop pause-resume sequential status kill update)

args=("$unit")
[[ $config != - ]] && args+=(--config "$config")
out=$("$tool" "${args[@]}")
rc=$?
printf '%s\n' "$out"
fail() { printf 'expect.sh: FAILED: %s\n' "$*" >&2; exit 1; }

# precondition: every check was reported, once
for c in "${checks[@]}"; do
  n=$(grep -cE "^(pass|fail|skip) $c: " <<<"$out")
  [[ $n == 1 ]] || fail "check $c reported $n times"
done
if [[ $expect == pass ]]; then
  [[ $rc == 0 ]] || fail "exit status $rc, expected 0"
  grep -qE '^(fail|skip) ' <<<"$out" && fail "a check did not pass"
  exit 0
fi
[[ $rc != 0 ]] || fail "exit status 0 though $expect should fail"
grep -q "^fail $expect: " <<<"$out" || fail "check $expect did not fail"
others=$(grep -E '^fail ' <<<"$out" | grep -v "^fail $expect: ")
[[ -z $others ]] || fail "other checks failed too: $others"
exit 0
