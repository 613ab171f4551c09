#!/bin/bash
# Planted: a queue growing behind slow consumers. A private RabbitMQ (Debian's package,
# bench/amqp/broker.sh, the JIT's perf map as README.md starts it); one publisher at 1,500
# msg/s into the named queue `slow-orders`, two consumers that spend 4 ms on each message
# (PerfTest's -L) with a prefetch of 20: they take ~500 msg/s, the queue grows ~1,000/s.
# Oracle: the broker's own count, `rabbitmqctl list_queues name messages_ready
# messages_unacknowledged consumers`, one call after another through the window (each takes
# a few seconds: an Erlang VM starts for it); the growth from the first to the last answer
# given inside the window.
. "$(dirname "$0")/../../lib.sh"

start_rabbitmq

oracle_window() {
  local i=0 t1
  t1=$(cat "$WORK/t1")
  while [ "$(mono)" -lt $((t1 - 1000000000)) ] && [ $i -lt 20 ]; do
    snap "$WORK/queues.$i" rmqctl list_queues -q name messages_ready messages_unacknowledged consumers
    i=$((i + 1))
  done
}
oracle_end() {
  oracle_py << 'PY'
def depth(p):
    t, text = read_snap(p)
    rows = {}
    for line in text.splitlines():
        w = line.split()
        if len(w) == 4 and w[0] != "name":
            rows[w[0]] = [int(x) for x in w[1:]]
    return t, rows
q = "slow-orders"
snaps = []
for name in sorted(os.listdir(WORK)):
    if name.startswith("queues."):
        t, rows = depth(os.path.join(WORK, name))
        if t is not None and T0 <= t <= T1 and q in rows:
            snaps.append((t, rows[q]))
snaps.sort()
if not snaps:
    write_oracle(OUT, "rabbitmqctl list_queues gave no answer inside the window\n", {})
    sys.exit(0)
(ta, a), (tb, b) = snaps[0], snaps[-1]
secs = (tb - ta) / 1e9
f = {
    "queue_depth_start": a[0],
    "queue_depth_end": b[0],
    "queue_growth_per_s": round((b[0] - a[0]) / secs, 1) if secs > 0 else None,
    "unacked_end": b[1],
    "consumers": b[2],
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"rabbitmqctl list_queues, {len(snaps)} answers inside the window, the first and last {secs:.1f} s apart: "
        f"{q} messages_ready {f['queue_depth_start']} -> {f['queue_depth_end']} ({f['queue_growth_per_s']}/s), "
        f"{f['unacked_end']} unacknowledged, {f['consumers']} consumers\n"
        + "".join(f"  at {(t - T0) / 1e9:5.1f} s: ready {r[0]}, unacked {r[1]}, consumers {r[2]}\n" for t, r in snaps))
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  load amqp -h "amqp://guest:guest@127.0.0.1:$SERVER_PORT" -x 1 -y 2 -r 1500 -L 4000 -q 20 -u slow-orders
