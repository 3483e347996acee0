#!/usr/bin/env python3
"""Probe helper: stands in for compute-sanitizer in `racegate sanitize`, runs the target under
globalcheck's injection instead (RACEGATE_GC_TOOL, RACEGATE_GC_DIR, RACEGATE_GC_PATCHES set by
the caller)."""
import os, sys
args = sys.argv[1:]
i = next(i for i, a in enumerate(args) if os.path.isabs(a) and os.path.basename(a).startswith("racegate"))
env = dict(os.environ, CUDA_INJECTION64_PATH=os.environ["RACEGATE_GC_TOOL"])
os.execvpe(args[i], args[i:], env)
