#!/usr/bin/env bash
# Runs every cargo-fuzz target briefly: scripts/fuzz.sh [SECONDS-PER-TARGET]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${1:-20}
for t in $(cargo +nightly fuzz list); do
  echo "fuzz: $t for ${secs}s" >&2
  mkdir -p "corpus/$t"
  # cargo fuzz exits non-zero on a crash: its status, not grep's, decides.
  set +e
  cargo +nightly fuzz run "$t" "corpus/$t" ../fuzz/seeds -- -max_total_time="$secs" -rss_limit_mb=2048 2>&1 \
    | grep -E "^(Done|INFO: -max_total_time|==[0-9]+==|SUMMARY|thread '.*' panicked|  (left|right):)"
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" -ne 0 ]; then
    echo "fuzz: $t failed (exit $status); the input is in fuzz/artifacts/$t/" >&2
    exit 1
  fi
done
