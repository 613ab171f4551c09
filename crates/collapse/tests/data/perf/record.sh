#!/usr/bin/env bash
# Re-records the perf fixtures of this directory (as root, on Linux with perf).
# Each fixture's exact command is listed in README.md; this script runs them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../../../../examples/workload" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -pthread "$src/workload.c" -o workload
g++ -O1 -g -fno-omit-frame-pointer "$src/anon.cpp" -o anon
rec() { # NAME SCRIPT-FIELDS PERF-RECORD-ARGS...
  local name=$1 fields=$2; shift 2
  perf record -q -o "$name.data" "$@" >/dev/null 2>&1
  if [ -n "$fields" ]; then
    perf script -i "$name.data" -F "$fields" 2>/dev/null > "$here/$name.txt"
  else
    perf script -i "$name.data" 2>/dev/null > "$here/$name.txt"
  fi
}
rec cpu-fp "" -F 999 -g -- ./workload 0.5 3
rec cpu-dwarf "" -F 199 --call-graph dwarf,16384 -- ./workload 0.3 2
rec mixed-events "" -e cpu-clock,page-faults -F 499 -g -- ./workload 0.3 2
rec tracepoints "" -e syscalls:sys_enter_mmap,sched:sched_switch -g -- ./workload 0.3 2
rec no-callchain "" -F 999 -- ./workload 0.3 2
rec anon-cpp "" -F 999 -g -- ./anon 0.3
rec pid-tid "comm,pid,tid,time,period,event,ip,sym,dso" -F 499 -g -- ./workload 0.3 2
# system-wide.txt is a system-wide recording taken while other programs ran (a Rust build,
# short-lived processes); it holds a `:-1` task, a `(deleted)` memfd module and C++
# `(anonymous namespace)` symbols. Re-recording gives different content:
#   perf record -a -g -F 999 -o sys.data -- sh -c 'for i in $(seq 1 300); do /bin/true; done'
#   perf script -i sys.data > system-wide.txt
