# DM's OpenAPI against a `dmhost serve --listen` for the shell tests that drive it with curl
# (sourced by dm_wire.sh and dm_start.sh after $dmhost, $dmctl, $plugins, $work and fail() are
# set):
#   dm_http_serve LOG         the daemon in the background ($pid), its log in LOG, on a port of
#                             its own choosing ($port, $base: http://127.0.0.1:PORT/api/v1)
#   call METHOD PATH [FILE]   one request (FILE: its JSON body): the status in $status, the body
#                             in $work/out; each exchange logged in $work/exchanges.jsonl for DM's
#                             spec (tests/control/dm_openapi_check.py)
#   expect STATUS WHAT        the last status is STATUS, else fail naming WHAT and the body
#   dm_http_end               every exchange against DM's own spec, then the daemon stopped by
#                             SIGTERM (it must exit 0)
dm_http_serve() {
  "$dmhost" serve --state-dir "$work/state" --plugin-dir "$plugins" --listen 127.0.0.1:0 \
    --log-level info >>"$1" 2>&1 &
  pid=$!
  port=
  for _ in $(seq 1 120); do
    port=$(sed -n 's|.*control plane on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$1" | head -1)
    [ -n "$port" ] && "$dmctl" --state-dir "$work/state" query-status >/dev/null 2>&1 && break
    sleep 0.5
  done
  [ -n "$port" ] || fail "dmhost serve did not say its HTTP port"
  base="http://127.0.0.1:$port/api/v1"
}
call() {
  local args=(-s -o "$work/out" -w '%{http_code} %{content_type}' -X "$1" "$base$2") out
  [ $# -ge 3 ] && args+=(-H 'Content-Type: application/json' --data-binary "@$3")
  out=$(curl "${args[@]}") || fail "curl $1 $2"
  status=${out%% *}
  local ctype=${out#* }
  jq -cn --arg m "$1" --arg p "/api/v1$2" --argjson s "$status" --rawfile b "$work/out" \
    --arg ct "$ctype" '{method: $m, path: $p, status: $s, body: $b} +
      (if $ct == "" then {} else {content_type: $ct} end)' >>"$work/exchanges.jsonl"
}
expect() {
  [ "$status" = "$1" ] || fail "$2: HTTP $status, want $1: $(head -c 600 "$work/out")"
}
dm_http_end() {
  /usr/bin/python3 tests/control/dm_openapi_check.py tests/control/dm-openapi/dm.yaml \
    "$work/exchanges.jsonl" >"$work/check.out" 2>&1 ||
    fail "answers off DM's spec: $(cat "$work/check.out")"
  kill -TERM "$pid"
  wait "$pid" || fail "dmhost serve did not exit 0 on SIGTERM"
  pid=
}
