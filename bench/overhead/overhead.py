#!/usr/bin/env python3
"""What a recorder costs the process it records, per request, at a fixed rate.

One run, one target at a time (a private nginx, a small Go HTTP service), one load for
the whole run: `kiln load http -R RATE` at a constant rate, its CPU not the target's.
Each round runs every configuration once -- nothing recording, `perf record -g`,
`perf record --call-graph dwarf`, a bpftrace off-CPU stack script aggregating in the
kernel, `kiln record -e cpu`, `-e cpu,offcpu`, `-e offcpu` -- in order on odd rounds and
in reverse on even ones (ABBA), so that a machine that drifts moves all alike.

For a configuration, the recorder is started against the target and waited for (perf:
its control fifo acknowledges `enable`; eBPF tools: every program that must run has run,
from /proc/PID/fdinfo); after --settle seconds the target's CPU time (utime + stime of
/proc/PID/stat: every thread, also those that ended) and its answered requests (nginx's
stub_status, the Go service's /count) are read, again --seconds later, then the recorder
is stopped and waited for before the next configuration. Printed per configuration: the
target's CPU per request (median over rounds, and the spread, min-max), its ratio to
nothing recording in the same round (median and spread of the per-round ratios), the
recorder's eBPF programs' CPU per request (run_time_ns, kernel.bpf_stats_enabled) and the
recorder's own CPU as a share of one core (not the target's: it runs in its own process).
"""
import argparse
import json
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
TICK = os.sysconf("SC_CLK_TCK")


def die(msg):
    print(f"overhead: {msg}", file=sys.stderr)
    sys.exit(1)


def cpu_seconds(pid):
    """utime + stime of a whole process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def poll_until(what, cond, timeout=60.0, every=0.05):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            die(f"timed out waiting for {what}")
        time.sleep(every)


def bpf_programs(pid):
    """{prog_id: (run_time_ns, run_cnt)} of the eBPF programs process pid holds."""
    progs = {}
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return progs
    for fd in fds:
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        # A program's own fd says how long it ran (links name the program too).
        if "prog_id" not in info or "run_cnt" not in info:
            continue
        pid_ = int(info["prog_id"])
        progs[pid_] = (int(info.get("run_time_ns", 0)), int(info.get("run_cnt", 0)))
    return progs


def perf_fds(pid):
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            n += os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[perf_event]"
        except OSError:
            pass
    return n


def prog_names(ids):
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    names = {}
    try:
        for p in json.loads(out.stdout or "[]"):
            if p["id"] in ids:
                names[p["id"]] = p.get("name", "?")
    except (ValueError, KeyError):
        pass
    return names


class Recorder:
    """One configuration: how to start it against pids and how to know it records."""

    def __init__(self, name, kind, argv=None, progs=(), needs_perf=False):
        self.name, self.kind, self.argv, self.progs = name, kind, argv, progs
        self.needs_perf = needs_perf

    def start(self, pids, work):
        self.proc = None
        if self.kind == "none":
            return
        out = os.path.join(work, "out")
        args = [a.replace("{pids}", ",".join(map(str, pids))).replace("{pid}", str(pids[0]))
                .replace("{out}", out) for a in self.argv]
        self.log = open(os.path.join(work, "recorder.log"), "w+")
        if self.kind == "perf":
            ctl, ack = os.path.join(work, "ctl"), os.path.join(work, "ack")
            for p in (ctl, ack):
                if os.path.exists(p):
                    os.unlink(p)
                os.mkfifo(p)
            args += ["-D", "-1", "--control", f"fifo:{ctl},{ack}"]
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        if self.kind == "perf":
            self.perf_enable(ctl, ack)
        else:
            self.wait_for_programs()

    def perf_enable(self, ctl, ack):
        # perf opens its fifos once its events are open (disabled, -D -1); it answers
        # "ack" once they are enabled.
        fd = os.open(ctl, os.O_WRONLY)
        afd = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)
        os.write(fd, b"enable\n")
        got = b""
        deadline = time.monotonic() + 30
        while b"ack\n" not in got:  # perf writes "ack\n\0"
            if time.monotonic() > deadline:
                die(f"{self.name}: perf did not acknowledge 'enable'")
            select.select([afd], [], [], 1)
            try:
                got += os.read(afd, 16)
            except BlockingIOError:
                pass
        os.close(fd)
        os.close(afd)

    def wait_for_programs(self):
        """Every program this recorder must run (by name) has run at least once. kiln:
        also its loading thread is done (which it is before the events are enabled), and
        the sampler, when it loaded (an older kiln on a kernel that rejects it samples
        with stack copies instead), has run."""
        def threads():
            names = []
            for t in os.listdir(f"/proc/{self.proc.pid}/task"):
                try:
                    names.append(open(f"/proc/{self.proc.pid}/task/{t}/comm").read().strip())
                except OSError:
                    pass
            return names

        def ran():
            if self.proc.poll() is not None:
                self.log.seek(0)
                die(f"{self.name} exited early: {self.log.read()[-2000:]}")
            # kiln opens its perf events (cpu) after starting its loading thread, and
            # enables them once that thread is done.
            if self.kind == "kiln" and ((self.needs_perf and not perf_fds(self.proc.pid))
                                        or "kiln-bpf-load" in threads()):
                return False
            progs = bpf_programs(self.proc.pid)
            names = prog_names(set(progs)) if progs else {}
            ran = {names.get(i, "") for i, (_, cnt) in progs.items() if cnt > 0}
            loaded = set(names.values())
            for want in self.progs:
                optional = want.endswith("?")
                want = want.rstrip("?")
                if optional and not any(n.startswith(want) for n in loaded):
                    continue
                if not any(n.startswith(want) for n in ran):
                    return False
            return True
        poll_until(f"{self.name} to record", ran, timeout=600, every=0.2)

    def cpu(self):
        return cpu_seconds(self.proc.pid) if self.proc else 0.0

    def bpf_progs(self):
        """{program name: (run_time_ns, run_cnt)} of the recorder's eBPF programs (programs
        of one name summed)."""
        if not self.proc:
            return {}
        progs = bpf_programs(self.proc.pid)
        names = prog_names(set(progs)) if progs else {}
        out = {}
        for i, (ns, cnt) in progs.items():
            name = names.get(i, f"prog {i}")
            ns0, cnt0 = out.get(name, (0, 0))
            out[name] = (ns0 + ns, cnt0 + cnt)
        return out

    def stop(self):
        if not self.proc:
            return ""
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.log.seek(0)
        text = self.log.read()
        self.log.close()
        return text


def recorders(kilns, wanted, bt_script):
    out = []
    for name in wanted:
        if name == "none":
            out.append(Recorder("none", "none"))
        elif name == "perf-fp":
            out.append(Recorder("perf record -g", "perf",
                                ["perf", "record", "-q", "-g", "-F", "999", "-p", "{pids}",
                                 "-o", "{out}.data"]))
        elif name == "perf-dwarf":
            out.append(Recorder("perf record --call-graph dwarf", "perf",
                                ["perf", "record", "-q", "--call-graph", "dwarf", "-F", "999",
                                 "-p", "{pids}", "-o", "{out}.data"]))
        elif name == "perf-nog":
            out.append(Recorder("perf record (no stacks)", "perf",
                                ["perf", "record", "-q", "-F", "999", "-p", "{pids}",
                                 "-o", "{out}.data"]))
        elif name == "perf-a":
            out.append(Recorder("perf record -a -g", "perf",
                                ["perf", "record", "-q", "-a", "-g", "-F", "999",
                                 "-o", "{out}.data"]))
        elif name == "perf-stat":
            out.append(Recorder("perf stat -e cpu-clock", "perf",
                                ["perf", "stat", "-e", "cpu-clock", "-p", "{pids}",
                                 "-o", "{out}.txt"]))
        elif name == "bpftrace-offcpu":
            out.append(Recorder("bpftrace off-CPU stacks", "bpf",
                                ["bpftrace", bt_script, "{pid}"], progs=("sched_switch",)))
        elif name.startswith("kiln-"):
            events = name[len("kiln-"):].replace("+", ",")
            progs = []
            if "cpu" in events.split(","):
                progs.append("kiln_sample?")
            if "offcpu" in events.split(","):
                progs.append("kiln_sched_swit")
            for label, path in kilns:
                tag = f"kiln{'@' + label if len(kilns) > 1 else ''}"
                out.append(Recorder(f"{tag} -e {events}", "kiln",
                                    [path, "record", "-p", "{pids}", "-e", events,
                                     "-o", "{out}.kiln"], progs=tuple(progs),
                                    needs_perf="cpu" in events.split(",")))
        else:
            die(f"unknown configuration {name}")
    return out


class Target:
    """A process to record: start(work) sets pids; answered() counts its work so far."""
    unit = "req"

    def __init__(self, name, rate, conns):
        self.name, self.rate, self.conns = name, rate, conns

    def load(self, kiln, secs):
        """The load's command: a constant rate of HTTP requests to self.url."""
        return [kiln, "load", "http", "-R", str(self.rate), "-t", "1", "-c", str(self.conns),
                "-d", f"{secs}s", self.url]


class Nginx(Target):
    def start(self, work):
        self.dir = os.path.join(work, "nginx")
        port = free_port()
        worker = subprocess.run([os.path.join(ROOT, "bench/http/nginx.sh"), "start", self.dir,
                                 str(port)], capture_output=True, text=True, check=True)
        self.pids = [int(worker.stdout.split()[0])]
        self.base = f"http://127.0.0.1:{port}"
        self.url = f"{self.base}/index.html"
        poll_until("nginx's status page", lambda: self.answered() is not None)

    def answered(self):
        try:
            with urllib.request.urlopen(self.base + "/status", timeout=5) as r:
                text = r.read().decode()
        except OSError:
            return None
        # "server accepts handled requests\n A H R": R counts this status request too.
        return int(text.splitlines()[2].split()[2])

    def stop(self):
        if not getattr(self, "dir", None):
            return
        subprocess.run([os.path.join(ROOT, "bench/http/nginx.sh"), "stop", self.dir],
                       capture_output=True)


class GoServer(Target):
    def start(self, work):
        exe = os.path.join(work, "goserver")
        env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=mod")
        subprocess.run([shutil.which("go") or "/usr/local/go/bin/go", "build", "-o", exe, "."],
                       cwd=os.path.join(HERE, "goserver"), env=env, check=True)
        self.out = open(os.path.join(work, "goserver.out"), "w+")
        self.proc = subprocess.Popen([exe, "-addr", "127.0.0.1:0"], stdout=self.out,
                                     stderr=subprocess.STDOUT)

        def addr():
            self.out.seek(0)
            m = re.search(r"listening on (http://\S+)", self.out.read())
            return m and m.group(1)
        self.base = poll_until("the Go server", addr)
        self.pids = [self.proc.pid]
        self.url = self.base + "/item?id={rand:0-9999}"

    def answered(self):
        try:
            with urllib.request.urlopen(self.base + "/count", timeout=5) as r:
                return int(r.read().decode())
        except OSError:
            return None

    def stop(self):
        if getattr(self, "proc", None):
            self.proc.terminate()
            self.proc.wait()


class PingPong(Target):
    """Two threads bouncing a byte over pipes as fast as they can: every round trip is
    two blocks and two wake-ups, the worst case for an off-CPU recorder."""
    unit = "round trip"

    def start(self, work):
        exe = os.path.join(work, "pingpong")
        subprocess.run(["cc", "-O2", "-pthread", "-o", exe, os.path.join(HERE, "pingpong.c")],
                       check=True)
        self.counter = os.path.join(work, "pingpong.count")
        self.proc = subprocess.Popen([exe, self.counter])
        self.pids = [self.proc.pid]
        poll_until("the ping-pong", lambda: (self.answered() or 0) > 0)

    def answered(self):
        try:
            with open(self.counter, "rb") as f:
                return int.from_bytes(f.read(8), sys.byteorder)
        except OSError:
            return None

    def load(self, kiln, secs):
        return None

    def stop(self):
        if getattr(self, "proc", None):
            self.proc.terminate()
            self.proc.wait()


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def children(pid):
    kids = []
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            kids += [int(x) for x in open(f"/proc/{pid}/task/{t}/children").read().split()]
        except OSError:
            pass
    return kids


def alive(pid):
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def measure(target, rec, load, args, work):
    rec.start(target.pids, work)
    time.sleep(args.settle)
    load_cpu = (lambda: cpu_seconds(load.pid)) if load else (lambda: 0.0)
    b0 = rec.bpf_progs()
    r0, l0, n0 = rec.cpu(), load_cpu(), target.answered()
    c0, t0 = sum(cpu_seconds(p) for p in target.pids), time.monotonic()
    time.sleep(args.seconds)
    c1, t1 = sum(cpu_seconds(p) for p in target.pids), time.monotonic()
    r1, l1, n1 = rec.cpu(), load_cpu(), target.answered()
    b1 = rec.bpf_progs()
    log = rec.stop()
    if load and load.poll() is not None:
        die("the load ended before the benchmark did: raise --load-seconds")
    n = n1 - n0
    if n <= 0:
        die(f"{target.name}: no request answered during {rec.name}")
    secs = t1 - t0
    return {
        "us_per_req": (c1 - c0) / n * 1e6,
        "rate": n / secs,
        "bpf_us_per_req": sum(ns - b0.get(k, (0, 0))[0] for k, (ns, _) in b1.items()) / 1e3 / n,
        # per program: µs of run time and runs, per operation
        "progs": {k: ((ns - b0.get(k, (0, 0))[0]) / 1e3 / n, (cnt - b0.get(k, (0, 0))[1]) / n)
                  for k, (ns, cnt) in b1.items()},
        "rec_cpu_pct": (r1 - r0) / secs * 100,
        "load_cpu_pct": (l1 - l0) / secs * 100,
        "log": log,
    }


def spread(xs, fmt):
    return f"{fmt.format(min(xs))}-{fmt.format(max(xs))}" if len(xs) > 1 else "-"


def report(target, recs, results, rounds):
    asked = f"{target.rate:.0f} {target.unit}s/s asked" if target.rate else "as fast as it goes"
    print(f"\n## {target.name}: {asked}, {rounds} rounds (an op is a {target.unit})")
    print(f"{'configuration':<34} {'ops/s':>7} {'CPU µs/op':>10} {'spread':>11} "
          f"{'vs none':>8} {'spread':>13} {'eBPF µs/op':>10} {'recorder CPU %':>14}")
    for rec in recs:
        rs = results[rec.name]
        us = [r["us_per_req"] for r in rs]
        ratios = [r["us_per_req"] / b["us_per_req"] for r, b in zip(rs, results["none"])]
        ebpf = statistics.median(r["bpf_us_per_req"] for r in rs)
        print(f"{rec.name:<34} {statistics.median(r['rate'] for r in rs):>7.0f} "
              f"{statistics.median(us):>10.2f} {spread(us, '{:.1f}'):>11} "
              f"{(statistics.median(ratios) - 1) * 100:>+7.1f}% "
              f"{spread([(x - 1) * 100 for x in ratios], '{:+.1f}'):>13} "
              f"{ebpf:>10.2f} {statistics.median(r['rec_cpu_pct'] for r in rs):>14.1f}")
    for rec in recs:
        rs = results[rec.name]
        names = sorted({k for r in rs for k in r["progs"]})
        if names:
            med = lambda k, j: statistics.median(r["progs"].get(k, (0.0, 0.0))[j] for r in rs)
            per = {k: (med(k, 0), med(k, 1)) for k in names}
            print(f"  {rec.name}, eBPF per {target.unit} (medians): " + ", ".join(
                f"{k} {us:.2f} µs in {runs:.3g} runs"
                + (f" ({us * 1e3 / runs:.0f} ns/run)" if runs else "")
                for k, (us, runs) in sorted(per.items(), key=lambda kv: -kv[1][0])))
    load = [r["load_cpu_pct"] for rs in results.values() for r in rs]
    if target.rate:
        print(f"(the load generator used {statistics.median(load):.0f}% of a core)")
    print(f"(load average at the end: {open('/proc/loadavg').read().split()[0]})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", default="nginx,go")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--settle", type=float, default=1)
    ap.add_argument("--nginx-rate", type=float, default=12000)
    ap.add_argument("--go-rate", type=float, default=3000)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--configs", default="none,perf-fp,perf-dwarf,bpftrace-offcpu,kiln-cpu,"
                    "kiln-cpu+offcpu,kiln-offcpu")
    ap.add_argument("--kiln", action="append", default=[],
                    help="LABEL=PATH (repeatable: builds compared in the same rounds)")
    ap.add_argument("--load-kiln", help="the kiln whose `load http` drives the load")
    ap.add_argument("--keep-logs", help="directory to keep each recorder's output in")
    args = ap.parse_args()

    if os.geteuid() != 0:
        die("run as root (perf and eBPF on another process)")
    kilns = [tuple(k.split("=", 1)) if "=" in k else ("", k) for k in args.kiln]
    if not kilns:
        kilns = [("", os.path.join(ROOT, "target/release/kiln"))]
    for _, path in kilns:
        if not os.access(path, os.X_OK):
            die(f"{path}: not an executable kiln (build with cargo build --release -p kiln)")
    load_kiln = args.load_kiln or kilns[0][1]
    if not os.path.isdir("/sys/kernel/tracing/events"):
        # bpftrace reads tracepoints' formats there (perf and kiln mount it themselves).
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)
    stats_before = open("/proc/sys/kernel/bpf_stats_enabled").read().strip()
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1")
    work = tempfile.mkdtemp(prefix="kiln-overhead.")
    try:
        recs = recorders(kilns, args.configs.split(","), os.path.join(ROOT, "bench/offcpu/offcpu.bt"))
        if recs[0].name != "none":
            die("the first configuration must be none (the ratios' base)")
        print(f"# {time.strftime('%Y-%m-%d')} {os.cpu_count()} CPUs, {os.uname().release}; "
              f"{args.seconds:g} s per window after {args.settle:g} s settling; kiln "
              + ", ".join(f"{l or 'kiln'}={p}" for l, p in kilns))
        for tname in args.targets.split(","):
            target = {"nginx": lambda: Nginx("nginx", args.nginx_rate, args.connections),
                      "go": lambda: GoServer("go", args.go_rate, args.connections),
                      "pingpong": lambda: PingPong("pingpong", 0, 0)}[tname]()
            run_target(target, recs, load_kiln, args, work)
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(stats_before)
        shutil.rmtree(work, ignore_errors=True)


def run_target(target, recs, load_kiln, args, work):
    per_window = args.settle + args.seconds + 8
    load_secs = int(len(recs) * args.rounds * per_window * 2 + 60)
    load = None
    try:
        # Inside the try: a target that started but never answered is stopped too.
        target.start(work)
        argv = target.load(load_kiln, load_secs)
        load = argv and subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, start_new_session=True)
        first = target.answered()
        poll_until("the load's first requests", lambda: target.answered() > first + 1000)
        results = {r.name: [] for r in recs}
        for rnd in range(1, args.rounds + 1):
            order = recs if rnd % 2 else list(reversed(recs))
            for rec in order:
                res = measure(target, rec, load, args, work)
                results[rec.name].append(res)
                if args.keep_logs:
                    os.makedirs(args.keep_logs, exist_ok=True)
                    fn = re.sub(r"[^\w@.-]+", "_", f"{target.name}-{rnd}-{rec.name}.log")
                    with open(os.path.join(args.keep_logs, fn), "w") as f:
                        f.write(res["log"])
                print(f"round {rnd} {target.name} {rec.name}: {res['us_per_req']:.2f} µs/op at "
                      f"{res['rate']:.0f} ops/s, eBPF {res['bpf_us_per_req']:.2f} µs/op, "
                      f"recorder {res['rec_cpu_pct']:.1f}% CPU", file=sys.stderr, flush=True)
        report(target, recs, results, args.rounds)
    finally:
        if load:
            os.killpg(load.pid, signal.SIGINT)
            try:
                load.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(load.pid, signal.SIGKILL)
        target.stop()


if __name__ == "__main__":
    main()
