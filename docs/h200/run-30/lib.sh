# Shared helpers of run 30's calls (sourced; each call's script names what it runs).
# A="$OUT/<call>" and RG (the racegate binary) are set by the caller.
export LC_ALL=C
now() { python3 -c 'import time; print(f"{time.time():.3f}")'; }
step() { # name, then the command (run in a subshell); times each into steps.txt
  local name=$1; shift
  local s; s=$(now)
  echo "=== $name start $s" >> "$A/steps.txt"
  ( "$@" ) > "$A/$name.txt" 2>&1
  local rc=$?
  local e; e=$(now)
  echo "=== $name end $e rc $rc wall $(python3 -c "print(f'{$e - $s:.1f}')") s" >> "$A/steps.txt"
}
monitors() { # vmstat and GPU utilization beside the steps; `stop_monitors` ends them
  vmstat -t 1 > "$A/vmstat.txt" 2>&1 &
  MON_V=$!
  nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.memory --format=csv -lms 1000 > "$A/gpu-util.csv" 2>&1 &
  MON_G=$!
}
stop_monitors() { kill $MON_V $MON_G 2>/dev/null; }
env_txt() {
  { date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; compute-sanitizer --version; nproc; } > "$A/env.txt" 2>&1
}
TOOLS=racecheck,synccheck,memcheck,initcheck,globalcheck,sharedcheck,fencecheck
# The corpus gate as ci/h200_run.py --phases corpus runs it: name, then `env` assignments.
corpus() {
  local name=$1; shift
  ( cd examples/corpus && rm -f racegate-baseline.json
    env "$@" RACEGATE_TIMELINE="$A/timeline-$name.tsv" "$RG" gate --tools $TOOLS --trials 100 \
      --sanitize-timeout 20 --timeout 5 --sarif "$A/$name.sarif" --junit "$A/$name-junit.xml" --summary "$A/$name-summary.md"
    echo "gate exit $?" )
  python3 ci/check-corpus "$A/$name.sarif"
}
# The grading batch of runs 26-29: the 15 reduce submissions twice each, secret 20261202.
batch30() {
  B=$(mktemp -d)/batch30; mkdir -p "$B"
  local i=0 files=(harness/tests/submissions/reduce/*.cu)
  while [ $i -lt 30 ]; do
    cp "${files[$((i % ${#files[@]}))]}" "$B/s$(printf %02d $((i + 1)))_$(basename "${files[$((i % ${#files[@]}))]}")"
    i=$((i + 1))
  done
  echo 20261202 > "$B/../secret"
  ls "$B" >> "$A/env.txt"
}
grade30() { # name, then `env` assignments
  local name=$1; shift
  env "$@" RACEGATE_TIMELINE="$A/timeline-$name.tsv" "$RG" grade --exercise reduce "$B" \
    --secret-file "$B/../secret" --format json --output "$A/$name.json"
}
