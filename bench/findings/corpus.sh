#!/bin/bash
# The findings corpus: small real servers, each with one planted cause of slowness and an
# oracle independent of kiln. Runs the cases one after another (never in parallel), then
# scores kiln's findings against what was planted and what the oracles measured.
#
#   bench/findings/corpus.sh [--quick] [CASE...]
#
# --quick: only the cases that need no JVM and no RabbitMQ. Results go to
# $FINDINGS_RESULTS (default: a new /tmp/kiln-findings-results.XXXXXX), one directory per
# case. KILN=/path/to/kiln (default: this tree's target/release/kiln). Prints the table
# and `named N of M (K contradicted)`; exits 0 whatever kiln found (it is a benchmark).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export KILN=${KILN:-$root/target/release/kiln}
quick=0
cases=()
for a in "$@"; do
  case $a in
    --quick) quick=1 ;;
    -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "corpus.sh: unknown option $a" >&2; exit 2 ;;
    *) cases+=("$a") ;;
  esac
done
if [ ${#cases[@]} -eq 0 ]; then
  for d in "$here"/cases/*/; do
    c=$(basename "$d")
    [ -x "$d/case.sh" ] || continue
    cases+=("$c")
  done
fi
if [ $quick = 1 ]; then
  keep=()
  for c in "${cases[@]}"; do
    lang=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("lang", ""))' "$here/cases/$c/expect.json" 2> /dev/null)
    case $lang in java | beam) ;; *) keep+=("$c") ;; esac
  done
  cases=("${keep[@]}")
fi
[ -x "$KILN" ] || { echo "corpus.sh: no kiln at $KILN (cargo build --release -p kiln, or set KILN)" >&2; exit 1; }
results=${FINDINGS_RESULTS:-$(mktemp -d /tmp/kiln-findings-results.XXXXXX)}
mkdir -p "$results"
echo "# findings corpus, $(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) CPUs, $(uname -r), kiln $("$KILN" --version 2>/dev/null | head -1)"
echo "# results in $results"
dirs=()
for c in "${cases[@]}"; do
  [ -x "$here/cases/$c/case.sh" ] || { echo "corpus.sh: no case $c" >&2; continue; }
  start=$(date +%s)
  echo "# $c ..." >&2
  "$here/cases/$c/case.sh" "$results/$c" > "$results/$c.log" 2>&1 ||
    echo "# $c: case.sh failed (exit $?), see $results/$c.log" >&2
  echo "# $c: $(($(date +%s) - start)) s" >&2
  dirs+=("$results/$c")
done
echo
/usr/bin/python3 "$here/score.py" "${dirs[@]}"
exit 0
