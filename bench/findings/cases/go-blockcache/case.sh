#!/bin/bash
# Planted: a lock held around a disk read, in Go. The repository's examples/go-blockcache
# with a 4 MiB cache: nearly every query misses and reads its 256 KiB block with O_DIRECT
# while holding the cache's one sync.Mutex (blockCache.get); 32 connections queue for it.
# Oracle: Go's own block profile of the same seconds (GET /debug/pprof/block?seconds=D, a
# delta), read with `go tool pprof -top -cum`: the delay of goroutines blocked under
# main.(*blockCache).get.
. "$(dirname "$0")/../../lib.sh"

(cd "$ROOT/examples/go-blockcache" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -o "$WORK/go-blockcache" .)
start_server server "$WORK/go-blockcache" -addr 127.0.0.1:0 -cache-mb 4 -mutex-profile-fraction 1 -block-profile-rate 1

oracle_window() {
  curl -sS --max-time $((D + 20)) -o "$WORK/block.pb.gz" "http://127.0.0.1:$SERVER_PORT/debug/pprof/block?seconds=$D"
}
oracle_end() {
  go tool pprof -top -cum -sample_index=delay "$WORK/block.pb.gz" > "$WORK/block.top" 2> "$WORK/block.top.err" || true
  oracle_py "$D" 32 << 'PY'
d, conns = float(ARGS[0]), int(ARGS[1])
top = open(os.path.join(WORK, "block.top")).read()
total = go_duration(re.search(r"of ([\d.]+\w+) total", top).group(1)) if "total" in top else 0.0
get = 0.0
for line in top.splitlines():
    w = line.split()
    if len(w) >= 6 and w[5] == "main.(*blockCache).get":
        get = go_duration(w[3])
f = {
    "block_delay_s_per_s": round(total / d, 2),
    "get_lock_wait_s_per_s": round(get / d, 2),
    "get_pct_of_block_delay": round(100 * get / total, 1) if total else None,
    "lock_wait_pct_of_request_time": round(100 * get / (conns * d), 1),
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"Go's block profile over the window (delta of {d:.0f} s, go tool pprof -top -cum -sample_index=delay):\n"
        f"  total delay {total:.1f} s; under main.(*blockCache).get {get:.1f} s ({f['get_pct_of_block_delay']}%), "
        f"{f['lock_wait_pct_of_request_time']}% of the {conns} connections' time\n\n" + "\n".join(top.splitlines()[:14]) + "\n")
write_oracle(OUT, text + "\n" + open(os.path.join(OUT, "proc.txt")).read(), f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" --pprof "http://127.0.0.1:$SERVER_PORT/debug/pprof/" \
  load http -c 32 -d 30s "http://127.0.0.1:$SERVER_PORT/query?city={rand:0-1023}"
