#!/bin/bash
# Planted: a broker's one thread saturated by fan-out. Debian's mosquitto (one thread, an
# epoll loop) with 20 publishers at 1,000 msg/s each on their own topics and 20
# subscribers to all of them: 400,000 deliveries a second asked of one thread, which
# spends them in write(2). It falls behind: subscribers' queues fill, messages are dropped.
# Oracle: /proc, the broker's only thread's CPU over the window (its hottest thread);
# the broker's own $SYS counters at the end (messages received and sent, publishes
# dropped).
. "$(dirname "$0")/../../lib.sh"

SERVER_PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$WORK/mosquitto.conf" << CONF
listener $SERVER_PORT 127.0.0.1
allow_anonymous true
persistence false
sys_interval 1
CONF
bg /usr/sbin/mosquitto -c "$WORK/mosquitto.conf"
SERVER_PID=$BG_PID
for _ in $(seq 100); do
  mosquitto_sub -p "$SERVER_PORT" -t '$SYS/broker/version' -C 1 -W 1 > /dev/null 2>&1 && break
  kill -0 "$SERVER_PID" 2> /dev/null || { say "mosquitto exited"; exit 1; }
  sleep 0.1
done

oracle_end() {
  mosquitto_sub -p "$SERVER_PORT" -v -W 4 -C 3 -t '$SYS/broker/messages/received' -t '$SYS/broker/messages/sent' \
    -t '$SYS/broker/publish/messages/dropped' > "$WORK/sys.txt" 2>&1 || true
  oracle_py << 'PY'
sys_lines = open(os.path.join(WORK, "sys.txt")).read()
def counter(name):
    for line in sys_lines.splitlines():
        k, _, v = line.partition(" ")
        if k.endswith(name):
            try:
                return int(v)
            except ValueError:
                return None
f = {
    "broker_thread_cpu_pct": PROC.get("hottest_thread_cpu_pct"),
    "threads": PROC.get("threads"),
    "sys_messages_received": counter("messages/received"),
    "sys_messages_sent": counter("messages/sent"),
    "sys_publish_dropped": counter("publish/messages/dropped"),
}
text = (f"/proc over the window: the broker's hottest thread on a CPU {f['broker_thread_cpu_pct']}% of the time\n"
        f"the broker's $SYS counters at the end (since it started): {sys_lines.strip()}\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  load mqtt pubsub -p "$SERVER_PORT" -c 20 --subscribers 20 -I 1 -q 0 -t 'bench/%i' --sub-topic 'bench/#'
