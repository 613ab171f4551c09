#!/bin/bash
# Planted: a program run per request, in Python. A ThreadingHTTPServer (Debian's python3,
# keep-alive) whose handler runs `date +%s` for each answer (stamp_receipt:
# subprocess.run, its output captured through a pipe) and waits for it; 16 connections.
# (The server is the test suite's: crates/findings/tests/programs/spawn_per_request.py.)
# Oracle: bpftrace, the processes the server started and its time inside wait4 per second,
# its sendto(2) calls (two per response); /proc's cutime+cstime of the server (the
# children's CPU) in the universal sampler.
. "$(dirname "$0")/../../lib.sh"

start_server server "$PY" "$ROOT/crates/findings/tests/programs/spawn_per_request.py"

oracle_begin() { bpftrace_sampler sys "$CASE_DIR/fork.bt" "$SERVER_PID"; }
oracle_end() {
  oracle_py << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
forks, responses = bpf_sum(s, "forks"), bpf_sum(s, "sendto_calls") / 2
waited = bpf_sum(s, "wait4_ns") / 1e9
f = {
    "forks_per_request": round(forks / responses, 2) if responses else None,
    "forks_per_s": round(forks / secs, 1) if secs else None,
    "wait4_pct_of_request_time": round(100 * waited / (16 * secs), 1) if secs else None,
    "children_cpu_pct": PROC.get("children_cpu_pct"),
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"bpftrace over {secs:.1f} s: {forks} processes started by the server for {responses:.0f} responses "
        f"({f['forks_per_request']} per response); {waited:.1f} s inside wait4, "
        f"{f['wait4_pct_of_request_time']}% of the 16 connections' time\n"
        f"/proc: the children's CPU (cutime+cstime) {f['children_cpu_pct']}% of a core; the server's own {f['server_cpu_pct']}%\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
