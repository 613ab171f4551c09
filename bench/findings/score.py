"""Scores the corpus's results: for each case's output directory, whether kiln's first
finding names the planted cause, and whether any finding asserts what the oracles
contradict. Prints a table, the details, and `named N of M (K contradicted)`.

  python3 score.py RESULT-DIR...

A result directory holds expect.json, kiln.json, kiln.txt, oracle.json, proc.json (and
target_cmdline.txt, kiln.rc) as bench/findings/lib.sh writes them.
"""
import json
import os
import re
import sys

SUMMARY_LINES = 8


def load(d, name, default=None):
    try:
        with open(os.path.join(d, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def text(d, name):
    try:
        with open(os.path.join(d, name), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def num(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None


# A flag a finding advises: after a word of advice, as it would appear on a command line
# or in the environment (`add -XX:+UseParallelGC`, `start it with +sbwt none`, `set GOGC=200`).
ADVICE = re.compile(
    r"(?i:\b(?:add|use|set|pass|try|enable|turn on|start (?:it |the \w+ )?with|restart (?:it )?with|run (?:it )?with))\s+`?"
    r"((?:--?|\+)[A-Za-z][\w.:+=-]*(?:\s+none)?|[A-Z][A-Z0-9_]{2,}=\S+?)`?(?=[\s,.;)]|$)")


def contradictions(f, expect, oracle, proc, cmdline):
    """What the oracles say against one finding (empty: nothing)."""
    cls = f.get("class", "")
    claim = f.get("claim", "") or ""
    out = []
    cpu = num(proc.get("target_cpu_pct"))
    # A forking server's copies that end between two samples are counted by the kernel
    # for their parent once it waits for them (cutime + cstime): the server's CPU too.
    if expect.get("children_are_the_server") and cpu is not None:
        cpu += num(proc.get("children_cpu_pct")) or 0.0
    wait_share = num(proc.get("runq_wait_share_pct"))
    wait_ms = num(proc.get("target_runq_wait_ms_per_s"))
    busiest = num(proc.get("busiest_thread_busy_pct"))
    capacity = num(proc.get("target_busy_pct_of_capacity"))
    hottest = num(proc.get("hottest_thread_cpu_pct"))
    if cls == "cpu-starvation" and wait_share is not None and wait_share < 5 and (wait_ms or 0) < 50:
        out.append(f"cpu-starvation, but the target's threads waited for a CPU only {wait_ms} ms/s ({wait_share}% of their runnable time; schedstat)")
    if cls == "client-limited" and ((busiest or 0) >= 90 or (capacity or 0) >= 90):
        out.append(f"client-limited, but the server's busiest thread was on CPU or runnable {busiest}% of the time ({capacity}% of what its threads could use; schedstat)")
    if cls in ("cpu-bound", "one-thread-saturated", "busy-wait") and cpu is not None and cpu < 30:
        out.append(f"{cls}, but the target used {cpu}% of a core (/proc)")
    # Work said to run on one thread at a time (a goroutine, an Erlang process) is no one
    # thread's: the process, not a thread, must have run most of a CPU.
    serial = "one thread at a time" in claim
    if cls == "one-thread-saturated" and serial and cpu is not None and cpu < 60:
        out.append(f"one-thread-saturated (serialised work), but the target used {cpu}% of a core (/proc)")
    if cls == "one-thread-saturated" and not serial and hottest is not None and hottest < 60 and (busiest or 0) < 70:
        out.append(f"one-thread-saturated, but its hottest thread was on CPU {hottest}% of the time (/proc)")
    if cls == "garbage-collection":
        gc = num(oracle.get("gc_cpu_pct_of_used", oracle.get("gc_time_pct")))
        if expect.get("lang") in ("c",):
            out.append("garbage-collection, but the target is a C program without a collector")
        elif gc is not None and gc < 5:
            out.append(f"garbage-collection, but the runtime's own account gives the collector {gc}%")
    if cls == "queue-growing":
        g = num(oracle.get("queue_growth_per_s"))
        if g is not None and g <= 0:
            out.append(f"queue-growing, but the broker's queue did not grow ({g}/s; rabbitmqctl)")
    if cls == "memory-growth":
        g = num(proc.get("rss_growth_mb_per_s"))
        if g is not None and g < 0.1:
            out.append(f"memory-growth, but the target's RSS grew {g} MiB/s (/proc)")
    if cls == "memory-churn":
        pf = num(proc.get("minflt_per_s"))
        if pf is not None and pf < 100:
            out.append(f"memory-churn, but the target took {pf} minor faults/s (/proc)")
    if cls == "disk-io":
        r, w = num(proc.get("disk_read_mb_per_s")), num(proc.get("disk_write_mb_per_s"))
        if r is not None and w is not None and r + w < 0.05:
            out.append(f"disk-io, but the target read {r} and wrote {w} MiB/s of storage (/proc/PID/io)")
    if cls == "accept-backlog":
        q = num(proc.get("accept_queue_max"))
        ov = num(proc.get("TcpExtListenOverflows_per_s"))
        if q is not None and q == 0 and (ov or 0) == 0:
            out.append("accept-backlog, but the listen queue stayed empty (ss -ltn) and no listen overflows (nstat)")
    if cls == "held-back":
        a = num(oracle.get("alarm_share_pct"))
        if a is not None and a == 0:
            out.append("held-back, but the broker named no alarm in the window (rabbit_alarm:get_alarms())")
    agree = expect.get("agree")
    pct = num((f.get("explains") or {}).get("pct"))
    if agree and f is not None and cls == expect.get("class") and pct is not None:
        # One figure, or several accounts of the same cause (the time inside the disk's
        # calls; the time queued for the threads making them): the claim must agree with
        # one of them.
        names = agree["figure"] if isinstance(agree["figure"], list) else [agree["figure"]]
        seen = [(k, num(oracle.get(k))) for k in names if num(oracle.get(k)) is not None]
        if seen and all(abs(pct - o) > 2 * agree["within"] for _, o in seen):
            said = ", ".join(f"{k} is {o}" for k, o in seen)
            out.append(f"explains {pct}%, the oracle's {said} (more than twice the {agree['within']}-point tolerance apart)")
    advice = " ".join(str(x) for x in (claim, f.get("advice", "")) if x)
    for flag in ADVICE.findall(advice):
        flag = flag.strip()
        if len(flag) > 3 and flag in cmdline:
            out.append(f"advises {flag}, already on the target's command line")
    return out


def score(d):
    expect = load(d, "expect.json", {})
    run = load(d, "kiln.json", {}) or {}
    oracle = load(d, "oracle.json", {}) or {}
    proc = load(d, "proc.json", {}) or {}
    cmdline = text(d, "target_cmdline.txt")
    findings = run.get("findings")
    r = {"case": os.path.basename(os.path.normpath(d)), "expected": expect.get("class", "?"),
         "first": "-", "verdict": "missed", "why": "", "contradicted": []}
    if not run:
        r["why"] = "no kiln.json"
    elif findings is None:
        r["why"] = "no findings in kiln.json"
    elif not findings:
        r["why"] = "no finding"
    else:
        first = findings[0]
        r["first"] = first.get("class", "?")
        words = [w for w in expect.get("words", []) if not re.search(w, first.get("claim", "") or "")]
        if r["first"] == r["expected"] and not words:
            r["verdict"] = "NAMED"
        elif r["first"] == r["expected"]:
            r["verdict"] = "missed"
            r["why"] = "the claim lacks " + ", ".join(repr(w) for w in words)
        else:
            r["verdict"] = "wrong"
        for i, f in enumerate(findings):
            for c in contradictions(f, expect, oracle, proc, cmdline):
                r["contradicted"].append(f"finding {i + 1}: {c}")
    r["findings"] = findings or []
    r["oracle"] = oracle
    r["proc"] = proc
    r["summary"] = text(d, "kiln.txt").splitlines()
    r["rc"] = text(d, "kiln.rc").strip()
    r["expect"] = expect
    return r


def short(figures, n=4):
    items = [(k, v) for k, v in figures.items() if num(v) is not None or isinstance(v, str)]
    return ", ".join(f"{k}={v}" for k, v in items[:n])


def main(dirs):
    rows = [score(d) for d in dirs]
    w = max([len(r["case"]) for r in rows] + [4])
    print(f"{'case':<{w}}  {'expected':<21} {'kiln first finding':<21} {'verdict':<8} contradicted")
    for r in rows:
        c = f"yes ({len(r['contradicted'])})" if r["contradicted"] else "-"
        print(f"{r['case']:<{w}}  {r['expected']:<21} {r['first']:<21} {r['verdict']:<8} {c}")
    print()
    for r in rows:
        print(f"== {r['case']} (expected {r['expected']}; kiln run exit {r['rc'] or '?'})")
        if r["why"]:
            print(f"   {r['verdict']}: {r['why']}")
        for c in r["contradicted"]:
            print(f"   contradicted: {c}")
        key = r["expect"].get("agree", {}).get("figure")
        keys = key if isinstance(key, list) else [key]
        figs = {k: r["oracle"][k] for k in keys if k and k in r["oracle"]}
        figs.update({k: v for k, v in r["oracle"].items() if k not in keys})
        print(f"   oracle: {short(figs, 5)}")
        p = r["proc"]
        if p:
            print(f"   /proc: CPU {p.get('target_cpu_pct')}% of a core, hottest thread {p.get('hottest_thread_cpu_pct')}%, "
                  f"run-queue wait {p.get('target_runq_wait_ms_per_s')} ms/s, machine {p.get('machine_busy_pct')}% busy")
        if r["findings"]:
            for i, f in enumerate(r["findings"][:3]):
                ex = f.get("explains") or {}
                pct = f" [{ex.get('pct'):.1f}% {ex.get('of')}]" if ex.get("pct") is not None else ""
                print(f"   {i + 1}. {f.get('class')}: {f.get('claim')}{pct}")
        else:
            print(f"   kiln says (first {SUMMARY_LINES} lines):")
            for line in r["summary"][:SUMMARY_LINES]:
                print(f"     | {line}")
        print()
    named = sum(r["verdict"] == "NAMED" for r in rows)
    contradicted = sum(bool(r["contradicted"]) for r in rows)
    print(f"named {named} of {len(rows)} ({contradicted} contradicted)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    main(sys.argv[1:])
