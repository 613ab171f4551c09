#!/bin/bash
# Planted: CPU starvation by a cgroup quota. The same thread-per-connection CPU server
# (~0.2 ms a request) in a cgroup whose cpu quota is 0.2 CPU (v1 cpu.cfs_quota_us 20000 of
# 100000; v2 cpu.max "20000 100000" where the v2 cpu controller is available).
# Oracle: the cgroup's own cpu.stat (periods throttled, time throttled) and schedstat.
. "$(dirname "$0")/../../lib.sh"

cc_build server "$FINDINGS/cases/common/cpu_server.c"
new_cgroup cpu cpu
if [ "$CG_VERSION" = v1 ]; then
  echo 100000 > "$CG/cpu.cfs_period_us"
  echo 20000 > "$CG/cpu.cfs_quota_us"
else
  echo "20000 100000" > "$CG/cpu.max"
fi
start_in_cgroup server "$WORK/server" 150000

oracle_window() {
  snap "$WORK/cpu.stat.0" cat "$CG/cpu.stat"
  sleep "$D"
  snap "$WORK/cpu.stat.1" cat "$CG/cpu.stat"
}
oracle_end() {
  oracle_py "$CG" << 'PY'
def stat(p):
    t, text = read_snap(p)
    return t, {l.split()[0]: int(l.split()[1]) for l in text.splitlines() if len(l.split()) == 2}
(ta, a), (tb, b) = stat(os.path.join(WORK, "cpu.stat.0")), stat(os.path.join(WORK, "cpu.stat.1"))
d = (tb - ta) / 1e9
periods = b["nr_periods"] - a["nr_periods"]
throttled = b["nr_throttled"] - a["nr_throttled"]
if "throttled_time" in b:
    thr_ms = (b["throttled_time"] - a["throttled_time"]) / 1e6
else:
    thr_ms = (b["throttled_usec"] - a["throttled_usec"]) / 1e3
f = {
    "quota_cpus": 0.2,
    "throttled_periods_pct": round(100 * throttled / periods, 1) if periods else None,
    "throttled_ms_per_s": round(thr_ms / d, 1),
    "top_runq_wait_ms_per_s": PROC.get("target_runq_wait_ms_per_s"),
    "runq_wait_share_pct": PROC.get("runq_wait_share_pct"),
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"the cgroup's cpu.stat over the window ({ARGS[0]}): {throttled} of {periods} periods throttled "
        f"({f['throttled_periods_pct']}%), throttled {f['throttled_ms_per_s']} ms/s; quota 0.2 CPU\n"
        f"schedstat of the server's threads: on CPU {f['target_cpu_pct']}% of a core, runnable and waiting "
        f"{f['top_runq_wait_ms_per_s']} ms/s ({f['runq_wait_share_pct']}% of their runnable time)\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
