"""The corpus's oracles: samplers that read the system's own account of a server (the
kernel's /proc, `ss`, `nstat`, bpftrace's in-kernel counts, the runtimes' own tools) and
helpers that reduce what they printed to the figures of one measurement window.

Used two ways:
  python3 oracle_lib.py now                      CLOCK_MONOTONIC in ns (the window's clock)
  python3 oracle_lib.py sample-proc PID OUT [PORT]   every 0.5 s until PID exits or SIGINT:
        per-thread run and run-queue wait (/proc/PID/task/*/schedstat), faults, RSS, I/O
        bytes, the machine's CPU (/proc/stat), the listen queue (`ss -ltn`, with PORT) and
        the TCP counters (`nstat -asz`), one JSON line per sample
  python3 oracle_lib.py summarise-proc OUT-DIR WORK-DIR   the universal figures (proc.json)
and imported by each case's summary (`from oracle_lib import *`).

Nothing here reads kiln's output: the window is the monotonic time at which kiln said the
measurement began (`measuring`), plus -d.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

NSTAT_COUNTERS = [
    "TcpExtListenOverflows",
    "TcpExtListenDrops",
    "TcpExtDelayedACKs",
    "TcpExtTCPTimeouts",
    "TcpRetransSegs",
    "TcpActiveOpens",
    "TcpPassiveOpens",
]


def now_ns():
    return time.monotonic_ns()


# ---- the window -------------------------------------------------------------------------

def window(work):
    """(t0, t1) in CLOCK_MONOTONIC ns: when kiln said `measuring`, and t0 + -d."""
    with open(os.path.join(work, "t0")) as f:
        t0 = int(f.read().strip())
    with open(os.path.join(work, "t1")) as f:
        t1 = int(f.read().strip())
    return t0, t1


def wall_of(mono_ns):
    """The wall-clock time (s since the epoch) of a CLOCK_MONOTONIC time, for logs that
    stamp their lines with the wall clock (nginx's $msec)."""
    return time.time() - (time.monotonic_ns() - mono_ns) / 1e9


def nginx_requests(work, t0, t1):
    """nginx's own account of the requests it ended inside the window (start_nginx's
    access log, `$msec $request_time $status $body_bytes_sent $limit_req_status
    $upstream_response_time`): a list of (request_time_s, status, limit_req_status)."""
    return [(t, st, lim) for t, st, lim, _ in _nginx_log(work, t0, t1)]


def nginx_upstream_times(work, t0, t1):
    """The same requests as (request_time_s, upstream_response_time_s): the time nginx
    waited for its upstream, by its own account (0 for a request that had none)."""
    return [(t, up) for t, _, _, up in _nginx_log(work, t0, t1)]


def _nginx_log(work, t0, t1):
    a, b = wall_of(t0), wall_of(t1)
    out = []
    with open(os.path.join(work, "nginx", "access.log")) as f:
        for line in f:
            w = line.split()
            if len(w) >= 3 and a <= float(w[0]) <= b:
                # Several upstream tries are listed "0.020, 0.021"; "-" is none.
                up = sum(float(x) for x in " ".join(w[5:]).replace(",", " ").replace(":", " ").split() if x != "-")
                out.append((float(w[1]), int(w[2]), w[4] if len(w) > 4 else "-", up))
    return out


# ---- /proc sampling ---------------------------------------------------------------------

def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _stat_fields(text):
    """/proc/…/stat after the comm (which may hold spaces and parentheses)."""
    rp = text.rfind(")")
    return text[text.find("(") + 1:rp], text[rp + 2:].split()


def copies_of(pid):
    """The target's children that run its own program (a pre-forking server's workers, a
    Node cluster's): their threads are the target's too. Programs it runs for a request
    (another executable) are not."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        kids = set()
        for tid in os.listdir(f"/proc/{pid}/task"):
            kids.update(int(c) for c in (_read(f"/proc/{pid}/task/{tid}/children") or "").split())
    except OSError:
        return []
    out = []
    for k in sorted(kids):
        try:
            if os.readlink(f"/proc/{k}/exe") == exe:
                out.append(k)
        except OSError:
            pass
    return out


def sample_proc(pid, port=None):
    s = {"t": now_ns(), "tasks": {}}
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    _, f = _stat_fields(stat)
    s["minflt"] = int(f[7])
    s["majflt"] = int(f[9])
    s["rss_kb"] = int(f[21]) * os.sysconf("SC_PAGE_SIZE") // 1024
    # Its own CPU (utime + stime), clock ticks: the threads that ended are in it.
    s["cpu_ticks"] = int(f[11]) + int(f[12])
    # The CPU of the children it waited for (cutime + cstime), clock ticks.
    s["children_ticks"] = int(f[13]) + int(f[14])
    # Storage bytes by process: the target's and its copies' (PostgreSQL's backends
    # write the WAL), compared between samples for the processes in both.
    s["io"] = {}
    copies = copies_of(pid)
    for p in [pid] + copies:
        io = _read(f"/proc/{p}/io") or ""
        for line in io.splitlines():
            k, _, v = line.partition(":")
            if k in ("read_bytes", "write_bytes", "syscr", "syscw"):
                s["io"].setdefault(str(p), {})[k] = int(v)
    tasks = []
    for p in [pid] + copies:
        try:
            tasks += [(p, tid) for tid in os.listdir(f"/proc/{p}/task")]
        except OSError:
            pass
    for p, tid in tasks:
        st = _read(f"/proc/{p}/task/{tid}/stat")
        ss = _read(f"/proc/{p}/task/{tid}/schedstat")
        if st is None or ss is None:
            continue
        comm, tf = _stat_fields(st)
        run_ns, wait_ns, _ = (int(x) for x in ss.split())
        s["tasks"][tid] = [comm, run_ns, wait_ns, tf[0]]
    cpu = (_read("/proc/stat") or "").splitlines()[0].split()[1:]
    vals = [int(x) for x in cpu]
    s["machine"] = [sum(vals), vals[3] + vals[4]]  # total jiffies, idle + iowait
    for line in (_read("/proc/stat") or "").splitlines():
        if line.startswith("processes "):
            s["forks"] = int(line.split()[1])  # processes started on the machine
    if port:
        try:
            out = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True, timeout=5).stdout
            qs = [int(line.split()[1]) for line in out.splitlines() if line.split()]
            s["listen_recvq"] = max(qs) if qs else 0
        except (OSError, ValueError, subprocess.SubprocessError):
            pass
    try:
        out = subprocess.run(["nstat", "-asz", "-j"] + NSTAT_COUNTERS, capture_output=True, text=True, timeout=5).stdout
        s["nstat"] = json.loads(out).get("kernel", {})
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    return s


def run_sampler(pid, out, port=None, interval=0.5):
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with open(out, "w") as f:
        while not stop:
            s = sample_proc(pid, port)
            if s is None:
                break
            f.write(json.dumps(s) + "\n")
            f.flush()
            time.sleep(interval)


def read_jsonl(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        rows.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return rows


def thread_times(work, t0, t1):
    """The target's threads over the window, from the case's own /proc samples
    (proc.jsonl): its seconds, the main thread's id (the lowest: the process's first
    thread), and per thread id its seconds on a CPU and waiting for one (schedstat)."""
    a, b = around(read_jsonl(os.path.join(work, "proc.jsonl")), t0, t1)
    dt = (b["t"] - a["t"]) / 1e9
    main = min(b["tasks"], key=int)
    times = {}
    for tid, now in b["tasks"].items():
        then = a["tasks"].get(tid, [now[0], 0, 0])
        times[tid] = ((now[1] - then[1]) / 1e9, (now[2] - then[2]) / 1e9)
    return dt, main, times


def around(samples, t0, t1):
    """The samples that bound the window from inside its load: the last at or before t0
    and the last at or before t1 (not after: by then the load may have stopped and its
    threads exited). The nearest ones when the sampling started late."""
    if not samples:
        return None, None
    a = [s for s in samples if s["t"] <= t0]
    b = [s for s in samples if s["t"] <= t1]
    first = a[-1] if a else samples[0]
    last = b[-1] if b and b[-1]["t"] > first["t"] else samples[-1]
    return first, last


def proc_figures(samples, t0, t1):
    """The universal figures of the target over the window, from its /proc samples."""
    a, b = around(samples, t0, t1)
    if a is None or b["t"] <= a["t"]:
        return {}
    dt = (b["t"] - a["t"]) / 1e9
    # Each thread as last seen inside the window: one that exited before its end (the
    # load's connections closed) keeps what it did.
    last = {}
    for s in samples:
        if a["t"] <= s["t"] <= b["t"]:
            last.update(s["tasks"])
    threads = []
    for tid, (comm, run_ns, wait_ns, _) in last.items():
        prev = a["tasks"].get(tid, [comm, 0, 0, ""])
        threads.append((comm, tid, (run_ns - prev[1]) / 1e9, (wait_ns - prev[2]) / 1e9))
    run = sum(t[2] for t in threads)
    wait = sum(t[3] for t in threads)
    # Threads that lived between two samples (a thread per connection) are in no sample's
    # tasks; the process's own count holds them.
    if "cpu_ticks" in a and "cpu_ticks" in b:
        run = max(run, (b["cpu_ticks"] - a["cpu_ticks"]) / os.sysconf("SC_CLK_TCK"))
    busiest = max(threads, key=lambda t: t[2] + t[3]) if threads else ("", "", 0, 0)
    hottest = max(threads, key=lambda t: t[2]) if threads else ("", "", 0, 0)
    active = [t for t in threads if t[2] + t[3] > 0.01 * dt]
    ncpu = os.cpu_count() or 1
    capacity = min(ncpu, max(1, len(active)))
    mt = b["machine"][0] - a["machine"][0]
    midle = b["machine"][1] - a["machine"][1]
    f = {
        "window_s": round(dt, 2),
        "cpus": ncpu,
        "threads": len(threads),
        "threads_active": len(active),
        "target_cpu_pct": round(100 * run / dt, 1),
        "target_runq_wait_ms_per_s": round(1000 * wait / dt, 1),
        "runq_wait_share_pct": round(100 * wait / (run + wait), 1) if run + wait > 0 else 0.0,
        "hottest_thread": hottest[0],
        "hottest_thread_cpu_pct": round(100 * hottest[2] / dt, 1),
        "busiest_thread": busiest[0],
        "busiest_thread_busy_pct": round(100 * (busiest[2] + busiest[3]) / dt, 1),
        "target_busy_pct_of_capacity": round(100 * (run + wait) / dt / capacity, 1),
        "machine_busy_pct": round(100 * (mt - midle) / mt, 1) if mt > 0 else None,
        "minflt_per_s": round((b["minflt"] - a["minflt"]) / dt, 1),
        "rss_start_mb": round(a["rss_kb"] / 1024, 1),
        "rss_end_mb": round(b["rss_kb"] / 1024, 1),
        "rss_growth_mb_per_s": round((b["rss_kb"] - a["rss_kb"]) / 1024 / dt, 2),
    }
    if "children_ticks" in a and "children_ticks" in b:
        hz = os.sysconf("SC_CLK_TCK")
        f["children_cpu_pct"] = round(100 * (b["children_ticks"] - a["children_ticks"]) / hz / dt, 1)
    if "forks" in a and "forks" in b:
        f["machine_forks_per_s"] = round((b["forks"] - a["forks"]) / dt, 1)
    both = [p for p in a.get("io", {}) if p in b.get("io", {}) and "read_bytes" in a["io"][p] and "read_bytes" in b["io"][p]]
    if both:
        moved = lambda k: sum(b["io"][p][k] - a["io"][p][k] for p in both)
        f["disk_read_mb_per_s"] = round(moved("read_bytes") / 1048576 / dt, 3)
        f["disk_write_mb_per_s"] = round(moved("write_bytes") / 1048576 / dt, 3)
    qs = [s["listen_recvq"] for s in samples if "listen_recvq" in s and t0 <= s["t"] <= t1]
    if qs:
        f["accept_queue_max"] = max(qs)
        f["accept_queue_mean"] = round(sum(qs) / len(qs), 1)
    if "nstat" in a and "nstat" in b:
        for k in NSTAT_COUNTERS:
            if k in a["nstat"] and k in b["nstat"]:
                f[k + "_per_s"] = round((b["nstat"][k] - a["nstat"][k]) / dt, 1)
    f["by_thread"] = sorted(
        ({"thread": c, "tid": int(t), "cpu_pct": round(100 * r / dt, 1), "runq_wait_pct": round(100 * w / dt, 1)}
         for c, t, r, w in threads if r + w > 0),
        key=lambda x: -(x["cpu_pct"] + x["runq_wait_pct"]))[:12]
    return f


def proc_text(f):
    if not f:
        return "(no /proc samples of the target)\n"
    lines = [
        f"target over {f['window_s']} s ({f['threads']} threads, {f['threads_active']} active; {f['cpus']} CPUs; machine {f['machine_busy_pct']}% busy):",
        f"  CPU {f['target_cpu_pct']}% of a core; run-queue wait {f['target_runq_wait_ms_per_s']} ms/s ({f['runq_wait_share_pct']}% of its runnable time)",
        f"  hottest thread {f['hottest_thread']!r} {f['hottest_thread_cpu_pct']}% on CPU; busiest {f['busiest_thread']!r} {f['busiest_thread_busy_pct']}% on CPU or runnable",
        f"  RSS {f['rss_start_mb']} -> {f['rss_end_mb']} MiB ({f['rss_growth_mb_per_s']} MiB/s); minor faults {f['minflt_per_s']}/s",
    ]
    if "disk_read_mb_per_s" in f:
        lines.append(f"  storage I/O read {f['disk_read_mb_per_s']} MiB/s, written {f['disk_write_mb_per_s']} MiB/s (/proc/PID/io)")
    if "accept_queue_max" in f:
        lines.append(f"  listen queue (ss -ltn Recv-Q): max {f['accept_queue_max']}, mean {f['accept_queue_mean']}")
    tcp = [f"{k[:-6]} {f[k]}/s" for k in sorted(f) if k.startswith(("TcpExt", "Tcp")) and k.endswith("_per_s")]
    if tcp:
        lines.append("  nstat (whole machine): " + ", ".join(tcp))
    for t in f["by_thread"][:6]:
        lines.append(f"    thread {t['thread']!r} ({t['tid']}): {t['cpu_pct']}% on CPU, {t['runq_wait_pct']}% runnable")
    return "\n".join(lines) + "\n"


# ---- bpftrace per-second dumps ----------------------------------------------------------

_BPF_LINE = re.compile(r"^@(\w+)(?:\[(.*)\])?:\s*(-?\d+)\s*$")


def bpf_seconds(path):
    """Reads a bpftrace script's per-second dumps: a line `@T NS` (nsecs, CLOCK_MONOTONIC)
    opens each interval, then `@name: N` or `@name[key]: N` lines of the counts since the
    previous one. Returns [(t_ns, {name: {key: n}})]."""
    out = []
    cur = None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("@T "):
                cur = (int(line.split()[1]), {})
                out.append(cur)
                continue
            m = _BPF_LINE.match(line)
            if m and cur is not None:
                name, key, n = m.group(1), m.group(2) or "", int(m.group(3))
                cur[1].setdefault(name, {})[key] = cur[1].get(name, {}).get(key, 0) + n
    return out


def bpf_window(path, t0, t1):
    """Sums every map over the intervals that end inside the window (shifted by half a
    second, so an interval counts where most of it lies). Returns (sums, seconds)."""
    recs = bpf_seconds(path)
    total = {}
    first = last = None
    prev_t = None
    for t, maps in recs:
        if prev_t is not None and t0 + 5e8 < t <= t1 + 5e8:
            first = prev_t if first is None else first
            last = t
            for name, kv in maps.items():
                for k, n in kv.items():
                    total.setdefault(name, {})
                    total[name][k] = total[name].get(k, 0) + n
        prev_t = t
    secs = (last - first) / 1e9 if first is not None and last is not None else 0.0
    return total, secs


def bpf_sum(sums, name):
    return sum(sums.get(name, {}).values())


def perf_stacks(perf_data):
    """The samples of a `perf record -g` file as lists of function names, leaf first
    (`perf script -F ip,sym`; a compiler's `.constprop.0`-style suffix dropped)."""
    out = subprocess.run(["perf", "script", "-i", perf_data, "-F", "ip,sym"], capture_output=True, text=True).stdout
    stacks, cur = [], []
    for line in out.splitlines():
        w = line.split()
        if not w:
            if cur:
                stacks.append(cur)
            cur = []
        elif len(w) >= 2:
            cur.append(w[1].split("+")[0].split(".")[0])
    if cur:
        stacks.append(cur)
    return stacks


_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "mins": 60.0, "min": 60.0, "hrs": 3600.0, "h": 3600.0}


def go_duration(text):
    """A duration as `go tool pprof -top` prints it (`31.20s`, `1.50mins`, `850ms`), in s."""
    m = re.match(r"^([\d.]+)([a-zµ]+)$", text.strip())
    if not m or m.group(2) not in _GO_UNITS:
        raise ValueError(f"not a pprof duration: {text!r}")
    return float(m.group(1)) * _GO_UNITS[m.group(2)]


def wait_ready(path, marker="READY", timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        if marker in (_read(path) or ""):
            return True
        time.sleep(0.05)
    return False


def read_snap(path):
    """A snapshot `snap FILE CMD…` wrote (lib.sh): (t_ns, the command's output)."""
    t, lines = None, []
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("@t "):
                t = int(line.split()[1])
            else:
                lines.append(line)
    return t, "".join(lines)


def window_json(work, name="stats"):
    """The JSON answers lib.sh's snap_window took at the window's start and end."""
    a, b = (read_snap(os.path.join(work, f"{name}.{i}"))[1] for i in (0, 1))
    return json.loads(a), json.loads(b)


# ---- writing the oracle's output --------------------------------------------------------

def pg_activity(work, t0, t1):
    """lib.sh's pg_activity_window samples inside [t0, t1]: their count, and the client
    backends' rows over all of them, as (state, wait_event_type, wait_event)."""
    snaps, cur = [], None
    for line in open(os.path.join(work, "activity.txt")):
        line = line.rstrip("\n")
        if line.startswith("@t "):
            cur = (int(line[3:]), [])
            snaps.append(cur)
        elif line and cur is not None:
            cur[1].append(line.split("|"))
    snaps = [s for s in snaps if t0 <= s[0] <= t1]
    rows = [tuple(r[1:4]) for _, rs in snaps for r in rs if len(r) >= 4 and r[0] == "client backend"]
    return len(snaps), rows


def pg_shares(work, t0, t1, **preds):
    """The share (%) of the client backends' samples each predicate of `preds` holds for
    (a row: state, wait_event_type, wait_event), with `samples` and
    `client_backends_mean`."""
    n_snaps, rows = pg_activity(work, t0, t1)
    n = len(rows)
    f = {"samples": n_snaps, "client_backends_mean": round(n / n_snaps, 1) if n_snaps else None}
    for name, pred in preds.items():
        f[name] = round(100 * sum(1 for r in rows if pred(r)) / n, 1) if n else None
    return f


def fsync_figures(s, secs, conns):
    """From fsync_time.bt's sums over a window of `secs`: the fsync(2) and fdatasync(2)
    calls, their mean, and their time over `conns` connections' time."""
    sync_s = (bpf_sum(s, "fsync_ns") + bpf_sum(s, "fdatasync_ns")) / 1e9
    calls = bpf_sum(s, "fsync_calls") + bpf_sum(s, "fdatasync_calls")
    return {
        "window_s": round(secs, 2),
        "fsync_calls": calls,
        "fsync_per_s": round(calls / secs, 1) if secs else None,
        "fsync_ms_mean": round(1000 * sync_s / calls, 3) if calls else None,
        "fsync_pct_of_request_time": round(100 * sync_s / (conns * secs), 1) if secs else None,
    }


def read_jstat(path):
    """`jstat -OPTION -t` output: one dict per reading, by its header's names."""
    rows, head = [], None
    for line in open(path):
        w = line.split()
        if w and w[0] == "Timestamp":
            head = w
        elif head and len(w) == len(head):
            rows.append(dict(zip(head, (float(x) if x != "-" else 0.0 for x in w))))
    return rows


def write_oracle(out_dir, text, figures):
    with open(os.path.join(out_dir, "oracle.txt"), "w") as f:
        f.write(text if text.endswith("\n") else text + "\n")
    with open(os.path.join(out_dir, "oracle.json"), "w") as f:
        json.dump(figures, f, indent=1, sort_keys=True)
        f.write("\n")


def summarise_proc(out_dir, work):
    t0, t1 = window(work)
    f = proc_figures(read_jsonl(os.path.join(work, "proc.jsonl")), t0, t1)
    with open(os.path.join(out_dir, "proc.json"), "w") as fh:
        json.dump(f, fh, indent=1, sort_keys=True)
        fh.write("\n")
    with open(os.path.join(out_dir, "proc.txt"), "w") as fh:
        fh.write(proc_text(f))
    return f


def main(argv):
    if len(argv) >= 2 and argv[1] == "now":
        print(now_ns())
    elif len(argv) in (4, 5) and argv[1] == "sample-proc":
        run_sampler(int(argv[2]), argv[3], argv[4] if len(argv) == 5 else None)
    elif len(argv) == 4 and argv[1] == "summarise-proc":
        summarise_proc(argv[2], argv[3])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
