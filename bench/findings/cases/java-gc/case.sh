#!/bin/bash
# Planted: garbage collection in Java. An HttpServer (4 threads) in a 64 MiB heap with the
# serial collector, whose handler builds each page from ~40,000 short-lived objects and
# keeps the last 10 pages (buildPage): the collector copies and promotes them, and the old
# generation fills and is collected again and again.
# Oracle: jstat -gcutil -t PID 1000 over the window: the GC time (GCT) it adds per second of
# the JVM's clock.
. "$(dirname "$0")/../../lib.sh"

mkdir "$WORK/classes"
javac -d "$WORK/classes" "$CASE_DIR/Catalogue.java"
# -Dsun.net.httpserver.nodelay=true: the JDK's HttpServer writes headers and body apart, and
# without TCP_NODELAY every response waits for the client's delayed ACK (44 ms): a
# second cause beside the planted one, which kiln rightly names first.
start_server server java -Dsun.net.httpserver.nodelay=true -XX:+PreserveFramePointer -XX:+UseSerialGC -Xms64m -Xmx64m -cp "$WORK/classes" Catalogue
warm_up "http://127.0.0.1:$SERVER_PORT/" 4

oracle_window() {
  jstat -gcutil -t "$SERVER_PID" 1000 "$D" > "$WORK/jstat.txt"
}
oracle_end() {
  oracle_py << 'PY'
rows = read_jstat(os.path.join(WORK, "jstat.txt"))
a, b = rows[0], rows[-1]
secs = b["Timestamp"] - a["Timestamp"]
f = {
    "gc_time_pct": round(100 * (b["GCT"] - a["GCT"]) / secs, 1) if secs > 0 else None,
    "young_gc_per_s": round((b["YGC"] - a["YGC"]) / secs, 1) if secs > 0 else None,
    "full_gc_per_s": round((b["FGC"] - a["FGC"]) / secs, 2) if secs > 0 else None,
    "old_used_pct_end": b["O"],
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"jstat -gcutil over {secs:.1f} s of the JVM's clock: GC time {b['GCT'] - a['GCT']:.2f} s "
        f"= {f['gc_time_pct']}% of the wall time; {f['young_gc_per_s']} young and {f['full_gc_per_s']} full collections/s\n\n"
        + open(os.path.join(WORK, "jstat.txt")).read())
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
