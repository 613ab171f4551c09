#!/usr/bin/env bash
# Installs what kiln needs (Debian 12, as root), builds it, and runs its main job end to
# end: profile a workload under load and render the flame graphs, in ./kiln-demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export PATH="$HOME/.cargo/bin:/usr/local/go/bin:$PATH"
cargo build --release --locked -p kiln 2>/dev/null || cargo build --release -p kiln
kiln=target/release/kiln
out=kiln-demo
mkdir -p "$out"
cc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -pthread \
  examples/workload/workload.c -o "$out/workload"

echo "== perf record of the demo workload (5 s, 999 Hz), collapsed and rendered by kiln" >&2
perf record -q -F 999 -g -o "$out/perf.data" -- "$out/workload" 5 2 >/dev/null
perf script -i "$out/perf.data" > "$out/perf.txt"
"$kiln" collapse "$out/perf.txt" -o "$out/cpu.folded"
"$kiln" flamegraph --title "kiln demo: CPU" "$out/cpu.folded" -o "$out/cpu.svg"
"$kiln" flamegraph --title "kiln demo: CPU" "$out/cpu.folded" -o "$out/cpu.html"
if "$kiln" record --help >/dev/null 2>&1; then
  echo "== kiln record of the same workload, no perf script in between" >&2
  "$kiln" record -F 999 -o "$out/record.svg" -- "$out/workload" 5 2 >/dev/null || \
    echo "kiln record failed; see above" >&2
fi
echo "kiln: wrote $(ls "$out"/*.svg "$out"/*.html 2>/dev/null | tr '\n' ' ')" >&2
