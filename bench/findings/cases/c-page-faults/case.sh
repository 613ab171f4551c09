#!/bin/bash
# Planted: page-fault churn. Every request mallocs a 1 MiB buffer above the (fixed) mmap
# threshold, touches all of it and frees it: an mmap, a munmap and 256 page faults a request.
# Oracle: bpftrace, the server's page faults (exceptions:page_fault_user), mmap and munmap
# calls and responses (write calls), per second.
. "$(dirname "$0")/../../lib.sh"

c_server "$FINDINGS/bt/syscall_time.bt"
oracle_end() {
  oracle_py << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
req = bpf_sum(s, "write_calls")
faults, mmaps, munmaps = bpf_sum(s, "page_faults"), bpf_sum(s, "mmap_calls"), bpf_sum(s, "munmap_calls")
f = {
    "page_faults_per_s": round(faults / secs, 1) if secs else None,
    "page_faults_per_request": round(faults / req, 1) if req else None,
    "mmap_per_request": round(mmaps / req, 2) if req else None,
    "munmap_per_request": round(munmaps / req, 2) if req else None,
    "requests_per_s": round(req / secs, 1) if secs else None,
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"bpftrace over {secs:.1f} s: {faults} page faults, {mmaps} mmap, {munmaps} munmap for {req} responses: "
        f"{f['page_faults_per_request']} faults, {f['mmap_per_request']} mmap and {f['munmap_per_request']} munmap a request\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
