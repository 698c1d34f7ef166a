#!/usr/bin/env bash
# The host's layers (docs/architecture.md, "The layers"), checked on the #include lines: every
# host/**/*.c and *.h may include headers of its own folder, of a folder below it, of sdk/ and of
# the system, never of a folder above it. Also reports a circle of includes between folders
# (there must be none). Exit 1 naming the file, the line, the header and both folders. And
# docs/architecture.md's table of folders must name every folder and every file in its row, and
# README.md's map of host/ every top folder.
#
#   scripts/check-layers.sh [ROOT]     check ROOT/host (default: this repository)
#   scripts/check-layers.sh --self-test
#
# The order below is the one host/CMakeLists.txt links the libraries in (lowest first); the
# compiler holds the folders of different libraries apart already, this check also holds the
# rooms of one library (core/rules < core/shard < core/unit < core/subtask, the cluster's) and tells which
# include is wrong. A new folder must be added here: a file in a folder not listed fails.
set -euo pipefail

LAYERS="base config core/rules core/shard core/unit core/subtask precheck verify registry control http cluster/etcd
cluster cluster/master cluster/worker cmd unit_check"

self_test() {
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  local me=$0 out
  mkdir -p "$tmp/host/base" "$tmp/host/config" "$tmp/host/http/web"
  printf '#include <stdio.h>\n#include "dmhost/sdk.h"\n' >"$tmp/host/base/log.h"
  printf '#include "log.h"\n' >"$tmp/host/config/config.h"
  printf '#include "config.h"\n#include "log.h"\n' >"$tmp/host/config/config.c"
  bash "$me" "$tmp" >/dev/null || { echo "self-test: a tree without an upward include failed" >&2; return 1; }
  # the docs' table of folders naming a file that moved away, and missing one
  mkdir -p "$tmp/docs"
  printf '| folder | files |\n|---|---|\n| `base/` | `log` |\n| `config/` | `secret` |\n' \
    >"$tmp/docs/architecture.md"
  if out=$(bash "$me" "$tmp" 2>&1) || ! grep -qF 'the row of `config/` does not name config.c' <<<"$out"; then
    echo "self-test: a file missing from docs/architecture.md's table passed: $out" >&2
    return 1
  fi
  rm -r "$tmp/docs"
  # an upward include: base (the lowest) including config's header, which makes a circle too
  printf '#include "log.h"\n  #  include "config.h" /* up */\n' >"$tmp/host/base/log.c"
  if out=$(bash "$me" "$tmp" 2>&1); then
    echo "self-test: an upward include (base -> config) passed" >&2
    return 1
  fi
  for want in 'host/base/log.c:2: includes "config.h" of host/config/' 'above host/base/' \
    'circle of includes between folders: base -> config -> base'; do
    grep -qF "$want" <<<"$out" || { echo "self-test: the report lacks '$want':" >&2; echo "$out" >&2; return 1; }
  done
  # a folder not in the order
  rm "$tmp/host/base/log.c"
  mkdir -p "$tmp/host/stray"
  printf '#include "log.h"\n' >"$tmp/host/stray/x.c"
  if out=$(bash "$me" "$tmp" 2>&1) || ! grep -qF 'host/stray/ is no layer' <<<"$out"; then
    echo "self-test: a folder outside the order was not refused: $out" >&2
    return 1
  fi
  echo "check-layers self-test: ok"
}

if [ "${1:-}" = "--self-test" ]; then
  self_test
  exit
fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}

LAYERS=$LAYERS python3 - "$root/host" <<'EOF'
import os, re, sys
host = sys.argv[1]
order = os.environ['LAYERS'].split()
rank = {f: i for i, f in enumerate(order)}
files = []
for d, _, names in os.walk(host):
    for n in names:
        if n.endswith(('.c', '.h')):
            files.append(os.path.join(d, n))
files.sort()
folder_of = lambda p: os.path.relpath(os.path.dirname(p), host)
headers = {}  # name -> folders holding it
for f in files:
    if f.endswith('.h'):
        headers.setdefault(os.path.basename(f), set()).add(folder_of(f))
bad = 0
edges = {}
for f in files:
    me = folder_of(f)
    shown = os.path.relpath(f, os.path.dirname(host))
    if me not in rank:
        print(f'{shown}: host/{me}/ is no layer: add it to scripts/check-layers.sh (and '
              'docs/architecture.md) where it belongs', file=sys.stderr)
        bad = 1
        continue
    with open(f, errors='replace') as fh:
        for no, line in enumerate(fh, 1):
            m = re.match(r'\s*#\s*include\s*"([^"]+)"', line)
            if not m:
                continue
            name = m.group(1)
            if os.path.exists(os.path.join(os.path.dirname(f), name)):
                continue  # its own folder (the compiler looks there first)
            where = headers.get(os.path.basename(name))
            if not where or '/' in name:
                continue  # sdk/ or the system's
            if len(where) > 1:
                print(f'{shown}:{no}: includes "{name}", which host/ holds in '
                      f'{", ".join(sorted(where))}: give headers unique names', file=sys.stderr)
                bad = 1
                continue
            them = next(iter(where))
            edges.setdefault(me, set()).add(them)
            if them in rank and rank[them] > rank[me]:
                print(f'{shown}:{no}: includes "{name}" of host/{them}/ (layer {rank[them] + 1}), '
                      f'above host/{me}/ (layer {rank[me] + 1}): move the code down, or turn the '
                      'call around (docs/architecture.md)', file=sys.stderr)
                bad = 1
# circles between folders (Tarjan's strongly connected components)
index, low, stack, on, comps = {}, {}, [], set(), []
def strong(v):
    index[v] = low[v] = len(index)
    stack.append(v); on.add(v)
    for w in sorted(edges.get(v, ())):
        if w not in index:
            strong(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            comps.append(sorted(comp, key=lambda x: rank.get(x, -1)))
for v in sorted(edges):
    if v not in index:
        strong(v)
for c in comps:
    print('circle of includes between folders: ' + ' -> '.join(c + [c[0]]), file=sys.stderr)
    bad = 1
# docs/architecture.md: a row "| `folder/` | ... |" for each folder, naming each of its files
# (`stem` or `name.c`)
doc = os.path.join(os.path.dirname(host), 'docs', 'architecture.md')
if os.path.exists(doc):
    rows = {}
    for line in open(doc):
        m = re.match(r'\|\s*`([a-z_/]+)/`\s*\|(.*)\|\s*$', line)
        if m:
            rows[m.group(1)] = m.group(2)
    for f in files:
        me, name = folder_of(f), os.path.basename(f)
        if me == 'unit_check' or me not in rank:
            continue
        if me not in rows:
            print(f'docs/architecture.md: no row "| `{me}/` |" in the table of folders', file=sys.stderr)
            rows[me] = ''
            bad = 1
        elif f'`{name}`' not in rows[me] and f'`{name.rsplit(".", 1)[0]}`' not in rows[me]:
            print(f'docs/architecture.md: the row of `{me}/` does not name {name}', file=sys.stderr)
            bad = 1
    for me in rows:
        if not os.path.isdir(os.path.join(host, me)):
            print(f'docs/architecture.md: a row names `{me}/`, which host/ does not have', file=sys.stderr)
            bad = 1
# README.md's map of host/: one row "| `host/top/` |" per top folder, none of a folder gone
readme = os.path.join(os.path.dirname(host), 'README.md')
if os.path.exists(readme):
    mapped = set(re.findall(r'^\|\s*`host/([a-z_]+)/`\s*\|', open(readme).read(), re.M))
    tops = {folder_of(f).split('/')[0] for f in files} - {'.'}
    for t in sorted(tops - mapped):
        print(f'README.md: the map of host/ has no row "| `host/{t}/` |"', file=sys.stderr)
        bad = 1
    for t in sorted(mapped - tops):
        print(f'README.md: the map of host/ has a row of host/{t}/, which holds no file', file=sys.stderr)
        bad = 1
if bad:
    sys.exit(1)
print(f'check-layers: {len(files)} files in {len({folder_of(f) for f in files})} folders, '
      'no include upward, no circle')
EOF
