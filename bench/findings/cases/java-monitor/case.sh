#!/bin/bash
# Planted: monitor contention in Java. An HttpServer with a pool of 16 threads whose
# handler calls Ledger.post, a synchronized method computing ~1 ms while it holds the
# ledger's monitor; the JVM runs with -XX:+PreserveFramePointer (README.md, JVM targets).
# Oracle: the JVM's own accounts: its monitor counters (jstat -snap: sun.rt._sync_*, with
# the JVM's clock sun.os.hrt.ticks) at the window's start and end, and two thread dumps
# (jcmd PID Thread.print) counting threads BLOCKED waiting to lock the Ledger.
. "$(dirname "$0")/../../lib.sh"

mkdir "$WORK/classes"
javac -d "$WORK/classes" "$CASE_DIR/Ledger.java"
# -Dsun.net.httpserver.nodelay=true: the JDK's HttpServer writes headers and body apart, and
# without TCP_NODELAY every response waits for the client's delayed ACK (44 ms): a
# second cause beside the planted one, which kiln rightly names first.
start_server server java -Dsun.net.httpserver.nodelay=true -XX:+PreserveFramePointer -Xms256m -Xmx256m -cp "$WORK/classes" Ledger
warm_up "http://127.0.0.1:$SERVER_PORT/" 4

jvm_counters() { jstat -J-Djstat.showUnsupported=true -snap "$SERVER_PID" | grep -E '^sun\.(rt\._sync_|os\.hrt\.)' > "$1"; }
oracle_window() {
  local t0=$SECONDS
  jvm_counters "$WORK/snap.0"
  sleep $((D / 3 - (SECONDS - t0))) 2> /dev/null || true
  jcmd "$SERVER_PID" Thread.print > "$WORK/threads.1"
  sleep $((2 * D / 3 - (SECONDS - t0))) 2> /dev/null || true
  jcmd "$SERVER_PID" Thread.print > "$WORK/threads.2"
  sleep $((D - 2 - (SECONDS - t0))) 2> /dev/null || true
  jvm_counters "$WORK/snap.1"
}
oracle_end() {
  oracle_py << 'PY'
def snap(p):
    return {l.split("=")[0]: int(l.split("=")[1]) for l in open(p) if "=" in l}
a, b = snap(os.path.join(WORK, "snap.0")), snap(os.path.join(WORK, "snap.1"))
secs = (b["sun.os.hrt.ticks"] - a["sun.os.hrt.ticks"]) / b["sun.os.hrt.frequency"]
def rate(k):
    return round((b[k] - a[k]) / secs, 1)
blocked, pool = [], []
for i in (1, 2):
    dump = open(os.path.join(WORK, f"threads.{i}")).read().split("\n\n")
    threads = [t for t in dump if t.startswith('"pool-')]
    pool.append(len(threads))
    blocked.append(sum(1 for t in threads if "BLOCKED (on object monitor)" in t and "waiting to lock" in t and "Ledger.post" in t))
f = {
    "blocked_on_ledger_avg": round(sum(blocked) / len(blocked), 1),
    "blocked_pct_of_pool": round(100 * sum(blocked) / sum(pool), 1) if sum(pool) else None,
    "contended_lock_attempts_per_s": rate("sun.rt._sync_ContendedLockAttempts"),
    "monitor_parks_per_s": rate("sun.rt._sync_Parks"),
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"jstat -snap over {secs:.1f} s (the JVM's clock): {f['contended_lock_attempts_per_s']} contended monitor "
        f"enters/s, {f['monitor_parks_per_s']} parks/s\n"
        f"jcmd Thread.print at 1/3 and 2/3 of the window: {blocked} of {pool} pool threads BLOCKED waiting to lock "
        f"the Ledger in Ledger.post\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
