#!/usr/bin/env bash
# DM's encrypted passwords in a cluster (issue 23), played against the fixture's etcd and the
# MariaDB pair: a source account with a random password, its source file's `password` in DM's
# form (`dmhost encrypt --dm`, as `dmctl encrypt` prints it).
#  1. a master whose --secret-key-path lies outside its --secrets-dir refuses the sent file (11007:
#     dmctl --master-addr sends content) and writes nothing;
#  2. a master with the key below --secrets-dir decrypts it and seals the plain password with the
#     cluster key: etcd holds `password-encrypted`, neither DM's form nor the password;
#  3. a worker (no DM key: only --cluster-key) is bound to the source and runs a task of it: it
#     connected with the password;
#  4. the master's DM API answers the source and the task (api-objects from etcd): the sealed text
#     loaded with the cluster key, the password masked, the status the master's.
#
#   dm_secret.sh <dmhost> <dmctl> <plugin dir> <source dir>
#
# KEEP=1 keeps the work folder.
set -euo pipefail
dmhost=$1 dmctl=$2 plugins=$3 src_dir=$4
cd "$src_dir"
work=$(mktemp -d /tmp/dmh-cluster-dmsecret-XXXXXX)
t0=$SECONDS tag=cluster_dm_secret tasks="dmsectask"
db=cluster_dm_secret_db meta=cluster_dm_secret_meta
. tests/crash/lib.sh
. tests/cluster/lib.sh
pw="DmSec-cl-$(openssl rand -hex 8)"
cleanup() {
  src -e "DROP USER IF EXISTS 'dmh_dmsec_cl'@'127.0.0.1'; DROP DATABASE IF EXISTS \`$db\`" 2>/dev/null || true
  tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`" 2>/dev/null || true
  cluster_cleanup
}
trap cleanup EXIT
etcd_get() { ETCDCTL_API=3 etcdctl --endpoints "$DMH_ETCD_ENDPOINTS" get --prefix "$1" 2>/dev/null; }

src <<SQL
DROP USER IF EXISTS 'dmh_dmsec_cl'@'127.0.0.1';
CREATE USER 'dmh_dmsec_cl'@'127.0.0.1' IDENTIFIED BY '$pw';
GRANT ALL ON *.* TO 'dmh_dmsec_cl'@'127.0.0.1';
DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`;
CREATE TABLE \`$db\`.t (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO \`$db\`.t VALUES (1, 'one'), (2, 'two');
SQL
tgt -e "DROP DATABASE IF EXISTS \`$db\`; DROP DATABASE IF EXISTS \`$meta\`"
mkdir -m 0700 "$work/secrets"
(umask 077 && openssl rand -hex 32 >"$work/secrets/dm.key" && openssl rand -hex 32 >"$work/outside.key")
enc=$(printf '%s\n' "$pw" | "$dmhost" encrypt --dm --secret-key-path "$work/secrets/dm.key")
cat >"$work/srcA.cfg" <<CFG
source-id = "srcA";
from = { host = "127.0.0.1"; port = $DMH_SOURCE_PORT; user = "dmh_dmsec_cl"; password = "$enc"; };
CFG
crash_task_cfg dmsectask "$meta" "$db" srcA >"$work/dmsectask.cfg" <<CFG
supervisor = { auto-resume = { enable = false; }; };
CFG

# ---- 1. the key outside --secrets-dir: a sent file is refused ----
worker_flags=("${etcd_flags[@]}")
etcd_flags=("${worker_flags[@]}" --secrets-dir "$work/secrets" --secret-key-path "$work/outside.key")
master_up 2
out=$(ctl 2 operate-source create "$work/srcA.cfg") && fail "m2 stored srcA with its key outside --secrets-dir: $out"
grep -q 11007 <<<"$out" || fail "m2: srcA not refused with 11007: $out"
grep -qF -- "$pw" <<<"$out" && fail "the refusal holds the password: $out"
[ -z "$(etcd_get "$prefix/source/")" ] || fail "a refused srcA is in etcd"
stop_proc m2
log "a master whose --secret-key-path is outside --secrets-dir refuses DM's form sent to it (11007)"

# ---- 2. the key below --secrets-dir: decrypted, sealed with the cluster key ----
etcd_flags=("${worker_flags[@]}" --secrets-dir "$work/secrets" --secret-key-path "$work/secrets/dm.key")
start_master 1
etcd_flags=("${worker_flags[@]}")
wait_for 20 "m1 does not answer" ctl 1 list-member
source_create 1 srcA
stored=$(etcd_get "$prefix/source/")
grep -q "$prefix/source/srcA" <<<"$stored" || fail "srcA is not in etcd: $stored"
grep -qF -- "$pw" <<<"$stored" && fail "the source's password is in etcd in clear: $stored"
grep -qF -- "$enc" <<<"$stored" && fail "DM's form reached etcd: $stored"
grep -q 'password-encrypted' <<<"$stored" || fail "srcA's password is not password-encrypted: $stored"
log "etcd holds srcA's password sealed with the cluster key, neither DM's form nor the password"

# ---- 3. a worker with the cluster key only runs a task of the source ----
start_worker w1
wait_for 30 "srcA was not bound to w1" members_are 1 "w1 bound srcA"
task_start 1 dmsectask
wait_for 60 "dmsectask does not run on w1" task_running dmsectask srcA 1
copied() { [ "$(tgt -N -B -e "SELECT COUNT(*) FROM \`$db\`.t" 2>/dev/null)" = 2 ]; }
wait_for 60 "dmsectask did not copy the rows (the worker did not connect with the password)" copied
log "w1 (no DM key) connected to the source with the password the master decrypted; rows copied"

# ---- 4. DM's GET /api/v1/sources and /tasks on the master: the sealed text loaded, masked ----
api() { curl -sS -m 10 --noproxy '*' "http://127.0.0.1:${m_port[1]}$1"; }
out=$(api "/api/v1/sources?with_status=true")
grep -q '"total":1' <<<"$out" && grep -q '"source_name":"srcA"' <<<"$out" ||
  fail "m1's GET /api/v1/sources does not list srcA: $out"
grep -q '"password":"\*\*\*\*\*\*"' <<<"$out" || fail "srcA's password is not masked: $out"
grep -q '"worker_name":"w1"' <<<"$out" && grep -q '"task_name_list":\["dmsectask"\]' <<<"$out" ||
  fail "srcA's status is not w1's with dmsectask: $out"
grep -qF -- "$pw" <<<"$out" && fail "GET /api/v1/sources holds the password: $out"
out=$(api "/api/v1/tasks/dmsectask?with_status=true")
grep -q '"name":"dmsectask"' <<<"$out" && grep -q '"source_name":"srcA"' <<<"$out" ||
  fail "m1's GET /api/v1/tasks/dmsectask is not the task: $out"
grep -q '"status_list":\[{' <<<"$out" || fail "dmsectask has no status_list: $out"
grep -qF -- "$pw" <<<"$out" && fail "GET /api/v1/tasks/dmsectask holds a password: $out"
log "m1 answers DM's Source and Task from etcd's sealed texts, passwords masked, with status"
if grep -rlF -- "$pw" "$work"; then fail "the plain password is in the files above"; fi

for p in m1 w1; do stop_proc "$p"; done
log "PASSED"
