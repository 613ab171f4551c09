#!/bin/bash
# Planted: clients queued behind one row's lock. A private PostgreSQL (Debian's package);
# 16 pgbench clients run one transaction each after another: update row 1 of `hot`, then
# 2 ms of pg_sleep before the commit, so that the row stays locked while its holder
# sleeps and the other 15 wait for it (XactLockTableWait, a latch's epoll in the kernel).
# The backends are forked when pgbench connects, after kiln has started.
# Oracle: PostgreSQL's own account, pg_stat_activity, sampled every 100 ms through the
# window: the share of the client backends waiting for a lock (wait_event_type 'Lock').
. "$(dirname "$0")/../../lib.sh"

PG=/usr/lib/postgresql/15/bin
[ -x "$PG/postgres" ] || { say "PostgreSQL 15 is not installed (scripts/install-deps.sh)"; exit 1; }
PGDIR=$WORK/pg
mkdir -p "$PGDIR"
chown postgres "$PGDIR" "$WORK"
as_pg() { runuser -u postgres -- "$@"; }
as_pg "$PG/initdb" -D "$PGDIR/data" -U kiln --auth=trust -N > "$WORK/initdb.out" 2>&1 ||
  { say "initdb failed: $(tail -3 "$WORK/initdb.out")"; exit 1; }
SERVER_PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
runuser -u postgres -- "$PG/postgres" -D "$PGDIR/data" -p "$SERVER_PORT" -k "$PGDIR" \
  -c listen_addresses=127.0.0.1 -c max_connections=40 > "$WORK/postgres.log" 2>&1 &
_PIDS+=("$!")
pg() { psql -X -q -h 127.0.0.1 -p "$SERVER_PORT" -U kiln -d postgres "$@"; }
for _ in $(seq 600); do pg -c 'select 1' > /dev/null 2>&1 && break; sleep 0.05; done
# The postmaster (runuser's child): the target, stopped at the end (a fast shutdown).
SERVER_PID=$(head -1 "$PGDIR/data/postmaster.pid" 2> /dev/null)
case_cleanup() { [ -n "$SERVER_PID" ] && kill -INT "$SERVER_PID" 2> /dev/null || true; }
pg -c 'create table hot(id int primary key, n bigint); insert into hot values (1, 0), (2, 0);' ||
  { say "PostgreSQL did not start: $(tail -3 "$WORK/postgres.log")"; exit 1; }
cat > "$WORK/hot.sql" << 'SQL'
BEGIN;
UPDATE hot SET n = n + 1 WHERE id = 1;
SELECT pg_sleep(0.002);
COMMIT;
SQL

oracle_window() {
  local t1
  t1=$(cat "$WORK/t1")
  while [ "$(mono)" -lt "$t1" ]; do
    echo "@t $(mono)"
    pg -A -t -c "select backend_type, state, coalesce(wait_event_type, '-'), coalesce(wait_event, '-') from pg_stat_activity where pid <> pg_backend_pid()"
    sleep 0.1
  done > "$WORK/activity.txt"
}
oracle_end() {
  oracle_py << 'PY'
snaps, cur = [], None
for line in open(os.path.join(WORK, "activity.txt")):
    line = line.rstrip("\n")
    if line.startswith("@t "):
        cur = (int(line[3:]), [])
        snaps.append(cur)
    elif line and cur is not None:
        cur[1].append(line.split("|"))
snaps = [s for s in snaps if T0 <= s[0] <= T1]
clients = [r for _, rows in snaps for r in rows if r[0] == "client backend"]
lock = sum(1 for r in clients if r[2] == "Lock")
active = sum(1 for r in clients if r[1] == "active")
idle_tx = sum(1 for r in clients if r[1].startswith("idle in transaction"))
sleep = sum(1 for r in clients if r[3] == "PgSleep")
n = len(clients)
pct = lambda x: round(100 * x / n, 1) if n else None
f = {
    "samples": len(snaps),
    "client_backends_mean": round(n / len(snaps), 1) if snaps else None,
    "lock_wait_pct_of_backend_time": pct(lock),
    "pg_sleep_pct_of_backend_time": pct(sleep),
    "active_pct": pct(active),
    "idle_in_transaction_pct": pct(idle_tx),
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"pg_stat_activity, {len(snaps)} samples inside the window, {f['client_backends_mean']} client backends on average:\n"
        f"  waiting for a lock (wait_event_type Lock) {f['lock_wait_pct_of_backend_time']}% of the samples, "
        f"in pg_sleep {f['pg_sleep_pct_of_backend_time']}%, active {f['active_pct']}%, idle in transaction {f['idle_in_transaction_pct']}%\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" \
  exec -- pgbench -h 127.0.0.1 -p "$SERVER_PORT" -U kiln -n -c 16 -j 2 -T $((D + WARMUP + 30)) -f "$WORK/hot.sql" postgres
