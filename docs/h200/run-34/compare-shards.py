#!/usr/bin/env python3
"""Compares run 34 call B's shards merged with the whole runs (after the call, on the CPU machine):
python3 docs/h200/run-34/compare-shards.py DIR (the unpacked `b` folder). The gate: findings by
fingerprint, undecided runs by (subject, detector), verdicts. The grades: every grade, timings
aside. Prints each difference; exit 0 when there is none."""
import json
import pathlib
import sys

d = pathlib.Path(sys.argv[1])
bad = 0


def load(name):
    return json.loads((d / name).read_text())


def gate_view(g):
    fps = sorted(f.get("fingerprint", "") for f in g.get("findings", []))
    inc = sorted((i["subject"], i["detector"]) for i in g.get("inconclusive", []))
    return {"verdict": g.get("verdict"), "findings": fps, "inconclusive": inc}


whole, merged = gate_view(load("corpus-whole.json")), gate_view(load("corpus-merged.json"))
for k in whole:
    if whole[k] != merged[k]:
        bad += 1
        print(f"gate {k}: whole {whole[k]} merged {merged[k]}")


def untimed(gs):
    return [{k: v for k, v in g.items() if k != "execution_seconds"} for g in gs]


gw, gm = untimed(load("grade-whole.json")), untimed(load("grade-merged.json"))
if gw != gm:
    bad += 1
    print(f"grades differ: {len(gw)} whole, {len(gm)} merged")
    for a, b in zip(gw, gm):
        if a != b:
            print(f"  {a.get('submission')}: {a.get('score')} vs {b.get('submission')}: {b.get('score')}")
print("same" if bad == 0 else f"{bad} difference(s)")
sys.exit(1 if bad else 0)
