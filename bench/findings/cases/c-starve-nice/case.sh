#!/bin/bash
# Planted: CPU starvation by a neighbour. A thread-per-connection server (~0.2 ms of CPU a
# request in compute_digest) beside one CPU burner per CPU at nice -19; kiln runs at nice
# -20 so that the load is not starved with the server (16 busy threads at nice 0 weigh 16 x
# 1024 against the burners' 2 x 71,755: the server gets about a tenth of the CPUs).
# Oracle: the kernel's schedstat of every server thread (/proc/PID/task/*/schedstat: time on
# CPU and time runnable waiting for one) and the burners' CPU.
. "$(dirname "$0")/../../lib.sh"

cc_build server "$FINDINGS/cases/common/cpu_server.c"
cc_build spin "$FINDINGS/cases/common/spin.c"
start_server server "$WORK/server" 150000
# This script, and what it starts from now on (the burners, kiln, the oracle), at nice -20:
# at nice 0 beside the burners it would itself get less than 1% of the CPUs.
renice -n -20 -p $$ > /dev/null
spinners=()
for _ in $(seq "$(nproc)"); do
  # At nice -19; started as the oracle's samplers are, so that they stop when kiln ends.
  sampler nice -n $((-19 - $(nice))) "$WORK/spin"
  spinners+=("$BG_PID")
done
KILN_WRAP=(nice -n -20)

burners() { for p in "${spinners[@]}"; do cut -d' ' -f1 "/proc/$p/schedstat"; done; }
oracle_window() {
  snap "$WORK/spin.0" burners
  sleep "$D"
  snap "$WORK/spin.1" burners
}
oracle_end() {
  oracle_py << 'PY'
(ta, a), (tb, b) = read_snap(os.path.join(WORK, "spin.0")), read_snap(os.path.join(WORK, "spin.1"))
burn = sum(int(y) - int(x) for x, y in zip(a.split(), b.split())) / ((tb - ta) / 1e9) / 1e9
f = {
    "top_runq_wait_ms_per_s": PROC.get("target_runq_wait_ms_per_s"),
    "runq_wait_share_pct": PROC.get("runq_wait_share_pct"),
    "target_cpu_pct": PROC.get("target_cpu_pct"),
    "neighbour_cpus": round(burn, 2),
    "machine_busy_pct": PROC.get("machine_busy_pct"),
}
text = (f"schedstat of the server's threads over the window: on CPU {f['target_cpu_pct']}% of a core, "
        f"runnable and waiting {f['top_runq_wait_ms_per_s']} ms/s ({f['runq_wait_share_pct']}% of their runnable time)\n"
        f"the neighbours (nice -19 burners) used {f['neighbour_cpus']} CPUs; the machine was {f['machine_busy_pct']}% busy\n")
oracle(text, f)
PY
}

run_kiln -p "$SERVER_PID" -e "$EVENTS" -d "$D" --warmup "$WARMUP" load http -c 16 -d 30s "http://127.0.0.1:$SERVER_PORT/"
