#!/bin/bash
# kiln run over several hosts: hosts made here as network namespaces (a bridge, veth pairs,
# 10.200.S.N), Debian's sshd in each with a key made here, a private mosquitto on the
# bridge's address. As root.
#
#   bench/hosts/run.sh [SECONDS] [RATE]        (default 10 s, 2000 msg/s)
#
# 1. Agent overhead per message: the same MQTT load (10 publishers, one message every
#    10,000/RATE ms each: RATE msg/s, QoS 1, 64 bytes) run by kiln run in one process, then
#    by one agent on another host, then by two agents (each the whole load): the CPU of
#    every process the run takes (kiln and its ssh clients; the agents and their sshd
#    sessions on the hosts) per message the broker received over the whole run.
# 2. Merge exactness: the two-agent run's merged latency histograms against the sum of its
#    agents' own, bucket by bucket (bench/hosts/check).
# 3. Clock offsets: a process recorded on hosts whose CLOCK_MONOTONIC is shifted by a time
#    namespace (0, +1,000 s, −1,000 s, +86,400 s): the offset kiln measured minus the one
#    injected, against the uncertainty it reported.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-10}
rate=${2:-2000}
kiln=${KILN:-$root/target/release/kiln}
[ -x "$kiln" ] || { echo "build kiln first: cargo build --release -p kiln (or set KILN)" >&2; exit 1; }
# What the stored runs say (bench/hosts/check), built into the workspace's target directory.
check=$root/target/release/kiln-bench-hosts-check
cargo build --release -q --manifest-path "$here/check/Cargo.toml" --target-dir "$root/target"
dir=$(mktemp -d /tmp/kiln-bench-hosts.XXXXXX)
tag=b$$
br=kb$tag
offsets=(0 0 1000 -1000 86400)
nh=${#offsets[@]}
mpid=
cleanup() {
  for i in $(seq 0 $((nh - 1))); do
    for p in $(ip netns pids "kiln-$tag-$i" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
    ip netns del "kiln-$tag-$i" 2>/dev/null || true
  done
  ip link del "$br" 2>/dev/null || true
  [ -z "$mpid" ] || kill "$mpid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
# A free 10.200.S.0/24.
s=$((20 + $$ % 200))
while ip -o -4 addr show | grep -q "inet 10.200.$s\."; do s=$(((s + 1) % 230 + 20)); done
ip link add "$br" type bridge
ip addr add "10.200.$s.1/24" dev "$br"
ip link set "$br" up
mkdir -p /run/sshd "$dir/agents"
ssh-keygen -q -t ed25519 -N '' -f "$dir/id"
ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key"
cp "$dir/id.pub" "$dir/authorized_keys"
: > "$dir/known_hosts"
ports=()
for i in $(seq 0 $((nh - 1))); do
  ns=kiln-$tag-$i
  ip netns add "$ns"
  ip link add "kv$tag-$i" type veth peer name "ki$tag-$i"
  ip link set "ki$tag-$i" netns "$ns"
  ip link set "kv$tag-$i" master "$br"
  ip link set "kv$tag-$i" up
  ip netns exec "$ns" ip addr add "10.200.$s.$((i + 2))/24" dev "ki$tag-$i"
  ip netns exec "$ns" ip link set "ki$tag-$i" up
  ip netns exec "$ns" ip link set lo up
  port=$((30000 + $$ % 20000 + i))
  ports+=("$port")
  printf 'Port %s\nListenAddress 10.200.%s.%s\nHostKey %s\nPidFile %s\nAuthorizedKeysFile %s\nStrictModes no\nUsePAM no\nPasswordAuthentication no\nPermitRootLogin prohibit-password\nLogLevel ERROR\n' \
    "$port" "$s" "$((i + 2))" "$dir/host_key" "$dir/sshd$i.pid" "$dir/authorized_keys" > "$dir/sshd$i.conf"
  if [ "${offsets[$i]}" = 0 ]; then
    ip netns exec "$ns" /usr/sbin/sshd -f "$dir/sshd$i.conf"
  else
    ip netns exec "$ns" unshare --time --monotonic="${offsets[$i]}" /usr/sbin/sshd -f "$dir/sshd$i.conf"
  fi
  echo "[10.200.$s.$((i + 2))]:$port $(cut -d' ' -f1,2 "$dir/host_key.pub")" >> "$dir/known_hosts"
done
export KILN_SSH="ssh -i $dir/id -o UserKnownHostsFile=$dir/known_hosts -o BatchMode=yes -o LogLevel=ERROR"
dest() { echo "h$1=ssh://root@10.200.$s.$(($1 + 2)):${ports[$1]}"; }
mport=$((40000 + $$ % 20000))
printf 'listener %s 10.200.%s.1\nallow_anonymous true\nmax_connections -1\npersistence false\nsys_interval 1\n' "$mport" "$s" > "$dir/mosquitto.conf"
/usr/sbin/mosquitto -c "$dir/mosquitto.conf" > "$dir/mosquitto.log" 2>&1 &
mpid=$!
sleep 0.5
export KILN_STORE=$dir/runs.db
interval=$(awk -v r="$rate" 'BEGIN { printf "%g", 10 * 1000 / r }')
load=(load mqtt pub -h "10.200.$s.1" -p "$mport" -c 10 -I "$interval" -q 1 -s 64)

# CPU of every process a run takes, user+system: kiln itself and its ssh clients (which
# it waits for), measured by /usr/bin/time; on the agent hosts, the agents and their sshd
# sessions, which each host's sshd reaps: the growth of its children's CPU over the run.
reaped() { # the sshd of hosts 0 and 1: their reaped children's CPU, ticks
  local t=0
  for i in 0 1; do
    t=$((t + $(awk '{print $16 + $17}' "/proc/$(cat "$dir/sshd$i.pid")/stat")))
  done
  echo "$t"
}
# Publishes the broker received, all clients and the whole run ($SYS, every second).
published() {
  mosquitto_sub -h "10.200.$s.1" -p "$mport" -C 1 -W 5 -t '$SYS/broker/publish/messages/received'
}

tck=$(getconf CLK_TCK)
one() { # NAME AGENT-ARGS…
  name=$1; shift
  local r0 p0
  r0=$(reaped)
  p0=$(published)
  /usr/bin/time -f '%U %S' -o "$dir/$name.time" \
    "$kiln" run --name "$name" --agent-dir "$dir/agents" --no-report -d "$secs" --warmup 2 -p "$mpid" "$@" "${load[@]}" \
    > "$dir/$name.out" 2> "$dir/$name.err" || { echo "kiln run $name failed:" >&2; cat "$dir/$name.err" >&2; }
  sleep 2 # the sessions reaped, the broker's count published
  "$kiln" runs show "$name" --json > "$dir/$name.json"
  python3 - "$dir/$name.json" "$name" "$(tail -1 "$dir/$name.time")" "$(( $(reaped) - r0 ))" "$tck" "$(( $(published) - p0 ))" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
h = m["headline"]
user, system = map(float, sys.argv[3].split())
kiln = user + system
agents = int(sys.argv[4]) / int(sys.argv[5])
msgs = int(sys.argv[6])
print(f"| {sys.argv[2]} | {h.get('throughput') or 0:,.0f} | {msgs:,} | {kiln:.2f} | {agents:.2f} | {(kiln + agents) / max(msgs, 1) * 1e6:.1f} | {h.get('p99_us') or 0:,.0f} |")
EOF
}

# Warm the agents' copies (the first start copies kiln to the hosts).
"$kiln" run --name warm --agent-dir "$dir/agents" --no-report -d 1 -p "$mpid" --agent "$(dest 0)" --agent "$(dest 1)" \
  load mqtt conn -h "10.200.$s.1" -p "$mport" -c 1 > /dev/null 2>&1 || true

echo "## kiln run over several hosts ($(date -u +%Y-%m-%d), $secs s measured, $rate msg/s per load, mosquitto)"
echo
echo "| load from | msg/s acked (measured) | messages (broker, whole run) | kiln + ssh CPU s | agents + sshd CPU s | CPU µs per message | p99 µs |"
echo "|---|---|---|---|---|---|---|"
one local
one agent1 --agent "$(dest 0)"
one agents2 --agent "$(dest 0)" --agent "$(dest 1)"
echo
echo "Merge exactness (two agents):"
"$check" "$dir/runs.db" agents2 | python3 -c '
import json, sys
r = json.load(sys.stdin)
for h in r["histograms"]:
    print("- {}: {:,} values from {} agents, buckets differing from the sum of the agents: {}".format(h["name"], h["values"], h["hosts"], h["bucket_difference"]))
'
echo
echo "Clock offsets (a process recorded on each host; CLOCK_MONOTONIC shifted by a time namespace):"
echo
echo "| host | injected s | measured s | error µs | reported uncertainty µs | drift ppm |"
echo "|---|---|---|---|---|---|"
for i in 2 3 4; do
  ns=kiln-$tag-$i
  ip netns exec "$ns" sleep 600 &
  tp=$!
  "$kiln" run --name "clock$i" --agent-dir "$dir/agents" --no-report -d 2 --host "$(dest "$i")" -p "h$i:$tp" \
    exec -- sleep 600 > "$dir/clock$i.out" 2>&1 || { cat "$dir/clock$i.out" >&2; }
  kill "$tp" 2>/dev/null || true
  "$kiln" runs show "clock$i" --json | python3 -c "
import json, sys
m = json.load(sys.stdin)
h = m['hosts'][0]
c = h['clock']
inj = ${offsets[$i]} * 1e9
print(f\"| {h['name']} | {${offsets[$i]}:+,} | {c['offset_ns'] / 1e9:+,.6f} | {(c['offset_ns'] - inj) / 1e3:+.1f} | {c['uncertainty_ns'] / 1e3:.1f} | {c.get('drift_ppm', 0):+.2f} |\")
"
done
