#!/bin/bash
# Planted: the load generator is the limit. A fast server (~1 us of CPU a request) driven by
# wrk with one thread whose Lua response hook spends ~0.2 ms of CPU on every response.
# Oracle: the kernel's schedstat of wrk's threads (on CPU, waiting for one) and of the
# server's threads, over the window.
. "$(dirname "$0")/../../lib.sh"

cc_build server "$FINDINGS/cases/common/cpu_server.c"
start_server server "$WORK/server" 1000

oracle_window() {
  local wrk="" i
  for i in $(seq 100); do
    wrk=$(pgrep -x wrk -P "$KILN_PID" | head -1 || true)
    [ -n "$wrk" ] && break
    sleep 0.05
  done
  [ -n "$wrk" ] || { echo "no wrk under kiln ($KILN_PID)"; return 1; }
  "$PY" "$FINDINGS/oracle_lib.py" sample-proc "$wrk" "$WORK/client.jsonl" &
  local s=$!
  sleep "$D"
  sleep 0.6
  kill -INT "$s"
  wait "$s" || true
}
oracle_end() {
  oracle_py << 'PY'
c = proc_figures(read_jsonl(os.path.join(WORK, "client.jsonl")), T0, T1)
f = {
    "client_cpu_pct": c.get("target_cpu_pct"),
    "client_busiest_thread_busy_pct": c.get("busiest_thread_busy_pct"),
    "server_cpu_pct": PROC.get("target_cpu_pct"),
    "server_busiest_thread_busy_pct": PROC.get("busiest_thread_busy_pct"),
}
text = ("the client (wrk):\n" + proc_text(c) +
        f"\nthe server: CPU {f['server_cpu_pct']}% of a core, busiest thread {f['server_busiest_thread_busy_pct']}% on CPU or runnable\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" exec -- wrk -t1 -c16 -d30s -s "$CASE_DIR/slow.lua" "http://127.0.0.1:$SERVER_PORT/"
