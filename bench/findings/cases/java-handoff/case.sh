#!/bin/bash
# Planted: work serialised on one thread, in Java. An HttpServer whose 16 handler threads
# submit each request's pricing (~1 ms of CPU in price()) to a single-thread executor
# and wait on its Future: the one worker thread ("pricer") is the limit.
# Oracle: /proc, the worker's CPU (the process's hottest thread over the window, from
# /proc/PID/task/*/stat); two thread dumps (jcmd PID Thread.print) at 1/3 and 2/3 of the
# window: the pricer RUNNABLE in price(), the handlers WAITING in FutureTask.get.
. "$(dirname "$0")/../../lib.sh"

mkdir "$WORK/classes"
javac -d "$WORK/classes" "$CASE_DIR/HandoffServer.java"
start_server server java -Dsun.net.httpserver.nodelay=true -XX:+PreserveFramePointer -Xms128m -Xmx128m -cp "$WORK/classes" HandoffServer
warm_up "http://127.0.0.1:$SERVER_PORT/" 4

thread_dumps
oracle_end() {
  oracle_py << 'PY'
in_price, waiting = [], []
for i in (1, 2):
    dump = open(os.path.join(WORK, f"threads.{i}")).read().split("\n\n")
    in_price.append(sum(1 for t in dump if t.startswith('"pricer"') and "HandoffServer.price" in t))
    waiting.append(sum(1 for t in dump if t.startswith('"pool-') and "FutureTask.get" in t))
f = {
    "worker_cpu_pct": PROC.get("hottest_thread_cpu_pct"),
    "hottest_thread": PROC.get("hottest_thread"),
    "pricer_in_price": in_price,
    "handlers_waiting_on_future": waiting,
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"/proc over the window: the hottest thread {f['hottest_thread']!r} on a CPU {f['worker_cpu_pct']}% of the time\n"
        f"jcmd Thread.print at 1/3 and 2/3 of the window: pricer in HandoffServer.price {in_price}; "
        f"handlers waiting in FutureTask.get {waiting}\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
