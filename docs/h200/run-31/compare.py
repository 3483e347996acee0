#!/usr/bin/env python3
"""Run 31: each submission's grade in run 30 call C (`../run-30/c.tgz:c/grade.json`, the rubric
before [requires]) beside this run's (`a.tgz:a/grade30.json`), with run 30's correctness line.
    python3 docs/h200/run-31/compare.py > docs/h200/run-31/compare.txt"""
import io, json, pathlib, tarfile

here = pathlib.Path(__file__).resolve().parent


def grades(tgz, member):
    with tarfile.open(tgz) as t:
        data = json.load(io.TextIOWrapper(t.extractfile(member)))
    return {pathlib.Path(g["submission"]).name: g for g in data}


old = grades(here.parent / "run-30/c.tgz", "c/grade.json")
new = grades(here / "a.tgz", "a/grade30.json")
for k in sorted(new):
    o, n = old.get(k), new[k]
    oc = next(i for i in o["items"] if i["item"] == "correct") if o else None
    line = oc["detail"].splitlines()[0][:70] if oc else ""
    print(f"{k:30} run 30: {o['score'] if o else '-':>5}  run 31: {n['score']:>5}   run 30's correct: {line}")
