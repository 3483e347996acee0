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
