#!/bin/bash
# Planted: a program run per request. 16 connection threads; every request runs
# `/bin/sh -c 'date +%s'` (posix_spawn) and waits for it (waitpid): the children take the
# CPUs, outside the server's own figures, and every request waits for one.
# Oracle: bpftrace, the processes the server started and its time inside wait4 per second;
# /proc's cutime+cstime of the server (the children's CPU) in the universal sampler.
. "$(dirname "$0")/../../lib.sh"

c_server "$CASE_DIR/fork.bt"
oracle_end() {
  oracle_py << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
forks, req = bpf_sum(s, "forks"), bpf_sum(s, "write_calls")
waited = bpf_sum(s, "wait4_ns") / 1e9
f = {
    "forks_per_request": round(forks / req, 2) if req else None,
    "forks_per_s": round(forks / secs, 1) if secs else None,
    "wait4_pct_of_request_time": round(100 * waited / (16 * secs), 1) if secs else None,
    "children_cpu_pct": PROC.get("children_cpu_pct"),
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"bpftrace over {secs:.1f} s: {forks} processes started by the server for {req} responses "
        f"({f['forks_per_request']} per response); {waited:.1f} s inside wait4, "
        f"{f['wait4_pct_of_request_time']}% of the 16 connections' time\n"
        f"/proc: the children's CPU (cutime+cstime) {f['children_cpu_pct']}% of a core; the server's own {f['server_cpu_pct']}%\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
