#!/bin/bash
# Planted: every transaction waits for the disk. A private PostgreSQL (Debian's package,
# its defaults: fsync on, synchronous_commit on); 8 pgbench clients each insert one row
# per transaction, so that each commit waits for the WAL to reach the disk: in its own
# fdatasync, or for the WAL's lock while another backend syncs it (group commit).
# Oracle: PostgreSQL's own account, pg_stat_activity, sampled every 100 ms through the
# window: the share of the client backends waiting for the WAL's write lock or its sync
# (wait_event WALWrite, WALSync).
. "$(dirname "$0")/../../lib.sh"

start_postgres
pg -c 'create table journal(id bigserial primary key, entry text);'
echo "INSERT INTO journal(entry) VALUES (repeat('x', 50));" > "$WORK/insert.sql"

pg_activity_window
oracle_end() {
  oracle_py << 'PY'
f = pg_shares(WORK, T0, T1,
              wal_wait_pct_of_backend_time=lambda r: r[2] in ("WALWrite", "WALSync", "WALWriteLock"),
              wal_sync_pct_of_backend_time=lambda r: r[2] == "WALSync",
              client_read_pct=lambda r: r[2] == "ClientRead")
f["target_cpu_pct"] = PROC.get("target_cpu_pct")
text = (f"pg_stat_activity, {f['samples']} samples inside the window, {f['client_backends_mean']} client backends on average:\n"
        f"  waiting for the WAL's write lock or its sync {f['wal_wait_pct_of_backend_time']}% of the samples "
        f"(in the sync itself {f['wal_sync_pct_of_backend_time']}%), reading from the client {f['client_read_pct']}%\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  exec -- pgbench -h 127.0.0.1 -p "$SERVER_PORT" -U kiln -n -c 8 -j 2 -P 1 -T $((D + WARMUP + 30)) -f "$WORK/insert.sql" postgres
