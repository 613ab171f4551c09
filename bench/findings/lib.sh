# Sourced by every bench/findings/cases/*/case.sh: a private work directory and store,
# building and starting servers on free ports, and `run_kiln`, which runs `kiln run` with
# the case's oracle over the same seconds.
#
# A case.sh is called as `case.sh OUT-DIR` and writes there: kiln.txt (kiln run's
# stdout), kiln.err, kiln.json (`kiln runs show NAME --json`), oracle.txt, oracle.json,
# proc.txt/proc.json (the universal /proc oracle of the target), command.txt and
# expect.json. It may define, before calling run_kiln:
#   oracle_begin    before kiln starts (start samplers with `bg`, wait until they are ready)
#   oracle_window   at the measurement's start, in the background; lasts about $D seconds
#                   (KILN_PID is kiln's pid, for a case whose load command is the subject)
#   oracle_end      after kiln ended and the samplers stopped: writes oracle.txt/.json
#   case_cleanup    on exit, once the processes started with `bg`/`start_server` stopped
# and may set KILN_WRAP (an array: a command kiln runs under, e.g. (nice -n -15)).
# Environment: KILN (default: the worktree's target/release/kiln), FINDINGS_EVENTS
# (default cpu,offcpu,runnable), FINDINGS_UNWIND (kiln run --unwind; default auto, kiln's
# own default: stacks unwound in the kernel, Python frames read at the sample; `copy`
# unwinds copies of the stack in user space), FINDINGS_KEEP=1 keeps the work directory.
set -euo pipefail

FINDINGS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$FINDINGS/../.." && pwd)
CASE_DIR=$(cd "$(dirname "$0")" && pwd)
CASE=$(basename "$CASE_DIR")
KILN=${KILN:-$ROOT/target/release/kiln}
EVENTS=${FINDINGS_EVENTS:-cpu,offcpu,runnable}
UNWIND=${FINDINGS_UNWIND:-auto}
D=10
WARMUP=2
PY=/usr/bin/python3
export PATH="/usr/local/go/bin:$HOME/.cargo/bin:/opt/kiln-py-spy/bin:$PATH"

[ $# -ge 1 ] || { echo "usage: $0 OUT-DIR" >&2; exit 2; }
# The oracles' bpftrace needs tracefs (a machine just booted may not have mounted it).
[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2> /dev/null || true
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
rm -f "$OUT"/kiln.txt "$OUT"/kiln.err "$OUT"/kiln.json "$OUT"/oracle.txt "$OUT"/oracle.json "$OUT"/proc.json "$OUT"/proc.txt
[ -x "$KILN" ] || { echo "$CASE: no kiln at $KILN (cargo build --release -p kiln, or set KILN)" >&2; exit 1; }
WORK=$(mktemp -d "/tmp/kiln-findings-$CASE.XXXXXX")
STORE=$WORK/runs.db
cp "$CASE_DIR/expect.json" "$OUT/expect.json"

_PIDS=()
_SAMPLERS=()
_cleanup() {
  local rc=$?
  set +e
  local i
  for ((i = ${#_SAMPLERS[@]} - 1; i >= 0; i--)); do kill -INT "${_SAMPLERS[i]}" 2> /dev/null; done
  for ((i = ${#_PIDS[@]} - 1; i >= 0; i--)); do kill -TERM "${_PIDS[i]}" 2> /dev/null; done
  for p in "${_SAMPLERS[@]}" "${_PIDS[@]}"; do stop_pid "$p" TERM; done
  if declare -F case_cleanup > /dev/null; then case_cleanup; fi
  # The JIT maps the targets wrote (Node's --perf-basic-prof, the JVM's, the BEAM's).
  for p in "${_PIDS[@]}" ${SERVER_PID:+"$SERVER_PID"}; do rm -f "/tmp/perf-$p.map"; done
  if [ "${FINDINGS_KEEP:-0}" = 1 ]; then echo "$CASE: work directory kept: $WORK" >&2; else rm -rf "$WORK"; fi
  exit $rc
}
trap _cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say() { echo "$CASE: $*" >&2; }

# stop_pid PID SIGNAL : sends SIGNAL and gives PID 5 s to exit, then SIGTERM and 5 s, then
# SIGKILL; reaps it. (A script's background command starts with SIGINT ignored, and keeps
# it so unless it sets its own handler, as bpftrace and the samplers do.)
stop_pid() {
  local p=$1 sig=$2 n
  for sig in "$sig" TERM KILL; do
    kill -"$sig" "$p" 2> /dev/null || break
    for n in $(seq 50); do kill -0 "$p" 2> /dev/null || break 2; sleep 0.1; done
  done
  wait "$p" 2> /dev/null || true
}

# cc_build NAME SOURCE... : a C server built as the corpus builds them, into $WORK/NAME.
cc_build() {
  local name=$1
  shift
  cc -O2 -g -fno-omit-frame-pointer -pthread -Wall -I"$FINDINGS/cases/common" -o "$WORK/$name" "$@"
}

# new_cgroup V1 V2 : a fresh cgroup for the case's server in CG — under v1's hierarchy of
# controller V1 (cpu, blkio, memory) when it is mounted, else v2's with controller V2
# enabled (cpu, io, memory) — and CG_VERSION (v1 or v2); removed when the case ends.
new_cgroup() {
  if [ -w "/sys/fs/cgroup/$1" ] && [ -e "/sys/fs/cgroup/$1/cgroup.procs" ]; then
    CG=$(mktemp -d "/sys/fs/cgroup/$1/kiln-findings.XXXXXX") CG_VERSION=v1
  elif grep -qw "$2" /sys/fs/cgroup/cgroup.controllers 2> /dev/null; then
    CG=$(mktemp -d /sys/fs/cgroup/kiln-findings.XXXXXX) CG_VERSION=v2
  else
    say "no writable cgroup $1 controller (v1 /sys/fs/cgroup/$1, or v2 with $2)"
    exit 1
  fi
  # (Once the server has ended: a cgroup with a process in it cannot be removed.)
  case_cleanup() { sleep 0.5; rmdir "$CG" 2> /dev/null || true; }
}

# start_in_cgroup NAME CMD... : start_server, the server in $CG (new_cgroup) from its start.
start_in_cgroup() {
  local name=$1
  shift
  start_server "$name" sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$CG" "$@"
}

# start_server NAME CMD... : starts CMD (its stdout and stderr in $WORK/NAME.out, .err),
# waits for its line `listening on HOST:PORT` and sets SERVER_PID and SERVER_PORT.
start_server() {
  local name=$1
  shift
  "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" &
  SERVER_PID=$!
  _PIDS+=("$SERVER_PID")
  local i
  for i in $(seq 1200); do
    if grep -q '^listening on ' "$WORK/$name.out"; then break; fi
    if ! kill -0 "$SERVER_PID" 2> /dev/null; then
      say "$name exited before listening:"; tail -20 "$WORK/$name.err" >&2; exit 1
    fi
    sleep 0.05
  done
  SERVER_PORT=$(sed -n 's/^listening on [^ ]*:\([0-9][0-9]*\).*/\1/p' "$WORK/$name.out" | head -1)
  [ -n "$SERVER_PORT" ] || { say "$name did not say where it listens within 60 s"; exit 1; }
}

# start_ready_server NAME CMD... : as start_server, for the test suite's programs, which
# say "ready PORT" once they listen on 127.0.0.1.
start_ready_server() {
  local name=$1
  shift
  "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" &
  SERVER_PID=$!
  _PIDS+=("$SERVER_PID")
  local i
  for i in $(seq 1200); do
    grep -q '^ready ' "$WORK/$name.out" && break
    kill -0 "$SERVER_PID" 2> /dev/null || { say "$name exited before listening:"; tail -20 "$WORK/$name.err" >&2; exit 1; }
    sleep 0.05
  done
  SERVER_PORT=$(awk '/^ready /{print $2; exit}' "$WORK/$name.out")
  [ -n "$SERVER_PORT" ] || { say "$name did not say where it listens within 60 s"; exit 1; }
}

# beam_server MODULE : the test suite's BEAM server MODULE (crates/findings/tests/programs/
# MODULE.erl, with the HTTP front they share) compiled and started on a node with its
# JIT's perf map, its own account written to $WORK/samples; warmed up for 3 s.
beam_server() {
  local src="$ROOT/crates/findings/tests/programs"
  erlc -o "$WORK" "$src/http_front.erl" "$src/$1.erl"
  start_server server erl -noshell +JPperf true -pa "$WORK" -eval "$1:start(\"$WORK/samples\")"
  warm_up "http://127.0.0.1:$SERVER_PORT/" 3
}

# window_times : the case's oracle_window: the window's start and end (ns, wall clock) in
# $WORK/w0 and $WORK/w1.
window_times() {
  oracle_window() {
    date +%s%N > "$WORK/w0"
    sleep "$D"
    date +%s%N > "$WORK/w1"
  }
}

# thread_dumps : the case's oracle_window: two JVM thread dumps (jcmd PID Thread.print)
# at 1/3 and 2/3 of the window, in $WORK/threads.1 and $WORK/threads.2.
thread_dumps() {
  oracle_window() {
    local t0=$SECONDS
    sleep $((D / 3 - (SECONDS - t0))) 2> /dev/null || true
    jcmd "$SERVER_PID" Thread.print > "$WORK/threads.1"
    sleep $((2 * D / 3 - (SECONDS - t0))) 2> /dev/null || true
    jcmd "$SERVER_PID" Thread.print > "$WORK/threads.2"
  }
}

# fsync_oracle CONNS : the case's oracle: bpftrace's fsync(2) and fdatasync(2) calls and
# time in the server per second (bt/fsync_time.bt), over the CONNS connections' time, and
# its write(2) calls (a record and a response per request).
fsync_oracle() {
  FSYNC_CONNS=$1
  oracle_begin() { bpftrace_sampler sys "$FINDINGS/bt/fsync_time.bt" "$SERVER_PID"; }
  oracle_end() {
    oracle_py "$FSYNC_CONNS" << 'PY'
s, secs = bpf_window(os.path.join(WORK, "sys.bt.out"), T0, T1)
conns = int(ARGS[0])
writes = bpf_sum(s, "write_calls")
f = fsync_figures(s, secs, conns)
calls = f.pop("fsync_calls")
f.update({
    "fsyncs_per_write_pair": round(2 * calls / writes, 2) if writes else None,
    "disk_write_mb_per_s": PROC.get("disk_write_mb_per_s"),
    "target_cpu_pct": PROC.get("target_cpu_pct"),
})
text = (f"bpftrace over {secs:.1f} s of the window:\n"
        f"  fsync/fdatasync: {calls} calls ({f['fsync_per_s']}/s), {f['fsync_ms_mean']} ms each, "
        f"{f['fsync_pct_of_request_time']}% of the {conns} connections' time\n"
        f"  write(2): {writes} calls (a record and a response per request: "
        f"{f['fsyncs_per_write_pair']} syncs per two writes)\n")
oracle(text, f)
PY
  }
}

# c_server [BT] : the case's C server (its server.c, with the corpus's flags) built and
# started, no arguments; with BT (a bpftrace script taking the server's pid), the case's
# oracle_begin samples it with BT into $WORK/sys.bt.out (a case may define its own after).
c_server() {
  cc_build server "$CASE_DIR/server.c"
  start_server server "$WORK/server"
  SYS_BT=${1:-}
  if [ -n "$SYS_BT" ]; then
    oracle_begin() { bpftrace_sampler sys "$SYS_BT" "$SERVER_PID"; }
  fi
}

# start_rabbitmq [CONF-LINE]: a private RabbitMQ node (bench/amqp/broker.sh, the JIT's
# perf map on) on free ports, CONF-LINE added to its rabbitmq.conf; sets SERVER_PID,
# SERVER_PORT and BROKER, stops the node when the case ends, and defines `rmqctl ARGS…`.
start_rabbitmq() {
  local port
  port=$("$PY" -c '
import random, socket
for _ in range(200):
    p = random.randrange(20000, 40000)
    try:
        for q in (p, p + 1, p + 3, p + 20000):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        print(p); break
    except OSError:
        pass')
  BROKER=$WORK/broker
  mkdir -p "$BROKER"
  case_cleanup() { "$ROOT/bench/amqp/broker.sh" stop "$BROKER" > /dev/null 2>&1 || true; }
  SERVER_PID=$(BROKER_CONF="${1:-}" BROKER_ERL_ARGS="+JPperf map" "$ROOT/bench/amqp/broker.sh" start "$BROKER" "$port" | tail -1)
  SERVER_PORT=$port
  [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" || { say "the broker did not start"; exit 1; }
}
rmqctl() {
  HOME=$BROKER/home ERL_EPMD_PORT=$((SERVER_PORT + 3)) ERL_EPMD_ADDRESS=127.0.0.1 \
    /usr/lib/rabbitmq/bin/rabbitmqctl -n kilnbench@localhost "$@"
}

# start_postgres : a private PostgreSQL (Debian's package) on a free port of 127.0.0.1,
# stopped (a fast shutdown) when the case ends; sets SERVER_PID (the postmaster) and
# SERVER_PORT, and defines `pg ARGS…` (psql on it).
start_postgres() {
  local bin=/usr/lib/postgresql/15/bin dir=$WORK/pg
  [ -x "$bin/postgres" ] || { say "PostgreSQL 15 is not installed (scripts/install-deps.sh)"; exit 1; }
  mkdir -p "$dir"
  chown postgres "$dir" "$WORK"
  runuser -u postgres -- "$bin/initdb" -D "$dir/data" -U kiln --auth=trust > "$WORK/initdb.out" 2>&1 ||
    { say "initdb failed: $(tail -3 "$WORK/initdb.out")"; exit 1; }
  SERVER_PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  runuser -u postgres -- "$bin/postgres" -D "$dir/data" -p "$SERVER_PORT" -k "$dir" \
    -c listen_addresses=127.0.0.1 -c max_connections=40 > "$WORK/postgres.log" 2>&1 &
  _PIDS+=("$!")
  pg() { psql -X -q -h 127.0.0.1 -p "$SERVER_PORT" -U kiln -d postgres "$@"; }
  local i
  for i in $(seq 600); do pg -c 'select 1' > /dev/null 2>&1 && break; sleep 0.05; done
  # The postmaster (runuser's child): the target.
  SERVER_PID=$(head -1 "$dir/data/postmaster.pid" 2> /dev/null)
  [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" || { say "PostgreSQL did not start: $(tail -3 "$WORK/postgres.log")"; exit 1; }
  case_cleanup() { kill -INT "$SERVER_PID" 2> /dev/null || true; }
}

# start_nginx WORKERS HTTP-LINES SERVER-LINES : a private nginx (Debian's package) in
# $WORK/nginx, WORKERS worker processes, bound to 127.0.0.1 on a free port, its root
# $WORK/nginx/www, the access log $WORK/nginx/access.log in the format `$msec
# $request_time $status $body_bytes_sent $limit_req_status` (nginx's own account of every request), the
# lines given added inside http { } and server { }. Sets SERVER_PID (the master: kiln
# takes its workers with it) and SERVER_PORT.
start_nginx() {
  local workers=$1 http_lines=$2 server_lines=$3 dir=$WORK/nginx i
  [ -x /usr/sbin/nginx ] || { say "nginx is not installed (scripts/install-deps.sh)"; exit 1; }
  mkdir -p "$dir/www" "$dir/tmp"
  # The workers run as nginx's unprivileged user: they must reach the root through $WORK.
  chmod 755 "$WORK" "$dir" "$dir/www"
  SERVER_PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  cat > "$dir/nginx.conf" << CONF
worker_processes $workers;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
  log_format timing '\$msec \$request_time \$status \$body_bytes_sent \$limit_req_status \$upstream_response_time';
  access_log $dir/access.log timing;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  default_type text/plain;
  keepalive_requests 1000000;
  $http_lines
  server {
    listen 127.0.0.1:$SERVER_PORT;
    root $dir/www;
    $server_lines
  }
}
CONF
  /usr/sbin/nginx -p "$dir" -c "$dir/nginx.conf" -g 'daemon off;' > "$WORK/nginx.out" 2> "$WORK/nginx.err" &
  SERVER_PID=$!
  _PIDS+=("$SERVER_PID")
  for i in $(seq 600); do
    "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $SERVER_PORT), 0.2)" 2> /dev/null && break
    kill -0 "$SERVER_PID" 2> /dev/null || { say "nginx exited: $(tail -3 "$WORK/nginx.err" "$dir/error.log")"; exit 1; }
    sleep 0.05
  done
}

# pg_activity_window : the case's oracle_window: PostgreSQL's own account of what its
# backends wait for, pg_stat_activity every 100 ms through the window, in
# $WORK/activity.txt (oracle_lib.pg_activity reads it back).
# (pg_activity_sample is that sampling, for a case's own oracle_window.)
pg_activity_window() { oracle_window() { pg_activity_sample; }; }
pg_activity_sample() {
  local t1
  t1=$(cat "$WORK/t1")
  while [ "$(mono)" -lt "$t1" ]; do
    echo "@t $(mono)"
    pg -A -t -c "select backend_type, state, coalesce(wait_event_type, '-'), coalesce(wait_event, '-') from pg_stat_activity where pid <> pg_backend_pid()"
    sleep 0.1
  done > "$WORK/activity.txt"
}

# warm_up URL SECONDS : a few seconds of requests before kiln starts (wrk, 4 connections),
# so that a JIT compiler has compiled the handler: the server is measured in its steady state.
warm_up() { wrk -t1 -c4 -d"$2"s "$1" > "$WORK/warm-up.out" 2>&1 || say "warm-up: $(tail -1 "$WORK/warm-up.out")"; }

# mono : CLOCK_MONOTONIC in ns (the clock of the window, bpftrace's nsecs and kiln's).
mono() { "$PY" "$FINDINGS/oracle_lib.py" now; }

# snap FILE CMD... : CMD's output in FILE, then a line "@t NS": the CLOCK_MONOTONIC time
# halfway through CMD (when its snapshot was taken). oracle_lib.read_snap reads it back.
snap() {
  local file=$1 a b
  shift
  a=$(mono)
  "$@" > "$file"
  b=$(mono)
  echo "@t $(((a + b) / 2))" >> "$file"
}

# bg CMD... : a helper process (a neighbour, a downstream), stopped at exit. Sets BG_PID.
bg() {
  "$@" &
  BG_PID=$!
  _PIDS+=("$BG_PID")
}

# sampler CMD... : an oracle's sampler (or anything else to stop as soon as kiln ends),
# stopped with SIGINT then (bpftrace then prints what it holds). Sets BG_PID.
sampler() {
  "$@" &
  BG_PID=$!
  _SAMPLERS+=("$BG_PID")
}

# bpftrace_sampler NAME SCRIPT PID : bpftrace with the script's output in
# $WORK/NAME.bt.out, PID as its $1 (and -p, so that user stacks are named from its maps);
# waits until its BEGIN printed READY (every probe attached).
bpftrace_sampler() {
  local name=$1 script=$2 pid=$3
  sampler bpftrace -q -p "$pid" "$script" "$pid" > "$WORK/$name.bt.out" 2> "$WORK/$name.bt.err"
  if ! "$PY" -c "import sys; sys.path.insert(0, '$FINDINGS'); import oracle_lib as o; sys.exit(0 if o.wait_ready('$WORK/$name.bt.out', timeout=90) else 1)"; then
    say "bpftrace did not start:"; cat "$WORK/$name.bt.err" >&2; exit 1
  fi
}

# run_kiln ARGS... : `kiln run --store PRIVATE --name CASE ARGS…` with the oracle over the
# same seconds; TARGET_PID (default SERVER_PID) is the process the universal oracle reads.
run_kiln() {
  local target=${TARGET_PID:-$SERVER_PID}
  set -- --unwind "$UNWIND" "$@"
  printf '%q ' ${KILN_WRAP[@]+"${KILN_WRAP[@]}"} kiln run --name "$CASE" "$@" > "$OUT/command.txt"
  echo >> "$OUT/command.txt"
  tr '\0' ' ' < "/proc/$target/cmdline" > "$OUT/target_cmdline.txt" || true
  echo >> "$OUT/target_cmdline.txt"
  sampler nice -n -20 "$PY" "$FINDINGS/oracle_lib.py" sample-proc "$target" "$WORK/proc.jsonl" "${SERVER_PORT:-}"
  if declare -F oracle_begin > /dev/null; then oracle_begin; fi
  ${KILN_WRAP[@]+"${KILN_WRAP[@]}"} "$KILN" run --store "$STORE" --no-report --name "$CASE" "$@" > "$OUT/kiln.txt" 2> "$OUT/kiln.err" &
  KILN_PID=$!
  _PIDS+=("$KILN_PID")
  # The watcher runs at the highest priority (its oracle commands too), so that a busy or
  # starved machine does not delay the moment it notices the measurement's start.
  (
    renice -n -20 -p "$BASHPID" > /dev/null 2>&1 || true
    for _ in $(seq 4800); do
      grep -q '^measuring' "$OUT/kiln.err" 2> /dev/null && break
      kill -0 "$KILN_PID" 2> /dev/null || exit 0
      sleep 0.025
    done
    t0=$(mono)
    echo "$t0" > "$WORK/t0"
    echo $((t0 + D * 1000000000)) > "$WORK/t1"
    if declare -F oracle_window > /dev/null; then oracle_window > "$WORK/window.log" 2>&1; fi
  ) &
  local watcher=$! rc=0
  wait "$KILN_PID" || rc=$?
  echo "$rc" > "$OUT/kiln.rc"
  wait "$watcher" || say "the oracle's window commands failed: $(tail -3 "$WORK/window.log")"
  if [ ! -s "$WORK/t0" ]; then
    say "kiln never said 'measuring'; the oracle has no window"
    mono > "$WORK/t0"
    cp "$WORK/t0" "$WORK/t1"
  fi
  for p in "${_SAMPLERS[@]}"; do kill -INT "$p" 2> /dev/null || true; done
  for p in "${_SAMPLERS[@]}"; do stop_pid "$p" INT; done
  _SAMPLERS=()
  "$KILN" runs show "$CASE" --store "$STORE" --json > "$OUT/kiln.json" 2> "$WORK/show.err" ||
    say "kiln runs show failed: $(cat "$WORK/show.err")"
  # The oracle's window against kiln's own (one clock): a watcher that saw 'measuring'
  # late measured other seconds, and the case's figures cannot judge kiln's.
  "$PY" - "$OUT/kiln.json" "$WORK/t0" "$CASE" << 'PY' || true
import json, sys
try:
    start = json.load(open(sys.argv[1]))["measure"]["start_ns"]
    t0 = int(open(sys.argv[2]).read())
except (OSError, ValueError, KeyError, TypeError):
    sys.exit(0)
if abs(t0 - start) > 1e9:
    print(f"{sys.argv[3]}: the oracle's window began {(t0 - start) / 1e9:+.1f} s from kiln's measurement: its figures are of other seconds", file=sys.stderr)
PY
  "$PY" "$FINDINGS/oracle_lib.py" summarise-proc "$OUT" "$WORK"
  if declare -F oracle_end > /dev/null; then oracle_end; fi
  [ -s "$OUT/oracle.json" ] || say "the oracle wrote no figures"
  say "kiln run exited $rc; oracle: $(tr -d '\n ' < "$OUT/oracle.json" 2> /dev/null | cut -c1-160)"
}

# oracle_py : runs the Python on stdin with oracle_lib imported, OUT and WORK as
# variables and the window as T0, T1 (ns).
oracle_py() {
  "$PY" - "$OUT" "$WORK" "$@" << EOF
import sys, os, json
sys.path.insert(0, "$FINDINGS")
from oracle_lib import *
OUT, WORK = sys.argv[1], sys.argv[2]
ARGS = sys.argv[3:]
T0, T1 = window(WORK)
PROC = json.load(open(os.path.join(OUT, "proc.json")))
def oracle(text, figures):
    """The case's oracle: its text (then the universal /proc figures') and its figures."""
    write_oracle(OUT, text + "\n" + open(os.path.join(OUT, "proc.txt")).read(), figures)
$(cat)
EOF
}

# snap_window URL [NAME] : the case's oracle_window: URL's answer (a server's own account,
# JSON) at the window's start and end, in $WORK/NAME.0 and $WORK/NAME.1 (NAME: stats), each
# with the moment it was taken; oracle_lib.window_json reads the pair back.
snap_window() {
  SNAP_URL=$1 SNAP_NAME=${2:-stats}
  oracle_window() {
    snap "$WORK/$SNAP_NAME.0" curl -sS --max-time 5 "$SNAP_URL"
    sleep $((D - 1))
    snap "$WORK/$SNAP_NAME.1" curl -sS --max-time 5 "$SNAP_URL"
  }
}

# timed_oracle CONNS FUNC WHAT : the oracle of a server that times its own FUNC (a call to
# a downstream, a sleep, a timer it holds the request on) and answers GET /metrics with
# {calls, ns, now_ns}, read at the window's ends: the time in FUNC over the CONNS
# connections' time (WHAT_pct_of_request_time), the calls a second, their mean, and the
# server's CPU (/proc). Defines the case's oracle_window and oracle_end.
timed_oracle() {
  TIMED_CONNS=$1 TIMED_FUNC=$2 TIMED_WHAT=$3
  snap_window "http://127.0.0.1:$SERVER_PORT/metrics" metrics
  oracle_end() {
    oracle_py "$TIMED_CONNS" "$TIMED_FUNC" "$TIMED_WHAT" << 'PY'
conns, func, what = int(ARGS[0]), ARGS[1], ARGS[2]
a, b = window_json(WORK, "metrics")
secs = (b["now_ns"] - a["now_ns"]) / 1e9
calls = b["calls"] - a["calls"]
waited = (b["ns"] - a["ns"]) / 1e9
share = what + "_pct_of_request_time"
f = {
    share: round(100 * waited / (conns * secs), 1),
    "calls_per_s": round(calls / secs, 1),
    "call_ms_mean": round(1000 * waited / calls, 2) if calls else None,
    "server_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"the server's own timing over {secs:.1f} s (GET /metrics): {calls} calls of {func}, "
        f"{f['call_ms_mean']} ms each: {f[share]}% of the {conns} connections' time; "
        f"the server's CPU {f['server_cpu_pct']}% of a core\n")
oracle(text, f)
PY
  }
}

# heap_oracle FIELD : the oracle of a server that leaks: its RSS from /proc (growth per
# second over the window) and its runtime's own account of its live memory (GET /metrics:
# JSON with FIELD in bytes, read at the window's ends), as MiB a second. Defines the case's
# oracle_window and oracle_end.
heap_oracle() {
  HEAP_FIELD=$1
  snap_window "http://127.0.0.1:$SERVER_PORT/metrics" metrics
  oracle_end() {
    oracle_py "$HEAP_FIELD" << 'PY'
field = ARGS[0]
(ta, a), (tb, b) = read_snap(os.path.join(WORK, "metrics.0")), read_snap(os.path.join(WORK, "metrics.1"))
a, b, secs = json.loads(a), json.loads(b), (tb - ta) / 1e9
f = {
    "rss_growth_mb_per_s": PROC.get("rss_growth_mb_per_s"),
    "rss_start_mb": PROC.get("rss_start_mb"),
    "rss_end_mb": PROC.get("rss_end_mb"),
    "heap_growth_mb_per_s": round((b[field] - a[field]) / 1048576 / secs, 2) if secs > 0 else None,
}
text = (f"/proc: RSS {f['rss_start_mb']} -> {f['rss_end_mb']} MiB over the window, {f['rss_growth_mb_per_s']} MiB/s\n"
        f"the runtime's own account (GET /metrics {field}): {f['heap_growth_mb_per_s']} MiB/s of live memory over {secs:.1f} s\n")
oracle(text, f)
PY
  }
}

# go_cpu_oracle FUNC : the oracle of a Go server's CPU, from the runtime's own CPU profile
# over the window (GET /debug/pprof/profile?seconds=D, read with `go tool pprof -top -cum`)
# and its GOMAXPROCS (GET /gomaxprocs: runtime.GOMAXPROCS(0)): its CPU as a share of a core
# and of what GOMAXPROCS lets it use, and FUNC's share of it (func_pct_of_cpu). (runtime/
# metrics' CPU classes are no account here: they count a P's time while its thread waits
# for a CPU.) Defines the case's oracle_window and oracle_end.
go_cpu_oracle() {
  GO_FUNC=$1
  oracle_window() {
    curl -sS --max-time $((D + 20)) -o "$WORK/cpu.pb.gz" "http://127.0.0.1:$SERVER_PORT/debug/pprof/profile?seconds=$D"
    curl -sS --max-time 5 -o "$WORK/gomaxprocs.txt" "http://127.0.0.1:$SERVER_PORT/gomaxprocs"
  }
  oracle_end() {
    go tool pprof -top -cum "$WORK/cpu.pb.gz" > "$WORK/cpu.top" 2> "$WORK/cpu.top.err" || true
    oracle_py "$D" "$GO_FUNC" << 'PY'
d, func = float(ARGS[0]), ARGS[1]
top = open(os.path.join(WORK, "cpu.top")).read()
procs = int(open(os.path.join(WORK, "gomaxprocs.txt")).read())
m = re.search(r"Total samples = (\S+)", top)
total = go_duration(m.group(1)) if m else None
used = 0.0
for line in top.splitlines():
    w = line.split()
    if len(w) >= 6 and w[5] == func:
        used = go_duration(w[3])
f = {
    "gomaxprocs": procs,
    "go_cpu_pct_of_a_core": round(100 * total / d, 1) if total is not None else None,
    "go_cpu_pct_of_cap": round(100 * total / d / procs, 1) if total is not None and procs else None,
    "func_pct_of_cpu": round(100 * used / total, 1) if total else None,
    "target_cpu_pct": PROC.get("target_cpu_pct"),
    "runq_wait_ms_per_s": PROC.get("target_runq_wait_ms_per_s"),
}
text = (f"Go's CPU profile over the window (go tool pprof -top -cum): {total} s of CPU in {d:.0f} s = "
        f"{f['go_cpu_pct_of_a_core']}% of a core, {f['go_cpu_pct_of_cap']}% of the {procs} CPUs GOMAXPROCS lets it "
        f"use (runtime.GOMAXPROCS); {func} {f['func_pct_of_cpu']}% of it\n\n" + "\n".join(top.splitlines()[:12]) + "\n")
write_oracle(OUT, text + "\n" + open(os.path.join(OUT, "proc.txt")).read(), f)
PY
  }
}

# go_block_oracle FUNC CONNS NAME : the oracle of goroutines waiting under FUNC, from Go's
# own block profile over the same seconds (GET /debug/pprof/block?seconds=D, a delta, read
# with `go tool pprof -top -cum -sample_index=delay`): the delay under FUNC as NAME_s_per_s,
# NAME_pct_of_block_delay and NAME_pct_of_request_time (over the CONNS connections' time).
# Defines the case's oracle_window and oracle_end.
go_block_oracle() {
  GO_BLOCK=("$@")
  oracle_window() {
    curl -sS --max-time $((D + 20)) -o "$WORK/block.pb.gz" "http://127.0.0.1:$SERVER_PORT/debug/pprof/block?seconds=$D"
  }
  oracle_end() {
    go tool pprof -top -cum -sample_index=delay "$WORK/block.pb.gz" > "$WORK/block.top" 2> "$WORK/block.top.err" || true
    oracle_py "$D" "${GO_BLOCK[@]}" << 'PY'
d, func, conns, name = float(ARGS[0]), ARGS[1], int(ARGS[2]), ARGS[3]
top = open(os.path.join(WORK, "block.top")).read()
total = go_duration(re.search(r"of ([\d.]+\w+) total", top).group(1)) if "total" in top else 0.0
under = 0.0
for line in top.splitlines():
    w = line.split()
    if len(w) >= 6 and w[5] == func:
        under = go_duration(w[3])
f = {
    "block_delay_s_per_s": round(total / d, 2),
    f"{name}_s_per_s": round(under / d, 2),
    f"{name}_pct_of_block_delay": round(100 * under / total, 1) if total else None,
    f"{name}_pct_of_request_time": round(100 * under / (conns * d), 1),
    "target_cpu_pct": PROC.get("target_cpu_pct"),
}
text = (f"Go's block profile over the window (delta of {d:.0f} s, go tool pprof -top -cum -sample_index=delay):\n"
        f"  total delay {total:.1f} s; under {func} {under:.1f} s, "
        f"{f[name + '_pct_of_request_time']}% of the {conns} connections' time\n\n" + "\n".join(top.splitlines()[:14]) + "\n")
write_oracle(OUT, text + "\n" + open(os.path.join(OUT, "proc.txt")).read(), f)
PY
  }
}
