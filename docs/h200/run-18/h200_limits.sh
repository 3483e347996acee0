#!/bin/bash
# H200: what globalcheck says at its limits (examples/globalcheck/limits.cu): each mode once plain,
# then under `racegate gate -- ./limits MODE` with globalcheck only; the shadow budget mode twice
# (default budget, then RACEGATE_GLOBALCHECK_BUDGET_MB=64). Then `racegate sanitize --tool
# globalcheck --save-xml -- ./limits MODE` for the modes whose report is a CI fixture.
# Usage, from the repository root: bash docs/h200/run-18/h200_limits.sh RACEGATE OUT
# (in ci/ when it ran in H200 runs 18 and 20; moved here with its record, issue #33)
RG=$(realpath "$1"); mkdir -p "$2/fixtures"; O=$(realpath "$2")
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; compute-sanitizer --version | tail -1; echo "command: $0 $*"; } > "$O/env.txt" 2>&1
run() { echo "\$ $*"; timeout 120 "$@" 2>&1; echo "[rc=$?]"; }
{
run nvcc -arch=sm_90 -lineinfo -o /tmp/limits examples/globalcheck/limits.cu
for m in budget named_ok named_partial many_barriers huge_grid overlap volatile_handoff; do
  run /tmp/limits $m
  run "$RG" gate --baseline /tmp/nb-$m.json --tools globalcheck --runs 1 --no-jitter --sanitize-timeout 30 --json "$O/limits-$m.json" -- /tmp/limits $m
done
echo "\$ RACEGATE_GLOBALCHECK_BUDGET_MB=64 (budget mode)"
RACEGATE_GLOBALCHECK_BUDGET_MB=64 run "$RG" gate --baseline /tmp/nb-budget64.json --tools globalcheck --runs 1 --no-jitter --sanitize-timeout 30 --json "$O/limits-budget64.json" -- /tmp/limits budget
for m in named_ok named_partial many_barriers huge_grid volatile_handoff; do
  run "$RG" sanitize --tool globalcheck --timeout 30 --save-xml "$O/fixtures/limits_$m.jsonl" --json "$O/fixtures/limits_$m.json" -- /tmp/limits $m
done
echo "\$ RACEGATE_GLOBALCHECK_BUDGET_MB=64 (budget mode)"
RACEGATE_GLOBALCHECK_BUDGET_MB=64 run "$RG" sanitize --tool globalcheck --timeout 30 --save-xml "$O/fixtures/limits_budget64.jsonl" --json "$O/fixtures/limits_budget64.json" -- /tmp/limits budget
} > "$O/limits.txt" 2>&1
ps -eo pid,stat,etime,cmd | grep -E 'racegate|compute-sanitizer|limits' | grep -v -E 'grep|h200_limits' > "$O/leftovers.txt"
cd "$O" && tar czf limits.tar.gz limits-*.json fixtures && rm -rf limits-*.json fixtures
