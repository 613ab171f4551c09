#!/bin/bash
# Planted: a sync to the disk in every request, in Node. The server appends 512 bytes per
# order to a journal and calls fs.fdatasync before it answers (appendOrder); libuv's pool
# of 4 threads makes the calls, so 16 clients' requests wait for the disk and for a free
# thread of the pool, while the event loop idles. Started with README.md's Node flags.
# Oracle: bpftrace (bt/fsync_time.bt): the server's fdatasync(2) calls and time per second,
# over the pool's 4 threads' time and over the 16 connections' time (the requests' time
# inside the calls: what "waited for the disk N% of their time" says); the server's own
# timing (GET /stats at the window's ends) of each appendOrder from call to last callback
# (the write and the sync, with their waits for a pool thread and for the event loop to
# run each callback) and of each fdatasync from call to callback, over the 16 connections'
# time: the time the disk's calls cost the requests, waits behind them included, which
# the calls alone do not say.
. "$(dirname "$0")/../../lib.sh"

start_server server env -C "$WORK" node --perf-basic-prof --interpreted-frames-native-stack "$ROOT/crates/findings/tests/programs/journal_fsync.js"

oracle_begin() { bpftrace_sampler sys "$FINDINGS/bt/fsync_time.bt" "$SERVER_PID"; }
snap_window "http://127.0.0.1:$SERVER_PORT/stats"
oracle_end() {
  oracle_py 16 4 << 'PY'
conns, pool = int(ARGS[0]), int(ARGS[1])
s, bsecs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
synced, calls = bpf_sum(s, "fdatasync_ns") / 1e9, bpf_sum(s, "fdatasync_calls")
a, b = window_json(WORK)
secs = (b["now_ns"] - a["now_ns"]) / 1e9
orders = b["orders"] - a["orders"]
waited = (b["sync_ns"] - a["sync_ns"]) / 1e9
appended = (b["append_ns"] - a["append_ns"]) / 1e9
f = {
    "fdatasync_pct_of_request_time": round(100 * synced / (conns * bsecs), 1) if bsecs else None,
    "append_wait_pct_of_request_time": round(100 * appended / (conns * secs), 1),
    "sync_wait_pct_of_request_time": round(100 * waited / (conns * secs), 1),
    "fdatasync_pct_of_pool_time": round(100 * synced / (pool * bsecs), 1) if bsecs else None,
    "fdatasync_ms_mean": round(1000 * synced / calls, 2) if calls else None,
    "orders_per_s": round(orders / secs, 1),
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"bpftrace over {bsecs:.1f} s: {calls} fdatasync calls, {f['fdatasync_ms_mean']} ms each, "
        f"{f['fdatasync_pct_of_pool_time']}% of libuv's {pool} pool threads' time, "
        f"{f['fdatasync_pct_of_request_time']}% of the {conns} connections' time; the server's own timing over "
        f"{secs:.1f} s (GET /stats): {orders} orders; of the {conns} connections' time, appendOrder (the write "
        f"and the sync, waits for a pool thread included) {f['append_wait_pct_of_request_time']}%, the fdatasync "
        f"from call to callback {f['sync_wait_pct_of_request_time']}%\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
