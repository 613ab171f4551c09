#!/bin/bash
# Planted: one thread saturated, in Python. A single-threaded asyncio HTTP server (Debian's
# python3) whose handler spends ~3 ms of pure-Python CPU in render_report(); 16 connections
# wait for its one thread.
# Oracle: py-spy (record, 100 Hz, --nonblocking, raw folded stacks) over the window: the
# share of samples in render_report and how often the main thread was active; and the main
# thread's CPU (/proc).
. "$(dirname "$0")/../../lib.sh"

PYSPY=$(command -v py-spy || command -v /opt/kiln-py-spy/bin/py-spy || true)
[ -n "$PYSPY" ] || { say "py-spy not found (pip install py-spy)"; exit 1; }
start_server server "$PY" "$CASE_DIR/server.py"

oracle_window() {
  "$PYSPY" record --nonblocking -r 100 -d "$D" -f raw -o "$WORK/pyspy.folded" -p "$SERVER_PID" > "$WORK/pyspy.log" 2>&1
}
oracle_end() {
  oracle_py "$D" << 'PY'
d = float(ARGS[0])
stacks = {}
for line in open(os.path.join(WORK, "pyspy.folded")):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    if stack:
        stacks[stack] = stacks.get(stack, 0) + int(n)
total = sum(stacks.values())
hot = sum(n for s, n in stacks.items() if "render_report" in s)
f = {
    "render_report_pct_of_samples": round(100 * hot / total, 1) if total else None,
    "main_thread_active_pct": round(100 * total / (100 * d), 1),
    "main_thread_cpu_pct": PROC.get("hottest_thread_cpu_pct"),
    "main_thread_busy_pct": PROC.get("busiest_thread_busy_pct"),
    "threads": PROC.get("threads"),
}
text = (f"py-spy record (100 Hz, {d:.0f} s, active samples only): {total} samples = the main thread active "
        f"{f['main_thread_active_pct']}% of the time; {f['render_report_pct_of_samples']}% of them in render_report\n"
        f"/proc: the main thread on CPU {f['main_thread_cpu_pct']}% of the time, on CPU or runnable {f['main_thread_busy_pct']}%\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
