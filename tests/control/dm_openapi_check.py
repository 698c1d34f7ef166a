#!/usr/bin/env python3
"""Every answer dmhost gave on DM's HTTP paths is one DM's OpenAPI spec allows (issue 23).

  dm_openapi_check.py SPEC LOG [--coverage]

SPEC is DM's spec as DM ships it (tests/control/dm-openapi/dm.yaml). LOG holds one JSON object a
line, one per HTTP exchange: {"method", "path", "status", "body"[, "content_type"]}, where "path"
is the path as requested (query included) and "body" the answer's bytes as text ("" for none).
For each exchange:
  - the method and path are an operation of the spec (path templates matched segment by segment,
    a literal segment before a {parameter}, as DM's router does), and the query names only
    parameters that operation declares (booleans "true"/"false");
  - the status is one the spec declares for that operation;
  - a declared JSON content: the body parses and validates against its schema, every error listed
    with its JSON path ($.data[0].stage); no content declared: the body is empty (DM's 204s and
    its empty 200s: c.Status(200)) and carries no Content-Type;
  - an error body's error_msg is in DM's terror form, "[code=N:class=C:scope=S:level=L], ...",
    with N its error_code (scripts match on "code=").
The schemas are turned into JSON Schema draft 7 by hand (no OpenAPI library: Debian has none):
$ref inlined (DM's schemas do not recurse), `nullable: true` adds null to the type, `format`
int64/uint64 become bounds, `properties` without a type are an object's (oapi-codegen makes them
structs), and an object carries only the members it declares (DM answers with generated structs,
so a misspelt member would otherwise pass unseen) unless it says otherwise. DM's own mistakes
in its spec are patched in one table, SPEC_PATCHES, each with why.

--coverage prints, for each of DM's 43 operations, how many successful (2xx) and failed answers
the log holds, and fails unless the operations never seen are exactly NOT_SEEN and those seen
only failing are exactly ONLY_FAILURE (each with why), and no operation the served dm.json declares
is in NOT_SEEN: the lists can only shrink as operations land.

Run with Debian's /usr/bin/python3 (python3-yaml, python3-jsonschema: scripts/deps.sh).
Exit status: 0 all good, 1 a failure (each printed), 2 a usage or input error.
"""
import copy
import json
import re
import sys
import urllib.parse

try:
    import jsonschema
    import yaml
except ImportError as e:  # the pyenv python3 first on PATH lacks them, or deps.sh was not run
    sys.exit(f"dm_openapi_check: {e}: run with /usr/bin/python3, python3-yaml and "
             f"python3-jsonschema installed (scripts/deps.sh)")

OPERATION_COUNT = 43  # DM's spec at c7b2588ef6c7; a new spec means reviewing the tables below

# DM's operations the log may lack, each with why. Empty since all 43 are served; an operation a
# new spec adds goes here, with why, until its route lands.
NOT_SEEN = {}

# DM's operations another test drives (its own log, judged by this checker without --coverage):
# here they count as not seen, and their being served is no complaint.
_WIRE = ("control_dm_wire (tests/control/dm_wire.sh) drives it with DM's fixture Task and a "
         "Source through a real dmhost serve; its answers are checked by this checker")
SEEN_ELSEWHERE = {
    "DMAPICreateSource": _WIRE,
    "DMAPICreateTask": _WIRE,
    "DMAPIUpdateTask": _WIRE,
    "DMAPIConvertTask": _WIRE,
}

# DM's operations seen only failing, each with why.
_SELF = ("a dmhost serve is its cluster's only master and worker, always online: offline-member "
         "answers 400 (15047 for itself, not exists for another name); its success is a master's "
         "(test_master_members)")
ONLY_FAILURE = {
    "DMAPIOfflineMasterNode": _SELF,
    "DMAPIOfflineWorkerNode": _SELF,
}


def _patch_structure_required(spec):
    req = spec["components"]["schemas"]["GetTaskTableStructureResponse"]["required"]
    req[req.index("table_create_sql")] = "schema_create_sql"


def _patch_not_found_body(spec):
    for path in ("/api/v1/sources/{source-name}", "/api/v1/tasks/{task-name}"):
        spec["paths"][path]["get"]["responses"]["404"]["content"] = {
            "application/json": {"schema": {"$ref": "#/components/schemas/ErrorWithMessage"}}}


def _patch_doc_html(spec):
    spec["paths"]["/api/v1/docs"]["get"]["responses"]["200"]["content"] = {"text/html": {}}


def _patch_doc_json(spec):
    spec["paths"]["/api/v1/dm.json"]["get"]["responses"]["200"]["content"] = {
        "application/json": {"schema": {
            "type": "object", "required": ["openapi", "info", "paths"],
            "properties": {"openapi": {"type": "string", "pattern": "^3\\."},
                           "info": {"type": "object"}, "paths": {"type": "object"}},
            "additionalProperties": True}}}


def _patch_cluster_info_400(spec):
    spec["paths"]["/api/v1/cluster/info"]["put"]["responses"]["400"] = {
        "description": "failed", "content": {"application/json": {"schema": {
            "$ref": "#/components/schemas/ErrorWithMessage"}}}}


# DM's spec as shipped, and what the checker changes in it before checking: (name, what DM's spec
# says, why it is patched, the patch). Nothing else is changed.
SPEC_PATCHES = [
    ("table_create_sql",
     "GetTaskTableStructureResponse.required names table_create_sql; the property is "
     "schema_create_sql",
     "no answer could satisfy it; DM's code fills schema_create_sql", _patch_structure_required),
    ("404 body",
     "the 404 of GET /sources/{source-name} and GET /tasks/{task-name} declares no body",
     "dmhost answers DM's error body (ErrorWithMessage) there, as DM's error handler does for "
     "every refusal (issue 23's decision)", _patch_not_found_body),
    ("docs html",
     "GET /api/v1/docs 200 declares no content", "DM answers an HTML page (GetDocHTML)",
     _patch_doc_html),
    ("dm.json",
     "GET /api/v1/dm.json 200 declares no content",
     "DM answers its OpenAPI document as JSON (GetDocJSON); the operations it must declare are "
     "checked apart (check_doc_json)", _patch_doc_json),
    ("cluster info 400",
     "PUT /api/v1/cluster/info declares 200 only",
     "DM's code answers a body it cannot bind with 400 ErrorWithMessage (c.Bind, then its error "
     "handler); dmhost refuses a topology off DM's schema the same way", _patch_cluster_info_400),
]

# DM's spec mistakes the checker keeps as shipped, and why keeping them is right (docs/api.md names
# them too).
SPEC_KEPT = [
    ("converters 201", "DM's code answers 200 to POST /tasks/converters; dmhost answers the spec's "
     "201, so the spec is checked as it is"),
    ("stage enum", "DM passes New/Pausing/Resuming/Stopping through SubTaskStatus.stage, off its "
     "own enum; dmhost maps them into it, so the enum is checked"),
    ("meta_schema default", "Task.meta_schema's default says dm-meta, DM's code uses dm_meta: a "
     "default is not checked in an answer"),
    ("templates PUT body", "PUT /tasks/templates/{task-name} declares no requestBody though DM "
     "binds a Task: the checker reads answers, not requests"),
]

_SKIP = {"description", "example", "default", "nullable", "format", "title", "readOnly",
         "writeOnly", "deprecated"}
_COPY = {"type", "enum", "required", "minimum", "maximum", "minItems", "maxItems", "minLength",
         "maxLength", "pattern"}
_BOUNDS = {"int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1), "int32": (-2**31, 2**31 - 1)}


def _nullable(out):
    t = out.get("type")
    if t is not None:
        out["type"] = (t if isinstance(t, list) else [t]) + ["null"]
    if "enum" in out and None not in out["enum"]:
        out["enum"] = out["enum"] + [None]
    return out


def to_json_schema(node, components, stack=()):
    """One OpenAPI 3.0 schema object as JSON Schema draft 7 (see the module's comment)."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if not node["$ref"].startswith("#/components/schemas/") or name not in components:
            raise ValueError(f"unresolvable $ref {node['$ref']}")
        if name in stack:
            raise ValueError(f"recursive schema {' -> '.join(stack + (name,))}")
        out = to_json_schema(components[name], components, stack + (name,))
        return _nullable(out) if node.get("nullable") else out
    out = {}
    for k, v in node.items():
        if k in _SKIP:
            continue
        if k == "properties":
            out[k] = {p: to_json_schema(s, components, stack) for p, s in v.items()}
        elif k == "items":
            out[k] = to_json_schema(v, components, stack)
        elif k == "additionalProperties":
            out[k] = to_json_schema(v, components, stack) if isinstance(v, dict) else v
        elif k in _COPY:
            out[k] = copy.deepcopy(v)
        else:  # a keyword this converter does not know must not pass unchecked
            raise ValueError(f"schema keyword {k!r} is not handled (in {'.'.join(stack)})")
    if "properties" in node and "type" not in node:
        out["type"] = "object"
    if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    if node.get("format") in _BOUNDS:
        out["minimum"], out["maximum"] = _BOUNDS[node["format"]]
    return _nullable(out) if node.get("nullable") else out


class Operation:
    def __init__(self, method, template, op, components):
        self.method, self.template, self.op = method.upper(), template, op
        self.op_id = op["operationId"]
        self.segments = template.strip("/").split("/")
        self.query = {p["name"]: p.get("schema", {}) for p in op.get("parameters", [])
                      if p.get("in") == "query"}
        self.responses = {}
        for status, resp in op["responses"].items():
            content = resp.get("content") or {}
            schemas = {}
            for media, m in content.items():
                schemas[media] = to_json_schema(m["schema"], components) if "schema" in m else None
            self.responses[str(status)] = schemas

    def match(self, segments):
        """None, or the sort key of this template for the path (literal segments first)."""
        if len(segments) != len(self.segments):
            return None
        key = []
        for want, got in zip(self.segments, segments):
            if want.startswith("{") and want.endswith("}"):
                if not got:
                    return None
                key.append(1)
            elif want != got:
                return None
            else:
                key.append(0)
        return tuple(key)

    def name(self):
        return f"{self.method} {self.template} ({self.op_id})"


def load_spec(path, patches=SPEC_PATCHES):
    with open(path, encoding="utf-8") as f:
        spec = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    for _, _, _, patch in patches:
        patch(spec)
    components = spec["components"]["schemas"]
    ops = []
    for template, item in spec["paths"].items():
        for method, op in item.items():
            if method in ("get", "put", "post", "delete", "patch", "head", "options"):
                ops.append(Operation(method, template, op, components))
    return ops


def find_operation(ops, method, path):
    """The operation for METHOD PATH (no query), or None and why."""
    segments = urllib.parse.urlsplit(path).path.strip("/").split("/")
    segments = [urllib.parse.unquote(s) for s in segments]
    best = None
    methods = []
    for o in ops:
        key = o.match(segments)
        if key is None:
            continue
        if o.method != method.upper():
            methods.append(o.method)
            continue
        if best is None or key < best[0]:
            best = (key, o)
    if best:
        return best[1], None
    if methods:
        have = ", ".join(sorted(set(methods)))
        return None, f"DM's spec has no {method.upper()} there (it has {have})"
    return None, "no operation of DM's spec has this path"


def _json_path(path):
    out = "$"
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def check_query(op, path):
    problems = []
    for name, value in urllib.parse.parse_qsl(urllib.parse.urlsplit(path).query,
                                              keep_blank_values=True):
        if name not in op.query:
            problems.append(f"query parameter {name!r} is not one DM's operation declares "
                            f"({', '.join(op.query) or 'none'})")
        elif op.query[name].get("type") == "boolean" and value not in ("true", "false"):
            problems.append(f"query parameter {name}={value!r} is not a boolean")
    return problems


def check_doc_json(doc, ops, not_seen=None):
    """The served dm.json declares every operation of DM's spec dmhost serves (all but NOT_SEEN)
    with DM's operationId, and no path under /api/v1 that is neither DM's nor dmhost's own
    (/api/v1/dmhost/...)."""
    not_seen = NOT_SEEN if not_seen is None else not_seen
    problems = []
    paths = doc.get("paths") if isinstance(doc, dict) else None
    paths = paths if isinstance(paths, dict) else {}
    templates = {o.template for o in ops}
    for o in ops:
        item = paths.get(o.template)
        got = item.get(o.method.lower()) if isinstance(item, dict) else None
        if not isinstance(got, dict):
            if o.op_id not in not_seen:
                problems.append(f"the document does not declare {o.method} {o.template}")
        elif got.get("operationId") != o.op_id:
            problems.append(f"{o.method} {o.template}: operationId {got.get('operationId')!r}, "
                            f"DM's is {o.op_id}")
    for template in sorted(paths):
        if template.startswith("/api/v1/") and template not in templates and \
                not template.startswith("/api/v1/dmhost/"):
            problems.append(f"the document declares {template}: neither DM's path nor under "
                            f"/api/v1/dmhost/")
    return problems


# DM's terror.Error(): "[code=%d:class=%s:scope=%s:level=%s]" then ", Message: ...", ", RawCause:
# ...", ", Workaround: ..." (dm/pkg/terror/terror.go); DM's error handler puts it in error_msg and
# the code in error_code (0 only for an error that is no terror). Scripts match on "code=".
_TERROR = re.compile(r"\[code=(\d+):class=[^:\]]+:scope=[^:\]]+:level=[^:\]]+\](, |$)")


def check_error_msg(value):
    code, msg = value.get("error_code"), value.get("error_msg")
    if not isinstance(code, int) or not isinstance(msg, str) or code == 0:
        return []
    m = _TERROR.match(msg)
    if not m:
        return [f"$.error_msg: not in DM's form [code=N:class=C:scope=S:level=L], ...: "
                f"{msg[:120]!r}"]
    if int(m.group(1)) != code:
        return [f"$.error_msg: names code {m.group(1)}, error_code is {code}"]
    return []


def check_exchange(ops, ex):
    """(operation or None, [problems]) of one logged exchange."""
    for k, t in (("method", str), ("path", str), ("status", int), ("body", str)):
        if not isinstance(ex.get(k), t):
            return None, [f"the log line has no {t.__name__} {k!r}"]
    op, why = find_operation(ops, ex["method"], ex["path"])
    if op is None:
        return None, [why]
    problems = check_query(op, ex["path"])
    status, body = str(ex["status"]), ex["body"]
    if status not in op.responses:
        problems.append(f"status {status} is not one DM's spec declares for {op.op_id} "
                        f"({', '.join(sorted(op.responses))})")
        return op, problems
    media = op.responses[status]
    ctype = ex.get("content_type")
    if not media:
        if body != "":
            problems.append(f"DM's spec declares no body for {status} of {op.op_id}; the answer "
                            f"has {len(body.encode())} bytes: {body[:120]!r}")
        if ctype:  # DM's c.Status() sets none; a client must not look for a body
            problems.append(f"an answer without a body has a Content-Type ({ctype!r})")
        return op, problems
    if "application/json" in media:
        if ctype is not None and not ctype.lower().startswith("application/json"):
            problems.append(f"Content-Type {ctype!r}, not application/json")
        try:
            value = json.loads(body)
        except ValueError as e:
            problems.append(f"the body is not JSON ({e}): {body[:120]!r}")
            return op, problems
        schema = media["application/json"]
        if schema is not None:
            validator = jsonschema.Draft7Validator(schema)
            for err in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path)):
                problems.append(f"{_json_path(err.absolute_path)}: {err.message}")
        if op.op_id == "GetDocJSON":
            problems += check_doc_json(value, ops)
        if ex["status"] >= 400 and isinstance(value, dict):
            problems += check_error_msg(value)
    elif "text/html" in media:
        if ctype is not None and not ctype.lower().startswith("text/html"):
            problems.append(f"Content-Type {ctype!r}, not text/html")
        if "<html" not in body.lower():
            problems.append(f"the body is not an HTML page: {body[:120]!r}")
    return op, problems


def read_log(path):
    """[(line number, exchange)]; raises ValueError on a line that is not a JSON object."""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            ex = json.loads(line)
            if not isinstance(ex, dict):
                raise ValueError(f"{path}:{n}: not a JSON object")
            out.append((n, ex))
    return out


def check_log(ops, exchanges, where="log"):
    """([failure lines], {operationId: [successes, failures]})."""
    failures = []
    seen = {o.op_id: [0, 0] for o in ops}
    for n, ex in exchanges:
        op, problems = check_exchange(ops, ex)
        head = f"{where}:{n}: {ex.get('method')} {ex.get('path')} -> {ex.get('status')}"
        if op is not None:
            head += f" ({op.op_id})"
            if not problems:
                seen[op.op_id][0 if 200 <= ex["status"] < 300 else 1] += 1
        failures += [f"{head}: {p}" for p in problems]
    return failures, seen


def served_operations(ops, exchanges):
    """The operationIds of DM's spec the log's dm.json answers declare (what dmhost serves)."""
    served = set()
    for _, ex in exchanges:
        if ex.get("method") != "GET" or ex.get("status") != 200:
            continue
        op, _ = find_operation(ops, "GET", str(ex.get("path", "")))
        if op is None or op.op_id != "GetDocJSON" or not isinstance(ex.get("body"), str):
            continue
        try:
            doc = json.loads(ex["body"])
        except ValueError:
            continue
        paths = doc.get("paths") if isinstance(doc, dict) else None
        for o in ops:
            item = paths.get(o.template) if isinstance(paths, dict) else None
            if isinstance(item, dict) and isinstance(item.get(o.method.lower()), dict):
                served.add(o.op_id)
    return served


def coverage(ops, seen, not_seen=None, only_failure=None, served=()):
    """([report lines], [problems]): the operations never seen must be exactly NOT_SEEN, those seen
    only failing exactly ONLY_FAILURE; an operation dmhost serves (`served`: its dm.json declares
    it) cannot stay in NOT_SEEN, so the list shrinks as operations land."""
    not_seen = dict(NOT_SEEN, **SEEN_ELSEWHERE) if not_seen is None else not_seen
    only_failure = ONLY_FAILURE if only_failure is None else only_failure
    report, problems = [], []
    ids = {o.op_id for o in ops}
    if len(ops) != OPERATION_COUNT:
        problems.append(f"DM's spec has {len(ops)} operations, the checker's lists were made for "
                        f"{OPERATION_COUNT}: review NOT_SEEN and ONLY_FAILURE")
    for table, name in ((not_seen, "NOT_SEEN"), (only_failure, "ONLY_FAILURE")):
        for op_id in sorted(set(table) - ids):
            problems.append(f"{name} names {op_id}, no operation of DM's spec")
    for o in ops:
        ok, bad = seen[o.op_id]
        report.append(f"{o.method:6} {o.template:80} {o.op_id:36} success {ok:3} failure {bad:3}")
        if ok == 0 and bad == 0 and o.op_id not in not_seen:
            problems.append(f"{o.name()} was never answered: exercise it or name it in NOT_SEEN "
                            f"with why")
        if (ok or bad) and o.op_id in not_seen:
            problems.append(f"{o.name()} was answered: remove it from NOT_SEEN")
        elif o.op_id in not_seen and o.op_id in served and o.op_id not in SEEN_ELSEWHERE:
            problems.append(f"{o.name()} is served (dm.json declares it) but in NOT_SEEN: add it "
                            f"to tests/control/dm_openapi.sh and remove it from NOT_SEEN")
        if ok == 0 and bad and o.op_id not in only_failure:
            problems.append(f"{o.name()} only failed: exercise its success or name it in "
                            f"ONLY_FAILURE with why")
        if ok and o.op_id in only_failure:
            problems.append(f"{o.name()} succeeded: remove it from ONLY_FAILURE")
        if ok == 0 and bad == 0 and o.op_id in only_failure:
            problems.append(f"{o.name()} is in ONLY_FAILURE but was never answered")
    return report, problems


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    flags = [a for a in argv[1:] if a.startswith("--")]
    if len(args) != 2 or set(flags) - {"--coverage"}:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        ops = load_spec(args[0])
        exchanges = read_log(args[1])
    except (OSError, ValueError, KeyError, yaml.YAMLError) as e:
        print(f"dm_openapi_check: {e}", file=sys.stderr)
        return 2
    failures, seen = check_log(ops, exchanges, args[1])
    for f in failures:
        print(f)
    rc = 1 if failures else 0
    if "--coverage" in flags:
        report, problems = coverage(ops, seen, served=served_operations(ops, exchanges))
        print("\n".join(report))
        for p in problems:
            print(f"coverage: {p}")
        rc = rc or (1 if problems else 0)
    if not exchanges:
        print(f"{args[1]}: no exchange logged")
        rc = 1
    print(f"dm_openapi_check: {len(exchanges)} exchange(s), {len(failures)} failure(s)")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
