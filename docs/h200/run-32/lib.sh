# Run 32's helpers (sourced after docs/h200/run-30/lib.sh): the end every call shares.
# pack NAME: stop the monitors and the deadline watcher $W, date the end, pack "$OUT/NAME" into
# "$OUT/NAME.tgz" whatever happened, and list what goes back.
pack() {
  stop_monitors
  pkill -P "$W" 2>/dev/null; kill "$W" 2>/dev/null
  date -u >> "$A/env.txt"
  tar czf "$OUT/$1.tgz" -C "$OUT" "$1" && rm -rf "$A"
  ls -la "$OUT"
}
# unpack: the carried .gpu holds the release binaries xz-compressed (the 64 MiB carry limit):
# racegate into .gpu/racegate, and the nextest bundle into target/bundle as ci/bundle left it.
unpack() {
  local x="xz -dc"; command -v xz >/dev/null || x="python3 -c 'import lzma,sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())'"
  mkdir -p target/bundle
  eval "$x .gpu/racegate.xz" > .gpu/racegate && chmod +x .gpu/racegate && cp .gpu/racegate target/bundle/racegate
  if [ -f .gpu/cargo-nextest.xz ]; then
    eval "$x .gpu/cargo-nextest.xz" > target/bundle/cargo-nextest && chmod +x target/bundle/cargo-nextest
    mv .gpu/racegate-tests.tar.zst target/bundle/
  fi
  ls -la .gpu target/bundle
}
# left: seconds to the call's end ($END, epoch seconds) less a margin for the pack
# (at least 1: `timeout 0` would mean no deadline at all)
left() { local s=$(( END - $(date +%s) - 20 )); echo $(( s > 0 ? s : 1 )); }
# begin NAME: the start every call shares: A=$OUT/NAME, RG, the 570 s deadline (DEADLINE=S for less) ($END, the
# watcher $W that kills what is left), the monitors, env.txt, and the carried binaries unpacked.
begin() {
  A="$OUT/$1"; mkdir -p "$A"; RG=$PWD/.gpu/racegate
  local d=${DEADLINE:-570}  # shorter where the session's device time is short
  END=$(( $(date +%s) + d ))
  ( sleep "$d"; pkill -f racegate; pkill -f compute-sanitizer; pkill -f cargo-nextest ) >/dev/null 2>&1 &
  W=$!
  monitors
  env_txt
  step unpack unpack
}
