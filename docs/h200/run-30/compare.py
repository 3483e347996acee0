#!/usr/bin/env python3
"""Compares what run 30's calls brought back with the records before them.

  compare.py fingerprints REFERENCE.sarif OTHER.sarif...   each SARIF's findings (subject, rule,
      racegate/v2 fingerprint) against the reference's: which are missing, which are new
  compare.py grades REFERENCE.json OTHER.json...   each grading JSON's scores and item statuses
      against the reference's, submission by submission (detail texts are not compared: they
      hold values a race or changing poison produced)
Exits 1 when anything differs."""
import json
import sys


def fingerprints(path):
    runs = json.load(open(path))["runs"]
    return {
        (r["properties"]["subject"], r["ruleId"], r["partialFingerprints"]["racegate/v2"])
        for run in runs
        for r in run["results"]
    }


def grades(path):
    return {
        s["submission"].split("/")[-1]: (s["score"], [(i["item"], i["status"], i["score"]) for i in s["items"]])
        for s in json.load(open(path))
    }


def main():
    what, ref, others = sys.argv[1], sys.argv[2], sys.argv[3:]
    differ = False
    if what == "fingerprints":
        want = fingerprints(ref)
        for o in others:
            got = fingerprints(o)
            print(f"{o}: {len(got)} findings, reference {len(want)}")
            for f in sorted(want - got):
                print(f"  missing {f}")
                differ = True
            for f in sorted(got - want):
                print(f"  new     {f}")
                differ = True
    elif what == "grades":
        want = grades(ref)
        for o in others:
            got = grades(o)
            same = sum(1 for k in want if got.get(k) == want[k])
            print(f"{o}: {same} of {len(want)} submissions graded as the reference")
            for k in sorted(want):
                if got.get(k) != want[k]:
                    print(f"  {k}: reference {want[k]}, here {got.get(k)}")
                    differ = True
    else:
        sys.exit(__doc__)
    sys.exit(1 if differ else 0)


main()
