#!/bin/bash
# Planted: a missing index. A private PostgreSQL (Debian's package); 8 pgbench clients
# look orders up by customer in a table of 300,000 rows with no index on `customer`: every
# query reads the whole table (a sequential scan), so the backends' time goes to the CPU,
# scanning and testing rows, and both cores are busy with it.
# Oracle: PostgreSQL's own account: EXPLAIN of the query (its plan: a Seq Scan), the
# table's seq_scan counter per transaction (pg_stat_user_tables) over the window, and
# pg_stat_activity every 100 ms: the share of the backends' samples active with no wait
# event (on a CPU or waiting for one); perf record (99 Hz) of the backends: the share of
# their samples in the executor's scan (ExecScan, SeqNext, heap_getnextslot, ExecQual…).
. "$(dirname "$0")/../../lib.sh"

start_postgres
pg -c "create table orders(id bigserial primary key, customer int, total numeric);
       insert into orders(customer, total) select (random() * 20000)::int, random() * 100 from generate_series(1, 300000);
       analyze orders;"
echo '\set c random(1, 20000)
SELECT count(*), sum(total) FROM orders WHERE customer = :c;' > "$WORK/lookup.sql"
pg -c 'EXPLAIN SELECT count(*), sum(total) FROM orders WHERE customer = 42' > "$WORK/plan.txt"

oracle_window() {
  pg -A -t -c "select seq_scan from pg_stat_user_tables where relname = 'orders'" > "$WORK/seq.0"
  perf record -q -F 99 -g -a -o "$WORK/perf.data" -- sleep "$D" > /dev/null 2>&1 &
  local perf=$!
  pg_activity_sample
  wait $perf
  pg -A -t -c "select seq_scan from pg_stat_user_tables where relname = 'orders'" > "$WORK/seq.1"
}
oracle_end() {
  oracle_py << 'PY'
import subprocess
f = pg_shares(WORK, T0, T1, on_cpu_pct_of_backend_time=lambda r: r[0] == "active" and r[1] == "-")
plan = open(os.path.join(WORK, "plan.txt")).read()
scans = int(open(os.path.join(WORK, "seq.1")).read()) - int(open(os.path.join(WORK, "seq.0")).read())
out = subprocess.run(["perf", "script", "-i", os.path.join(WORK, "perf.data"), "-F", "comm,ip,sym"], capture_output=True, text=True).stdout
total = scan = 0
for block in out.split("\n\n"):
    lines = block.strip().splitlines()
    if not lines or not lines[0].strip().startswith("postgres"):
        continue
    total += 1
    if any(w in block for w in ("ExecScan", "SeqNext", "heap_getnextslot", "heapgettup", "ExecQual", "slot_deform")):
        scan += 1
f.update({
    "plan_seq_scan": "Seq Scan on orders" in plan,
    "seq_scans_per_s": round(scans / ((T1 - T0) / 1e9), 1),
    "scan_pct_of_postgres_samples": round(100 * scan / total, 1) if total else None,
    "target_cpu_pct": PROC.get("target_cpu_pct"),
})
text = (f"EXPLAIN: {plan.strip().splitlines()[1].strip() if len(plan.strip().splitlines()) > 1 else plan.strip()}\n"
        f"pg_stat_user_tables: {f['seq_scans_per_s']} sequential scans of orders per second over the window\n"
        f"pg_stat_activity, {f['samples']} samples: the backends active with no wait event {f['on_cpu_pct_of_backend_time']}% of their samples\n"
        f"perf record -a at 99 Hz ({total} samples of postgres): {f['scan_pct_of_postgres_samples']}% in the executor's scan\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  exec -- pgbench -h 127.0.0.1 -p "$SERVER_PORT" -U kiln -n -c 8 -j 2 -P 1 -T $((D + WARMUP + 30)) -f "$WORK/lookup.sql" postgres
