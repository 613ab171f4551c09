#!/usr/bin/env bash
# The HTML viewer against inferno's SVG on the same synthetic folded profiles, in the same
# headless Chromium, in the same run. Prints one table row per size with the ratios.
#
#   bench/viewer/run.sh [SIZES...]      default sizes: 10000 55000 100000 1000000
#
# Needs: node 20 with `npm ci` done in web/, /usr/bin/chromium, inferno-flamegraph on PATH
# (or in ~/.cargo/bin). The SVG is written with --minwidth 0 so that, like the SVG
# flame graphs users open, it holds every frame; SVGs that do not show within
# SVG_TIMEOUT seconds (default 120) are reported as timeouts. kiln's figures are medians of
# three fresh browsers; the SVG is opened once (it takes up to minutes). Beside wall time,
# the CPU time the browser spent up to "shown" (less sensitive to a shared machine's load).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export PATH="$PATH:$HOME/.cargo/bin"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 55000 100000 1000000)
work="${WORK:-$(mktemp -d /tmp/kiln-bench-viewer.XXXXXX)}"
svg_timeout="${SVG_TIMEOUT:-120}"
command -v inferno-flamegraph >/dev/null || { echo "inferno-flamegraph not found (cargo install inferno)" >&2; exit 1; }

target="${CARGO_TARGET_DIR:-$root/target}"
(cd "$root" && cargo build -q --release -p kiln-viewer --example folded2html)
folded2html="$target/release/examples/folded2html"

printf '%-9s %9s %9s | %9s %9s %7s | %8s %8s | %8s %9s | %8s %8s | %s\n' \
  frames html_MB svg_MB kiln_show svg_show ratio kiln_cpu svg_cpu kiln_zoom svg_zoom kiln_MiB svg_MiB notes
for n in "${sizes[@]}"; do
  f="$work/p$n.folded"
  [ -s "$f" ] || node "$here/gen-folded.mjs" "$n" "$f"
  "$folded2html" "$f" "$work/p$n.html" --title "synthetic $n frames"
  inferno-flamegraph --minwidth 0 --title "synthetic $n frames" "$f" > "$work/p$n.svg"
  svg_frames=$(grep -o '<g>' "$work/p$n.svg" | wc -l)
  k=$(REPEAT=3 node "$here/measure.mjs" 60 "$work/p$n.html")
  s=$(node "$here/measure.mjs" "$svg_timeout" "$work/p$n.svg")
  node -e '
    const [n, k, s, html, svg, svgFrames] = process.argv.slice(1);
    const K = JSON.parse(k), S = JSON.parse(s);
    const mb = (p) => (require("fs").statSync(p).size / 1e6).toFixed(1);
    const ms = (x) => (x == null ? "timeout" : x < 100 ? x.toFixed(1) : Math.round(x).toString());
    const ratio = K.show != null && S.show != null ? (S.show / K.show).toFixed(1) + "x" : S.show == null ? ">" + (Number(process.env.SVG_TIMEOUT || 120) * 1000 / K.show).toFixed(0) + "x" : "-";
    const notes = [K.note.startsWith("failed") ? "kiln " + K.note : "", S.note ? "svg " + S.note : "", "svg frames " + (svgFrames - 1)].filter(Boolean).join("; ");
    console.log([n.padEnd(9), mb(html).padStart(9), mb(svg).padStart(9), "|", ms(K.show).padStart(9), ms(S.show).padStart(9), ratio.padStart(7), "|",
      ms(K.cpu).padStart(8), ms(S.show == null ? null : S.cpu).padStart(8), "|",
      ms(K.zoom).padStart(8), ms(S.zoom).padStart(9), "|", String(K.peak).padStart(8), String(S.peak).padStart(8), "|", notes].join(" "));
  ' "$n" "$k" "$s" "$work/p$n.html" "$work/p$n.svg" "$svg_frames"
done
echo "(times in ms; cpu = the browser's CPU time up to 'shown'; MiB = peak PSS of the browser; load $(cut -d' ' -f1-3 /proc/loadavg); work dir $work)" >&2
