#!/bin/bash
# Planted: contention on the GIL. A thread-per-connection HTTP server (Debian's python3,
# ThreadingHTTPServer, keep-alive) whose handler spends ~2 ms of pure-Python CPU in
# score_candidates(); 16 threads take turns at the interpreter's lock, so the process uses
# one CPU of two while the threads wait.
# Oracle: bpftrace, the time the server's threads spend in futex(2) (the GIL's condition
# variable) per second; /proc, the process's CPU.
. "$(dirname "$0")/../../lib.sh"

start_server server "$PY" "$CASE_DIR/server.py"

oracle_begin() { bpftrace_sampler sys "$FINDINGS/bt/syscall_time.bt" "$SERVER_PID"; }
oracle_window() {
  sleep $((D / 2))
  py-spy dump --nonblocking -p "$SERVER_PID" > "$WORK/pyspy.dump" 2>&1 || true
}
oracle_end() {
  oracle_py 16 << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
conns = int(ARGS[0])
futex = bpf_sum(s, "futex_ns") / 1e9
f = {
    "gil_wait_s_per_s": round(futex / secs, 2) if secs else None,
    "gil_wait_pct_of_thread_time": round(100 * futex / (conns * secs), 1) if secs else None,
    "process_cpu_pct": PROC.get("target_cpu_pct"),
    "cpus": PROC.get("cpus"),
}
dump = open(os.path.join(WORK, "pyspy.dump")).read() if os.path.exists(os.path.join(WORK, "pyspy.dump")) else ""
text = (f"bpftrace over {secs:.1f} s: the server's threads waited in futex (the GIL) {f['gil_wait_s_per_s']} s per s = "
        f"{f['gil_wait_pct_of_thread_time']}% of the {conns} connection threads' time\n"
        f"/proc: the process used {f['process_cpu_pct']}% of a core on a {f['cpus']}-CPU machine\n\n"
        f"py-spy dump at mid-window:\n{dump[:3000]}\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
