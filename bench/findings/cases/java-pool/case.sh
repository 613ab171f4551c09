#!/bin/bash
# Planted: a pool too small for its load. A Java HttpServer whose fixed pool of 4 threads
# sleeps 10 ms in every request, under 32 connections: 28 requests at a time wait in the
# pool's queue, inside the server, while its threads use almost no CPU.
# Oracle: two thread dumps (jcmd PID Thread.print) counting the pool's threads asleep in
# Thread.sleep, and Little's law from the load's own figures is not used (it is kiln's):
# the dumps and /proc say the pool's threads are all asleep and the server nearly idle.
. "$(dirname "$0")/../../lib.sh"

mkdir "$WORK/classes"
javac -d "$WORK/classes" "$CASE_DIR/../../../../crates/findings/tests/programs/PoolServer.java"
start_server server java -Dsun.net.httpserver.nodelay=true -XX:+PreserveFramePointer -Xms128m -Xmx128m -cp "$WORK/classes" PoolServer
warm_up "http://127.0.0.1:$SERVER_PORT/" 4

thread_dumps
oracle_end() {
  oracle_py << 'PY'
asleep, pool = [], []
for i in (1, 2):
    dump = open(os.path.join(WORK, f"threads.{i}")).read().split("\n\n")
    threads = [t for t in dump if t.startswith('"pool-')]
    pool.append(len(threads))
    asleep.append(sum(1 for t in threads if "TIMED_WAITING (sleeping)" in t and "java.lang.Thread.sleep" in t))
f = {
    "pool_threads": max(pool) if pool else None,
    "asleep_pct_of_pool": round(100 * sum(asleep) / sum(pool), 1) if sum(pool) else None,
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"jcmd Thread.print at 1/3 and 2/3 of the window: {asleep} of {pool} pool threads asleep in Thread.sleep\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 32 -d 30s "http://127.0.0.1:$SERVER_PORT/"
