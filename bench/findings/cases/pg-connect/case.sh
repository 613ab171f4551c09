#!/bin/bash
# Planted: a connection per transaction. A private PostgreSQL (Debian's package); 8
# pgbench clients connect anew for every transaction (-C), one primary-key lookup each:
# the postmaster forks a backend per connection, which authenticates, loads its caches
# and exits, so the server's CPU goes to starting and ending backends rather than to the
# queries.
# Oracle: PostgreSQL's own account: pg_stat_database's sessions (connections made) over
# the window against its transactions; perf record (99 Hz, -a) of postgres: the share
# of its samples in backend start-up and exit (fork, exec of the postmaster's child,
# InitPostgres, the caches' initialisation, process exit) against the executor's.
. "$(dirname "$0")/../../lib.sh"

start_postgres
pg -c "create table orders(id bigserial primary key, customer int, total numeric);
       insert into orders(customer, total) select (random() * 20000)::int, random() * 100 from generate_series(1, 30000);
       analyze orders;"
echo '\set id random(1, 30000)
SELECT total FROM orders WHERE id = :id;' > "$WORK/lookup.sql"

sessions() { pg -A -t -c "select sessions, xact_commit from pg_stat_database where datname = 'postgres'"; }
oracle_window() {
  sessions > "$WORK/sessions.0"
  perf record -q -F 99 -g -a -o "$WORK/perf.data" -- sleep "$D" > /dev/null 2>&1
  sessions > "$WORK/sessions.1"
}
oracle_end() {
  oracle_py << 'PY'
import subprocess
def read(n):
    s, x = open(os.path.join(WORK, f"sessions.{n}")).read().strip().split("|")
    return int(s), int(x)
(s0, x0), (s1, x1) = read(0), read(1)
secs = (T1 - T0) / 1e9
out = subprocess.run(["perf", "script", "-i", os.path.join(WORK, "perf.data"), "-F", "comm,ip,sym"], capture_output=True, text=True).stdout
START = ("fork", "clone", "InitPostgres", "PostgresMain", "BackendStartup", "BackendInitialize", "InitProcess",
         "RelationCacheInitialize", "RelationCacheInitializePhase", "InitCatalogCache", "do_exit", "exit_mmap",
         "proc_exit", "shmem_exit", "load_relcache_init_file", "ClientAuthentication", "dup_mm", "copy_page_range",
         "unmap_vmas", "PerformAuthentication", "process_startup_packet", "ProcessStartupPacket", "SysCacheGetAttr",
         "InitPostmasterChild", "postmaster_child_launch", "ReleaseProcess", "mmput")
total = start = execu = 0
for block in out.split("\n\n"):
    lines = block.strip().splitlines()
    if not lines or not lines[0].strip().startswith("postgres"):
        continue
    total += 1
    if any(w in block for w in START):
        start += 1
    elif any(w in block for w in ("ExecutorRun", "standard_ExecutorRun", "exec_simple_query")):
        execu += 1
f = {
    "connections_per_s": round((s1 - s0) / secs, 1),
    "transactions_per_s": round((x1 - x0) / secs, 1),
    "startup_pct_of_postgres_samples": round(100 * start / total, 1) if total else None,
    "query_pct_of_postgres_samples": round(100 * execu / total, 1) if total else None,
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"pg_stat_database over the window: {f['connections_per_s']} sessions/s, {f['transactions_per_s']} commits/s\n"
        f"perf record -a at 99 Hz ({total} samples of postgres): {f['startup_pct_of_postgres_samples']}% starting or ending "
        f"backends (fork, InitPostgres, caches, exit), {f['query_pct_of_postgres_samples']}% in queries\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  exec -- pgbench -h 127.0.0.1 -p "$SERVER_PORT" -U kiln -n -C -c 8 -j 2 -P 1 -T $((D + WARMUP + 30)) -f "$WORK/lookup.sql" postgres
