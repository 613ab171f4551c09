#!/bin/bash
# Planted: a CPU-bound server, in Java. An HttpServer with a pool of 16 threads whose
# handler signs each receipt with ~1 ms of SHA-256 (Receipt.sign), on every CPU the machine
# has; -XX:+PreserveFramePointer (README.md, JVM targets).
# Oracle: two thread dumps (jcmd PID Thread.print) counting the pool's threads RUNNABLE in
# Receipt.sign; the JVM's CPU and the machine's (/proc).
. "$(dirname "$0")/../../lib.sh"

mkdir "$WORK/classes"
javac -d "$WORK/classes" "$CASE_DIR/ReceiptServer.java"
start_server server java -Dsun.net.httpserver.nodelay=true -XX:+PreserveFramePointer -Xms128m -Xmx128m -cp "$WORK/classes" ReceiptServer
warm_up "http://127.0.0.1:$SERVER_PORT/" 4

thread_dumps
oracle_end() {
  oracle_py << 'PY'
signing, pool = [], []
for i in (1, 2):
    dump = open(os.path.join(WORK, f"threads.{i}")).read().split("\n\n")
    threads = [t for t in dump if t.startswith('"pool-')]
    pool.append(len(threads))
    signing.append(sum(1 for t in threads if "RUNNABLE" in t and "ReceiptServer$Receipt.sign" in t))
f = {
    "signing_pct_of_pool": round(100 * sum(signing) / sum(pool), 1) if sum(pool) else None,
    "target_cpu_pct": PROC.get("target_cpu_pct"),
    "runq_wait_ms_per_s": PROC.get("target_runq_wait_ms_per_s"),
}
text = (f"jcmd Thread.print at 1/3 and 2/3 of the window: {signing} of {pool} pool threads RUNNABLE in "
        f"Receipt.sign; the JVM's CPU {f['target_cpu_pct']}% of a core\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
