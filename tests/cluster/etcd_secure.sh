#!/usr/bin/env bash
# The etcd network as an attacker reaches it (issue 20, item 2), played against the TLS+auth etcd
# (fixture etcd_tls: scripts/etcd.sh with DMH_ETCD_TLS=1, client certificates required, users on,
# role `dmhost` read-write on /dmhost/ only, `other` on /other/ only) and the MariaDB pair:
#  1. a client without a client certificate, or with one of another CA, gets no answer from etcd;
#  2. user `other` (a certificate of the cluster's CA, its own password) reads, writes, watches and
#     revokes nothing under /dmhost/: the attack of the issue (write a task key and its stage) is
#     refused;
#  3. a master started with a plain http:// endpoint on another host, or with the wrong CA, exits
#     with a coded error (15042, 15009) and registers nothing;
#  4. operate-source create of a source with a clear password through a master with --cluster-key:
#     `etcdctl get --prefix <p>/source` shows no clear password; a worker with the same
#     --cluster-key runs a task of that source (it connected with the decrypted password); a master
#     without a cluster key refuses such a source (15043) and writes nothing;
#  5. a source text written into etcd naming a `secret-key-path` is refused by the worker it is
#     bound to (15044): a worker decrypts with its own --cluster-key only;
#  6. every token made invalid (auth disable/enable as root): the master answers and writes, and
#     the worker's lease is renewed, with new tokens;
#  7. the worker runs as an etcd user of its own whose role reads the cluster's prefix and writes
#     only where a worker writes (<p>/worker/, <p>/status/, <p>/shard/: docs/cluster.md "etcd with
#     TLS and users"): it registers, is bound and runs the task; a put of a task, stage, binding,
#     source, leader, task template, cluster info, relay request or disabled-flag key with its
#     credentials is refused (the master-only keys: a stolen worker credential changes none of them).
#
# config master|worker NAME of members started with a password and a key file: neither's contents.
#
#   etcd_secure.sh <dmhost> <dmctl> <plugin dir> <source dir>
#
# KEEP=1 keeps the work folder.
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
work=$(mktemp -d /tmp/dmh-etcd-secure-XXXXXX)
t0=$SECONDS tag=cluster_etcd_secure tasks="sectask"
db=cluster_etcd_secure_db meta=cluster_etcd_secure_meta
cp_table="\`$meta\`.\`sectask_syncer_checkpoint\`"
. tests/crash/lib.sh
. tests/cluster/lib.sh
[ "${DMH_ETCD_TLS:-}" = 1 ] || fail "run with DMH_ETCD_TLS=1 (the etcd_tls fixture)"
pw="S3cret-etcd-$RANDOM$RANDOM"
wuser=dmhw$$
cleanup() {
  etcdctl_root user delete "$wuser" >/dev/null 2>&1 || true
  etcdctl_root role delete "$wuser" >/dev/null 2>&1 || true
  src -e "DROP USER IF EXISTS 'dmh_sec'@'127.0.0.1'; DROP DATABASE IF EXISTS \`$db\`" 2>/dev/null || true
  tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`" 2>/dev/null || true
  cluster_cleanup
}
trap cleanup EXIT

pki=$DMH_ETCD_PKI
ep=${DMH_ETCD_ENDPOINTS%%,*}
b64() { printf %s "$1" | base64 -w0; }
token() { # user: a token of etcd for the user's password
  curl -sS --cacert "$pki/ca.pem" --cert "$pki/$1.pem" --key "$pki/$1-key.pem" -X POST \
    "$ep/v3/auth/authenticate" -d "{\"name\":\"$1\",\"password\":\"$(cat "$pki/$1.password")\"}" |
    jq -r .token
}
as_user() { # user path json: etcd's JSON API with the user's certificate and token
  local tok
  tok=$(token "$1")
  curl -sS -m 5 --cacert "$pki/ca.pem" --cert "$pki/$1.pem" --key "$pki/$1-key.pem" \
    -H "Authorization: $tok" -X POST "$ep/v3/$2" -d "$3"
}
etcdctl_root() {
  ETCDCTL_API=3 etcdctl --endpoints "$DMH_ETCD_ENDPOINTS" --cacert "$pki/ca.pem" \
    --cert "$pki/root.pem" --key "$pki/root-key.pem" --user "root:$(cat "$pki/root.password")" "$@" \
    2>/dev/null
}
# a prefix ending in '/' as a range: its end is the key with the '/' replaced by '0'
range_json() { echo "{\"key\":\"$(b64 "$1")\",\"range_end\":\"$(b64 "${1%/}0")\"}"; }

# ---- the source: a user with a password ----
src -e "DROP USER IF EXISTS 'dmh_sec'@'127.0.0.1'; CREATE USER 'dmh_sec'@'127.0.0.1' IDENTIFIED BY '$pw';
  GRANT ALL ON *.* TO 'dmh_sec'@'127.0.0.1';
  DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`; CREATE TABLE \`$db\`.t (id INT PRIMARY KEY, v VARCHAR(20));
  INSERT INTO \`$db\`.t VALUES (1, 'one'), (2, 'two')"
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`"
cat >"$work/srcA.cfg" <<CFG
source-id = "srcA";
from = { host = "127.0.0.1"; port = $DMH_SOURCE_PORT; user = "dmh_sec"; password = "$pw"; };
CFG
sed 's/srcA/srcB/' "$work/srcA.cfg" >"$work/srcB.cfg"
crash_task_cfg sectask "$meta" "$db" srcA >"$work/sectask.cfg" <<CFG
supervisor = { auto-resume = { enable = false; }; };
CFG

# ---- 3. refused at start: plain http to another host, the wrong CA ----
out=$("$dmhost" master --name mbad --etcd http://192.0.2.1:2379 --listen 127.0.0.1:0 2>&1) &&
  fail "a master started on a plain http endpoint of another host: $out"
grep -q "code 15042" <<<"$out" || fail "plain http to another host: not refused with 15042: $out"
out=$("$dmhost" worker --name wbad --etcd http://192.0.2.1:2379 --state-dir "$work/wbad" 2>&1) &&
  fail "a worker started on a plain http endpoint of another host: $out"
grep -q "code 15042" <<<"$out" || fail "worker, plain http to another host: not 15042: $out"
# with the flag, the endpoint is taken (and then not reached: 15001, not 15042)
out=$("$dmhost" master --name mbad --etcd http://192.0.2.1:2379 --etcd-insecure-transport \
  --listen 127.0.0.1:0 2>&1) || true
grep -q "code 15042" <<<"$out" && fail "--etcd-insecure-transport did not allow the endpoint: $out"
bad_flags=(--etcd-cacert "$pki/wrong-ca.pem" --etcd-cert "$pki/dmhost.pem" --etcd-key
  "$pki/dmhost-key.pem" --etcd-user dmhost --etcd-password-file "$pki/dmhost.password")
out=$("$dmhost" master --name mbad --etcd "$DMH_ETCD_ENDPOINTS" "${bad_flags[@]}" \
  --etcd-prefix "$prefix" --listen 127.0.0.1:0 2>&1) && fail "a master trusted etcd with the wrong CA"
grep -q "code 15009" <<<"$out" || fail "the wrong CA: not refused with 15009: $out"
# a password given as a file others may read is refused
cp "$pki/dmhost.password" "$work/open.password" && chmod 644 "$work/open.password"
out=$("$dmhost" master --name mbad --etcd "$DMH_ETCD_ENDPOINTS" --etcd-cacert "$pki/ca.pem" \
  --etcd-cert "$pki/dmhost.pem" --etcd-key "$pki/dmhost-key.pem" --etcd-user dmhost \
  --etcd-password-file "$work/open.password" --listen 127.0.0.1:0 2>&1) &&
  fail "a master took a password file of mode 0644"
grep -q "code 15045" <<<"$out" || fail "a password file of mode 0644: not 15045: $out"
[ -z "$(etcdctl_root get --prefix --keys-only "$prefix/")" ] ||
  fail "a refused master wrote under $prefix: $(etcdctl_root get --prefix --keys-only "$prefix/")"
log "refused at start: plain http to another host (15042), the wrong CA (15009), an open password file (15045)"

# ---- 4. a clear password kept encrypted; refused without a cluster key ----
master_up 1
source_create 1 srcA
stored=$(etcdctl_root get --prefix "$prefix/source/")
grep -q "$prefix/source/srcA" <<<"$stored" || fail "srcA is not in etcd: $stored"
grep -q "$pw" <<<"$stored" && fail "the source's password is in etcd in clear: $stored"
grep -q 'password-encrypted' <<<"$stored" || fail "srcA's password is not password-encrypted: $stored"
log "etcdctl get --prefix $prefix/source: no clear password, password-encrypted"
read -ra no_key_flags <<<"$DMH_ETCD_FLAGS" # TLS and user, no --cluster-key
"$dmhost" master --name m2 --etcd "$DMH_ETCD_ENDPOINTS" "${no_key_flags[@]}" --etcd-prefix "$prefix" \
  --listen "127.0.0.1:${m_port[2]}" >>"$work/m2.log" 2>&1 &
pid[m2]=$!
wait_for 20 "m2 does not answer" ctl 2 list-member
out=$(ctl 2 operate-source create "$work/srcB.cfg") && fail "m2 without --cluster-key stored srcB: $out"
grep -q 15043 <<<"$out" ||
  fail "m2 without --cluster-key: srcB not refused with 15043: $out"
[ -z "$(etcdctl_root get "$prefix/source/srcB")" ] || fail "a refused srcB is in etcd"
log "a master without --cluster-key refuses a clear password (15043), writes nothing"

# ---- 7. the worker's own user: it reads the prefix, writes only a worker's keys ----
(umask 077 && openssl rand -hex 16 >"$work/worker.password")
etcdctl_root user add "$wuser" --new-user-password "$(cat "$work/worker.password")" >/dev/null
etcdctl_root role add "$wuser" >/dev/null
etcdctl_root role grant-permission "$wuser" --prefix=true read "$prefix/" >/dev/null
for d in worker status shard; do
  etcdctl_root role grant-permission "$wuser" --prefix=true readwrite "$prefix/$d/" >/dev/null
done
etcdctl_root user grant-role "$wuser" "$wuser" >/dev/null
master_flags=("${etcd_flags[@]}")
read -ra etcd_flags <<<"$(sed -E "s#--etcd-user [^ ]+ --etcd-password-file [^ ]+#--etcd-user $wuser --etcd-password-file $work/worker.password#" <<<"$DMH_ETCD_FLAGS")"
grep -q -- "--etcd-user $wuser" <<<"${etcd_flags[*]}" || fail "precondition: the worker's flags: ${etcd_flags[*]}"
etcd_flags+=(--cluster-key "$work/cluster.key")

# the worker decrypts with its own --cluster-key: the task runs and copies the rows
start_worker w1
etcd_flags=("${master_flags[@]}")
wait_for 20 "srcA was not bound to w1" members_are 1 "w1 bound srcA"
task_start 1 sectask
wait_for 60 "sectask does not run on w1" task_running sectask srcA 1
copied() { [ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$db\`.t" 2>/dev/null)" = 2 ]; }
wait_for 60 "sectask did not copy the rows (the worker did not connect with the password)" copied
log "w1 (--cluster-key) connected to the source with the decrypted password; rows copied"

# config master|worker NAME (DM's GetCfg): a member's command line names its etcd password file and
# the cluster key file, never their contents (the answers through m2, forwarded to m1 and to w1)
for who in "master m1" "worker w1"; do
  # shellcheck disable=SC2086
  out=$(ctl 2 config $who) || fail "config $who: $out"
  jq -e '.result and (.cfg | contains("--etcd-password-file ")) and
         (.cfg | contains("--cluster-key '"$work"'/cluster.key"))' <<<"$out" >/dev/null ||
    fail "config $who: $out"
  for f in "$pki/dmhost.password" "$work/worker.password" "$work/cluster.key"; do
    [ -s "$f" ] || fail "precondition: $f is empty"
    grep -qF -- "$(head -n1 "$f")" <<<"$out" && fail "config $who: the contents of $f are in it: $out"
  done
done
log "config master m1 / worker w1: the password and key files by path, no secret of them"

# ---- 2. user other: nothing under /dmhost/ ----
out=$(as_user other kv/put "{\"key\":\"$(b64 /other/probe)\",\"value\":\"$(b64 x)\"}")
jq -e '.header.revision' <<<"$out" >/dev/null || fail "precondition: other cannot write /other/: $out"
out=$(as_user dmhost kv/range "$(range_json "$prefix/source/")")
jq -e '.kvs | length == 1' <<<"$out" >/dev/null || fail "precondition: dmhost does not read srcA: $out"
out=$(as_user other kv/range "$(range_json "$prefix/")")
grep -q "permission denied" <<<"$out" || fail "other read under $prefix: $out"
grep -q "password-encrypted\|$(b64 source-id | cut -c1-8)" <<<"$out" && fail "other read a source: $out"
# the attack of the issue: a task key and its stage key, to make a worker dump a source elsewhere
evil=$(b64 "{\"config\":\"name = \\\"evil\\\";\"}")
for k in "$prefix/task/evil" "$prefix/stage/evil/srcA"; do
  out=$(as_user other kv/put "{\"key\":\"$(b64 "$k")\",\"value\":\"$evil\"}")
  grep -q "permission denied" <<<"$out" || fail "other wrote $k: $out"
done
out=$(as_user other kv/txn "{\"success\":[{\"request_delete_range\":$(range_json "$prefix/")}]}")
grep -q "permission denied" <<<"$out" || fail "other deleted under $prefix: $out"
tok=$(token other)
out=$(timeout 5 curl -sS -N --cacert "$pki/ca.pem" --cert "$pki/other.pem" --key "$pki/other-key.pem" \
  -H "Authorization: $tok" -X POST "$ep/v3/watch" -d "{\"create_request\":$(range_json "$prefix/")}" || true)
grep -q "permission denied" <<<"$out" || fail "other watched $prefix: $out"
# revoking w1's lease would delete its registration and binding: the source would move
out=$(as_user other lease/revoke "{\"ID\":\"$(cat "$work/w1/cluster-lease")\"}")
grep -q "permission denied" <<<"$out" || fail "other revoked w1's lease: $out"
if [ -n "$(etcdctl_root get --prefix --keys-only "$prefix/task/evil")" ] ||
  [ -n "$(etcdctl_root get --prefix --keys-only "$prefix/stage/evil")" ]; then
  fail "other's task or stage key is in etcd"
fi
# read whole before grep: under pipefail, `etcdctl | grep -q` fails when grep has its match and
# exits before etcdctl's last write (SIGPIPE), as it did once in a fresh-clone run
out=$(etcdctl_root get "$prefix/source/srcA")
grep -q srcA <<<"$out" || fail "srcA was deleted by other: $out"
members_are 1 "w1 bound srcA" || fail "w1 lost its binding to other's requests: $(members 1)"
log "user other: read, put (task and stage keys), delete, watch and lease revoke under $prefix refused"

# ---- 7. the worker's credentials write no task, stage, binding, source or leader key ----
wtok=$(curl -sS --cacert "$pki/ca.pem" --cert "$pki/dmhost.pem" --key "$pki/dmhost-key.pem" -X POST \
  "$ep/v3/auth/authenticate" -d "{\"name\":\"$wuser\",\"password\":\"$(cat "$work/worker.password")\"}" |
  jq -r .token)
as_worker() { # path json, with the worker's user
  curl -sS -m 5 --cacert "$pki/ca.pem" --cert "$pki/dmhost.pem" --key "$pki/dmhost-key.pem" \
    -H "Authorization: $wtok" -X POST "$ep/v3/$1" -d "$2"
}
out=$(as_worker kv/range "$(range_json "$prefix/bound/")")
jq -e '.kvs | length == 1' <<<"$out" >/dev/null || fail "precondition: the worker's user does not read its binding: $out"
for k in "$prefix/task/evil" "$prefix/stage/evil/srcA" "$prefix/bound/w9" "$prefix/source/srcE" "$prefix/leader" \
  "$prefix/template/evil" "$prefix/cluster-info" "$prefix/relay/w1" "$prefix/disabled/srcA" \
  "$prefix/start/sectask/srcA"; do
  out=$(as_worker kv/put "{\"key\":\"$(b64 "$k")\",\"value\":\"$evil\"}")
  grep -q "permission denied" <<<"$out" || fail "the worker's user wrote $k: $out"
done
out=$(as_worker kv/txn "{\"success\":[{\"request_delete_range\":$(range_json "$prefix/bound/")}]}")
grep -q "permission denied" <<<"$out" || fail "the worker's user deleted the bindings: $out"
[ -z "$(etcdctl_root get --prefix --keys-only "$prefix/task/evil")" ] || fail "the worker's task key is in etcd"
members_are 1 "w1 bound srcA" || fail "w1 lost its binding: $(members 1)"
log "the worker's own user (read $prefix/, write worker/ status/ shard/): ran the task; task, stage, binding, source, leader, template, cluster-info, relay, disabled-flag and start-options writes refused"

# ---- 1. no client certificate, another CA's certificate ----
out=$(curl -sS -m 5 --cacert "$pki/ca.pem" -X POST "$ep/v3/kv/range" -d "$(range_json "$prefix/")" 2>&1) &&
  fail "etcd answered a client without a certificate: $out"
grep -q '"kvs"' <<<"$out" && fail "a client without a certificate read keys: $out"
out=$(curl -sS -m 5 --cacert "$pki/ca.pem" --cert "$pki/wrong-client.pem" --key "$pki/wrong-client-key.pem" \
  -X POST "$ep/v3/kv/range" -d "$(range_json "$prefix/")" 2>&1) &&
  fail "etcd answered a client certificate of another CA: $out"
log "etcd refused a client without a certificate and one of another CA"

# ---- 5. a key path in a text from etcd is not used ----
(umask 077 && openssl rand -hex 32 >"$work/evil.key")
enc=$("$dmhost" encrypt --secret-key-path "$work/evil.key" "$pw")
text="secret-key-path = \"$work/evil.key\";
source-id = \"srcE\";
from = { host = \"127.0.0.1\"; port = $DMH_SOURCE_PORT; user = \"dmh_sec\"; password-encrypted = \"$enc\"; };"
start_worker w2
wait_for 20 "w2 did not register free" members_are 1 "w1 bound srcA
w2 free "
etcdctl_root put "$prefix/source/srcE" "$(jq -cn --arg c "$text" '{config: $c}')" >/dev/null
wait_for 20 "srcE was not bound to w2" members_are 1 "w1 bound srcA
w2 bound srcE"
wait_for 30 "w2 did not refuse srcE's secret-key-path with 15044" grep -q "code 15044" "$work/w2.log"
grep -q "secret-key-path" "$work/w2.log" || fail "w2's refusal does not name secret-key-path"
log "w2 refused a source text from etcd naming a secret-key-path (15044)"

# ---- 6. every token made invalid: new ones are taken ----
lease=$(cat "$work/w1/cluster-lease")
lease_hex=$(printf %x "$lease")
etcdctl_root auth disable >/dev/null
etcdctl_root auth enable >/dev/null
cycled=$SECONDS
out=$(as_user dmhost kv/range "{\"key\":\"$(b64 x)\"}")
renewed() { # w1's lease renewed after the tokens were dropped: more than TTL - 5 s left, 5 s after
  [ $((SECONDS - cycled)) -ge 5 ] &&
    [ "$(etcdctl_root lease timetolive "$lease_hex" | sed -n 's/.*remaining(\([0-9-]*\)s).*/\1/p')" -gt 5 ]
}
wait_for 30 "w1's lease was not renewed after the tokens were dropped" renewed
ctl 1 operate-source show >"$work/ctl.out" || fail "m1 does not answer after the tokens were dropped"
cat >"$work/srcC.cfg" <<CFG
source-id = "srcC";
from = { host = "127.0.0.1"; port = $DMH_SOURCE_PORT; user = "$DMH_SOURCE_USER"; password = ""; };
CFG
source_create 1 srcC
task_running sectask srcA 1 >/dev/null || fail "sectask no longer runs after the tokens were dropped"
log "tokens dropped (auth disable/enable): m1 wrote, w1's lease renewed, the task runs"

for p in m1 m2 w1 w2; do stop_proc "$p"; done
no_dup "$work"/*.log
log "PASSED"
