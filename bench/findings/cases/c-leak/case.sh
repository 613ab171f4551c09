#!/bin/bash
# Planted: memory growth. Every request allocates an 8 KiB session, touches it and links it
# into a global list nothing frees (remember_session); 2,000 requests a second.
# Oracle: the server's RSS from /proc/PID/stat, sampled twice a second (growth per second
# over the window), and its own count of bytes kept (requests x 8 KiB, from bpftrace).
. "$(dirname "$0")/../../lib.sh"

c_server "$FINDINGS/bt/syscall_time.bt"
oracle_end() {
  oracle_py << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
req = bpf_sum(s, "write_calls")
f = {
    "rss_growth_mb_per_s": PROC.get("rss_growth_mb_per_s"),
    "rss_start_mb": PROC.get("rss_start_mb"),
    "rss_end_mb": PROC.get("rss_end_mb"),
    "kept_mb_per_s": round(req * 8192 / 1048576 / secs, 2) if secs else None,
}
text = (f"/proc: RSS {f['rss_start_mb']} -> {f['rss_end_mb']} MiB over the window, {f['rss_growth_mb_per_s']} MiB/s\n"
        f"bpftrace: {req} responses = {f['kept_mb_per_s']} MiB/s of 8 KiB sessions kept\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -R 2000 -d 30s "http://127.0.0.1:$SERVER_PORT/"
