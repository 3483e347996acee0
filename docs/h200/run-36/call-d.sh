#!/usr/bin/env bash
# Run 36, call D (2026-12-06, after call C): the whole suite from the nextest archive (of
# 3ea63d8: call C's two failures fixed) at another checkout path, alone, under the session's
# last device minutes. The pack is made whatever happens (DEADLINE=S).
set -u
. docs/h200/run-30/lib.sh
. docs/h200/run-32/lib.sh
begin d
suite() {
  E=$(mktemp -d)/elsewhere; mkdir -p "$E"
  cp -a . "$E/" && cd "$E" &&
    INSTA_WORKSPACE_ROOT=$PWD target/bundle/cargo-nextest nextest run --no-fail-fast \
      --archive-file target/bundle/racegate-tests.tar.zst --workspace-remap . --profile ci
  echo "suite exit $?"
}
step suite timeout "${SUITE_S:-222}" bash -c "$(declare -f suite); suite"
pack d
