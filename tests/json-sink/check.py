#!/usr/bin/env python3
"""Checks the .jsonl files a json-sink wrote (tests/json-sink/e2e.sh) and prints the SQL that
applies their changes, in order, to a copy of the tables taken at the sink's start position.

  check.py OUT_DIR DB [--min-version-2 N]

Asserted: every line is one JSON object in Debezium's envelope (before/after/source/op/ts_ms);
op c has only after, d only before, u both; each change (source file, pos, row) appears once;
within a file the changes come in binlog order (file, pos, row strictly increasing); the
sink_version of the lines never goes down (v1 before a hot-swap, v2 after) and, with
--min-version-2 N, at least N lines carry version 2. The SQL goes to stdout (plain INSERT: a
change written twice would hit a duplicate key when applied); a summary goes to stderr.
"""
import base64
import glob
import json
import os
import sys

# The test schema's column kinds (e2e.sh): binary columns come base64, timestamps as ISO UTC.
BINARY = {"b"}
TIMESTAMP = {"ts"}


def fail(msg):
    print("check.py: FAILED: " + msg, file=sys.stderr)
    sys.exit(1)


def binlog_key(src):
    name = src["file"]
    suffix = name.rsplit(".", 1)[-1]
    return (int(suffix) if suffix.isdigit() else 0, src["pos"], src["row"])


def literal(col, v):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        fail("a boolean value in column %s" % col)
    if isinstance(v, (int, float)):
        return repr(v)
    if col in BINARY:
        return "FROM_BASE64('%s')" % v
    if col in TIMESTAMP:
        v = v.replace("T", " ").rstrip("Z")
    return "'" + v.replace("\\", "\\\\").replace("'", "''") + "'"


def where(image):
    return "`id` = %s" % literal("id", image["id"])


def main():
    out_dir, db = sys.argv[1], sys.argv[2]
    min_v2 = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--min-version-2" else 0
    files = sorted(glob.glob(os.path.join(out_dir, "*.jsonl")))
    if not files:
        fail("no .jsonl file in %s" % out_dir)
    seen = set()
    total = 0
    versions = {}
    sql = ["SET time_zone = '+00:00';", "SET autocommit = 1;"]
    for path in files:
        last = None
        last_version = 0
        with open(path, encoding="utf-8") as f:
            for no, text in enumerate(f, 1):
                where_ = "%s:%d" % (os.path.basename(path), no)
                if not text.endswith("\n"):
                    fail("%s: the last line is cut short (no newline)" % where_)
                try:
                    line = json.loads(text)
                except ValueError as e:
                    fail("%s: not JSON: %s" % (where_, e))
                for k in ("before", "after", "source", "op", "ts_ms"):
                    if k not in line:
                        fail("%s: no %s" % (where_, k))
                src, op = line["source"], line["op"]
                if op == "c" and (line["before"] is not None or line["after"] is None):
                    fail("%s: op c must have after only" % where_)
                if op == "d" and (line["before"] is None or line["after"] is not None):
                    fail("%s: op d must have before only" % where_)
                if op == "u" and (line["before"] is None or line["after"] is None):
                    fail("%s: op u must have both images" % where_)
                if op not in ("c", "u", "d"):
                    fail("%s: op %r" % (where_, op))
                for k in ("file", "pos", "row", "gtid", "db", "table", "server_id", "ts_ms",
                          "sink_version"):
                    if k not in src:
                        fail("%s: source has no %s" % (where_, k))
                key = (src["file"], src["pos"], src["row"])
                if key in seen:
                    fail("%s: change %s:%d row %d written twice" % (where_, *key))
                seen.add(key)
                k = binlog_key(src)
                if last is not None and k <= last:
                    fail("%s: change %s:%d row %d comes after %s (out of order)" %
                         (where_, src["file"], src["pos"], src["row"], last))
                last = k
                v = src["sink_version"]
                if v < last_version:
                    fail("%s: sink_version %d after %d" % (where_, v, last_version))
                last_version = v
                versions[v] = versions.get(v, 0) + 1
                if src["db"] != db:
                    continue
                table = "`%s`.`%s`" % (db, src["table"])
                if op == "c":
                    a = line["after"]
                    sql.append("INSERT INTO %s (%s) VALUES (%s);" % (
                        table, ", ".join("`%s`" % c for c in a),
                        ", ".join(literal(c, x) for c, x in a.items())))
                elif op == "u":
                    a = line["after"]
                    sql.append("UPDATE %s SET %s WHERE %s;" % (
                        table, ", ".join("`%s` = %s" % (c, literal(c, x)) for c, x in a.items()),
                        where(line["before"])))
                else:
                    sql.append("DELETE FROM %s WHERE %s;" % (table, where(line["before"])))
                total += 1
    if min_v2 and versions.get(2, 0) < min_v2:
        fail("only %d lines of version 2 (at least %d expected after the swap)" %
             (versions.get(2, 0), min_v2))
    print("\n".join(sql))
    print("check.py: %d changes of %s in %d files, versions %s" %
          (total, db, len(files), dict(sorted(versions.items()))), file=sys.stderr)


main()
