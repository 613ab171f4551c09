#!/bin/bash
# Planted: publishers blocked by the broker's memory alarm. A private RabbitMQ (Debian's
# package, bench/amqp/broker.sh) whose memory high watermark is 250 MB; two publishers
# send 20 kB messages as fast as they can into one queue, one consumer takes 200 msg/s
# (-R 200): the queue fills the node's memory within a second, the alarm blocks every
# publishing connection (connection.blocked), and the consumer drains the backlog.
# Oracle: the broker's own account, `rabbitmqctl eval 'rabbit_alarm:get_alarms().'`, one
# call after another through the window (each takes a few seconds: an Erlang VM starts
# for it): the share of the answers inside the window that name the memory alarm.
. "$(dirname "$0")/../../lib.sh"

start_rabbitmq "vm_memory_high_watermark.absolute = 250MB"

oracle_window() {
  local i=0 t1
  t1=$(cat "$WORK/t1")
  while [ "$(mono)" -lt $((t1 - 1000000000)) ] && [ $i -lt 20 ]; do
    snap "$WORK/alarms.$i" rmqctl eval 'rabbit_alarm:get_alarms().'
    i=$((i + 1))
  done
}
oracle_end() {
  oracle_py << 'PY'
answers = []
for name in sorted(os.listdir(WORK)):
    if name.startswith("alarms."):
        t, text = read_snap(os.path.join(WORK, name))
        if t is not None and T0 <= t <= T1:
            answers.append((t, text.strip()))
answers.sort()
if not answers:
    write_oracle(OUT, "rabbitmqctl eval gave no answer inside the window\n", {})
    sys.exit(0)
memory = sum(1 for _, a in answers if "memory" in a)
f = {
    "alarm_answers": len(answers),
    "memory_alarm_answers": memory,
    "alarm_share_pct": round(100 * memory / len(answers), 1),
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"rabbit_alarm:get_alarms(), {len(answers)} answers inside the window: {memory} name the memory alarm\n"
        + "".join(f"  at {(t - T0) / 1e9:5.1f} s: {a}\n" for t, a in answers))
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  load amqp -h "amqp://guest:guest@127.0.0.1:$SERVER_PORT" -x 2 -y 1 -R 200 -s 20000 -u big-orders
