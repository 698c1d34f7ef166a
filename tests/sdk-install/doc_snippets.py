#!/usr/bin/env python3
"""docs/sdk.md's "A minimal unit, annotated" quotes examples/reference-unit/reference_counter.c:
every ```c block of that section must be in the file as it is, its lines in order (a line "..."
stands for lines left out between them). Fails, naming the block and its first line not found, when
the page and the file drift apart."""
import re
import sys

doc_path, src_path = sys.argv[1], sys.argv[2]
doc = open(doc_path, encoding="utf-8").read()
src = [l.rstrip() for l in open(src_path, encoding="utf-8").read().split("\n")]
m = re.search(r"^## A minimal unit, annotated\n(.*?)^## ", doc, re.S | re.M)
if not m:
    sys.exit(f"{doc_path}: no section '## A minimal unit, annotated'")
blocks = re.findall(r"```c\n(.*?)```", m.group(1), re.S)
if len(blocks) < 5:
    sys.exit(f"{doc_path}: the section quotes {len(blocks)} blocks, expected at least 5")
bad = 0
for b, block in enumerate(blocks, 1):
    at = 0  # where in the file the block's next line may be
    runs = [[]]
    for line in block.rstrip("\n").split("\n"):
        if line.strip() == "...":
            runs.append([])
        else:
            runs[-1].append(line.rstrip())
    for run in runs:
        if not run:
            continue
        found = -1
        for i in range(at, len(src) - len(run) + 1):
            if src[i : i + len(run)] == run:
                found = i
                break
        if found < 0:
            print(f"block {b}: not in {src_path} (in order): {run[0].strip()!r}", file=sys.stderr)
            bad += 1
            break
        at = found + len(run)
if bad:
    sys.exit(1)
print(f"{len(blocks)} blocks of {doc_path} are in {src_path}")
