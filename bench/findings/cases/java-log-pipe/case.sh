#!/bin/bash
# Planted: an access log written into a pipe whose reader is slow, in Java, behind a
# monitor. An HttpServer with a pool of 16 threads writes a 1 KiB line per request
# (logRequest, the suite's AccessLog.java) through one PrintStream into fd 3, a pipe to
# c-log-pipe's collector (~320 KiB/s): the thread that holds the stream's monitor waits
# for room in the pipe, the others wait for the monitor.
# The JVM runs with -XX:+PreserveFramePointer (README.md, JVM targets).
# Oracle: bpftrace, the server's time in write(2) per second, and two thread dumps (jcmd
# PID Thread.print): the pool's threads BLOCKED on the PrintStream or in its write.
. "$(dirname "$0")/../../lib.sh"

mkdir "$WORK/classes"
javac -d "$WORK/classes" "$ROOT/crates/findings/tests/programs/AccessLog.java"
start_server server bash -c 'exec "$0" -Dsun.net.httpserver.nodelay=true -XX:+PreserveFramePointer -Xms256m -Xmx256m -cp "$1" AccessLog /proc/self/fd/3 3> >(exec "$2" "$3")' \
  java "$WORK/classes" "$PY" "$CASE_DIR/../c-log-pipe/collector.py"

oracle_begin() { bpftrace_sampler sys "$FINDINGS/bt/syscall_time.bt" "$SERVER_PID"; }
oracle_window() {
  sleep $((D / 3))
  jcmd "$SERVER_PID" Thread.print > "$WORK/threads.1"
  sleep $((D / 3))
  jcmd "$SERVER_PID" Thread.print > "$WORK/threads.2"
  sleep $((D - 2 * (D / 3)))
}
oracle_end() {
  oracle_py 16 << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
conns = int(ARGS[0])
wrote = bpf_sum(s, "write_ns") / 1e9
logging = []
for i in (1, 2):
    dump = open(os.path.join(WORK, f"threads.{i}")).read().split("\n\n")
    pool = [t for t in dump if t.startswith('"pool-')]
    logging.append(100 * sum(1 for t in pool if "logRequest" in t) / max(1, len(pool)))
f = {
    "write_s_per_s": round(wrote / secs, 2) if secs else None,
    "pool_in_log_pct": round(sum(logging) / len(logging), 1),
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"bpftrace over {secs:.1f} s: {f['write_s_per_s']} s in write(2) per second (one writer at a time into the pipe)\n"
        f"jcmd Thread.print, two dumps: {f['pool_in_log_pct']}% of the pool's threads in logRequest (writing, or BLOCKED on the PrintStream)\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
