#!/bin/bash
# Planted: requests queued on one sync.Mutex in Go, and kiln given none of the program's
# profiles (no --pprof): every request takes the mutex and holds it over a 2 ms wait, so
# 24 connections queue for it; the waiting goroutines park in Go's scheduler and block no
# thread. (The server is the test suite's: crates/findings/tests/programs/go_mutex.)
# Oracle: Go's own block profile of the same seconds (GET /debug/pprof/block?seconds=D, a
# delta), read with `go tool pprof -top -cum`: the delay of goroutines blocked under
# main.updateInventory over the connections' time.
. "$(dirname "$0")/../../lib.sh"

SRC="$CASE_DIR/../../../../crates/findings/tests/programs/go_mutex"
(cd "$SRC" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off go build -o "$WORK/go_mutex" .)
start_server server "$WORK/go_mutex"

oracle_window() {
  curl -sS --max-time $((D + 20)) -o "$WORK/block.pb.gz" "http://127.0.0.1:$SERVER_PORT/debug/pprof/block?seconds=$D"
}
oracle_end() {
  go tool pprof -top -cum -sample_index=delay "$WORK/block.pb.gz" > "$WORK/block.top" 2> "$WORK/block.top.err" || true
  oracle_py "$D" 24 << 'PY'
d, conns = float(ARGS[0]), int(ARGS[1])
top = open(os.path.join(WORK, "block.top")).read()
total = go_duration(re.search(r"of ([\d.]+\w+) total", top).group(1)) if "total" in top else 0.0
under = 0.0
for line in top.splitlines():
    w = line.split()
    if len(w) >= 6 and w[5] == "main.updateInventory":
        under = go_duration(w[3])
f = {
    "block_delay_s_per_s": round(total / d, 2),
    "lock_wait_s_per_s": round(under / d, 2),
    "lock_wait_pct_of_request_time": round(100 * under / (conns * d), 1),
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"Go's block profile over the window (delta of {d:.0f} s, go tool pprof -top -cum -sample_index=delay):\n"
        f"  total delay {total:.1f} s; under main.updateInventory {under:.1f} s, "
        f"{f['lock_wait_pct_of_request_time']}% of the {conns} connections' time\n\n" + "\n".join(top.splitlines()[:14]) + "\n")
write_oracle(OUT, text + "\n" + open(os.path.join(OUT, "proc.txt")).read(), f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  load http -c 24 -d 30s "http://127.0.0.1:$SERVER_PORT/"
