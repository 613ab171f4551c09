#!/bin/bash
# Planted: work serialised on one thread, in Python. A thread-per-connection HTTP server
# (Debian's python3, ThreadingHTTPServer, keep-alive) whose handlers put each request's
# pricing (~1.5 ms of pure-Python CPU in price_order()) on a queue.Queue and wait on a
# threading.Event for the one worker thread that prices them one at a time.
# (The server is the test suite's: crates/findings/tests/programs/handoff.py.)
# Oracle: /proc, the worker thread's CPU (the process's hottest thread, from
# /proc/PID/task/*/stat over the window); py-spy, where each thread is at mid-window (the
# worker in price_order, the handlers in Event.wait).
. "$(dirname "$0")/../../lib.sh"

start_ready_server server "$PY" "$CASE_DIR/../../../../crates/findings/tests/programs/handoff.py"

oracle_window() {
  sleep $((D / 2))
  py-spy dump --nonblocking -p "$SERVER_PID" > "$WORK/pyspy.dump" 2>&1 || true
}
oracle_end() {
  oracle_py << 'PY'
p = os.path.join(WORK, "pyspy.dump")
dump = open(p).read() if os.path.exists(p) else ""
threads = dump.split("\nThread ")
f = {
    "worker_cpu_pct": PROC.get("hottest_thread_cpu_pct"),
    "hottest_thread": PROC.get("hottest_thread"),
    "threads_in_price_order": sum(1 for t in threads if "price_order" in t),
    "threads_waiting_in_event_wait": sum(1 for t in threads if "wait (threading.py" in t and "do_GET" in t),
}
text = (f"/proc over the window: the hottest thread {f['hottest_thread']!r} on a CPU {f['worker_cpu_pct']}% of the time\n"
        f"py-spy dump at mid-window: {f['threads_in_price_order']} thread(s) in price_order, "
        f"{f['threads_waiting_in_event_wait']} handler(s) in Event.wait\n\n{dump[:3000]}\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
