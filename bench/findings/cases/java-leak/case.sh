#!/bin/bash
# Planted: memory growth in Java. An HttpServer (4 threads) in a 1 GiB heap (G1, the
# default collector) whose handler keeps an 8 KiB session per request in a queue nothing
# takes from (rememberSession); 2,000 requests a second: the old generation grows with
# every request. Resident memory says little here: the JVM commits its heap as it likes.
# Oracle: jstat -gcold -t PID 1000 over the window: the old generation in use (OU) per
# second of the JVM's clock; the server's RSS from /proc.
. "$(dirname "$0")/../../lib.sh"

mkdir "$WORK/classes"
javac -d "$WORK/classes" "$ROOT/crates/findings/tests/programs/Sessions.java"
# -Dsun.net.httpserver.nodelay=true: as in java-gc (no delayed ACK per response).
start_server server java -Dsun.net.httpserver.nodelay=true -XX:+PreserveFramePointer -Xms1g -Xmx1g -cp "$WORK/classes" Sessions
warm_up "http://127.0.0.1:$SERVER_PORT/" 2

oracle_window() {
  jstat -gcold -t "$SERVER_PID" 1000 "$D" > "$WORK/jstat.txt"
}
oracle_end() {
  oracle_py << 'PY'
rows = read_jstat(os.path.join(WORK, "jstat.txt"))
a, b = rows[0], rows[-1]
secs = b["Timestamp"] - a["Timestamp"]
f = {
    "old_growth_mb_per_s": round((b["OU"] - a["OU"]) / 1024 / secs, 2) if secs > 0 else None,
    "old_used_mb_end": round(b["OU"] / 1024, 1),
    "old_capacity_mb": round(b["OC"] / 1024, 1),
    "full_gc": b["FGC"] - a["FGC"],
    "rss_growth_mb_per_s": PROC.get("rss_growth_mb_per_s"),
}
text = (f"jstat -gcold over {secs:.1f} s of the JVM's clock: old generation {a['OU'] / 1024:.1f} -> {b['OU'] / 1024:.1f} MiB "
        f"= {f['old_growth_mb_per_s']} MiB/s; {f['full_gc']} full collections; /proc RSS {f['rss_growth_mb_per_s']} MiB/s\n\n"
        + open(os.path.join(WORK, "jstat.txt")).read())
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -R 2000 -d 30s "http://127.0.0.1:$SERVER_PORT/"
