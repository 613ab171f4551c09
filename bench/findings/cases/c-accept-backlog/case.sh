#!/bin/bash
# Planted: a small listen backlog. One thread, epoll, listen(fd, 2), ~2 ms of CPU per page
# and Connection: close, so every request is a new connection; 32 clients connecting at once
# overflow the accept queue and their SYNs wait for the client's retransmission (1 s, 3 s).
# Oracle: nstat's TcpExtListenOverflows/ListenDrops and `ss -ltn`'s Recv-Q of the listening
# socket, sampled twice a second, and the server thread's CPU (/proc).
. "$(dirname "$0")/../../lib.sh"

c_server

oracle_end() {
  oracle_py << 'PY'
f = {
    "listen_overflows_per_s": PROC.get("TcpExtListenOverflows_per_s"),
    "listen_drops_per_s": PROC.get("TcpExtListenDrops_per_s"),
    "accept_queue_max": PROC.get("accept_queue_max"),
    "accept_queue_mean": PROC.get("accept_queue_mean"),
    "passive_opens_per_s": PROC.get("TcpPassiveOpens_per_s"),
    "server_thread_cpu_pct": PROC.get("hottest_thread_cpu_pct"),
}
text = (f"nstat (whole machine) over the window: ListenOverflows {f['listen_overflows_per_s']}/s, "
        f"ListenDrops {f['listen_drops_per_s']}/s, passive opens {f['passive_opens_per_s']}/s\n"
        f"ss -ltn Recv-Q of the listening socket (backlog 2): max {f['accept_queue_max']}, mean {f['accept_queue_mean']}\n"
        f"the server's one thread on CPU {f['server_thread_cpu_pct']}% of the time\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 32 -d 30s "http://127.0.0.1:$SERVER_PORT/"
