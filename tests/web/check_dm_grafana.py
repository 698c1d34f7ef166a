#!/usr/bin/env python3
"""DM's own Grafana boards (tests/web/dm-grafana/: DM-Monitor-Standard.json and
DM-Monitor-Professional.json, copied unchanged from pingcap/tiflow) against the metrics dmhost
serves (issue 23, "Metrics and alerts"). No server: every PromQL expression of every panel (rows
included) and every query variable is parsed, and each metric name it reads must be

  - served: in docs/metrics.md's tables (which test_control_metrics and the live tests hold to
    what /metrics gives), or
  - not served, with why: in docs/metrics.md's table "DM's names not served" (a `name`, a
    histogram's base name covering its _bucket/_sum/_count, or a `prefix_*`).

A name in neither fails; so does a name the "not served" table lists that is served after all
(the table only shrinks as names land). Then it prints, per board, how many panels read only
served names (they show data on dmhost), which must be the count docs/metrics.md gives for the
board ("**N of M** (Standard)", "(Professional)"), and is run once on a copy with one name
misspelt, which it must refuse.

  check_dm_grafana.py <metrics.md> <board.json>...
"""
import copy
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_grafana import documented, metric_names  # noqa: E402  (one parser of PromQL names)


def not_served(md_path):
    """The names (and `prefix_*` patterns) of docs/metrics.md's "DM's names not served" table."""
    names, prefixes, inside = set(), [], False
    for line in open(md_path, encoding="utf-8"):
        if line.startswith("## "):
            inside = line.strip() == "## DM's names not served"
            continue
        if not inside or not line.startswith("| `"):
            continue
        cell = line.split("|")[1]
        for n in re.findall(r"`([a-z_:][a-z0-9_:]*\*?)`", cell):
            if n.endswith("*"):
                prefixes.append(n[:-1])
            else:
                names.update(n + s for s in ("", "_bucket", "_sum", "_count"))
    return names, prefixes


def panels(items):
    for p in items:
        yield p
        yield from panels(p.get("panels", []))  # a collapsed row holds its panels


def queries(board):
    """(panel title or None for a variable, expression) of every query of the board."""
    for p in panels(board.get("panels", []) + [x for r in board.get("rows", [])
                                                for x in r.get("panels", [])]):
        for t in p.get("targets", []):
            if t.get("expr"):
                yield p.get("title"), t["expr"]
    for v in board.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue  # custom and interval variables hold no PromQL
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else q or ""
        if q:
            yield None, q


def check(board, served, unserved, prefixes):
    problems, by_panel = [], {}
    for title, expr in queries(board):
        names = metric_names(expr)
        if title is not None:
            by_panel.setdefault(title, set()).update(names)
        for n in names:
            listed = n in unserved or any(n.startswith(p) for p in prefixes)
            if n not in served and not listed:
                problems.append(f"{title or 'a variable'}: {n} is neither served (docs/metrics.md) "
                                f"nor in \"DM's names not served\" ({expr[:120]})")
    shown = sum(1 for names in by_panel.values() if names and names <= served)
    return problems, len(by_panel), shown


def main():
    md, boards = sys.argv[1], sys.argv[2:]
    served = documented(md)
    unserved, prefixes = not_served(md)
    if len(served) < 20 or len(unserved) < 10:
        sys.exit(f"FAILED: {len(served)} served and {len(unserved)} unserved names read from {md}: "
                 "its tables moved?")
    failed = [f"{n} is in \"DM's names not served\" but served" for n in sorted(unserved & served)]
    report = []
    for path in boards:
        board = json.load(open(path, encoding="utf-8"))
        problems, n_panels, shown = check(board, served, unserved, prefixes)
        failed += [f"{os.path.basename(path)}: {p}" for p in problems]
        report.append(f"{os.path.basename(path)}: {shown} of {n_panels} panels read only served "
                      f"metrics")
        # The count docs/metrics.md states for this board ("DM's Grafana boards") is this one.
        kind = re.search(r"DM-Monitor-(\w+)\.json$", path)
        stated = kind and re.search(r"\*\*(\d+) of (\d+)\*\* \(" + kind.group(1) + r"\)",
                                    open(md, encoding="utf-8").read())
        if not stated:
            failed.append(f"{md} states no \"**N of M** ({kind.group(1) if kind else '?'})\" "
                          f"for {os.path.basename(path)}")
        elif (int(stated.group(1)), int(stated.group(2))) != (shown, n_panels):
            failed.append(f"{md} says {stated.group(1)} of {stated.group(2)} panels of "
                          f"{os.path.basename(path)} read only served metrics; they are {shown} "
                          f"of {n_panels}: update it (and docs/from-dm.md)")
        # Precondition: a misspelt name is caught on this very board.
        bad = copy.deepcopy(board)
        for p in panels(bad.get("panels", [])):
            if p.get("targets"):
                p["targets"][0]["expr"] = "dm_worker_task_stat"
                break
        if not any("dm_worker_task_stat " in p for p in check(bad, served, unserved, prefixes)[0]):
            failed.append(f"{os.path.basename(path)}: a misspelt name was not refused")
    for f in failed:
        print("FAILED:", f)
    if failed:
        sys.exit(1)
    print("ok:", "; ".join(report))


main()
