# shellcheck shell=bash
# Process helpers shared by the scripts that run servers of their own (mariadb.sh, etcd.sh):
# sourced, not run.

# The pid in a pid file when that process runs, else nothing. A killed server can stay a zombie
# for a while here (PID 1 reaps lazily) and kill -0 still succeeds on a zombie, so read its state;
# match (may be empty) must be in its command line, which guards against a pid reused by another
# process (and tells a server from the shell that is about to exec it).
proc_pid() { # pid file, match
  local pid state
  [ -s "$1" ] || return 0
  pid=$(<"$1")
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  state=$(awk '/^State:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  case $state in "" | Z | X) return 0 ;; esac
  if [ -n "$2" ]; then
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$2" || return 0
  fi
  echo "$pid"
}

# Waits up to 5 s until `live_pid NAME` (the script's own) prints nothing; false after, with a
# message naming what (e.g. "the target server", "member e2").
proc_wait_dead() { # name, what
  for _ in $(seq 1 100); do
    [ -n "$(live_pid "$1")" ] || return 0
    sleep 0.05
  done
  echo "$(basename "$0"): $2 is still alive after kill -9" >&2
  return 1
}

port_taken() { # port; true when something accepts connections on it on 127.0.0.1
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
