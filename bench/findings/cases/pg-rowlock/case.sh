#!/bin/bash
# Planted: clients queued behind one row's lock. A private PostgreSQL (Debian's package);
# 16 pgbench clients run one transaction each after another: update row 1 of `hot`, then
# 2 ms of pg_sleep before the commit, so that the row stays locked while its holder
# sleeps and the other 15 wait for it (XactLockTableWait, a latch's epoll in the kernel).
# The backends are forked when pgbench connects, while kiln loads its programs.
# Oracle: PostgreSQL's own account, pg_stat_activity, sampled every 100 ms through the
# window: the share of the client backends waiting for a lock (wait_event_type 'Lock').
. "$(dirname "$0")/../../lib.sh"

start_postgres
pg -c 'create table hot(id int primary key, n bigint); insert into hot values (1, 0), (2, 0);'
cat > "$WORK/hot.sql" << 'SQL'
BEGIN;
UPDATE hot SET n = n + 1 WHERE id = 1;
SELECT pg_sleep(0.002);
COMMIT;
SQL

pg_activity_window
oracle_end() {
  oracle_py << 'PY'
f = pg_shares(WORK, T0, T1,
              lock_wait_pct_of_backend_time=lambda r: r[1] == "Lock",
              pg_sleep_pct_of_backend_time=lambda r: r[2] == "PgSleep",
              idle_in_transaction_pct=lambda r: r[0].startswith("idle in transaction"))
f["target_cpu_pct"] = PROC.get("target_cpu_pct")
text = (f"pg_stat_activity, {f['samples']} samples inside the window, {f['client_backends_mean']} client backends on average:\n"
        f"  waiting for a lock (wait_event_type Lock) {f['lock_wait_pct_of_backend_time']}% of the samples, "
        f"in pg_sleep {f['pg_sleep_pct_of_backend_time']}%, idle in transaction {f['idle_in_transaction_pct']}%\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  exec -- pgbench -h 127.0.0.1 -p "$SERVER_PORT" -U kiln -n -c 16 -j 2 -T $((D + WARMUP + 30)) -f "$WORK/hot.sql" postgres
