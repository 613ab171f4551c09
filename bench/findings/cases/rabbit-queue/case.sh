#!/bin/bash
# Planted: a queue growing behind slow consumers. A private RabbitMQ (Debian's package,
# bench/amqp/broker.sh, the JIT's perf map as README.md starts it); one publisher at 1,500
# msg/s into the named queue `slow-orders`, two consumers that spend 4 ms on each message
# (PerfTest's -L) with a prefetch of 20: they take ~500 msg/s, the queue grows ~1,000/s.
# Oracle: the broker's own count, `rabbitmqctl list_queues name messages_ready
# messages_unacknowledged consumers` at the window's start and end.
. "$(dirname "$0")/../../lib.sh"

port=$("$PY" -c '
import random, socket
for _ in range(200):
    p = random.randrange(20000, 40000)
    try:
        for q in (p, p + 1, p + 3, p + 20000):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        print(p); break
    except OSError:
        pass')
BROKER=$WORK/broker
mkdir -p "$BROKER"
case_cleanup() { "$ROOT/bench/amqp/broker.sh" stop "$BROKER" > /dev/null 2>&1 || true; }
SERVER_PID=$(BROKER_ERL_ARGS="+JPperf map" "$ROOT/bench/amqp/broker.sh" start "$BROKER" "$port" | tail -1)
SERVER_PORT=$port
[ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" || { say "the broker did not start"; exit 1; }
rmqctl() {
  HOME=$BROKER/home ERL_EPMD_PORT=$((port + 3)) ERL_EPMD_ADDRESS=127.0.0.1 \
    /usr/lib/rabbitmq/bin/rabbitmqctl -n kilnbench@localhost "$@"
}

oracle_window() {
  snap "$WORK/queues.0" rmqctl list_queues -q name messages_ready messages_unacknowledged consumers
  sleep $((D - 3))
  snap "$WORK/queues.1" rmqctl list_queues -q name messages_ready messages_unacknowledged consumers
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
(ta, a), (tb, b) = depth(os.path.join(WORK, "queues.0")), depth(os.path.join(WORK, "queues.1"))
q = "slow-orders"
secs = (tb - ta) / 1e9
f = {
    "queue_depth_start": a[q][0],
    "queue_depth_end": b[q][0],
    "queue_growth_per_s": round((b[q][0] - a[q][0]) / secs, 1),
    "unacked_end": b[q][1],
    "consumers": b[q][2],
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"rabbitmqctl list_queues at the window's start and end ({secs:.1f} s apart): {q} messages_ready "
        f"{f['queue_depth_start']} -> {f['queue_depth_end']} ({f['queue_growth_per_s']}/s), "
        f"{f['unacked_end']} unacknowledged, {f['consumers']} consumers\n\n"
        + open(os.path.join(WORK, "queues.0")).read() + open(os.path.join(WORK, "queues.1")).read())
write_oracle(OUT, text + "\n" + open(os.path.join(OUT, "proc.txt")).read(), f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  load amqp -h "amqp://guest:guest@127.0.0.1:$port" -x 1 -y 2 -r 1500 -L 4000 -q 20 -u slow-orders
