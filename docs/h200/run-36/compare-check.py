#!/usr/bin/env python3
"""Compares run 36 call A's `racegate check` whole with its 4 shards merged (after the call, on
the CPU machine): python3 docs/h200/run-36/compare-check.py DIR (the unpacked `a` folder). Every
value of the two JSON documents is compared, path by path, except times (keys holding
`second`, `wall`, `elapsed`, `duration` or `_ms`) and the shard stamp; the exit codes from
check-shards.txt. Prints each difference (at most 40); exit 0 when there is none."""
import json
import pathlib
import re
import sys

d = pathlib.Path(sys.argv[1])
VOLATILE = re.compile(r"second|wall|elapsed|duration|_ms$|^shard$|^stamp$")
diffs = []


def walk(a, b, path):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if VOLATILE.search(k):
                continue
            walk(a.get(k), b.get(k), f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            diffs.append(f"{path}: {len(a)} items whole, {len(b)} merged")
        for i, (x, y) in enumerate(zip(a, b)):
            walk(x, y, f"{path}[{i}]")
    elif a != b:
        diffs.append(f"{path}: whole {json.dumps(a)[:200]} merged {json.dumps(b)[:200]}")


whole = json.loads((d / "check-whole.json").read_text())
merged = json.loads((d / "check-merged.json").read_text())
walk(whole, merged, "$")
codes = dict(re.findall(r"^(whole|merge) exit (\d+)$", (d / "check-shards.txt").read_text(), re.M))
if codes.get("whole") != codes.get("merge"):
    diffs.append(f"exit codes: whole {codes.get('whole')} merged {codes.get('merge')}")
for x in diffs[:40]:
    print(x)
print(f"{len(diffs)} difference(s)")
sys.exit(1 if diffs else 0)
