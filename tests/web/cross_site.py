#!/usr/bin/env python3
"""Cross-site requests and DNS rebinding against the daemon's HTTP API, in headless Chromium
(selenium), driven by cross_site.sh: the daemon at ADDR (127.0.0.1:PORT) starts with no source and
no task.

  cross_site.py <addr> <dmctl> <state dir> <source.cfg> <task.cfg> <serve.log>

1. The attacker's page, served from another origin (http.server on another 127.0.0.1 port), tries
   every write route of the API with the text of a valid source and task: no-cors fetch POSTs
   (text/plain, the requests a page may send without a preflight), text/plain form POSTs to
   /control (a JSON body smuggled in a field), preflighted PUT/DELETE and JSON POSTs. Over the
   socket: no source, no task.
2. The operator creates the source and starts the task over the socket; the page tries again
   (pause, stop, delete, relay, binlog, swap...): the task still Running, the source still bound.
3. DNS rebinding: a page at http://rebind.test:PORT/ (Chromium maps the name to 127.0.0.1) is the
   daemon's own origin in the browser's eyes but sends `Host: rebind.test:PORT`: each GET route
   and a same-origin JSON POST are refused (403, 15015) and show nothing of the daemon (no source,
   no task, no state dir); the same GETs with the daemon's Host work (a precondition).
The daemon's log names the refusals (15015 foreign Host, 15016 cross-site).
"""
import functools
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

addr, dmctl, state, source_cfg, task_cfg, serve_log = sys.argv[1:7]
port = int(addr.rsplit(":", 1)[1])
daemon = f"http://{addr}"
state_abs = os.path.realpath(state)


def fail(msg):
    sys.exit(f"FAILED: {msg}")


def ctl(*args):
    r = subprocess.run([dmctl, "--state-dir", state, *args], capture_output=True, text=True)
    try:
        return json.loads(r.stdout)
    except ValueError:
        fail(f"dmctl {' '.join(args)}: no JSON answer: {r.stdout} {r.stderr}")


def tasks():
    return [t.get("taskName") for t in ctl("query-status").get("tasks", [])]


def sources():
    return [s.get("sourceID") or s.get("source") for s in ctl("operate-source", "show").get("sources", [])]


def task_stage(name):
    a = ctl("query-status", name)
    try:
        return a["sources"][0]["subTaskStatus"][0]["stage"]
    except (KeyError, IndexError):
        return None


def wait_for(what, cond, secs=60):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    fail(f"{what} (within {secs} s)")


src_text = open(source_cfg).read()
task_text = open(task_cfg).read()
form_task_text = task_text.replace('name = "xs_task";', 'name = "xs_form";')
srcid = "mysql-xs"
# DM's Source and Task objects (POST /api/v1/sources, POST /api/v1/tasks, PUT /api/v1/tasks/NAME):
# whole and valid, so that only the browser rules stand between them and the daemon
dm_source = {"source_name": srcid, "host": "127.0.0.1", "port": int(os.environ.get("DMH_SOURCE_PORT", "13306")),
             "user": "root", "password": "", "enable_gtid": False, "enable": True}
dm_task = {"name": "xs_task", "task_mode": "incremental", "enhance_online_schema_change": True,
           "on_duplicate": "replace",
           "target_config": {"host": "127.0.0.1", "port": int(os.environ.get("DMH_TARGET_PORT", "13307")),
                             "user": "root", "password": ""},
           "source_config": {"source_conf": [{"source_name": srcid}]},
           "table_migrate_rule": [{"source": {"source_name": srcid, "schema": "xs_db", "table": ""}}]}

# The attacker's page: every write route, the answers' fate recorded in document.body.dataset.
attack_js = """
const D = %(daemon)s, SRC = %(src)s, TASK = %(task)s, FTASK = %(ftask)s, SID = %(sid)s;
const DMSRC = %(dmsrc)s, DMTASK = %(dmtask)s;
const out = [];
// A "simple" request: no preflight; the browser sends it and hides the answer (opaque).
async function nc(method, path, body) {
  try { await fetch(D + path, {method, mode: "no-cors", body}); out.push(`${method} ${path} (no-cors): sent`); }
  catch (e) { out.push(`${method} ${path} (no-cors): ${e}`); }
}
// A request that needs a preflight: the browser asks OPTIONS first, sends it only if allowed.
async function cors(method, path, body) {
  try {
    const r = await fetch(D + path, {method, headers: {"Content-Type": "application/json"}, body});
    out.push(`${method} ${path} (cors): answered ${r.status}`);
  } catch (e) { out.push(`${method} ${path} (cors): ${e}`); }
}
// A text/plain form POST to /control: the body is NAME=VALUE, so a JSON object whose last string
// holds the "=" arrives whole.
let forms = 0;
function form(obj) {
  const json = JSON.stringify(obj), cut = json.lastIndexOf("=");
  return new Promise(resolve => {
    const name = `f${forms++}`, frame = document.createElement("iframe");
    frame.name = name;
    frame.onload = () => resolve();
    document.body.appendChild(frame);
    const f = document.createElement("form");
    f.method = "POST"; f.enctype = "text/plain"; f.action = D + "/control"; f.target = name;
    const i = document.createElement("input");
    i.name = json.slice(0, cut); i.value = json.slice(cut + 1);
    f.appendChild(i);
    document.body.appendChild(f);
    f.submit();
    setTimeout(resolve, 15000);
  }).then(() => out.push(`form POST /control ${obj.cmd}: submitted`));
}
(async () => {
  const j = o => JSON.stringify(o), T = "/api/v1/dmhost/tasks/xs_task", S = `/api/v1/dmhost/sources/${SID}`;
  await nc("POST", "/api/v1/dmhost/sources", j({content: SRC}));
  await form({cmd: "operate-source", args: {op: "create", path: "/api/v1/source.cfg", content: SRC + "\\n#="}});
  await nc("POST", "/api/v1/dmhost/tasks/check", j({content: TASK}));
  await nc("POST", "/api/v1/dmhost/tasks", j({content: TASK}));
  await form({cmd: "start-task", args: {path: "/api/v1/task.cfg", content: FTASK + "\\n#="}});
  await nc("POST", "/control", j({cmd: "start-task", args: {path: "/api/v1/task.cfg", content: FTASK}}));
  for (const r of ["pause", "resume", "stop", "start"]) await nc("POST", `${T}/${r}`);
  // DM's routes: empty writes with no Content-Type (admitted from a script with no Origin only)
  for (const r of ["stop", "start"]) await nc("POST", `/api/v1/tasks/xs_task/${r}`);
  await nc("POST", `/api/v1/sources/${SID}/relay/enable`);
  await cors("DELETE", "/api/v1/tasks/xs_task");
  await cors("DELETE", `/api/v1/sources/${SID}`);
  // DM's Source and Task objects (translated into DM's YAML by the daemon)
  await nc("POST", "/api/v1/sources", j({source: DMSRC}));
  await cors("POST", "/api/v1/sources", j({source: DMSRC}));
  await nc("POST", "/api/v1/tasks", j({task: DMTASK}));
  await cors("POST", "/api/v1/tasks", j({task: DMTASK}));
  await cors("PUT", "/api/v1/tasks/xs_task", j({task: DMTASK}));
  await nc("POST", `${S}/relay/enable`);
  await nc("POST", `${S}/relay/disable`);
  await nc("POST", `${S}/relay/purge`, j({relay_binlog_name: "mysql-bin.999999"}));
  for (const r of ["skip", "revert"]) await nc("POST", `${T}/binlog/${r}`, j({binlog_pos: "mysql-bin.000001:4"}));
  for (const r of ["replace", "inject"]) await nc("POST", `${T}/binlog/${r}`, j({binlog_pos: "mysql-bin.000001:4", sqls: ["DROP TABLE t"]}));
  await nc("POST", `${T}/units/sync/swap`, j({path: "/tmp/x.so"}));
  await nc("POST", "/control", j({cmd: "stop-task", args: {name: "xs_task"}}));
  await form({cmd: "pause-task", args: {name: "xs_task", x: "="}});
  await cors("POST", "/api/v1/dmhost/tasks", j({content: TASK}));
  await cors("PUT", "/api/v1/dmhost/tasks", j({content: TASK}));
  await cors("POST", `${T}/pause`);
  await cors("DELETE", T);
  await cors("DELETE", S);
  document.body.dataset.done = JSON.stringify(out);
})();
""" % {"daemon": json.dumps(daemon), "src": json.dumps(src_text), "task": json.dumps(task_text),
       "ftask": json.dumps(form_task_text), "sid": json.dumps(srcid),
       "dmsrc": json.dumps(dm_source), "dmtask": json.dumps(dm_task)}

site = os.path.join(os.path.dirname(os.path.abspath(serve_log)), "attacker")
os.makedirs(site, exist_ok=True)
with open(os.path.join(site, "attack.html"), "w") as f:
    f.write("<!doctype html><title>cat pictures</title><body><script src=attack.js></script>")
with open(os.path.join(site, "attack.js"), "w") as f:
    f.write(attack_js)


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=site))
threading.Thread(target=httpd.serve_forever, daemon=True).start()
attacker = f"http://127.0.0.1:{httpd.server_address[1]}/attack.html"

opts = webdriver.ChromeOptions()
opts.binary_location = "/usr/bin/chromium"
for a in ("--headless=new", "--no-proxy-server", "--disable-gpu", "--disable-dev-shm-usage",
          "--host-resolver-rules=MAP rebind.test 127.0.0.1"):
    opts.add_argument(a)
if os.geteuid() == 0:
    opts.add_argument("--no-sandbox")  # chromium's sandbox refuses to run as root
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


def attack(round_):
    driver.get(attacker)
    done = wait_for(f"the attacker's page to finish (round {round_})",
                    lambda: driver.execute_script("return document.body && document.body.dataset.done"), 120)
    for line in json.loads(done):
        print(f"  round {round_}: {line}")


def log_text():
    with open(serve_log, errors="replace") as f:
        return f.read()


try:
    # 1. Nothing exists: the page tries to create the source and start the task.
    if tasks() or sources():
        fail(f"the daemon is not empty before the attack: tasks {tasks()}, sources {sources()}")
    attack(1)
    t, s = tasks(), sources()
    if t or s:
        fail(f"the cross-site page's requests landed: tasks {t}, sources {s}")
    print("round 1: no source, no task after the attacker's page")

    # 2. The operator's source and task (over the socket); the page tries to change them.
    a = ctl("operate-source", "create", source_cfg)
    if not a.get("result"):
        fail(f"operate-source create over the socket: {a}")
    a = ctl("start-task", task_cfg)
    if not a.get("result"):
        fail(f"start-task over the socket: {a}")
    wait_for("xs_task Running", lambda: task_stage("xs_task") == "Running")
    relay0 = ctl("operate-source", "show", "-s", srcid)["sources"][0].get("relayStatus")
    attack(2)
    if task_stage("xs_task") != "Running" or tasks() != ["xs_task"] or sources() != [srcid]:
        fail(f"the cross-site page changed the daemon: tasks {tasks()}, xs_task "
             f"{task_stage('xs_task')}, sources {sources()}")
    relay1 = ctl("operate-source", "show", "-s", srcid)["sources"][0].get("relayStatus")
    if (relay0 or {}).get("stage") != (relay1 or {}).get("stage"):
        fail(f"the cross-site page changed the relay: {relay0} -> {relay1}")
    print("round 2: xs_task still Running, the only task; source still bound, relay unchanged")

    # 3. DNS rebinding: the daemon's origin for the browser, a foreign Host for the daemon.
    gets = ["/", "/api/v1/dmhost/tasks", "/api/v1/dmhost/sources", f"/api/v1/dmhost/sources/{srcid}",
            f"/api/v1/dmhost/sources/{srcid}/status", "/api/v1/dmhost/tasks/xs_task/status",
            "/api/v1/dmhost/tasks/xs_task/lag", "/api/v1/dmhost/tasks/xs_task/binlog", "/api/v1/dmhost/openapi.json",
            "/api/v1/tasks/xs_task/status", f"/api/v1/sources/{srcid}/status", "/api/v1/dm.json",
            "/api/v1/docs", "/metrics"]
    # Precondition: with the daemon's own Host these answer (so a refusal below is the Host's).
    for path in gets[1:3]:
        with urllib.request.urlopen(urllib.request.Request(daemon + path), timeout=20) as r:
            body = r.read().decode()
            if r.status != 200 or (srcid not in body and "xs_task" not in body):
                fail(f"GET {path} with the daemon's Host: {r.status} {body[:300]}")
    driver.get(f"http://rebind.test:{port}/")
    got = driver.execute_async_script("""
        const done = arguments[arguments.length - 1], paths = arguments[0], out = [];
        (async () => {
          for (const p of paths) {
            try { const r = await fetch(p); out.push([p, r.status, await r.text()]); }
            catch (e) { out.push([p, 0, String(e)]); }
          }
          for (const [p, b] of [["/control", {cmd: "pause-task", args: {name: "xs_task"}}],
                                ["/api/v1/dmhost/tasks/xs_task/pause", null]]) {
            try {
              const r = await fetch(p, {method: "POST", headers: {"Content-Type": "application/json"},
                                        body: b ? JSON.stringify(b) : undefined});
              out.push(["POST " + p, r.status, await r.text()]);
            } catch (e) { out.push(["POST " + p, 0, String(e)]); }
          }
          done(out);
        })();""", gets)
    for path, status, body in got:
        print(f"  rebinding {path}: {status} {body[:120].strip()}")
        if status != 403 or "15015" not in body:
            fail(f"rebinding: {path} answered {status}, not the 403 of a foreign Host: {body[:300]}")
        for leak in (state_abs, state, srcid, "xs_task", "dmhost_"):
            if leak in body.replace(path.removeprefix("POST "), ""):  # the refusal names the path
                fail(f"rebinding: {path}'s answer shows {leak!r}: {body[:300]}")
    if task_stage("xs_task") != "Running":
        fail(f"the rebinding page's POST paused xs_task: {task_stage('xs_task')}")
    print("round 3: every rebinding GET and POST refused (15015), nothing shown, xs_task Running")

    text = log_text()
    for code, what in (("15016", "the cross-site requests"), ("15015", "the foreign Host")):
        if code not in text:
            fail(f"the daemon's log does not name {what} ({code})")
    print(f"the daemon's log names the refusals: {text.count('15016')} cross-site (15016), "
          f"{text.count('15015')} foreign Host (15015)")
finally:
    driver.quit()
    httpd.shutdown()
