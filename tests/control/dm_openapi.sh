#!/usr/bin/env bash
# DM's HTTP API as DM's WebUI and scripts call it, against a real `dmhost serve`, every answer
# judged by DM's own OpenAPI spec (issue 23):
#   - each exchange with curl is appended to a log (method, path as requested, status, body,
#     Content-Type), and tests/control/dm_openapi_check.py checks the log against the vendored
#     tests/control/dm-openapi/dm.yaml: the operation exists, its status is declared, the body
#     validates (or is empty where DM's spec declares none);
#   - the flow so far: the documents (dm.json, which must declare the DM operations dmhost serves,
#     and the docs page); the operations of DM's shapes join it as their routes land;
#   - the checker's --coverage: the operations of DM's 43 never answered here are exactly the
#     checker's NOT_SEEN list (each with why), so the list only shrinks as operations land.
# Writes with an empty body carry no Content-Type, as DM's scripts send them (curl -X POST).
#
#   dm_openapi.sh <dmhost> <dmctl> <plugin dir> <source dir> <python3 with jsonschema>
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4 py=$5
cd "$src_dir"
tag=dm_openapi
work=$(mktemp -d /tmp/dmh-dm-openapi-XXXXXX)
t0=$SECONDS
. tests/crash/lib.sh
serve_begin
spec=tests/control/dm-openapi/dm.yaml
exchanges=$work/exchanges.jsonl
: >"$exchanges"
for tool in curl jq; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/deps.sh installs it)"
done
"$py" -c 'import jsonschema, yaml' 2>/dev/null ||
  fail "$py lacks python3-jsonschema or python3-yaml (scripts/deps.sh installs them)"

# exchange METHOD PATH [JSON]: one exchange with DM's API, appended to the log; its status in
# $status, its body in $work/body. A JSON body goes with its Content-Type; none, with none.
exchange() {
  local method=$1 path=$2 out
  local args=(-sS --noproxy '*' -X "$method" -o "$work/body" -w '%{http_code} %{content_type}')
  if [ $# -ge 3 ]; then args+=(-H 'Content-Type: application/json' --data-binary "$3"); fi
  : >"$work/body"
  out=$(curl "${args[@]}" "http://$addr$path") || fail "curl $method $path failed"
  status=${out%% *}
  local ctype=${out#* }
  jq -cn --arg m "$method" --arg p "$path" --argjson s "$status" --rawfile b "$work/body" \
    --arg ct "$ctype" '{method: $m, path: $p, status: $s, body: $b} +
      (if $ct == "" then {} else {content_type: $ct} end)' >>"$exchanges"
}
# dm METHOD PATH STATUS [JSON]: an exchange that must answer STATUS
dm() {
  local method=$1 path=$2 want=$3
  exchange "$method" "$path" "${@:4}"
  [ "$status" = "$want" ] ||
    fail "$method $path answered $status, not $want: $(head -c 600 "$work/body")"
}
# body FILTER: jq -e FILTER holds on the last answer's body
body() {
  jq -e "$1" "$work/body" >/dev/null || fail "the answer is not $1: $(head -c 600 "$work/body")"
}

serve_listen "$dmhost" "$plugins" || fail "dmhost serve did not listen"
log "dmhost serve on $addr"

# ---- the documents ----
dm GET /api/v1/dm.json 200
body '.paths["/api/v1/dm.json"].get.operationId == "GetDocJSON"'
dm GET /api/v1/docs 200

# ---- every answer against DM's spec ----
"$py" tests/control/dm_openapi_check.py "$spec" "$exchanges" --coverage >"$work/check.out" 2>&1 ||
  fail "answers off DM's spec ($(wc -l <"$exchanges") exchanges):
$(cat "$work/check.out")"
tail -n 1 "$work/check.out"
kill -TERM "$pid"
wait "$pid" || fail "the daemon exited $? on SIGTERM"
pid=""
log "passed"
