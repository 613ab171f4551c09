#!/bin/bash
# Planted: a CPU-bound server of several processes, in Node. The cluster module's primary
# forks one worker per CPU; each worker derives a key per request with crypto.pbkdf2Sync
# (hashPassword, ~1.5 ms) on its event loop. kiln is given the primary's pid, the first a
# user finds (`pgrep -o node`), which serves nothing itself; the workers are its children.
# Oracle: the kernel's per-process CPU (/proc/PID/stat of the primary and of each child,
# utime + stime, at the window's ends), and the machine's CPUs (/proc/stat).
. "$(dirname "$0")/../../lib.sh"

start_server server env -C "$WORK" node --perf-basic-prof --interpreted-frames-native-stack "$CASE_DIR/server.js"

cpu_of_family() {
  local pid
  for pid in "$SERVER_PID" $(cat /proc/"$SERVER_PID"/task/*/children 2> /dev/null); do
    awk -v p="$pid" '{ sub(/^.*\) /, ""); print p, $12 + $13 }' "/proc/$pid/stat"
  done
}
oracle_window() {
  snap "$WORK/cpu.0" cpu_of_family
  sleep $((D - 1))
  snap "$WORK/cpu.1" cpu_of_family
}
oracle_end() {
  oracle_py "$SERVER_PID" << 'PY'
primary = ARGS[0]
(ta, a), (tb, b) = read_snap(os.path.join(WORK, "cpu.0")), read_snap(os.path.join(WORK, "cpu.1"))
ticks = os.sysconf("SC_CLK_TCK")
secs = (tb - ta) / 1e9
def table(text):
    return {l.split()[0]: int(l.split()[1]) for l in text.splitlines() if len(l.split()) == 2}
a, b = table(a), table(b)
used = {p: (b[p] - a.get(p, 0)) / ticks / secs for p in b}
workers = {p: u for p, u in used.items() if p != primary}
f = {
    "workers": len(workers),
    "workers_cpu_pct": round(100 * sum(workers.values()), 1),
    "primary_cpu_pct": round(100 * used.get(primary, 0.0), 1),
}
text = (f"/proc over {secs:.1f} s: the primary (pid {primary}) {f['primary_cpu_pct']}% of a core; its "
        f"{len(workers)} workers " + ", ".join(f"{p}: {100 * u:.1f}%" for p, u in sorted(workers.items())) +
        f" = {f['workers_cpu_pct']}%\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
