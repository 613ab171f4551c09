#!/usr/bin/env bash
# The flame chart (time order) of a recording: kiln's HTML viewer against inferno's
# `--flamechart` SVG of the same samples, in the same headless Chromium, in the same run.
#
#   bench/viewer/chart.sh [SECONDS [HZ [CPUS [THREADS]]]]     default: 60 999 2 6
#
# The recording is synthetic (bench/viewer/gen-recording.mjs: CPUS busy CPUs sampled at HZ
# for SECONDS, THREADS threads taking turns, stacks that change as a program's do), so it
# is the same on every machine. kiln: first drawing, and pan/zoom frames (bench/viewer/
# chart.mjs, medians of 3 fresh browsers). inferno: its SVG (written with --minwidth 0, so
# it holds every frame, like the SVGs users open) shown and zoomed by measure.mjs, within
# SVG_TIMEOUT seconds (default 120).
#
# Needs: node 20 with `npm ci` done in web/, /usr/bin/chromium, inferno-flamegraph on PATH
# (or in ~/.cargo/bin).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export PATH="$PATH:$HOME/.cargo/bin"
seconds="${1:-60}" hz="${2:-999}" cpus="${3:-2}" threads="${4:-6}"
work="${WORK:-$(mktemp -d /tmp/kiln-bench-chart.XXXXXX)}"
svg_timeout="${SVG_TIMEOUT:-120}"
command -v inferno-flamegraph >/dev/null || { echo "inferno-flamegraph not found (cargo install inferno)" >&2; exit 1; }
target="${CARGO_TARGET_DIR:-$root/target}"
(cd "$root" && cargo build -q --release -p kiln-viewer --example recording2html)

rec="$work/rec.tsv"
node "$here/gen-recording.mjs" "$seconds" "$hz" "$cpus" "$threads" "$rec"
"$target/release/examples/recording2html" "$rec" "$work/rec.html" --flamechart
# inferno's flame chart: one folded line per sample in time order, the thread as root.
sort -n -k1,1 "$rec" | awk -F'\t' '{print $2";"$4" 1"}' > "$work/rec.folded"
inferno-flamegraph --flamechart --minwidth 0 --title "synthetic recording" "$work/rec.folded" > "$work/rec.svg"
k=$(REPEAT=3 node "$here/chart.mjs" "$work/rec.html")
s=$(node "$here/measure.mjs" "$svg_timeout" "$work/rec.svg")
node -e '
  const [k, s, html, svg] = process.argv.slice(1);
  const K = JSON.parse(k), S = JSON.parse(s);
  const fs = require("fs");
  const mb = (p) => (fs.statSync(p).size / 1e6).toFixed(1);
  const ms = (x) => (x == null ? "timeout" : x < 100 ? x.toFixed(1) : Math.round(x).toString());
  console.log(`samples ${K.samples} on ${K.lanes} threads, ${K.boxes} boxes; html ${mb(html)} MB, svg ${mb(svg)} MB`);
  console.log(`kiln:    shown ${ms(K.show)} ms (runs ${K.shows.join(", ")}); pan/zoom frame median ${ms(K.frameMedian)} ms, p95 ${ms(K.frameP95)} ms; ${K.fps.toFixed(0)} frames/s driven by requestAnimationFrame`);
  console.log(`inferno: shown ${ms(S.show)} ms; zoom ${ms(S.zoom)} ms${S.note ? " (" + S.note + ")" : ""}`);
  if (K.show != null) console.log(`ratio (shown): ${S.show == null ? ">" + (Number(process.env.SVG_TIMEOUT || 120) * 1000 / K.show).toFixed(0) : (S.show / K.show).toFixed(1)}x`);
' "$k" "$s" "$work/rec.html" "$work/rec.svg"
echo "(work dir $work)" >&2
