#!/usr/bin/env python3
"""Run 36 call A, issue #48's record: `racegate check` whole against its 4 shards merged, cell
for cell (python3 docs/h200/run-36/compare-cells.py DIR, DIR the unpacked `a` folder). A cell is
(case, detector); compared: expect, observed, judgement, file, line, the evidence's outcome, and
the cells' order; the detail is printed where it differs (a stress cell's detail counts the wrong
results of its trials, k/50, which a racy kernel changes from run to run); the exit codes from
check-shards.txt. compare-check.py compares every value of the two documents, the evidence's
commands, batch lists and phase times included, which differ by construction (a shard batches
other cases into one sanitizer process). Exit 0 when the verdicts are the same."""
import collections
import json
import pathlib
import re
import sys

d = pathlib.Path(sys.argv[1])
whole = json.loads((d / "check-whole.json").read_text())["cells"]
merged = json.loads((d / "check-merged.json").read_text())["cells"]
key = lambda c: (c["case"], c["detector"])
bad = []
if [key(c) for c in whole] != [key(c) for c in merged]:
    bad.append("the cells differ, or their order does")
W, M = {key(c): c for c in whole}, {key(c): c for c in merged}
details = 0
for k, w in W.items():
    m = M.get(k)
    if m is None:
        continue
    for f in ["expect", "observed", "judgement", "file", "line"]:
        if w.get(f) != m.get(f):
            bad.append(f"{k} {f}: whole {w.get(f)!r} merged {m.get(f)!r}")
    if w["evidence"].get("outcome") != m["evidence"].get("outcome"):
        bad.append(f"{k} outcome differs")
    if w.get("detail") != m.get("detail"):
        details += 1
        print(f"detail {k}: whole {w.get('detail')!r} merged {m.get('detail')!r}")
codes = dict(re.findall(r"^(whole|merge) exit (\d+)$", (d / "check-shards.txt").read_text(), re.M))
if codes.get("whole") != codes.get("merge"):
    bad.append(f"exit codes: whole {codes.get('whole')} merged {codes.get('merge')}")
print(f"{len(W)} cells whole, {len(M)} merged; judgements whole {dict(collections.Counter(c['judgement'] for c in whole))}, "
      f"merged {dict(collections.Counter(c['judgement'] for c in merged))}; exit whole {codes.get('whole')}, merged {codes.get('merge')}")
print(f"{details} detail(s) differ; {len(bad)} verdict difference(s)")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
