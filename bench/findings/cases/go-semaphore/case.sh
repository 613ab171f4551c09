#!/bin/bash
# Planted: a concurrency limit inside the server, in Go. A buffered channel of 4 slots is
# its semaphore; each request holds one for 10 ms; 32 connections queue on the channel.
# Oracle: Go's own block profile of the same seconds (GET /debug/pprof/block?seconds=D, a
# delta), read with `go tool pprof -top -cum`: the delay of goroutines blocked under
# main.handle (sending to the channel), over the connections' time.
. "$(dirname "$0")/../../lib.sh"

(cd "$CASE_DIR" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off go build -o "$WORK/semaphore" .)
start_server server "$WORK/semaphore" -addr 127.0.0.1:0

oracle_window() {
  curl -sS --max-time $((D + 20)) -o "$WORK/block.pb.gz" "http://127.0.0.1:$SERVER_PORT/debug/pprof/block?seconds=$D"
}
oracle_end() {
  go tool pprof -top -cum -sample_index=delay "$WORK/block.pb.gz" > "$WORK/block.top" 2> "$WORK/block.top.err" || true
  oracle_py "$D" 32 << 'PY'
d, conns = float(ARGS[0]), int(ARGS[1])
top = open(os.path.join(WORK, "block.top")).read()
total = go_duration(re.search(r"of ([\d.]+\w+) total", top).group(1)) if "total" in top else 0.0
held = 0.0
for line in top.splitlines():
    w = line.split()
    if len(w) >= 6 and w[5] == "main.handle":
        held = go_duration(w[3])
f = {
    "block_delay_s_per_s": round(total / d, 2),
    "slot_wait_s_per_s": round(held / d, 2),
    "slot_wait_pct_of_request_time": round(100 * held / (conns * d), 1),
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"Go's block profile over the window (delta of {d:.0f} s, go tool pprof -top -cum -sample_index=delay):\n"
        f"  total delay {total:.1f} s; under main.handle {held:.1f} s, "
        f"{f['slot_wait_pct_of_request_time']}% of the {conns} connections' time\n\n" + "\n".join(top.splitlines()[:14]) + "\n")
write_oracle(OUT, text + "\n" + open(os.path.join(OUT, "proc.txt")).read(), f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" --pprof "http://127.0.0.1:$SERVER_PORT/debug/pprof/" \
  load http -c 32 -d 30s "http://127.0.0.1:$SERVER_PORT/"
