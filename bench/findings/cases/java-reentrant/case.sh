#!/bin/bash
# Planted: contention on a java.util.concurrent lock. An HttpServer with a pool of 16
# threads whose handler appends to a journal under one ReentrantLock (Journal.append),
# held across a ~1 ms write to a slow device (a sleep standing for it): the threads wait
# parked in AbstractQueuedSynchronizer, which thread dumps show as WAITING (parking), not
# BLOCKED on a monitor. -XX:+PreserveFramePointer (README.md, JVM targets).
# Oracle: two thread dumps (jcmd PID Thread.print) at 1/3 and 2/3 of the window counting
# the pool's threads parked waiting for the ReentrantLock under Journal.append; the JVM's
# CPU (/proc).
. "$(dirname "$0")/../../lib.sh"

mkdir "$WORK/classes"
javac -d "$WORK/classes" "$CASE_DIR/Journal.java"
start_server server java -Dsun.net.httpserver.nodelay=true -XX:+PreserveFramePointer -Xms128m -Xmx128m -cp "$WORK/classes" Journal
warm_up "http://127.0.0.1:$SERVER_PORT/" 4

thread_dumps
oracle_end() {
  oracle_py << 'PY'
waiting, pool = [], []
for i in (1, 2):
    dump = open(os.path.join(WORK, f"threads.{i}")).read().split("\n\n")
    threads = [t for t in dump if t.startswith('"pool-')]
    pool.append(len(threads))
    waiting.append(sum(1 for t in threads if "WAITING (parking)" in t and "ReentrantLock" in t and "Journal.append" in t))
f = {
    "waiting_pct_of_pool": round(100 * sum(waiting) / sum(pool), 1) if sum(pool) else None,
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"jcmd Thread.print at 1/3 and 2/3 of the window: {waiting} of {pool} pool threads WAITING (parking) for "
        f"the ReentrantLock in Journal.append; the JVM's CPU {f['target_cpu_pct']}% of a core\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
