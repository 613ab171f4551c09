#!/bin/sh
# kiln's AMQP framing against amq-protocol (lapin's codec), in one process: criterion
# times both on the frames kiln's load exchanges with a broker (basic.publish + content
# header + body, basic.deliver + content header + body, basic.ack both ways), after
# checking that both write the same bytes and read the same values.
#
#   bench/amqp/codec.sh [SECONDS-PER-BENCHMARK]      (default 3)
#
# Prints each benchmark's median time per message and the amq-protocol/kiln ratio (above
# 1: kiln is faster). Builds bench/amqp/codec (outside kiln's workspace) into kiln's
# target directory.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-3}
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
out="$CARGO_TARGET_DIR/criterion"
rm -rf "$out/publish_ encode basic.publish + header + body" "$out/deliver_ decode basic.deliver + header + body" "$out/ack_ basic.ack"
echo "# $(date -u +%Y-%m-%d) $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
(cd "$here/codec" && cargo bench --locked -q --bench codec -- --warm-up-time 1 --measurement-time "$secs" >&2)
python3 - "$out" <<'PY'
import json, os, sys
root = sys.argv[1]
rows = {}
for group in sorted(os.listdir(root)):
    gdir = os.path.join(root, group)
    for dirpath, _, files in os.walk(gdir):
        if "estimates.json" in files and dirpath.endswith(os.sep + "new"):
            bench = json.load(open(os.path.join(dirpath, "benchmark.json")))
            est = json.load(open(os.path.join(dirpath, "estimates.json")))
            rows[(bench["group_id"], bench["function_id"], bench.get("value_str"))] = est["median"]["point_estimate"]
print(f"{'benchmark':58} {'kiln ns':>9} {'amq-protocol ns':>16} {'ratio':>6}")
for (group, fn, val), ns in sorted(rows.items()):
    if not fn.startswith("kiln"):
        continue
    name = group.split(":")[0] + (f" {val} B" if val else "") + (fn[4:] and f" ({fn[5:]})")
    for other in ("amq-protocol", "amq-protocol, frames made once"):
        key = (group, other + fn[4:], val)
        if key in rows:
            label = name if other == "amq-protocol" else name + ", frames made once"
            print(f"{label:58} {ns:9.1f} {rows[key]:16.1f} {rows[key] / ns:6.2f}")
PY
