#!/usr/bin/env python3
"""docs/grafana/dmhost.json is an importable Grafana dashboard whose queries use only the metrics
docs/metrics.md lists (issue 14). No server: the JSON is parsed, its datasource is the
${DS_PROMETHEUS} input, every panel has a query, and every metric name in every PromQL expression
(panels and template variables) is one of docs/metrics.md's tables (a histogram's _bucket, _sum,
_count included). Then the check is run on a copy with one name misspelt, which it must refuse, so
a check that accepts anything fails too.

  check_grafana.py <dashboard.json> <metrics.md>
"""
import copy
import json
import re
import sys

FUNCS = {"rate", "irate", "increase", "sum", "avg", "max", "min", "count", "count_values", "by",
         "without",
         "histogram_quantile", "label_values", "delta", "deriv", "topk", "bottomk", "abs",
         "clamp_min", "clamp_max", "on", "ignoring", "group_left", "group_right", "and", "or",
         "unless", "offset", "bool", "time", "vector", "scalar", "changes", "resets", "le"}


def documented(md_path):
    names = set()
    for line in open(md_path, encoding="utf-8"):
        m = re.match(r"^\| `([a-z_:][a-z0-9_:]*)` \| (counter|gauge|histogram) \|", line)
        if m:
            names.add(m.group(1))
            if m.group(2) == "histogram":
                names.update(m.group(1) + s for s in ("_bucket", "_sum", "_count"))
    return names


def metric_names(expr):
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges
    # grouping labels (PromQL's keywords in any case: DM's boards write ON)
    expr = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", expr, flags=re.I)
    # label_values(metric, label): the label is not a metric
    expr = re.sub(r"label_values\(\s*([a-zA-Z_:][\w:]*)\s*,\s*\w+\s*\)", r"\1", expr)
    return {t for t in re.findall(r"[a-zA-Z_:][\w:]*", expr)
            if t.lower() not in FUNCS and not t.startswith("__")}


def expressions(dash):
    for p in dash.get("panels", []):
        for t in p.get("targets", []):
            yield f'panel "{p.get("title")}"', t.get("expr", "")
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        yield f'variable "{v.get("name")}"', q.get("query", "") if isinstance(q, dict) else q or ""


def check(dash, known):
    problems = []
    inputs = [i.get("name") for i in dash.get("__inputs", []) if i.get("pluginId") == "prometheus"]
    if inputs != ["DS_PROMETHEUS"]:
        problems.append(f"__inputs should be one prometheus input DS_PROMETHEUS, not {inputs}")
    panels = dash.get("panels", [])
    if not panels or not dash.get("title") or "schemaVersion" not in dash:
        problems.append("no panels, title or schemaVersion: not a dashboard model")
    for p in panels:
        if p.get("datasource", {}).get("uid") != "${DS_PROMETHEUS}":
            problems.append(f'panel "{p.get("title")}": datasource is not ${{DS_PROMETHEUS}}')
        if not p.get("targets"):
            problems.append(f'panel "{p.get("title")}": no query')
    seen = set()
    for where, expr in expressions(dash):
        if not expr.strip():
            problems.append(f"{where}: empty expression")
        for name in metric_names(expr):
            seen.add(name)
            if name not in known:
                problems.append(f"{where}: metric {name} is not in docs/metrics.md ({expr})")
    return problems, seen


def main():
    dash = json.load(open(sys.argv[1], encoding="utf-8"))
    known = documented(sys.argv[2])
    if len(known) < 20:
        sys.exit(f"FAILED: only {len(known)} metric names read from {sys.argv[2]}: its tables moved?")
    problems, seen = check(dash, known)
    for p in problems:
        print("FAILED:", p)
    if problems:
        sys.exit(1)
    # The areas issue 14 asks for are all there.
    for want in ("dm_syncer_replication_lag_gauge", "dm_worker_task_state", "dm_relay_write_size_sum",
                 "dmhost_sync_finished_rows_total", "dmhost_load_finished_rows_total",
                 "dumpling_dump_finished_rows", "dm_syncer_exit_with_error_count"):
        if want not in seen:
            sys.exit(f"FAILED: no panel queries {want}")
    # Precondition: a misspelt name is caught.
    bad = copy.deepcopy(dash)
    bad["panels"][0]["targets"][0]["expr"] = "dm_syncer_replication_lag_guage"
    if not any("lag_guage" in p for p in check(bad, known)[0]):
        sys.exit("FAILED: the check accepted a misspelt metric name")
    print(f"ok: {len(dash['panels'])} panels, {len(seen)} metrics, all in docs/metrics.md "
          f"({len(known)} names); a misspelt name is refused")


if __name__ == "__main__":
    main()
