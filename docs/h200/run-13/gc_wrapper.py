#!/usr/bin/env python3
"""Timing helper for the H200 run: stands in for compute-sanitizer in `racegate sanitize` and runs
the target alone, so the same command measures a plain run beside racecheck and globalcheck.
(In the first globalcheck probe it ran the target under the injection, with RACEGATE_GC_TOOL set.)
Was ci/gc_wrapper.py; moved beside run 13's probe (issue #33). ci/h200_run.py now writes its own
copy of the plain stand-in (PLAIN_SANITIZER) for runs 14, 16, 17 and later."""
import os, sys
args = sys.argv[1:]
i = next(i for i, a in enumerate(args) if os.path.isabs(a) and os.path.basename(a).startswith("racegate"))
env = dict(os.environ)
if os.environ.get("RACEGATE_GC_TOOL"):
    env["CUDA_INJECTION64_PATH"] = os.environ["RACEGATE_GC_TOOL"]
os.execvpe(args[i], args[i:], env)
