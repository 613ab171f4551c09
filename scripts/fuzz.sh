#!/usr/bin/env bash
# Runs every cargo-fuzz target briefly: scripts/fuzz.sh [SECONDS-PER-TARGET]
# (KILN_FUZZ_TARGETS="a b" runs only those).
# On a crash it prints the fuzzer's whole report (stack, reason) and the crashing input in
# base64, so a crash found on another machine can be replayed with
# `base64 -d > x && cargo +nightly fuzz run TARGET x`.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${1:-20}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in ${KILN_FUZZ_TARGETS:-$(cargo +nightly fuzz list)}; do
  echo "fuzz: $t for ${secs}s" >&2
  mkdir -p "corpus/$t" "artifacts/$t"
  before=$(ls "artifacts/$t" | wc -l)
  # cargo fuzz exits non-zero on a crash: its status, not grep's, decides.
  set +e
  cargo +nightly fuzz run "$t" "corpus/$t" ../fuzz/seeds -- -max_total_time="$secs" -rss_limit_mb=2048 >"$log" 2>&1
  status=$?
  set -e
  grep -E "^(Done|INFO: -max_total_time)" "$log" || true
  if [ "$status" -ne 0 ]; then
    echo "fuzz: $t failed (exit $status); the fuzzer's report:" >&2
    # The report starts at the first sanitizer/fuzzer error line; the lines before are
    # coverage progress.
    awk '/^==[0-9]+==|^thread .* panicked|^memory allocation|^ERROR|AddressSanitizer|deadly signal/ {on=1} on' "$log" | head -150 >&2
    echo "fuzz: the last lines before it:" >&2
    grep -v -E "^#[0-9]+" "$log" | tail -30 >&2
    for a in "artifacts/$t"/*; do
      [ -f "$a" ] || continue
      echo "fuzz: input $a (base64):" >&2
      base64 -w 0 "$a" | head -c 20000 >&2
      echo >&2
    done
    [ "$(ls "artifacts/$t" | wc -l)" -gt "$before" ] || echo "fuzz: $t wrote no input to artifacts/$t/ (the crash happened outside an input's run)" >&2
    exit 1
  fi
done
