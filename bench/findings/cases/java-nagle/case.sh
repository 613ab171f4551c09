#!/bin/bash
# Planted: Nagle's algorithm against delayed ACK, in the JDK's HttpServer. A pool of 16
# threads answering a map lookup (quote), started without -Dsun.net.httpserver.nodelay=true
# (the JDK's default): each response's head and body go out apart with TCP_NODELAY off, and
# the body waits for the client's ACK of the head, which the client's kernel delays
# (~40 ms); the JVM idles. -XX:+PreserveFramePointer (README.md, JVM targets).
# Oracle: nstat's TcpExtDelayedACKs (delayed ACKs sent, whole machine) per response (the
# server's own count, GET /stats at the window's ends, on the JVM's clock), and the
# server's CPU (/proc).
. "$(dirname "$0")/../../lib.sh"

mkdir "$WORK/classes"
javac -d "$WORK/classes" "$CASE_DIR/QuoteServer.java"
start_server server java -XX:+PreserveFramePointer -Xms128m -Xmx128m -cp "$WORK/classes" QuoteServer
warm_up "http://127.0.0.1:$SERVER_PORT/" 4

snap_window "http://127.0.0.1:$SERVER_PORT/stats"
oracle_end() {
  oracle_py << 'PY'
a, b = window_json(WORK)
secs = (b["now_ns"] - a["now_ns"]) / 1e9
rate = (b["responses"] - a["responses"]) / secs
delayed = PROC.get("TcpExtDelayedACKs_per_s")
f = {
    "responses_per_s": round(rate, 1),
    "delayed_acks_per_s": delayed,
    "delayed_acks_per_response": round(delayed / rate, 2) if rate and delayed is not None else None,
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"nstat: {delayed} delayed ACKs/s (whole machine) against {f['responses_per_s']} responses/s "
        f"(the server's own count over {secs:.1f} s) = {f['delayed_acks_per_response']} per response\n"
        f"the server's CPU: {f['server_cpu_pct']}% of a core\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
