#!/usr/bin/env python3
"""The self-test of dm_openapi_check.py, no server (issue 23). A hand-made log answers every
status of every one of DM's 43 operations with a valid body (every response shape of the spec,
nullable members null and filled, the patched spec mistakes), and the checker must accept it and
count every operation seen. Then copies with one answer broken each (a required member dropped, a
stage "New", a wrong type, a body on a 204 or on an empty 200, an undeclared status, a null where
the spec forbids it, a member DM does not have, ...) must each be refused, naming the JSON path
or the rule, and only on that line. Last, the coverage rule: an operation missing from the log
and not in NOT_SEEN, or in NOT_SEEN and seen or served (the dm.json answer declares it),
fails; so do the checker's own lists if they name an operation DM's spec lacks.

  dm_openapi_check_test.py <dm.yaml>
"""
import copy
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dm_openapi_check as chk  # noqa: E402

ERR = {"error_msg": "[code=46018:class=scheduler:scope=internal:level=medium], Message: source "
       "config with ID mysql-02 not exists, Workaround: Please use `operate-source create` first.",
       "error_code": 46018}

SECURITY = {"ssl_ca_content": "", "ssl_cert_content": "", "ssl_key_content": "",
            "cert_allowed_cn": []}

RELAY = {"master_binlog": "(mysql-bin.000001, 2022)", "master_binlog_gtid": "0-1-12",
         "relay_dir": "/var/lib/dm/relay/0-1.000001", "relay_binlog_gtid": "0-1-12",
         "relay_catch_up_master": True, "stage": "Running"}

SOURCE_STATUS = {"source_name": "mysql-01", "worker_name": "dmhost@h1", "relay_status": RELAY,
                 "error_msg": ""}

SOURCE = {"source_name": "mysql-01", "host": "127.0.0.1", "port": 3306, "user": "root",
          "password": "******", "enable_gtid": False, "enable": True, "flavor": "mariadb",
          "task_name_list": ["task-1"], "security": SECURITY,
          "purge": {"interval": 3600, "expires": 0, "remain_space": 15},
          "status_list": [SOURCE_STATUS],
          "relay_config": {"enable_relay": True, "relay_binlog_name": "", "relay_binlog_gtid": None,
                           "relay_dir": "/var/lib/dm/relay"}}

# what DM answers for an unbound source: no relay status; nullable members null
SOURCE_BARE = {"source_name": "mysql-02", "host": "127.0.0.1", "port": 3307, "user": "root",
               "password": None, "enable_gtid": True, "enable": False, "security": None,
               "purge": {"interval": None, "expires": None, "remain_space": None},
               "status_list": [{"source_name": "mysql-02", "worker_name": ""}]}

DUMP = {"total_tables": 3, "completed_tables": 1.0, "finished_bytes": 1024.0,
        "finished_rows": 10.0, "estimate_total_rows": 30.0, "bps": 512, "progress": "33.33 %"}
LOAD = {"finished_bytes": 1024, "total_bytes": 4096, "progress": "25.00 %",
        "meta_binlog": "(mysql-bin.000001, 4)", "meta_binlog_gtid": "", "bps": 100}
SYNC = {"total_events": 12, "total_tps": 1, "recent_tps": 0,
        "master_binlog": "(mysql-bin.000001, 2022)", "master_binlog_gtid": "0-1-12",
        "syncer_binlog": "(mysql-bin.000001, 2022)", "syncer_binlog_gtid": "0-1-12",
        "blocking_ddls": [],
        "unresolved_groups": [{"target": "`db`.`t`", "ddl_list": ["ALTER TABLE ..."],
                               "first_location": "(mysql-bin.000001, 1000)",
                               "synced": ["`db`.`t_1`"], "unsynced": ["`db`.`t_2`"]}],
        "synced": True, "binlog_type": "remote", "seconds_behind_master": 0,
        "io_total_bytes": 2 ** 63, "dump_io_total_bytes": 0}

SUBTASK_SYNC = {"name": "task-1", "source_name": "mysql-01", "worker_name": "dmhost@h1",
                "stage": "Running", "unit": "Sync", "unresolved_ddl_lock_id": "",
                "load_status": None, "dump_status": None, "sync_status": SYNC, "error_msg": ""}
SUBTASK_LOAD = {"name": "task-1", "source_name": "mysql-02", "worker_name": "dmhost@h2",
                "stage": "Paused", "unit": "Load", "load_status": LOAD, "dump_status": DUMP,
                "error_msg": "[code=34018:class=load-unit:scope=internal:level=high], Message: x\n"}
SUBTASK_NEW = {"name": "task-1", "source_name": "mysql-01", "worker_name": "dmhost@h1",
               "stage": "Stopped", "unit": "Dump"}

TASK = {"name": "task-1", "task_mode": "all", "shard_mode": "pessimistic",
        "strict_optimistic_shard_mode": False, "meta_schema": "dm_meta", "timezone": "UTC",
        "enhance_online_schema_change": True, "on_duplicate": "replace",
        "target_config": {"host": "127.0.0.1", "port": 4000, "user": "root", "password": "",
                          "security": None, "session": {"foreign_key_checks": "0"}},
        "binlog_filter_rule": {"rule-1": {"ignore_event": ["delete"], "ignore_sql": ["^DROP"]}},
        "table_migrate_rule": [
            {"source": {"source_name": "mysql-01", "schema": "db_*", "table": "t_*"},
             "target": {"schema": "db", "table": "t"}, "binlog_filter_rule": ["rule-1"]},
            {"source": {"source_name": "mysql-02", "schema": "db2", "table": ""}}],
        "source_config": {
            "full_migrate_conf": {"export_threads": 4, "import_threads": 16, "data_dir": "./dump",
                                  "consistency": "auto", "import_mode": "logical",
                                  "on_duplicate_logical": "replace"},
            "incr_migrate_conf": {"repl_threads": 16, "repl_batch": 100, "safe_mode": False},
            "source_conf": [{"source_name": "mysql-01", "binlog_name": "mysql-bin.000001",
                             "binlog_pos": 4, "binlog_gtid": ""},
                            {"source_name": "mysql-02"}]},
        "status_list": [SUBTASK_SYNC, SUBTASK_LOAD],
        "ignore_checking_items": ["version"]}

TASK_BARE = {"name": "task-2", "task_mode": "incremental", "enhance_online_schema_change": False,
             "on_duplicate": "error",
             "target_config": {"host": "127.0.0.1", "port": 4000, "user": "root", "password": ""},
             "table_migrate_rule": [],
             "source_config": {"source_conf": [{"source_name": "mysql-01"}]}}

TOPOLOGY = {"master_topology_list": [{"name": "m1", "host": "127.0.0.1", "port": 8261}],
            "worker_topology_list": [{"name": "w1", "host": "127.0.0.1", "port": 8262}],
            "grafana_topology": {"host": "127.0.0.1", "port": 3000},
            "prometheus_topology": {"host": "127.0.0.1", "port": 9090},
            "alert_manager_topology": {"host": "127.0.0.1", "port": 9093}}


def lst(*items):
    return {"total": len(items), "data": list(items)}


# One valid answer per (operation, status) of DM's spec: (method, path as requested, status, body).
T = "/api/v1/tasks/task-1/sources/mysql-01/schemas"
VALID = [
    ("GET", "/api/v1/docs", 200, "<!DOCTYPE html><html><body>DM's operations</body></html>"),
    ("GET", "/api/v1/dm.json", 200, None),  # the spec itself, filled in by main()
    ("POST", "/api/v1/sources", 201, SOURCE),
    ("POST", "/api/v1/sources", 400, ERR),
    ("GET", "/api/v1/sources?with_status=true&enable_relay=false", 200, lst(SOURCE, SOURCE_BARE)),
    ("GET", "/api/v1/sources/mysql-01?with_status=true", 200, SOURCE),
    ("GET", "/api/v1/sources/mysql-09", 404, ERR),
    ("DELETE", "/api/v1/sources/mysql-01?force=true", 204, ""),
    ("DELETE", "/api/v1/sources/mysql-01", 400, ERR),
    ("PUT", "/api/v1/sources/mysql-01", 200, SOURCE_BARE),
    ("PUT", "/api/v1/sources/mysql-01", 400, ERR),
    ("GET", "/api/v1/sources/mysql-01/status", 200, lst(SOURCE_STATUS, {"source_name": "mysql-01",
                                                                       "worker_name": ""})),
    ("GET", "/api/v1/sources/mysql-01/status", 400, ERR),
    # DM's bodiless 200s on a source, and their refusals
    *[("POST", f"/api/v1/sources/mysql-01/{op}", status, body)
      for op in ("enable", "disable", "transfer", "relay/enable", "relay/disable", "relay/purge")
      for status, body in ((200, ""), (400, ERR))],
    ("GET", "/api/v1/sources/mysql-01/schemas", 200, ["db1", "db2"]),
    ("GET", "/api/v1/sources/mysql-01/schemas", 400, ERR),
    ("GET", "/api/v1/sources/mysql-01/schemas/db1", 200, ["t1"]),
    ("GET", "/api/v1/sources/mysql-01/schemas/db1", 400, ERR),
    ("POST", "/api/v1/tasks", 201, {"task": TASK, "check_result": "pre-check is passed. "}),
    ("POST", "/api/v1/tasks", 400, ERR),
    ("GET", "/api/v1/tasks?with_status=true&stage=Running&source_name_list=mysql-01"
     "&source_name_list=mysql-02", 200, lst(TASK, TASK_BARE)),
    ("GET", "/api/v1/tasks?stage=Bogus", 400, ERR),
    ("GET", "/api/v1/tasks/task-1?with_status=false", 200, TASK_BARE),
    ("GET", "/api/v1/tasks/task-9", 404, ERR),
    ("DELETE", "/api/v1/tasks/task-1?force=true&keep_meta=true", 204, ""),
    ("DELETE", "/api/v1/tasks/task-1", 400, ERR),
    ("PUT", "/api/v1/tasks/task-1", 200, {"task": TASK_BARE, "check_result": ""}),
    ("PUT", "/api/v1/tasks/task-1", 400, ERR),
    ("GET", "/api/v1/tasks/task-1/status?source_name_list=mysql-01", 200,
     lst(SUBTASK_SYNC, SUBTASK_LOAD, SUBTASK_NEW)),
    ("GET", "/api/v1/tasks/task-1/status", 400, ERR),
    ("POST", "/api/v1/tasks/task-1/start", 200, ""),
    ("POST", "/api/v1/tasks/task-1/start", 400, ERR),
    ("POST", "/api/v1/tasks/task-1/stop", 200, ""),
    ("POST", "/api/v1/tasks/task-1/stop", 400, ERR),
    ("GET", "/api/v1/tasks/task-1/sources/mysql-01/migrate_targets?schema_pattern=db*"
     "&table_pattern=t*", 200,
     lst({"source_schema": "db1", "source_table": "t1", "target_schema": "db",
          "target_table": "t"})),
    ("GET", "/api/v1/tasks/task-1/sources/mysql-01/migrate_targets", 400, ERR),
    ("GET", T, 200, ["db1"]),
    ("GET", T, 400, ERR),
    ("GET", T + "/db1", 200, ["t1"]),
    ("GET", T + "/db1", 400, ERR),
    ("GET", T + "/db1/t1", 200, {"schema_name": "db1", "table_name": "t1",
                                 "schema_create_sql": "CREATE TABLE `t1` (`id` int PRIMARY KEY)"}),
    ("GET", T + "/db1/t1", 400, ERR),
    ("PUT", T + "/db1/t1", 200, ""),
    ("PUT", T + "/db1/t1", 400, ERR),
    ("DELETE", T + "/db1/t1", 204, ""),
    ("DELETE", T + "/db1/t1", 400, ERR),
    ("POST", "/api/v1/tasks/converters", 201, {"task": TASK_BARE,
                                               "task_config_file": "name: task-2\n"}),
    ("POST", "/api/v1/tasks/converters", 400, ERR),
    ("POST", "/api/v1/tasks/templates", 201, TASK_BARE),
    ("POST", "/api/v1/tasks/templates", 400, ERR),
    ("GET", "/api/v1/tasks/templates", 200, lst(TASK_BARE)),
    ("GET", "/api/v1/tasks/templates", 400, ERR),
    ("POST", "/api/v1/tasks/templates/import", 202,
     {"success_task_list": ["task-1"],
      "failed_task_list": [{"task_name": "task-2", "error_msg": "exists"}]}),
    ("POST", "/api/v1/tasks/templates/import", 400, ERR),
    ("GET", "/api/v1/tasks/templates/task-2", 200, TASK_BARE),
    ("GET", "/api/v1/tasks/templates/task-9", 400, ERR),
    ("PUT", "/api/v1/tasks/templates/task-2", 200, TASK_BARE),
    ("PUT", "/api/v1/tasks/templates/task-2", 400, ERR),
    ("DELETE", "/api/v1/tasks/templates/task-2", 204, ""),
    ("DELETE", "/api/v1/tasks/templates/task-2", 400, ERR),
    ("GET", "/api/v1/cluster/info", 200, {"cluster_id": 2 ** 64 - 1, "topology": TOPOLOGY}),
    ("PUT", "/api/v1/cluster/info", 200, {"cluster_id": 7}),
    ("PUT", "/api/v1/cluster/info", 400, ERR),
    ("GET", "/api/v1/cluster/masters", 200,
     lst({"name": "m1", "alive": True, "leader": True, "addr": "127.0.0.1:8261"})),
    ("GET", "/api/v1/cluster/masters", 400, ERR),
    ("DELETE", "/api/v1/cluster/masters/m2", 204, ""),
    ("DELETE", "/api/v1/cluster/masters/m2", 400, ERR),
    ("GET", "/api/v1/cluster/workers", 200,
     lst({"name": "w1", "addr": "127.0.0.1:8262", "bound_stage": "bound",
          "bound_source_name": "mysql-01"})),
    ("GET", "/api/v1/cluster/workers", 400, ERR),
    ("DELETE", "/api/v1/cluster/workers/w2", 204, ""),
    ("DELETE", "/api/v1/cluster/workers/w2", 400, ERR),
]


def at(method, path, status):
    """The index in VALID of that exchange."""
    for i, (m, p, s, _) in enumerate(VALID):
        if (m, p, s) == (method, path, status):
            return i
    raise KeyError((method, path, status))


def dropped(obj, *keys):
    """A deep copy of obj without the member at the path keys[:-1] named keys[-1]."""
    out = copy.deepcopy(obj)
    node = out
    for k in keys[:-1]:
        node = node[k]
    del node[keys[-1]]
    return out


def setting(obj, value, *keys):
    out = copy.deepcopy(obj)
    node = out
    for k in keys[:-1]:
        node = node[k]
    node[keys[-1]] = value
    return out


TASKS = at("GET", "/api/v1/tasks?with_status=true&stage=Running&source_name_list=mysql-01"
           "&source_name_list=mysql-02", 200)
STATUS = at("GET", "/api/v1/tasks/task-1/status?source_name_list=mysql-01", 200)
SRC = at("GET", "/api/v1/sources/mysql-01?with_status=true", 200)
DEL_TASK = at("DELETE", "/api/v1/tasks/task-1?force=true&keep_meta=true", 204)
STOP = at("POST", "/api/v1/tasks/task-1/stop", 200)
STRUCT = at("GET", T + "/db1/t1", 200)
INFO = at("GET", "/api/v1/cluster/info", 200)

# (what is broken, index in VALID, the new (method, path, status, body) or None to keep it,
#  a piece of the failure the checker must print)
MUTATIONS = [
    ("a required member dropped", TASKS, ("body", dropped(lst(TASK, TASK_BARE), "data", 0,
                                                          "target_config", "password")),
     "$.data[0].target_config: 'password' is a required property"),
    ("a stage off DM's enum (New)", STATUS,
     ("body", lst(setting(SUBTASK_SYNC, "New", "stage"))), "$.data[0].stage: 'New' is not one of"),
    ("a stage off DM's enum in a Task's status_list", TASKS,
     ("body", lst(setting(TASK, "Pausing", "status_list", 1, "stage"))),
     "$.data[0].status_list[1].stage: 'Pausing'"),
    ("a wrong type", SRC, ("body", setting(SOURCE, "3306", "port")), "$.port: '3306' is not of"),
    ("a body on a 204", DEL_TASK, ("body", ERR), "declares no body for 204"),
    ("a body on DM's empty 200", STOP, ("body", {}), "declares no body for 200"),
    ("a Content-Type on an answer without a body", STOP, ("content_type", "application/json"),
     "an answer without a body has a Content-Type ('application/json')"),
    ("an undeclared status", DEL_TASK, ("status", 200), "status 200 is not one DM's spec declares"),
    ("a null where the spec has no nullable", SRC, ("body", setting(SOURCE, None, "host")),
     "$.host: None is not of type 'string'"),
    ("a member DM's Source does not have", SRC, ("body", setting(SOURCE, "x", "sourceName")),
     "'sourceName' was unexpected"),
    ("an error body without error_code", at("POST", "/api/v1/sources", 400),
     ("body", dropped(ERR, "error_code")), "$: 'error_code' is a required property"),
    ("an error_msg not in DM's terror form", at("POST", "/api/v1/sources", 400),
     ("body", setting(ERR, "source config with ID mysql-02 not exists", "error_msg")),
     "$.error_msg: not in DM's form"),
    ("an error_msg naming another code", at("POST", "/api/v1/sources", 400),
     ("body", setting(ERR, 46019, "error_code")), "$.error_msg: names code 46018, error_code is"),
    ("a body that is not JSON", SRC, ("body", "{'source_name':"), "the body is not JSON"),
    ("an empty body where JSON is declared", SRC, ("body", ""), "the body is not JSON"),
    ("a path DM's spec does not have", SRC, ("path", "/api/v1/source/mysql-01"),
     "no operation of DM's spec has this path"),
    ("a method DM's spec does not have there", STOP, ("method", "PUT"),
     "DM's spec has no PUT there (it has POST)"),
    ("a query parameter the operation does not declare", SRC,
     ("path", "/api/v1/sources/mysql-01?status=true"), "query parameter 'status' is not one"),
    ("a boolean query parameter that is not one", SRC,
     ("path", "/api/v1/sources/mysql-01?with_status=1"), "with_status='1' is not a boolean"),
    ("the patched structure answer without its table", STRUCT,
     ("body", {"schema_name": "db1", "table_name": "t1"}),
     "$: 'schema_create_sql' is a required property"),
    ("a negative uint64", INFO, ("body", {"cluster_id": -1}), "$.cluster_id: -1 is less than"),
    ("a nested required member dropped", STATUS,
     ("body", lst(dropped(SUBTASK_SYNC, "sync_status", "unresolved_groups", 0, "ddl_list"))),
     "$.data[0].sync_status.unresolved_groups[0]: 'ddl_list' is a required property"),
    ("a typeless object schema given a string", TASKS,
     ("body", lst(setting(TASK, "mysql-01", "table_migrate_rule", 0, "source"))),
     "$.data[0].table_migrate_rule[0].source: 'mysql-01' is not of type 'object'"),
    ("an integer where DM has a double's string", STATUS,
     ("body", lst(setting(SUBTASK_LOAD, 25, "load_status", "progress"))),
     "$.data[0].load_status.progress: 25 is not of type 'string'"),
    ("a dm.json without DM's operations", at("GET", "/api/v1/dm.json", 200),
     ("body", {"openapi": "3.0.0", "info": {}, "paths": {}}),
     "the document does not declare GET /api/v1/docs"),
    ("a dm.json with a path neither DM's nor dmhost's", at("GET", "/api/v1/dm.json", 200),
     ("body", {"openapi": "3.0.0", "info": {}, "paths": {"/api/v1/tasks/{task-name}/lag": {}}}),
     "the document declares /api/v1/tasks/{task-name}/lag: neither DM's path nor under"),
    ("a docs page that is not HTML", at("GET", "/api/v1/docs", 200), ("body", "{}"),
     "the body is not an HTML page"),
    ("a JSON answer with another Content-Type", SRC, ("content_type", "text/plain"),
     "Content-Type 'text/plain', not application/json"),
]


def line(ex):
    m, p, s, b = ex
    return {"method": m, "path": p, "status": s, "body": b if isinstance(b, str) else json.dumps(b)}


def write_log(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        for ln in lines:
            f.write(json.dumps(ln) + "\n")


def run(spec, log, *flags):
    p = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__),
                                                     "dm_openapi_check.py"), spec, log, *flags],
                       capture_output=True, text=True, check=False)
    return p.returncode, p.stdout + p.stderr


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    spec = argv[1]
    failed = []
    ops = chk.load_spec(spec)
    with open(spec, encoding="utf-8") as f:
        import yaml
        doc = yaml.safe_load(f)
    base = [line(ex) for ex in VALID]
    base[at("GET", "/api/v1/dm.json", 200)]["body"] = json.dumps(doc)
    base[at("GET", "/api/v1/dm.json", 200)]["content_type"] = "application/json"
    base[at("GET", "/api/v1/docs", 200)]["content_type"] = "text/html; charset=utf-8"
    base[SRC]["content_type"] = "application/json"

    # the hand-made log answers every declared status of every operation
    declared = {(o.op_id, s) for o in ops for s in o.responses}
    answered = set()
    for ex in base:
        o, why = chk.find_operation(ops, ex["method"], ex["path"])
        if o is None:
            failed.append(f"hand-made line {ex['method']} {ex['path']}: {why}")
        else:
            answered.add((o.op_id, str(ex["status"])))
    for op_id, s in sorted(declared - answered):
        failed.append(f"the hand-made log lacks a {s} of {op_id}")

    with tempfile.TemporaryDirectory(prefix="dm-openapi-check-") as tmp:
        log = os.path.join(tmp, "valid.jsonl")
        write_log(log, base)
        rc, out = run(spec, log)
        if rc != 0:
            failed.append(f"the valid log was refused (exit {rc}):\n{out}")
        _, seen = chk.check_log(ops, [(i + 1, ex) for i, ex in enumerate(base)])
        report, problems = chk.coverage(ops, seen, not_seen={}, only_failure={})
        if problems or len(report) != chk.OPERATION_COUNT:
            failed.append(f"the valid log does not cover DM's operations: {problems}")

        # each mutation in process (the spec read once); the first one through the command line
        # too, for its exit status and its printed lines
        for n, (what, idx, (field, value), expect) in enumerate(MUTATIONS):
            lines = copy.deepcopy(base)
            lines[idx][field] = json.dumps(value) if field == "body" and not isinstance(
                value, str) else value
            out, _ = chk.check_log(ops, [(i + 1, ex) for i, ex in enumerate(lines)], "log")
            if not any(expect in ln for ln in out):
                failed.append(f"{what}: no failure says {expect!r}: {out}")
            elif any(not ln.startswith(f"log:{idx + 1}: ") for ln in out):
                failed.append(f"{what}: another line was refused too: {out}")
            if n == 0:
                log = os.path.join(tmp, "mutated.jsonl")
                write_log(log, lines)
                rc, text = run(spec, log)
                if rc != 1 or f"{log}:{idx + 1}: " not in text or expect not in text:
                    failed.append(f"{what}, on the command line: exit {rc}, not 1 with "
                                  f"{expect!r}:\n{text}")

    # coverage: a missing operation, a stale NOT_SEEN entry, a success on an ONLY_FAILURE one, a
    # name that is no operation
    _, seen = chk.check_log(ops, [(i + 1, ex) for i, ex in enumerate(base)
                                  if "/cluster/masters/" not in ex["path"]])
    cases = [
        ("an operation never answered", {}, {}, "DMAPIOfflineMasterNode) was never answered"),
        ("NOT_SEEN naming an answered operation", {"DMAPIOfflineMasterNode": "x",
                                                   "GetDocHTML": "x"}, {},
         "GetDocHTML) was answered: remove it from NOT_SEEN"),
        ("ONLY_FAILURE naming a success", {"DMAPIOfflineMasterNode": "x"}, {"GetDocJSON": "x"},
         "GetDocJSON) succeeded: remove it from ONLY_FAILURE"),
        ("a list naming no operation", {"DMAPIOfflineMasterNode": "x", "DMAPIBogus": "x"}, {},
         "NOT_SEEN names DMAPIBogus"),
    ]
    for what, not_seen, only_failure, expect in cases:
        _, problems = chk.coverage(ops, seen, not_seen=not_seen, only_failure=only_failure)
        if not any(expect in p for p in problems):
            failed.append(f"coverage, {what}: no problem saying {expect!r}: {problems}")
    _, problems = chk.coverage(ops, seen, not_seen={"DMAPIOfflineMasterNode": "x"},
                               only_failure={})
    if problems:
        failed.append(f"coverage with the exact NOT_SEEN list: {problems}")
    # an operation the served dm.json declares cannot stay in NOT_SEEN (the hand-made log's dm.json
    # is DM's spec: it declares all 43)
    served = chk.served_operations(ops, [(i + 1, ex) for i, ex in enumerate(base)])
    if len(served) != chk.OPERATION_COUNT:
        failed.append(f"served_operations found {len(served)} of DM's spec's operations in it")
    _, problems = chk.coverage(ops, seen, not_seen={"DMAPIOfflineMasterNode": "x"},
                               only_failure={}, served=served)
    if not any("DMAPIOfflineMasterNode) is served (dm.json declares it) but in NOT_SEEN" in p
               for p in problems):
        failed.append(f"coverage: a served operation stayed in NOT_SEEN: {problems}")
    failures_only = [(1, {"method": "DELETE", "path": "/api/v1/cluster/workers/w2", "status": 400,
                          "body": json.dumps(ERR)})]
    _, seen = chk.check_log(ops, failures_only)
    _, problems = chk.coverage(ops, seen, not_seen={o.op_id: "x" for o in ops
                                                    if o.op_id != "DMAPIOfflineWorkerNode"},
                               only_failure={})
    if not any("DMAPIOfflineWorkerNode) only failed" in p for p in problems):
        failed.append(f"coverage: an operation seen only failing passed: {problems}")

    # the checker's own lists name real operations, with a reason each
    for name, table in (("NOT_SEEN", chk.NOT_SEEN), ("ONLY_FAILURE", chk.ONLY_FAILURE)):
        ids = {o.op_id for o in ops}
        for op_id, why in table.items():
            if op_id not in ids or not why.strip():
                failed.append(f"{name}: {op_id!r} is no operation of DM's spec or has no why")

    for f in failed:
        print(f"FAILED: {f}")
    print(f"dm_openapi_check_test: {len(VALID)} valid answers, {len(MUTATIONS)} mutations, "
          f"{len(failed)} failure(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
