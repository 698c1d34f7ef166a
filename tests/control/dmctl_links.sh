#!/usr/bin/env bash
# dmctl is a client (issue 21): it links base, the command table and the socket and HTTP clients,
# never the daemon's rooms. Fails when a symbol of the registry, the supervisor, the loader, config
# loading, the precheck, the cluster or the HTTP server is defined in the dmctl binary; dmhost
# defines them all (the same nm reads it), so the check itself is seen to work.
set -euo pipefail
dmctl=$1 dmhost=$2
rooms='dmh_(registry|subtask|unit_lib|task_config|source_config|precheck|etcd|master|cluster|state|api|status_page|ctx)_'
defined() { nm --defined-only "$1" | awk '$2 ~ /^[TtDdBbRr]$/ { print $3 }'; }
n=$(defined "$dmhost" | grep -cE "^$rooms" || true)
[ "$n" -gt 50 ] || { echo "dmctl_links: dmhost defines only $n daemon symbols: nm is not reading it" >&2; exit 1; }
# each list read whole before grep: under pipefail, `nm | grep -q` fails when grep exits first
mine=$(defined "$dmctl")
grep -q '^dmh_command' <<<"$mine" ||
  { echo "dmctl_links: dmctl defines no dmh_command* symbol: nm is not reading it" >&2; exit 1; }
if bad=$(grep -E "^$rooms" <<<"$mine"); then
  echo "dmctl_links: dmctl links daemon code (it should link base, the command table and the clients):" >&2
  echo "$bad" | head -20 >&2
  exit 1
fi
echo "dmctl_links: dmctl defines none of the daemon's symbols ($n in dmhost)"
