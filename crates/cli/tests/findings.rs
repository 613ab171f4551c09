//! The findings of real servers with one planted cause each (`crates/findings/tests/
//! programs/planted.c`, built here), driven by `kiln run` as the README says, each
//! checked against an account kiln did not make: the kernel's own counters read by the
//! test (`/proc/PID/task/*/schedstat`), bpftrace timing the system calls, perf counting
//! page faults, a client of the test's own timing the responses.
//!
//! A test asserts two things: the planted cause is named when the independent account
//! shows it held during the run, and no finding says what that account contradicts. On a
//! machine busy with other work a planted cause can be drowned (the server starved of CPU
//! by a build beside it): the account says so, and then kiln must name that instead.
use kiln_testkit::{kiln, Lines};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One planted server at a time: each wants the machine's CPUs to itself.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn planted_exe(dir: &Path) -> PathBuf {
    let src = program_path("planted.c");
    kiln_testkit::build_c(
        dir,
        &src,
        "planted",
        &[
            "-O2",
            "-g",
            "-fno-omit-frame-pointer",
            "-fno-inline",
            "-pthread",
        ],
    )
}

/// A planted server, killed when dropped.
struct Planted {
    child: Child,
    port: u16,
}

impl Planted {
    /// Starts `planted MODE 0 DIR`, pinned to `cpu` when given, and waits for its port.
    fn start(exe: &Path, mode: &str, dir: &Path, cpu: Option<u32>) -> Planted {
        let mut cmd = match cpu {
            Some(c) => {
                let mut t = Command::new("taskset");
                t.args(["-c", &c.to_string()]).arg(exe);
                t
            }
            None => Command::new(exe),
        };
        cmd.args([mode, "0"]).arg(dir);
        Planted::serve(cmd)
    }

    /// Starts a server that prints `ready PORT` or `listening on HOST:PORT` on its
    /// standard output, and waits for it (a minute: a JVM or a node starting on a busy
    /// machine).
    fn serve(mut cmd: Command) -> Planted {
        let mut child = cmd
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{cmd:?} starts: {e}"));
        let mut lines = Lines::follow(child.stdout.take().unwrap());
        let ready = lines
            .wait_for(Duration::from_secs(60), |l| {
                l.starts_with("ready ") || l.starts_with("listening on ")
            })
            .unwrap_or_else(|| panic!("{cmd:?} never said where it listens"));
        let port = ready
            .rsplit([' ', ':'])
            .next()
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("{cmd:?} said {ready:?}"));
        Planted { child, port }
    }

    /// Starts `node --perf-basic-prof PROGRAM` (a program of the findings crate's tests)
    /// in `dir`: V8 writes its isolate log into the working directory.
    fn node(dir: &Path, program: &str) -> Planted {
        let mut node = Command::new("node");
        node.current_dir(dir)
            .arg("--perf-basic-prof")
            .arg(program_path(program));
        Planted::serve(node)
    }

    /// `python3 PROGRAM` (one of the findings crate's test programs).
    /// `program` under Debian's interpreter (stripped: its static functions unnamed),
    /// the one a user of this machine's packages profiles.
    fn python(program: &str) -> Planted {
        let mut python = Command::new("/usr/bin/python3");
        python.arg(program_path(program));
        Planted::serve(python)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Planted {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A JIT's perf map (node --perf-basic-prof, the JVM's agent), if it wrote one.
        let _ = std::fs::remove_file(format!("/tmp/perf-{}.map", self.pid()));
    }
}

/// A program of the findings crate's tests.
fn program_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../findings/tests/programs")
        .join(name)
}

/// `kiln run` on `p` (off-CPU recorded, as the README shows for a server that is slow),
/// the run as `kiln runs show --json` has it, and what the kernel counted of the target's
/// threads between kiln saying it measures and saying it finishes (the load's
/// connections, and a thread-per-connection server's threads, alive throughout).
fn run(
    store: &Path,
    name: &str,
    p: &Planted,
    connections: u32,
) -> (String, serde_json::Value, Kernel) {
    run_with(store, name, p, connections, &[])
}

/// The run `name` of `store` as `kiln runs show --json` has it.
fn shown(store: &Path, name: &str) -> serde_json::Value {
    let show = kiln()
        .env("KILN_STORE", store)
        .args(["runs", "show", name, "--json"])
        .output()
        .unwrap();
    serde_json::from_slice(&show.stdout).expect("runs show --json")
}

/// `kiln run` into `store` on process `pid` for `secs` seconds after a second's warm-up,
/// CPU profile only, with `load` (`http …`, `amqp …`), started with its output piped.
fn start_run(store: &Path, name: &str, pid: &str, secs: &str, load: &[&str]) -> Child {
    kiln_testkit::kiln_process()
        .env("KILN_STORE", store)
        .args([
            "run", "--name", name, "-e", "cpu", "-d", secs, "--warmup", "1",
        ])
        .args(["--no-report", "-p", pid, "load"])
        .args(load)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// [`run`], with more options for the load (`-R 2000`: a fixed rate).
fn run_with(
    store: &Path,
    name: &str,
    p: &Planted,
    connections: u32,
    load: &[&str],
) -> (String, serde_json::Value, Kernel) {
    run_events(store, name, p, connections, "cpu,offcpu", load)
}

/// [`run_with`], recording `events` (`cpu,offcpu,runnable`, as the README runs it).
fn run_events(
    store: &Path,
    name: &str,
    p: &Planted,
    connections: u32,
    events: &str,
    load: &[&str],
) -> (String, serde_json::Value, Kernel) {
    let mut child = kiln_testkit::kiln_process()
        .env("KILN_STORE", store)
        .args([
            "run", "--name", name, "-e", events, "-d", "3", "--warmup", "1",
        ])
        .args(["--no-report", "-p", &p.pid().to_string()])
        .args(["load", "http", "-d", "120s", "-c", &connections.to_string()])
        .args(load)
        .arg(format!("http://127.0.0.1:{}/", p.port))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = Lines::follow(child.stdout.take().unwrap());
    let mut stderr = Lines::follow(child.stderr.take().unwrap());
    let limit = Duration::from_secs(300);
    // The kernel's count over the seconds between kiln saying it measures and saying it
    // finishes, read again every 50 ms meanwhile: a thread that ends (a connection closed
    // as the load stops) keeps its last count, instead of taking it with it.
    let mut kernel = None;
    let mut kernel_children: Vec<(u64, f64)> = Vec::new();
    if stderr
        .wait_for(limit, |l| l.starts_with("measuring"))
        .is_some()
    {
        let (a, t) = (schedstat(p.pid()), std::time::Instant::now());
        // The children's CPU, read with the time (kiln's clock) every 50 ms: counted over
        // the seconds kiln sampled, which on a busy machine end well before it says it
        // finishes (the last records drained, the profiles built).
        let mut children = vec![(kiln_os::clock::monotonic_ns(), children_cpu_s(p.pid()))];
        let mut last = a.clone();
        let finished = loop {
            if stderr
                .wait_for(Duration::from_millis(50), |l| l.starts_with("finishing"))
                .is_some()
            {
                break true;
            }
            if t.elapsed() > limit || child.try_wait().unwrap().is_some() {
                break false;
            }
            last.extend(schedstat(p.pid()));
            children.push((kiln_os::clock::monotonic_ns(), children_cpu_s(p.pid())));
        };
        children.push((kiln_os::clock::monotonic_ns(), children_cpu_s(p.pid())));
        kernel_children = children;
        if finished {
            let s = t.elapsed().as_secs_f64();
            last.extend(schedstat(p.pid()));
            let (mut on, mut wait, mut busiest) = (0, 0, (0, 0));
            for (tid, (on_b, wait_b)) in &last {
                let (on_a, wait_a) = a.get(tid).copied().unwrap_or((0, 0));
                let (o, w) = (on_b.saturating_sub(on_a), wait_b.saturating_sub(wait_a));
                on += o;
                wait += w;
                if o + w > busiest.0 + busiest.1 {
                    busiest = (o, w);
                }
            }
            kernel = Some(Kernel {
                on_cpu: on as f64 / 1e9 / s,
                runnable: wait as f64 / 1e9 / s,
                children: 0.0,
                busiest: (busiest.0 as f64 / 1e9 / s, busiest.1 as f64 / 1e9 / s),
            });
        }
    }
    let status = child.wait().unwrap();
    let (text, err) = (stdout.all(), stderr.all());
    assert!(status.success(), "kiln run failed:\n{text}\n{err}");
    let mut kernel =
        kernel.unwrap_or_else(|| panic!("kiln never said it measured and finished:\n{err}"));
    let v = shown(store, name);
    // The children's CPU over kiln's own window: the readings just before it began and
    // just after it ended.
    let (from, to) = (
        v["measure"]["start_ns"].as_u64().unwrap_or(0),
        v["measure"]["end_ns"].as_u64().unwrap_or(u64::MAX),
    );
    let first = kernel_children
        .iter()
        .rev()
        .find(|(t, _)| *t <= from)
        .or(kernel_children.first());
    let last = kernel_children
        .iter()
        .find(|(t, _)| *t >= to)
        .or(kernel_children.last());
    if let (Some(a), Some(b)) = (first, last) {
        kernel.children = (b.1 - a.1) / ((b.0.saturating_sub(a.0)) as f64 / 1e9).max(1e-3);
    }
    (text, v, kernel)
}

fn findings(v: &serde_json::Value) -> Vec<(String, String, f64)> {
    v["findings"]
        .as_array()
        .expect("findings in the JSON")
        .iter()
        .map(|f| {
            (
                f["class"].as_str().unwrap().to_string(),
                f["claim"].as_str().unwrap().to_string(),
                f["explains"]["pct"].as_f64().unwrap_or(0.0),
            )
        })
        .collect()
}

fn named<'a>(found: &'a [(String, String, f64)], class: &str) -> Option<&'a (String, String, f64)> {
    found.iter().find(|f| f.0 == class)
}

/// The target's threads' time on a CPU and waiting on a run queue (ns), summed.
/// Each thread's time on a CPU and waiting for one, ns (`/proc/PID/task/TID/schedstat`).
fn schedstat(pid: u32) -> std::collections::HashMap<String, (u64, u64)> {
    let mut out = std::collections::HashMap::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        if let Ok(s) = std::fs::read_to_string(e.path().join("schedstat")) {
            let v: Vec<u64> = s
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            let tid = e.file_name().to_string_lossy().into_owned();
            out.insert(
                tid,
                (
                    v.first().copied().unwrap_or(0),
                    v.get(1).copied().unwrap_or(0),
                ),
            );
        }
    }
    out
}

/// What the kernel counted of the target's threads over a run: their CPU and their
/// run-queue wait, per second of wall time.
struct Kernel {
    on_cpu: f64,
    runnable: f64,
    /// The CPU of the children it waited for (`cutime` + `cstime`), CPUs, over the
    /// seconds kiln sampled.
    children: f64,
    /// Its busiest thread (on a CPU and runnable the most): on a CPU, and runnable.
    busiest: (f64, f64),
}

/// No finding the kernel's account contradicts: starvation only with run-queue time,
/// "limited by the client" only while the server's threads were neither on a CPU nor
/// runnable most of the time.
fn none_contradicted(found: &[(String, String, f64)], k: &Kernel, threads: f64, text: &str) {
    if named(found, "cpu-starvation").is_some() {
        assert!(
            k.runnable > 0.02,
            "starvation while the kernel saw {:.3} s/s runnable:\n{text}",
            k.runnable
        );
    }
    if named(found, "client-limited").is_some() {
        assert!(
            (k.on_cpu + k.runnable) / threads < 0.9,
            "client-limited while the server's threads were busy ({:.2} of {threads}):\n{text}",
            k.on_cpu + k.runnable
        );
    }
}

/// bpftrace's account of the time the target's threads spent in system call `call`
/// (`futex`, `fdatasync`), per second, over `secs` seconds starting now; started and
/// ready before it returns its handle.
struct Bpftrace {
    child: Child,
    lines: Lines,
    secs: u32,
}

impl Bpftrace {
    fn time_in(call: &str, pid: u32, secs: u32) -> Option<Bpftrace> {
        Bpftrace::time_where(call, &format!("pid == {pid}"), secs)
    }

    /// As [`Bpftrace::time_in`], for the threads `filter` (a bpftrace predicate) selects.
    /// A bpftrace that ends before it traces (seen on a machine busy with another suite:
    /// "tracepoint not found" for a while) is started again, up to four times; what the
    /// last one said is printed.
    fn time_where(call: &str, filter: &str, secs: u32) -> Option<Bpftrace> {
        // Each call's time is spread over the seconds it lasted (@t[k]: second k, from tick
        // k to tick k+1), not put in the second it returned in: a write blocked for three
        // seconds counts one in each, so no second holds more than the threads had.
        assert!(
            secs <= 16,
            "the script spreads a call over at most 16 seconds"
        );
        let script = format!(
            "BEGIN {{ @n = 0; @tick[0] = nsecs; printf(\"tracing\\n\"); }} \
             tracepoint:syscalls:sys_enter_{call} /{filter}/ {{ @s[tid] = nsecs; @i[tid] = @n; }} \
             tracepoint:syscalls:sys_exit_{call} /@s[tid]/ {{ \
               $s = @s[tid]; $i = @i[tid]; $j = @n; \
               if ($i == $j) {{ @t[$j] = sum(nsecs - $s); }} else {{ \
                 @t[$i] = sum(@tick[$i + 1] - $s); $k = $i + 1; \
                 unroll(16) {{ if ($k < $j) {{ @t[$k] = sum(@tick[$k + 1] - @tick[$k]); $k = $k + 1; }} }} \
                 @t[$j] = sum(nsecs - @tick[$j]); }} \
               delete(@s[tid]); delete(@i[tid]); }} \
             interval:s:1 {{ @tick[@n + 1] = nsecs; @n = @n + 1; if (@n == {secs}) {{ exit(); }} }} \
             END {{ clear(@s); clear(@i); clear(@n); print(@t); print(@tick); clear(@tick); printf(\"total\\n\"); }}"
        );
        Bpftrace::start(&script, secs, call)
    }

    /// Starts `script`, which prints "tracing" once it traces and "total" as it ends.
    fn start(script: &str, secs: u32, what: &str) -> Option<Bpftrace> {
        // bpftrace finds tracepoints in tracefs and does not mount it (kiln does, as perf
        // does): on a machine just started, before any recording, it is not there yet.
        if !std::path::Path::new("/sys/kernel/tracing/events").exists() {
            let _ = Command::new("mount")
                .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
                .status();
        }
        let mut said = String::new();
        for _ in 0..4 {
            let err = tempfile::tempfile().ok()?;
            let mut child = Command::new("bpftrace")
                .arg("-e")
                .arg(script)
                .stdout(Stdio::piped())
                .stderr(err.try_clone().ok()?)
                .spawn()
                .ok()?;
            let mut lines = Lines::follow(child.stdout.take()?);
            let started = std::time::Instant::now();
            if lines
                .wait_for(Duration::from_secs(120), |l| l == "tracing")
                .is_some()
            {
                return Some(Bpftrace { child, lines, secs });
            }
            // Ended early (its output closed), or never ready: only the first is tried again.
            let ended = started.elapsed() < Duration::from_secs(110);
            let _ = child.kill();
            let _ = child.wait();
            said.clear();
            let mut err = err;
            use std::io::{Read, Seek};
            let _ = err.rewind();
            let _ = err.read_to_string(&mut said);
            if !ended {
                break;
            }
        }
        eprintln!("bpftrace did not start tracing {what}; it said:\n{said}");
        None
    }

    /// All it printed, once it has ended.
    /// The script's `long START DURATION` lines (ns), oldest first.
    fn long_calls(self) -> Vec<(u64, u64)> {
        let mut long: Vec<(u64, u64)> = self
            .output()
            .lines()
            .filter_map(|l| {
                let mut w = l.strip_prefix("long ")?.split(' ');
                Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
            })
            .collect();
        long.sort_unstable();
        long
    }

    fn output(self) -> String {
        let mut child = self.child;
        let _ = child.wait();
        let all = self.lines.all();
        assert!(all.contains("total"), "bpftrace ended early:\n{all}");
        all
    }

    /// Seconds in the call per second of each tick traced (a tick without a call prints
    /// none; the calls still under way when the trace ended are not counted in its last).
    /// A tick is bpftrace's interval, about a second: each is divided by its own length,
    /// which a busy machine can stretch (it delays the interval's probe).
    fn seconds(self) -> Vec<f64> {
        let secs = self.secs;
        let all = self.output();
        let entries = |map: &str| -> Vec<(usize, f64)> {
            all.lines()
                .filter_map(|l| {
                    let (k, t) = l.strip_prefix(map)?.split_once("]: ")?;
                    Some((k.parse().ok()?, t.trim().parse().ok()?))
                })
                .collect()
        };
        let ticks = entries("@tick[");
        let tick = |k: usize| ticks.iter().find(|x| x.0 == k).map(|x| x.1);
        let lens: Vec<String> = (0..secs as usize)
            .filter_map(|k| Some(format!("{:.2}", (tick(k + 1)? - tick(k)?) / 1e9)))
            .collect();
        eprintln!("bpftrace's ticks, s: {}", lens.join(" "));
        let mut v = vec![0.0; secs as usize];
        for (k, t) in entries("@t[") {
            let len = match (tick(k), tick(k + 1)) {
                (Some(a), Some(b)) if b > a => b - a,
                _ => 1e9,
            };
            if let Some(x) = v.get_mut(k) {
                *x = t / len;
            }
        }
        v
    }

    /// Seconds in the call per second while the load ran: the median of the seconds that
    /// had at least half the busiest one's (the seconds before the load began and after
    /// it ended left out).
    fn under_load(self) -> f64 {
        let mut v = self.seconds();
        let top = v.iter().copied().fold(0.0, f64::max);
        v.retain(|&x| x >= 0.5 * top);
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    }
}

fn bpftrace_or_skip(call: &str, pid: u32, secs: u32) -> Option<Bpftrace> {
    let b = Bpftrace::time_in(call, pid, secs);
    if b.is_none() {
        kiln_testkit::skip("bpftrace is not installed or cannot trace system calls");
    }
    b
}

#[test]
fn a_lock_is_named_at_its_function_and_the_kernel_agrees() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::start(&planted_exe(dir.path()), "lock", dir.path(), None);
    let Some(bt) = bpftrace_or_skip("futex", p.pid(), 6) else {
        return;
    };
    let (text, v, k) = run(&dir.path().join("r.db"), "lock", &p, 16);
    // Over the seconds the load ran (the trace's 6 s hold the run's start and end).
    let futex = bt.under_load();
    println!("{text}\nbpftrace: {futex:.2} s in futex per second under load");
    let found = findings(&v);
    none_contradicted(&found, &k, 17.0, &text);
    let lock = named(&found, "lock-contention");
    if lock.is_none() && k.runnable > k.on_cpu {
        // The machine starved the server more than the lock held it: that is what must be
        // said first. (Threads woken off a contended lock queue for a CPU too, so a
        // runnable time above the running time alone does not make the lock second.)
        assert_eq!(found[0].0, "cpu-starvation", "{text}");
        return;
    }
    let lock = lock.unwrap_or_else(|| panic!("no lock named:\n{text}"));
    assert!(lock.1.contains("locked_work"), "{text}");
    // kiln's share of the 16 connections' time against bpftrace's time in futex over the
    // same connections (its block ends when the thread runs again, as the system call's
    // return does: the same account, read another way).
    let oracle = futex / 16.0 * 100.0;
    assert!(
        lock.2 <= oracle * 1.5 + 5.0 && lock.2 >= oracle * 0.3 - 5.0,
        "kiln: {:.0}% of the requests' time on the lock, bpftrace: {oracle:.0}% in futex\n{text}",
        lock.2
    );
}

#[test]
fn a_lock_held_through_a_sleep_is_said_with_the_holders_sleep() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::start(&planted_exe(dir.path()), "locksleep", dir.path(), None);
    let Some(bt) = bpftrace_or_skip("clock_nanosleep", p.pid(), 6) else {
        return;
    };
    let (text, v, k) = run(&dir.path().join("r.db"), "locksleep", &p, 16);
    // One thread at a time sleeps under the lock: the kernel's account of the sleeps,
    // seconds in clock_nanosleep per second, is how much of the time the lock's holder
    // slept.
    let slept = bt.under_load();
    println!("{text}\nbpftrace: {slept:.2} s in clock_nanosleep per second under load");
    let found = findings(&v);
    none_contradicted(&found, &k, 17.0, &text);
    let lock = named(&found, "lock-contention").unwrap_or_else(|| panic!("no lock named:\n{text}"));
    assert_eq!(found[0].0, "lock-contention", "{text}");
    assert!(lock.1.contains("locked_sleep"), "{text}");
    let clause = "its holder slept under locked_sleep ";
    let at = lock
        .1
        .find(clause)
        .unwrap_or_else(|| panic!("the holder's sleep is not said:\n{text}"));
    let held: f64 = lock.1[at + clause.len()..]
        .split('%')
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no share after the clause:\n{text}"));
    assert!(
        (held - slept * 100.0).abs() <= 15.0,
        "kiln: its holder slept {held}% of the time, bpftrace: {slept:.2} s a second\n{text}"
    );
}

#[test]
fn one_saturated_thread_is_named_with_what_it_runs() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::start(&planted_exe(dir.path()), "single", dir.path(), None);
    let (text, v, k) = run(&dir.path().join("r.db"), "single", &p, 32);
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}",
        k.on_cpu, k.runnable
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 1.0, &text);
    // Busy nearly all the time, mostly on a CPU and the rest waiting for one (0.81 on a
    // CPU and 0.19 waiting in a CI run, the load generator on the other CPU): the thread
    // is the limit still, said first; waiting more than running, starvation is.
    if k.on_cpu >= 0.85 || (k.on_cpu + k.runnable >= 0.9 && k.runnable <= k.on_cpu) {
        let one = named(&found, "one-thread-saturated")
            .unwrap_or_else(|| panic!("the kernel saw one thread at {:.2} CPU:\n{text}", k.on_cpu));
        assert!(one.1.contains("work"), "{text}");
        assert_eq!(found[0].0, "one-thread-saturated", "{text}");
    } else {
        // The thread did not get a whole CPU: it waited for one.
        assert!(named(&found, "cpu-starvation").is_some(), "{text}");
    }
    assert!(named(&found, "client-limited").is_none(), "{text}");
}

#[test]
fn a_server_allowed_one_cpu_is_named_at_its_affinity() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // A thread per connection, every request on the CPU, the whole server on CPU 0 of the
    // machine's: more clients, more threads, the same one CPU.
    let p = Planted::start(&planted_exe(dir.path()), "work", dir.path(), Some(0));
    let status = std::fs::read_to_string(format!("/proc/{}/status", p.pid())).unwrap();
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(str::trim)
        .unwrap();
    assert_eq!(allowed, "0", "taskset did not pin the server");
    let (text, v, k) = run(&dir.path().join("r.db"), "pinned", &p, 8);
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}",
        k.on_cpu, k.runnable
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 9.0, &text);
    let bound = named(&found, "cpu-bound");
    if let Some(b) = bound {
        assert!(b.1.contains("its CPU affinity (1 CPUs allowed)"), "{text}");
    }
    if k.on_cpu >= 0.85 {
        // It had its CPU: that CPU, all it may use, is the limit, said first.
        let b = bound.unwrap_or_else(|| panic!("no cpu-bound finding:\n{text}"));
        assert_eq!(found[0].0, "cpu-bound", "{text}");
        assert!(b.1.contains("of 1.00 CPU"), "{text}");
    } else {
        // Other work on CPU 0 (a busy machine) took part of it: waiting for it comes first.
        assert!(
            ["cpu-bound", "cpu-starvation"].contains(&found[0].0.as_str()),
            "{text}"
        );
    }
}

/// Compiles Java test program `class` (crates/findings/tests/programs/CLASS.java) into
/// `dir` and starts it with `options`, waiting for the port it says it listens on.
fn java_server(class: &str, dir: &Path, options: &[&str], args: &[&str]) -> Planted {
    let st = Command::new("javac")
        .arg("-d")
        .arg(dir)
        .arg(program_path(&format!("{class}.java")))
        .status()
        .expect("javac runs (Debian package openjdk-17-jdk-headless)");
    assert!(st.success());
    // TCP_NODELAY: the JDK's server writes headers and body apart, and would otherwise
    // wait for the client's delayed ACK on every response (a second cause).
    let mut java = Command::new("java");
    java.args([
        "-Dsun.net.httpserver.nodelay=true",
        "-XX:+PreserveFramePointer",
    ])
    .args(options)
    .arg("-cp")
    .arg(dir)
    .arg(class)
    .args(args);
    Planted::serve(java)
}

/// A JVM whose program keeps every request's session grows its old generation; its
/// resident memory says little (the JVM commits its heap as it likes), its own counters
/// (hsperfdata) say it. The JVM's own account: `jstat -gcold` over the run.
#[test]
fn a_jvm_that_keeps_what_it_allocates_is_said_to_grow_its_old_generation() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // 32 KiB sessions at 1,000 requests a second, in a small young generation that
    // promotes what survives its first collection: the old generation grows about 31 MiB
    // a second, a step every half second, over kiln's 3 s window.
    let p = java_server(
        "Sessions",
        dir.path(),
        &[
            "-Xms512m",
            "-Xmx512m",
            "-Xmn16m",
            "-XX:MaxTenuringThreshold=0",
        ],
        &["32"],
    );
    let pid = p.pid().to_string();
    // jstat's readings of the old generation in use (OU, KiB) a second apart, with the
    // JVM's clock (seconds), while kiln runs.
    let jstat = Command::new("jstat")
        .args(["-gcold", "-t", &pid, "1000"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("jstat runs (openjdk-17-jdk-headless)");
    let (text, v, k) = run_with(&dir.path().join("r.db"), "sessions", &p, 8, &["-R", "1000"]);
    let mut jstat = jstat;
    let _ = jstat.kill();
    let out = jstat.wait_with_output().unwrap();
    let rows: Vec<(f64, f64)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            // Timestamp MC MU CCSC CCSU OC OU YGC FGC CGC FGCT CGCT GCT
            Some((w.first()?.parse().ok()?, w.get(6)?.parse().ok()?))
        })
        .collect();
    // The JVM's pace under the load: its growth between readings a second apart, over
    // the seconds it grew at half the steepest or more (not before the load, nor after),
    // their median.
    let jstat_text = String::from_utf8_lossy(&out.stdout);
    let mut rates: Vec<f64> = rows
        .windows(2)
        .filter(|w| w[1].0 > w[0].0)
        .map(|w| (w[1].1 - w[0].1) / 1024.0 / (w[1].0 - w[0].0))
        .collect();
    let steepest = rates.iter().copied().fold(0.0, f64::max);
    rates.retain(|r| *r >= 0.5 * steepest && *r > 0.0);
    rates.sort_by(f64::total_cmp);
    assert!(rates.len() >= 2, "jstat's readings:\n{jstat_text}");
    let jvm = rates[rates.len() / 2];
    println!(
        "{text}\njstat -gcold: the old generation grew {jvm:.2} MiB/s under the load\n{jstat_text}"
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 8.0, &text);
    let (_, claim, _) = named(&found, "memory-growth").unwrap_or_else(|| panic!("{text}"));
    assert!(claim.contains("old generation grew"), "{text}");
    let said = claim
        .split_once('(')
        .and_then(|(_, r)| r.split_once("MiB/s"))
        .and_then(|(n, _)| n.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no MiB/s in {claim}"));
    assert!(
        (said - jvm).abs() <= 0.35 * jvm,
        "kiln: {said} MiB/s; jstat: {jvm:.2} MiB/s\n{text}"
    );
}

/// A pool writing its access log through one PrintStream into a pipe whose reader is slow
/// (a FIFO this test reads 32 KiB every 100 ms): the threads wait to enter the stream's
/// monitor while its holder waits for room in the pipe. kiln must name the monitor and
/// say that its holder waits on the pipe, against the kernel's account: bpftrace's time
/// in write(2), about one thread at a time under the monitor.
#[test]
fn a_java_monitor_held_through_a_write_into_a_slow_pipe_is_said_with_the_pipe() {
    use std::io::Read;
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("access.log");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // The collector: its open waits for the JVM's, and it reads until the JVM is gone.
    let path = fifo.clone();
    let collector = std::thread::spawn(move || {
        let mut f = std::fs::File::open(path).unwrap();
        let mut buf = vec![0u8; 32 << 10];
        while f.read(&mut buf).is_ok_and(|n| n > 0) {
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let p = java_server(
        "AccessLog",
        dir.path(),
        &["-Xms256m", "-Xmx256m"],
        &[fifo.to_str().unwrap()],
    );
    let Some(bt) = bpftrace_or_skip("write", p.pid(), 6) else {
        return;
    };
    let (text, v, k) = run(&dir.path().join("r.db"), "log", &p, 16);
    let writing = bt.under_load();
    println!("{text}\nbpftrace: {writing:.2} s in write per second under load");
    let found = findings(&v);
    none_contradicted(&found, &k, 20.0, &text);
    let first = found.iter().find(|f| f.0 != "cpu-starvation").unwrap();
    assert_eq!(first.0, "lock-contention", "{text}");
    assert!(first.1.contains("java.io.PrintStream"), "{text}");
    let holder = first
        .1
        .split("its holder ")
        .nth(1)
        .unwrap_or_else(|| panic!("nothing said of the monitor's holder:\n{text}"));
    assert!(holder.contains("full pipe"), "{holder}");
    // Its share of the window in the write, against the kernel's time in write(2) a
    // second (one writer at a time: at most about 1).
    let said: f64 = holder
        .split(" of the time")
        .next()
        .and_then(|x| x.rsplit(' ').next())
        .and_then(|x| x.trim_end_matches('%').parse().ok())
        .unwrap_or_else(|| panic!("no share in {holder}"));
    assert!(
        (said - 100.0 * writing.min(1.0)).abs() <= 30.0,
        "kiln: the holder in the write {said}% of the time; bpftrace: {writing:.2} s a second\n{text}"
    );
    drop(p);
    let _ = collector.join();
}

#[test]
fn a_pool_whose_threads_all_sleep_in_the_work_is_the_limit() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = java_server("PoolServer", dir.path(), &[], &[]);
    // 32 requests in flight, 4 threads: by Little's law 28 wait for a thread.
    let (text, v, k) = run(&dir.path().join("r.db"), "pool", &p, 32);
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}",
        k.on_cpu, k.runnable
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 30.0, &text);
    assert!(
        named(&found, "network-wait").is_none(),
        "the time in the pool's queue said to be outside the server:\n{text}"
    );
    let first = &found[0];
    assert_eq!(first.0, "sleep-in-path", "{text}");
    assert!(
        first
            .1
            .contains("all 4 'pool-N-thread' threads were occupied")
            && first.1.contains("waited inside the server for a thread"),
        "{text}"
    );
}

/// `kiln run` on Python test program `program` under `connections`, and bpftrace's time
/// in clock_nanosleep per second under the load (the run's text, JSON, the kernel's
/// figures, that time); `None` (skipped) where bpftrace cannot trace.
fn asleep_in(
    program: &str,
    name: &str,
    connections: u32,
) -> Option<(String, serde_json::Value, Kernel, f64)> {
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::python(program);
    let bt = bpftrace_or_skip("clock_nanosleep", p.pid(), 8)?;
    let (text, v, k) = run(&dir.path().join("r.db"), name, &p, connections);
    let slept = bt.under_load();
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; bpftrace: {slept:.2} s asleep per second",
        k.on_cpu, k.runnable
    );
    Some((text, v, k, slept))
}

/// An event loop that blocks: one Python thread serves every connection and sleeps 4 ms
/// synchronously in each request. The rest of the requests wait inside the server for
/// that thread (Little's law), never "outside the server" although its CPU is idle.
/// bpftrace times the thread's clock_nanosleep calls: the account kiln's share is held to.
#[test]
fn an_event_loop_blocked_in_its_work_is_the_limit() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((text, v, k, slept)) = asleep_in("blocking_loop.py", "loop", 32) else {
        return;
    };
    let found = findings(&v);
    none_contradicted(&found, &k, 1.0, &text);
    assert!(
        named(&found, "network-wait").is_none(),
        "the time waiting for the loop said to be outside the server:\n{text}"
    );
    // The kernel's account: the thread slept most of each second in the work.
    if slept < 0.5 {
        eprintln!("the loop slept {slept:.2} s/s here (starved of CPU): no finding required");
        return;
    }
    let first = &found[0];
    assert_eq!(first.0, "sleep-in-path", "{text}");
    assert!(
        first.1.contains("one 'python' thread serves every req")
            && first.1.contains(" under lookup (blocking_loop.py:")
            && first.1.contains("waited inside the server for it"),
        "{text}"
    );
    // kiln's share of the thread's time asleep in the work, against bpftrace's.
    let blocked = v["findings"][0]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|e| {
            let value = e["value"].as_str()?;
            let at = value.find("blocked in the work ")? + "blocked in the work ".len();
            value[at..].trim_end_matches(')').parse::<f64>().ok()
        })
        .unwrap_or_else(|| panic!("no blocked figure in the evidence:\n{text}"));
    // (kiln's blocked time is the kernel's, without the wait for a CPU after each
    // wake-up that the system call's time holds.)
    assert!(
        blocked <= slept + 0.2 && blocked >= slept - k.runnable - 0.2,
        "kiln: blocked in the work {blocked:.2}; bpftrace: asleep {slept:.2} s/s, run-queue {:.2}\n{text}",
        k.runnable
    );
}

/// A log written to a pipe whose reader is slow: each request writes a 2 KiB line to
/// standard error, which the test reads 16 KiB every 100 ms (~80 lines a second). The
/// connection threads block in write(2) — in their work, never "limited by the client"
/// although their CPU is idle. bpftrace times the writes: the account kiln is held to.
#[test]
fn a_log_pipe_read_slowly_is_a_wait_in_the_work() {
    use std::io::Read;
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut planted = Command::new(planted_exe(dir.path()));
    planted.args(["log", "0"]).stderr(Stdio::piped());
    let mut p = Planted::serve(planted);
    let mut log = p.child.stderr.take().unwrap();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 16384];
        // The pace of a slow log collector; ends when the server does.
        while log.read(&mut buf).is_ok_and(|n| n > 0) {
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let Some(bt) = bpftrace_or_skip("write", p.pid(), 8) else {
        return;
    };
    let (text, v, k) = run(&dir.path().join("r.db"), "log", &p, 16);
    let writing = bt.under_load();
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; bpftrace: {writing:.2} s in write per second",
        k.on_cpu, k.runnable
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 17.0, &text);
    let first = &found[0];
    assert!(
        first.1.contains("full pipe or socket") && first.1.contains("under log_request"),
        "{text}"
    );
    // A thread per connection, each blocked in its own write: no thread is a loop the
    // others wait for (said once, when one of them happened to hold most of the 1% CPU).
    assert!(
        !found.iter().any(|f| f.1.contains("the event loop")),
        "{text}"
    );
    // kiln's share of the requests' time against bpftrace's time in write over the 16
    // connections' time (responses are written with write too: a few µs each).
    // (On a busy machine kiln's share may be lower by the threads' run-queue time: a
    // write's system call lasts until its thread runs again.)
    let share = first.2 / 100.0;
    let (bt, runq) = (writing / 16.0, k.runnable / 16.0);
    assert!(
        share <= bt + 0.2 && share >= bt - runq - 0.2,
        "kiln: {share:.2} of the requests' time; bpftrace: {bt:.2}, run-queue {runq:.2}\n{text}"
    );
}

/// A duration as kiln writes it (`62.7 ms`, `501 ms`, `1.02 s`, `950 µs`), in ms.
fn ms_of(s: &str) -> Option<f64> {
    let (v, unit) = s.trim().split_once(' ')?;
    let v: f64 = v.parse().ok()?;
    let unit = unit.trim_end_matches([',', ';', ')']);
    Some(match unit {
        "s" => v * 1e3,
        "ms" => v,
        "µs" => v / 1e3,
        "ns" => v / 1e6,
        _ => return None,
    })
}

/// A lock its requests take briefly, which a snapshot thread holds some 60 ms every 500 ms
/// asleep: said as stalls — how long, how far apart, how many threads waited at once —
/// and the thread that held it. bpftrace's futex calls over 10 ms are the account: the
/// longest, and the spacing of their bursts.
#[test]
fn a_lock_held_at_times_for_long_is_said_as_stalls_with_their_holder() {
    stalls_said(
        "stall",
        "held by a thread blocked in usleep under snapshotter",
    );
}

/// As above, the holder working on a CPU under the lock: named by what it ran.
#[test]
fn a_lock_held_at_times_by_work_names_the_work() {
    stalls_said("compact", "held by a thread running work under compactor");
}

fn stalls_said(mode: &str, holder: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::start(&planted_exe(dir.path()), mode, dir.path(), None);
    let script = format!(
        "BEGIN {{ printf(\"tracing\\n\"); }} \
         tracepoint:syscalls:sys_enter_futex /pid == {}/ {{ @s[tid] = nsecs; }} \
         tracepoint:syscalls:sys_exit_futex /@s[tid]/ {{ $d = nsecs - @s[tid]; delete(@s[tid]); \
           if ($d > 10000000) {{ printf(\"long %llu %llu\\n\", nsecs - $d, $d); }} }} \
         interval:s:8 {{ exit(); }} END {{ clear(@s); printf(\"total\\n\"); }}",
        p.pid()
    );
    let Some(bt) = Bpftrace::start(&script, 8, "futex") else {
        kiln_testkit::skip("bpftrace is not installed or cannot trace system calls");
        return;
    };
    let (text, v, k) = run(&dir.path().join("r.db"), mode, &p, 16);
    let long = bt.long_calls();
    // Bursts: waits that began within 200 ms of their burst's first; the stalls, those
    // whose longest wait is half the longest at least (a machine short of CPU makes
    // waits over 10 ms of its own, a preempted holder's).
    let mut bursts: Vec<(u64, u64)> = Vec::new();
    for &(start, d) in &long {
        match bursts.last_mut() {
            Some(b) if start <= b.0 + 200_000_000 => b.1 = b.1.max(d),
            _ => bursts.push((start, d)),
        }
    }
    let longest_ns = long.iter().map(|l| l.1).max().unwrap_or(0);
    bursts.retain(|b| b.1 * 2 >= longest_ns);
    let bursts: Vec<u64> = bursts.into_iter().map(|b| b.0).collect();
    let longest = longest_ns as f64 / 1e6;
    let apart = match bursts.len() {
        n if n > 1 => (bursts[n - 1] - bursts[0]) as f64 / (n - 1) as f64 / 1e6,
        _ => 0.0,
    };
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; bpftrace: {} bursts of futex waits over 10 ms, {apart:.0} ms apart, the longest {longest:.1} ms",
        k.on_cpu,
        k.runnable,
        bursts.len()
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 18.0, &text);
    let lock = named(&found, "lock-contention").unwrap_or_else(|| panic!("no lock:\n{text}"));
    assert!(lock.1.contains("under read_table"), "{text}");
    // "… stalls of up to 62.7 ms, 501 ms apart on average …"
    let first_two = |s: &str| ms_of(&s.split(' ').take(2).collect::<Vec<_>>().join(" "));
    let tail = lock.1.split("stalls of up to ").nth(1);
    let up_to = tail.and_then(first_two);
    let kiln_apart = tail
        .and_then(|t| t.split_once(", "))
        .and_then(|(_, r)| first_two(r));
    let (Some(up_to), Some(kiln_apart)) = (up_to, kiln_apart) else {
        // A machine that starved the server spreads its waits: then the stalls may not
        // stand apart, and the starvation is what must be said.
        assert!(k.runnable > k.on_cpu, "no stalls said:\n{text}");
        return;
    };
    // A machine that starves the server stretches the stalls by its wait for a CPU, the
    // holder's too: the figures and the holder are held to the account on a machine that
    // gave the server its CPUs.
    if k.runnable > k.on_cpu {
        eprintln!(
            "starved (runnable {:.2} > on CPU {:.2}): stalls said, figures not held",
            k.runnable, k.on_cpu
        );
        return;
    }
    assert!(lock.1.contains(holder), "{text}");
    assert!(
        (up_to - longest).abs() <= 0.25 * longest,
        "kiln: stalls up to {up_to} ms; bpftrace: the longest wait {longest:.1} ms\n{text}"
    );
    assert!(
        (kiln_apart - apart).abs() <= 0.2 * apart,
        "kiln: {kiln_apart} ms apart; bpftrace: {apart:.0} ms\n{text}"
    );
}

/// A request that finds its checkpoint due writes it (4 MiB × 8) and syncs it before
/// answering, every 500 ms: no lock, only the slowest requests wait, a small share of all
/// the time. Said as the disk's, with how long and how far apart, as the slowest
/// requests. bpftrace's fdatasync calls over 1 ms are the account.
#[test]
fn a_slow_path_that_waits_for_the_disk_now_and_then_is_said() {
    slow_path_said(
        "checkpoint",
        "disk-io",
        &["write_checkpoint", "long waits of up to "],
    );
}

/// As above, the request rebuilding an index on the CPU (some 60 ms) instead: said as
/// the slow path some requests take, with how long and how far apart. bpftrace's uprobe
/// on the function is the account.
#[test]
fn a_slow_path_on_the_cpu_now_and_then_is_said() {
    slow_path_said(
        "rebuild",
        "cpu-bound",
        &["rebuild_index", "slow path", " at a time ("],
    );
}

fn slow_path_said(mode: &str, class: &str, words: &[&str]) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let exe = planted_exe(dir.path());
    let p = Planted::start(&exe, mode, dir.path(), None);
    let (enter, exit) = match mode {
        "checkpoint" => (
            format!(
                "tracepoint:syscalls:sys_enter_fdatasync /pid == {}/",
                p.pid()
            ),
            "tracepoint:syscalls:sys_exit_fdatasync".to_string(),
        ),
        _ => (
            format!(
                "uprobe:{}:rebuild_index /pid == {}/",
                exe.display(),
                p.pid()
            ),
            format!("uretprobe:{}:rebuild_index", exe.display()),
        ),
    };
    let script = format!(
        "BEGIN {{ printf(\"tracing\\n\"); }} \
         {enter} {{ @s[tid] = nsecs; }} \
         {exit} /@s[tid]/ {{ $d = nsecs - @s[tid]; delete(@s[tid]); \
           if ($d > 1000000) {{ printf(\"long %llu %llu\\n\", nsecs - $d, $d); }} }} \
         interval:s:8 {{ exit(); }} END {{ clear(@s); printf(\"total\\n\"); }}"
    );
    let Some(bt) = Bpftrace::start(&script, 8, "the slow path") else {
        kiln_testkit::skip("bpftrace is not installed or cannot trace this");
        return;
    };
    // A fixed rate the machine serves with CPUs to spare: the tail is the slow path's.
    let (text, v, k) = run_with(&dir.path().join("r.db"), mode, &p, 16, &["-R", "2000"]);
    let long = bt.long_calls();
    let mut lens: Vec<u64> = long.iter().map(|l| l.1).collect();
    lens.sort_unstable();
    let mut gaps: Vec<u64> = long.windows(2).map(|w| w[1].0 - w[0].0).collect();
    gaps.sort_unstable();
    let ms = |v: Option<&u64>| v.map_or(0.0, |&x| x as f64 / 1e6);
    let (median, longest) = (ms(lens.get(lens.len() / 2)), ms(lens.last()));
    let apart = ms(gaps.get(gaps.len() / 2));
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; bpftrace: {} calls over 1 ms, median {median:.1} ms, the longest {longest:.1} ms, {apart:.0} ms apart (median)",
        k.on_cpu,
        k.runnable,
        long.len()
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 18.0, &text);
    if k.runnable * 2.0 > k.on_cpu || found[0].0 == "cpu-starvation" || long.len() < 4 {
        // A machine that starved the server stretches every request: its slowest need
        // not be the slow path's, the starvation may well be the first thing to say, and
        // nothing more is required than that nothing false is said.
        eprintln!(
            "starved (runnable {:.2}, on CPU {:.2}) or too few calls seen: figures not held",
            k.runnable, k.on_cpu
        );
        return;
    }
    let first = &found[0];
    assert_eq!(first.0, class, "{text}");
    for w in words {
        assert!(first.1.contains(w), "{w:?} not said:\n{text}");
    }
    // "… long waits of up to 13.0 ms, 500 ms apart …" or "… for 61.0 ms at a time (6 times
    // on 5 threads, 500 ms apart; …"
    let first_two = |s: &str| ms_of(&s.split(' ').take(2).collect::<Vec<_>>().join(" "));
    // (kiln's figures are over its 3 s, bpftrace's over its 8: kiln's longest lies
    // between bpftrace's median and its longest, kiln's median between bpftrace's
    // shortest and longest — one length on a machine that gave the server its CPUs, a
    // spread on one that made the slow path wait for them.)
    let (kiln_len, low) = match mode {
        "checkpoint" => (first.1.split("long waits of up to ").nth(1), median),
        _ => (first.1.split(" on the CPU for ").nth(1), ms(lens.first())),
    };
    let kiln_len = kiln_len
        .and_then(first_two)
        .unwrap_or_else(|| panic!("no length said:\n{text}"));
    let oracle_len = kiln_len.clamp(low, longest);
    let kiln_apart = first
        .1
        .split(" apart")
        .next()
        .and_then(|s| s.rsplit(", ").next())
        .and_then(ms_of)
        .unwrap_or_else(|| panic!("no spacing said:\n{text}"));
    assert!(
        (kiln_len - oracle_len).abs() <= 0.25 * oracle_len + 1.0,
        "kiln: {kiln_len} ms; bpftrace: {oracle_len:.1} ms\n{text}"
    );
    assert!(
        (kiln_apart - apart).abs() <= 0.2 * apart,
        "kiln: {kiln_apart} ms apart; bpftrace: {apart:.0} ms\n{text}"
    );
}

/// A threaded Python server whose every 50th request sleeps 200 ms: CPython's C stack
/// shows no Python frame, yet the sleep is in the requests' path, said as long waits now
/// and then (how many, how far apart) that are the slowest requests. bpftrace times the
/// server's clock_nanosleep calls over 100 ms: the account kiln's count and spacing are
/// held to.
#[test]
fn a_python_server_that_sleeps_now_and_then_is_said_to() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::python("tail_sleep.py");
    let script = format!(
        "BEGIN {{ printf(\"tracing\\n\"); }} \
         tracepoint:syscalls:sys_enter_clock_nanosleep /pid == {0}/ {{ @s[tid] = nsecs; }} \
         tracepoint:syscalls:sys_exit_clock_nanosleep /@s[tid]/ {{ $d = nsecs - @s[tid]; \
           delete(@s[tid]); if ($d > 100000000) {{ printf(\"long %llu %llu\\n\", nsecs - $d, $d); }} }} \
         interval:s:8 {{ exit(); }} END {{ clear(@s); printf(\"total\\n\"); }}",
        p.pid()
    );
    let Some(bt) = Bpftrace::start(&script, 8, "clock_nanosleep") else {
        kiln_testkit::skip("bpftrace is not installed or cannot trace system calls");
        return;
    };
    let (text, v, k) = run(&dir.path().join("r.db"), "tail", &p, 16);
    let long = bt.long_calls();
    assert!(
        long.len() >= 4,
        "bpftrace saw {} long sleeps:\n{text}",
        long.len()
    );
    let mut starts: Vec<u64> = long.iter().map(|l| l.0).collect();
    starts.sort_unstable();
    // The sleeps a second (they overlap: many threads sleep at once).
    let per_s = long.len() as f64 / ((starts[starts.len() - 1] - starts[0]) as f64 / 1e9);
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; bpftrace: {} sleeps over 100 ms, {per_s:.1} a second",
        k.on_cpu,
        k.runnable,
        long.len()
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 10.0, &text);
    let said =
        named(&found, "sleep-in-path").unwrap_or_else(|| panic!("the sleep not said:\n{text}"));
    // Starved (its threads waited for a CPU longer than they ran: beside CI and the corpus,
    // runnable 1.26 against 0.29 on a CPU), a preempted holder of the GIL stalls every
    // thread waiting for it, and those stalls can rank first by the slowest requests; the
    // sleep is still said, with its figures held below.
    assert!(
        found[0].0 == "sleep-in-path" || found[0].0 == "cpu-starvation" || k.runnable > k.on_cpu,
        "{text}"
    );
    // The caller is named from the CPU profile's Python frames above the same C call:
    // when that profile holds no sample of refresh_cache calling the sleep (a sleeping
    // thread's few microseconds of CPU at each call, missed in 3 s on a busy machine),
    // the wait is said under "Python code".
    let cpu = kiln()
        .env("KILN_STORE", dir.path().join("r.db"))
        .args(["collapse", "--event-filter", "cpu-clock", "run:tail"])
        .output()
        .unwrap();
    let caught = String::from_utf8_lossy(&cpu.stdout)
        .lines()
        .any(|l| l.contains("refresh_cache") && l.contains("nanosleep"));
    if caught {
        assert!(
            said.1.contains("under refresh_cache (tail_sleep.py:"),
            "{text}"
        );
    } else {
        assert!(
            said.1.contains("under Python code")
                || said.1.contains("under refresh_cache (tail_sleep.py:"),
            "{text}"
        );
    }
    // "… most of it in 552 long waits of up to 231 ms, 14.0 ms apart on average …"
    let apart = said
        .1
        .split(" apart on average")
        .next()
        .and_then(|s| s.rsplit(", ").next())
        .and_then(ms_of)
        .unwrap_or_else(|| panic!("no spacing said:\n{text}"));
    if k.runnable > k.on_cpu {
        eprintln!("starved: the sleeps said, their spacing not held");
        return;
    }
    let oracle = 1000.0 / per_s;
    assert!(
        (apart - oracle).abs() <= 0.25 * oracle,
        "kiln: {apart} ms apart; bpftrace: {oracle:.1} ms\n{text}"
    );
}

/// An asyncio server that hands each request's blocking call (a 20 ms sleep) to a pool of
/// four threads, which share the process's name with the event loop: the pool is said to
/// be the limit, its four threads apart from the loop, not the time "outside the server".
/// bpftrace's clock_nanosleep time per second is the account of the pool's blocked time.
#[test]
fn a_pool_beside_an_event_loop_is_the_limit() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((text, v, k, slept)) = asleep_in("executor_pool.py", "pool", 16) else {
        return;
    };
    let found = findings(&v);
    none_contradicted(&found, &k, 10.0, &text);
    assert!(
        named(&found, "network-wait").is_none(),
        "the wait for the pool said to be outside the server:\n{text}"
    );
    if k.runnable > k.on_cpu {
        eprintln!("starved: the pool not required");
        return;
    }
    let first = &found[0];
    assert_eq!(first.0, "sleep-in-path", "{text}");
    assert!(
        first
            .1
            .contains("all 4 'python' threads (besides 1 of its name that polled")
            && first.1.contains("under fetch_rates (executor_pool.py:")
            && first.1.contains("the pool is the limit"),
        "{text}"
    );
    // kiln's time blocked in the work against bpftrace's time asleep, per second.
    let blocked = v["findings"][0]["evidence"][0]["value"]
        .as_str()
        .and_then(|s| s.split("blocked in the work ").nth(1))
        .and_then(|s| s.trim_end_matches(')').parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no blocked time in the evidence:\n{text}"));
    assert!(
        (blocked - slept).abs() <= 0.5,
        "kiln: blocked {blocked}; bpftrace: {slept:.2} s/s\n{text}"
    );
}

/// A thread of the server's own that sleeps between its rounds (a periodic refresher,
/// touching no connection) is no sleep in the requests' path: the requests never slept.
#[test]
fn a_background_threads_sleep_is_not_in_the_requests_path() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::start(&planted_exe(dir.path()), "refresh", dir.path(), None);
    let (text, v, k) = run(&dir.path().join("r.db"), "refresh", &p, 8);
    let found = findings(&v);
    none_contradicted(&found, &k, 10.0, &text);
    assert!(named(&found, "sleep-in-path").is_none(), "{text}");
    // The sleep is in the profile all the same (its thread slept the whole window).
    assert!(text.contains("sleep"), "{text}");
}

/// A wait no rule has a name for (each request waits 3 ms in sigtimedwait for a signal
/// that never comes): still named, at the program's frame, as the share of the requests'
/// time bpftrace counts in the call — ranked as what it is, a wait of no known kind.
#[test]
fn a_wait_of_no_known_kind_in_the_requests_path_is_still_named() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::start(&planted_exe(dir.path()), "sigwait", dir.path(), None);
    let Some(bt) = bpftrace_or_skip("rt_sigtimedwait", p.pid(), 8) else {
        return;
    };
    let (text, v, k) = run(&dir.path().join("r.db"), "sigwait", &p, 8);
    let waited = bt.under_load();
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; bpftrace: {waited:.2} s in rt_sigtimedwait per second",
        k.on_cpu, k.runnable
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 9.0, &text);
    let first = &found[0];
    assert_eq!(first.0, "blocked-other", "{text}");
    assert!(
        first.1.contains("sigtimedwait under await_signal"),
        "{text}"
    );
    let share = first.2 / 100.0;
    let (bt, runq) = (waited / 8.0, k.runnable / 8.0);
    assert!(
        share <= bt + 0.15 && share >= bt - runq - 0.15,
        "kiln: {share:.2} of the requests' time; bpftrace: {bt:.2}, run-queue {runq:.2}\n{text}"
    );
}

/// A pool of two resources behind a condition variable, 16 connections: each request
/// waits for a free one most of its time, under the connection's own frames — in its
/// path, not a worker waiting for work. A refresher thread beside them sleeps 100 ms at a
/// time: the requests' waits do not end with its sleeps, and it is not said to be what
/// they wait on. bpftrace times the futex waits.
#[test]
fn a_condition_waited_on_in_the_requests_path_is_named() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::start(&planted_exe(dir.path()), "dbpool", dir.path(), None);
    let Some(bt) = bpftrace_or_skip("futex", p.pid(), 8) else {
        return;
    };
    let (text, v, k) = run(&dir.path().join("r.db"), "dbpool", &p, 16);
    let waited = bt.under_load();
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; bpftrace: {waited:.2} s in futex per second",
        k.on_cpu, k.runnable
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 17.0, &text);
    // The pool's wait, by the kernel's account, is most of the 16 connections' time.
    if waited / 16.0 < 0.5 {
        eprintln!("futex waits took {waited:.2} s/s here: no finding required");
        return;
    }
    let first = &found[0];
    assert_eq!(first.0, "lock-contention", "{text}");
    assert!(
        first.1.contains("under acquire_conn") && !first.1.contains("refresher"),
        "{text}"
    );
    // A wait's system call lasts until its thread runs again; kiln counts the wait for a
    // CPU after the wake-up as that (starvation's), so on a busy machine kiln's share may
    // be lower by the threads' run-queue time.
    let share = first.2 / 100.0;
    let (bt, runq) = (waited / 16.0, k.runnable / 16.0);
    // A count above what the 16 threads could wait is no account (seen twice in full
    // suites: 27.8 s per second, twice the 13.9 it reads otherwise): said, not compared.
    if bt > 1.05 {
        eprintln!("bpftrace counted {waited:.2} s of futex per second for 16 threads: not an account here");
        return;
    }
    assert!(
        share <= bt + 0.2 && share >= bt - runq - 0.2,
        "kiln: {share:.2} of the requests' time; bpftrace: {bt:.2}, run-queue {runq:.2}\n{text}"
    );
}

/// Group commit on a timer: every request waits on a condition variable until a committer
/// thread, which serves no connection, writes the batch — every 10 ms, by its own sleep.
/// The requests' wait ends as the committer's sleep does: kiln follows the chain to the
/// sleep. bpftrace times the process's clock_nanosleep calls (the committer's alone): the
/// share of a thread kiln says it slept.
#[test]
fn requests_that_wait_on_a_thread_that_sleeps_are_said_to() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::start(&planted_exe(dir.path()), "linger", dir.path(), None);
    let Some(bt) = bpftrace_or_skip("clock_nanosleep", p.pid(), 8) else {
        return;
    };
    let (text, v, k) = run(&dir.path().join("r.db"), "linger", &p, 16);
    let slept = bt.under_load();
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; bpftrace: {slept:.2} s asleep per second",
        k.on_cpu, k.runnable
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 17.0, &text);
    let first = &found[0];
    assert_eq!(first.0, "sleep-in-path", "{text}");
    assert!(
        first.1.contains("under wait_for_commit")
            && first.1.contains("usleep under committer")
            && first.1.contains("waited for another thread's answer"),
        "{text}"
    );
    // "(asleep, N% of a thread's time)": the committer's share, against bpftrace's.
    let said = first
        .1
        .split("(asleep, ")
        .nth(1)
        .and_then(|r| r.split('%').next())
        .and_then(|x| x.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no share of the committer's time in {}", first.1))
        / 100.0;
    assert!(
        (said - slept).abs() <= 0.15,
        "kiln: the committer asleep {said:.2} of its time; bpftrace: {slept:.2} s per second\n{text}"
    );
}

/// Every request hands its work to one worker thread and waits on a condition variable
/// for it: the worker is never idle (on a CPU, or waiting for one while the woken
/// requests take the CPUs), and the requests' threads use as much CPU again waking and
/// handing over. The worker is the limit — the kernel's count of the busiest thread (its
/// schedstat) says so, and kiln's figure for it is held to that count.
#[test]
fn a_worker_every_request_waits_for_is_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::start(&planted_exe(dir.path()), "handoff", dir.path(), None);
    handed_off(
        &p,
        dir.path(),
        "waited for it at ___pthread_cond_wait under wait_for_commit",
        "mostly in work",
    );
}

/// Runs `p` (a server whose requests hand their work to one thread) under 16 connections:
/// when the kernel saw that thread busy 85% of the time, kiln's first finding is that
/// thread, the requests waiting for it `at`, its CPU `work`; its CPU within 0.15 of the
/// kernel's (schedstat), and its wait for the GIL, if said, no more than the kernel saw it
/// off a CPU.
fn handed_off(p: &Planted, dir: &Path, at: &str, work: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (text, v, k) = run(&dir.join("r.db"), "handoff", p, 16);
    let (on, wait) = k.busiest;
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; the busiest thread on CPU {on:.2}, runnable {wait:.2}",
        k.on_cpu, k.runnable
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 17.0, &text);
    // The rule speaks at 80% busy by kiln's count; the test's count is the kernel's over
    // its own seconds (a few tenths apart from kiln's window): near the line, on a machine
    // so busy that the worker mostly waits for a CPU, either may fall on either side.
    if on + wait < 0.85 {
        eprintln!(
            "the kernel saw the worker busy {:.2} of the time: no finding required",
            on + wait
        );
        return;
    }
    let first = &found[0];
    assert_eq!(first.0, "one-thread-saturated", "{text}");
    assert!(first.1.contains(at) && first.1.contains(work), "{text}");
    // "N%" after a marker in the claim, as a share.
    let share_after = |marker: &str| {
        first
            .1
            .split(marker)
            .nth(1)
            .and_then(|r| r.split('%').next())
            .and_then(|x| x.parse::<f64>().ok())
            .map(|x| x / 100.0)
    };
    // "(on a CPU N%": the busiest thread's CPU, against the kernel's.
    let said = share_after("(on a CPU ").unwrap_or_else(|| panic!("no CPU share in {}", first.1));
    assert!(
        (said - on).abs() <= 0.15,
        "kiln: the worker on a CPU {said:.2}; the kernel: {on:.2}\n{text}"
    );
    // "for the GIL N%": time the worker was off a CPU, which the kernel bounds.
    if let Some(gil) = share_after("for the GIL ") {
        let blocked = (1.0 - on - wait).max(0.0);
        assert!(
            gil <= blocked + 0.05,
            "kiln: the worker waited for the GIL {gil:.2}; the kernel: off a CPU {blocked:.2}\n{text}"
        );
    }
}

/// The same hand-off in Python: the handlers put each request's work on a queue for one
/// worker thread and wait on a `threading.Event` (a lock acquired under `Condition.wait`,
/// in a stripped interpreter whose dispatcher frames have no names). The worker is the
/// limit, not "a lock" — the kernel's count of the busiest thread says how busy it was.
#[test]
fn a_python_worker_every_request_waits_for_is_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::python("handoff.py");
    handed_off(
        &p,
        dir.path(),
        "waited for it at PyThread_acquire_lock_timed under Condition.wait (threading.py:",
        "mostly in price_order (handoff.py:",
    );
}

/// A pre-forking server (gunicorn's sync workers' way): a master waiting for two worker
/// processes, each blocked 10 ms in every request, under 32 connections. kiln, given the
/// master's pid as a user gives it the moment the server is up, takes the two young
/// workers (it waits until they are a second old), leaves the master out of the pool (it
/// waited the whole window) and says the pool of workers is the limit, the connections
/// waiting in the accept queue — counted once, though three processes hold the listener.
/// bpftrace times the workers' clock_nanosleep calls; `ss` reads the accept queue.
#[test]
fn a_pool_of_worker_processes_is_the_limit() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::python("prefork.py");
    let workers: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&c| {
            std::fs::read_to_string(format!("/proc/{c}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit(") ")
                        .next()?
                        .split(' ')
                        .nth(1)?
                        .parse::<u32>()
                        .ok()
                })
                == Some(p.pid())
        })
        .collect();
    assert_eq!(workers.len(), 2, "{workers:?}");
    let filter = workers
        .iter()
        .map(|w| format!("pid == {w}"))
        .collect::<Vec<_>>()
        .join(" || ");
    let Some(bt) = Bpftrace::time_where("clock_nanosleep", &filter, 8) else {
        kiln_testkit::skip("bpftrace is not installed or cannot trace system calls");
        return;
    };
    let (text, v, k) = run(&dir.path().join("r.db"), "prefork", &p, 32);
    let slept = bt.under_load();
    let ss = Command::new("ss")
        .args(["-ltnH", "sport", "=", &p.port.to_string()])
        .output();
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; bpftrace: the workers asleep {slept:.2} s per second; ss after: {}",
        k.on_cpu,
        k.runnable,
        ss.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default()
    );
    // The workers measured with the master: "target python3 (pid M,W1,W2)".
    let pids = format!(
        "(pid {},{})",
        p.pid(),
        workers
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",")
    );
    assert!(text.contains(&pids), "{pids} not measured:\n{text}");
    let found = findings(&v);
    none_contradicted(&found, &k, 33.0, &text);
    if slept < 1.6 {
        eprintln!("the workers slept {slept:.2} s/s here (starved of CPU): no finding required");
        return;
    }
    let first = &found[0];
    assert_eq!(first.0, "sleep-in-path", "{text}");
    assert!(
        first.1.contains("all 2 'python' worker processes")
            && first.1.contains("under lookup_inventory (prefork.py:")
            && first.1.contains("the pool is the limit"),
        "{text}"
    );
    // kiln's time blocked in the work against bpftrace's time asleep, per second.
    let blocked = v["findings"][0]["evidence"][0]["value"]
        .as_str()
        .and_then(|s| s.split("blocked in the work ").nth(1))
        .and_then(|s| s.trim_end_matches(')').parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no blocked time in the evidence:\n{text}"));
    assert!(
        (blocked - slept).abs() <= 0.3,
        "kiln: blocked {blocked}; bpftrace: {slept:.2} s/s\n{text}"
    );
    // The accept queue: no more connections than the load holds (one listener, once).
    if let Some(a) = named(&found, "accept-backlog") {
        let q: f64 =
            a.1.split("accept queue: ")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .and_then(|x| x.parse().ok())
                .unwrap_or_else(|| panic!("no queue in {}", a.1));
        assert!(
            q <= 32.0,
            "kiln: {q} waiting of the load's 32 connections\n{text}"
        );
    }
}

/// A reverse proxy waiting for its upstream: nginx passes every request, over kept-alive
/// connections, to a planted server that sleeps 5 ms in each. nginx's worker is idle: the
/// time is outside it, in the service it calls, which kiln names by the connections
/// nginx holds to it. `ss` (the kernel's socket table over netlink) counts them too.
#[test]
fn a_proxy_waiting_for_its_upstream_names_the_service_it_calls() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let up = Planted::start(&planted_exe(dir.path()), "sleep", dir.path(), None);
    let n = kiln_testkit::Nginx::start_with(&kiln_testkit::NginxOptions {
        http_lines: vec![format!(
            "upstream app {{ server 127.0.0.1:{}; keepalive 32; }}",
            up.port
        )],
        server_lines: vec![
            "location /api/ { proxy_pass http://app/; proxy_http_version 1.1; proxy_set_header Connection \"\"; }".into(),
        ],
        access_log: false,
        ..Default::default()
    })
    .expect("nginx starts");
    let store = dir.path().join("r.db");
    // The master and its worker (a worker under a second old is not taken for one).
    let pids: Vec<String> = std::iter::once(n.pid())
        .chain(n.worker_pids().iter().copied())
        .map(|p| p.to_string())
        .collect();
    let out = kiln_testkit::kiln_process()
        .env("KILN_STORE", &store)
        .args(["run", "--name", "proxy", "-e", "cpu,offcpu", "-d", "3"])
        .args(["--warmup", "1", "--no-report", "-p", &pids.join(",")])
        .args(["load", "http", "-c", "8"])
        .arg(n.url("/api/"))
        .output()
        .unwrap();
    let text = kiln_testkit::succeeded(&out);
    let ss = Command::new("ss")
        .args(["-tnpH", "state", "established", "dst"])
        .arg(format!("127.0.0.1:{}", up.port))
        .output()
        .expect("ss runs (Debian package iproute2)");
    let ss = String::from_utf8_lossy(&ss.stdout).into_owned();
    let by_nginx = ss.lines().filter(|l| l.contains("\"nginx\"")).count();
    println!("{text}\nss: {by_nginx} of nginx's connections to the upstream\n{ss}");
    let v = shown(&store, "proxy");
    let found = findings(&v);
    let first = &found[0];
    assert_eq!(first.0, "network-wait", "{text}");
    let to = format!("127.0.0.1:{} (", up.port);
    assert!(
        first.1.contains(&to) && first.1.contains(&format!("planted (pid {})", up.pid())),
        "{text}"
    );
    // "(N connections": as many as the kernel's table holds of nginx's, give or take the
    // ones nginx opened or closed between the two reads.
    let said: usize = first
        .1
        .split(&to)
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no connection count in {}", first.1));
    assert!(
        by_nginx > 0,
        "ss saw no connection of nginx's to the upstream:\n{ss}"
    );
    // The summary lists them beside the target's threads.
    assert!(
        text.contains(&format!(
            "  connected as a client to: 127.0.0.1:{} (",
            up.port
        )),
        "{text}"
    );
    assert!(
        said.abs_diff(by_nginx) <= 2,
        "kiln: {said}; ss: {by_nginx}\n{text}"
    );
}

/// Node's event loop blocked in a synchronous wait: every request calls lookupUser(),
/// which waits 3 ms with Atomics.wait on the loop's thread, so the other connections'
/// requests wait for the loop. Node's threads (the loop, V8's and libuv's workers) share
/// one name: the loop is found by what it does (it polls, and does the CPU). bpftrace
/// times the futex waits of the loop's thread alone (its tid is the process's).
#[test]
fn a_node_event_loop_blocked_in_a_synchronous_call_is_the_limit() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::node(dir.path(), "blocking_loop.js");
    let Some(bt) = Bpftrace::time_where("futex", &format!("tid == {}", p.pid()), 8) else {
        kiln_testkit::skip("bpftrace is not installed or cannot trace system calls");
        return;
    };
    let (text, v, k) = run(&dir.path().join("r.db"), "loop", &p, 16);
    let waited = bt.under_load();
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; bpftrace: the loop's thread {waited:.2} s in futex per second",
        k.on_cpu, k.runnable
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 7.0, &text);
    assert!(
        named(&found, "network-wait").is_none(),
        "the time waiting for the loop said to be outside the server:\n{text}"
    );
    if waited < 0.3 {
        eprintln!("the loop waited {waited:.2} s/s here (starved of CPU): no finding required");
        return;
    }
    let first = &found[0];
    assert!(
        first.1.contains("the event loop") && first.1.contains("lookupUser"),
        "{text}"
    );
    // kiln's blocked share of the loop's time against bpftrace's futex time of its thread.
    let blocked = v["findings"][0]["evidence"][0]["value"]
        .as_str()
        .and_then(|s| s.split("blocked outside its poll ").nth(1))
        .and_then(|s| s.trim_end_matches('%').parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no blocked share in the evidence:\n{text}"));
    // (kiln's blocks hold the wait for a CPU after each wake-up, as the system call does.)
    assert!(
        (blocked / 100.0 - waited).abs() <= 0.2,
        "kiln: blocked {blocked}%; bpftrace: {waited:.2} s/s\n{text}"
    );
}

/// A Node front whose every request waits for a local service (another Node process
/// answering in 20 ms) over keep-alive connections: its event loop idles while the
/// requests wait outside it, and V8's and libuv's idle workers are no work of theirs. kiln
/// says the time is outside the server and names the service it was connected to. The
/// front's own account (GET /metrics before and after the run): its time in the calls
/// over its requests' time from arrival to answer.
#[test]
fn a_node_front_waiting_for_a_downstream_is_said_to_wait_outside_it() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut inventory = Command::new("node");
    inventory
        .current_dir(dir.path())
        .arg(program_path("downstream_front.js"))
        .arg("--inventory");
    let down = Planted::serve(inventory);
    let mut front = Command::new("node");
    front
        .current_dir(dir.path())
        .arg("--perf-basic-prof")
        .arg(program_path("downstream_front.js"))
        .arg(format!("http://127.0.0.1:{}/stock", down.port));
    let p = Planted::serve(front);
    let metrics = || get_json(p.port, "/metrics");
    let before = metrics();
    let (text, v, k) = run(&dir.path().join("r.db"), "front", &p, 16);
    let after = metrics();
    let delta = |key: &str| after[key].as_f64().unwrap() - before[key].as_f64().unwrap();
    let in_calls = delta("ns") / delta("req_ns");
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; the front's own account: {} calls, {:.1}% of its requests' time in them",
        k.on_cpu,
        k.runnable,
        delta("calls"),
        100.0 * in_calls
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 7.0, &text);
    let first = &found[0];
    assert_eq!(first.0, "network-wait", "{text}");
    assert!(
        first.1.contains(&format!("127.0.0.1:{}", down.port)),
        "the service it waited for is not named:\n{text}"
    );
    // Outside the server: the calls, and the network and the client beside them.
    assert!(
        first.2 >= 100.0 * in_calls - 10.0,
        "kiln: {:.1}% outside; the front: {:.1}% in the calls\n{text}",
        first.2,
        100.0 * in_calls
    );
}

/// A Node server that holds every request 20 ms on a timer of its own (setTimeout in
/// waitForRateLimit): no thread works or waits on the requests, and it calls no one. kiln
/// says the program held them itself on a timer — not the network, not "none stood out".
/// The server's own account (GET /metrics): its time in the timer over its requests' time.
#[test]
fn a_node_server_holding_requests_on_a_timer_is_said_to() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut front = Command::new("node");
    front
        .current_dir(dir.path())
        .arg("--perf-basic-prof")
        .arg(program_path("downstream_front.js"))
        .arg("--throttle");
    let p = Planted::serve(front);
    let metrics = || get_json(p.port, "/metrics");
    let before = metrics();
    let (text, v, k) = run(&dir.path().join("r.db"), "timer", &p, 16);
    let after = metrics();
    let delta = |key: &str| after[key].as_f64().unwrap() - before[key].as_f64().unwrap();
    let in_timer = delta("ns") / delta("req_ns");
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; the server's own account: {} timers, {:.1}% of its requests' time in them",
        k.on_cpu,
        k.runnable,
        delta("calls"),
        100.0 * in_timer
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 7.0, &text);
    let first = &found[0];
    assert_eq!(first.0, "sleep-in-path", "{text}");
    assert!(first.1.contains("on a timer"), "{text}");
    assert!(
        (first.2 - 100.0 * in_timer).abs() <= 10.0,
        "kiln: {:.1}% held; the server: {:.1}% in its timers\n{text}",
        first.2,
        100.0 * in_timer
    );
}

/// A Node server whose requests each run crypto.pbkdf2 asynchronously, with libuv's pool
/// of one thread (UV_THREADPOOL_SIZE=1): that pool thread is the limit, not the event
/// loop, and kiln says which. The kernel's account: each thread's CPU time
/// (`/proc/PID/task/TID/stat`) over the run, the hottest not the process's first.
#[test]
fn a_node_thread_pool_of_one_is_not_said_to_be_the_event_loop() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut node = Command::new("node");
    node.current_dir(dir.path())
        .env("UV_THREADPOOL_SIZE", "1")
        .arg("--perf-basic-prof")
        .arg(program_path("pool_crypto.js"));
    let p = Planted::serve(node);
    let ticks = |pid: u32| -> Vec<(u32, u64)> {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .unwrap()
            .filter_map(|e| {
                let tid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
                let w: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
                Some((
                    tid,
                    w.get(11)?.parse::<u64>().ok()? + w.get(12)?.parse::<u64>().ok()?,
                ))
            })
            .collect()
    };
    let before = ticks(p.pid());
    let (text, v, k) = run(&dir.path().join("r.db"), "pool", &p, 16);
    let after = ticks(p.pid());
    let (hot, used) = after
        .iter()
        .map(|(t, a)| (*t, a - before.iter().find(|b| b.0 == *t).map_or(0, |b| b.1)))
        .max_by_key(|x| x.1)
        .unwrap();
    let main = after.iter().find(|t| t.0 == p.pid()).map_or(0, |t| {
        t.1 - before.iter().find(|b| b.0 == p.pid()).map_or(0, |b| b.1)
    });
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; /proc: the hottest thread {hot} used {used} ticks, the main thread ({}) {main}",
        k.on_cpu,
        k.runnable,
        p.pid()
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 7.0, &text);
    assert_ne!(
        hot,
        p.pid(),
        "the event loop was the hottest thread:\n{text}"
    );
    assert!(
        !text.contains("Node's event loop (the main thread) ran"),
        "the pool's thread said to be the event loop:\n{text}"
    );
    let Some(said) = named(&found, "one-thread-saturated") else {
        // Starved, the pool's thread waits for a CPU as much as it runs: the starvation's.
        assert!(k.runnable > k.on_cpu, "the pool's thread not said:\n{text}");
        return;
    };
    assert!(
        said.1.contains("not its event loop") && said.1.contains("UV_THREADPOOL_SIZE=1"),
        "{text}"
    );
}

/// A Node event loop that re-indexes its catalogue for some 60 ms every 500 ms on a timer:
/// its long runs of that function are said — how long, how far apart — as what the
/// slowest requests waited for. bpftrace times the loop's turns between its polls
/// (`epoll_pwait` returning, then called again) over 20 ms: the account kiln is held to.
#[test]
fn an_event_loop_that_runs_one_function_for_long_at_times_is_said() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::node(dir.path(), "stalling_loop.js");
    let script = format!(
        "BEGIN {{ printf(\"tracing\\n\"); }} \
         tracepoint:syscalls:sys_exit_epoll_pwait /tid == {0}/ {{ @back = nsecs; }} \
         tracepoint:syscalls:sys_enter_epoll_pwait /tid == {0} && @back/ {{ $d = nsecs - @back; \
           if ($d > 20000000) {{ printf(\"turn %llu %llu\\n\", @back, $d); }} }} \
         interval:s:8 {{ exit(); }} END {{ clear(@back); printf(\"total\\n\"); }}",
        p.pid()
    );
    let Some(bt) = Bpftrace::start(&script, 8, "epoll_pwait") else {
        kiln_testkit::skip("bpftrace is not installed or cannot trace system calls");
        return;
    };
    let (text, v, k) = run(&dir.path().join("r.db"), "loop", &p, 16);
    // (bpftrace prints each CPU's lines in turn: sorted by when they began.)
    let mut turns: Vec<(u64, u64)> = bt
        .output()
        .lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("turn ")?.split(' ');
            Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        })
        .collect();
    turns.sort_unstable();
    // On a busy machine a few ordinary turns stretch past 20 ms while the loop waits for
    // a CPU (beside CI: 336 ms apart, against the timer's 500): the planted runs are the
    // long ones, at least 0.6 of the 90th percentile's length.
    let mut lengths: Vec<u64> = turns.iter().map(|t| t.1).collect();
    lengths.sort_unstable();
    let p90 = lengths.get(lengths.len() * 9 / 10).copied().unwrap_or(0);
    turns.retain(|t| t.1 as f64 >= 0.6 * p90 as f64);
    let median = |mut v: Vec<u64>| {
        v.sort_unstable();
        v.get(v.len() / 2).map_or(0.0, |&x| x as f64 / 1e6)
    };
    let long = median(turns.iter().map(|t| t.1).collect());
    let apart = median(turns.windows(2).map(|w| w[1].0 - w[0].0).collect());
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; bpftrace: {} turns of the loop over 20 ms, {long:.1} ms each, {apart:.0} ms apart (medians)",
        k.on_cpu,
        k.runnable,
        turns.len()
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 7.0, &text);
    let Some(said) = found
        .iter()
        .find(|f| f.1.contains("reindexCatalogue") && f.1.contains(" at a time ("))
    else {
        // Kept busy by the load itself (on a CPU or waiting for one 90% of the time and
        // more: 10.3k req/s in one run), the loop's turns run into each other and
        // no run stands apart in the samples: the saturated loop is what is said first.
        if k.on_cpu + k.runnable >= 0.9 && k.runnable <= k.on_cpu {
            assert_eq!(found[0].0, "one-thread-saturated", "{text}");
            assert!(found[0].1.contains("event loop"), "{text}");
            return;
        }
        // Starved of CPU, the loop's runs stretch and break: unsaid then, not wrong.
        assert!(
            k.runnable > k.on_cpu,
            "the loop's long runs not said:\n{text}"
        );
        return;
    };
    assert!(
        found[0].0 == "one-thread-saturated" || found[0].0 == "cpu-starvation",
        "{text}"
    );
    // "… ran JS:reindexCatalogue … for 59.2 ms at a time (9 times, 500 ms apart; …"
    let first_two = |s: &str| ms_of(&s.split(' ').take(2).collect::<Vec<_>>().join(" "));
    // (The run may be said with where its path began: "… js:10:26 (in JS:processTimers …)
    // for …".)
    let tail = said
        .1
        .split_once("reindexCatalogue")
        .and_then(|(_, r)| r.split_once(" for "))
        .map(|(_, r)| r);
    let each = tail.and_then(first_two).unwrap_or_else(|| panic!("{text}"));
    if k.runnable > k.on_cpu {
        eprintln!(
            "starved (runnable {:.2} > on CPU {:.2}): runs said, figures not held",
            k.runnable, k.on_cpu
        );
        return;
    }
    let kiln_apart = tail
        .and_then(|t| t.split_once(" times, "))
        .and_then(|(_, r)| first_two(r))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        (each - long).abs() <= 0.25 * long,
        "kiln: {each} ms at a time; bpftrace: {long:.1} ms\n{text}"
    );
    assert!(
        (kiln_apart - apart).abs() <= 0.2 * apart,
        "kiln: {kiln_apart} ms apart; bpftrace: {apart:.0} ms\n{text}"
    );
}

#[test]
fn a_neighbour_that_takes_the_cpu_is_named() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("neighbour.c");
    std::fs::write(
        &src,
        "int main(void){volatile unsigned long x=0;for(;;)x++;}\n",
    )
    .unwrap();
    let spin = kiln_testkit::build_c(dir.path(), &src, "neighbour", &["-O0"]);
    // The server and the neighbour on CPU 0: each gets half of it.
    let p = Planted::start(&planted_exe(dir.path()), "work", dir.path(), Some(0));
    let mut n = Command::new("taskset")
        .args(["-c", "0"])
        .arg(&spin)
        .spawn()
        .unwrap();
    let (text, v, k) = run(&dir.path().join("r.db"), "starved", &p, 8);
    let _ = n.kill();
    let _ = n.wait();
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}",
        k.on_cpu, k.runnable
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 9.0, &text);
    assert!(
        k.runnable > 0.1,
        "the neighbour took no CPU from the server: {:.2}",
        k.runnable
    );
    let starved =
        named(&found, "cpu-starvation").unwrap_or_else(|| panic!("no starvation:\n{text}"));
    // The neighbour among the processes that took the CPUs, unless three busier ones
    // (another suite on a busy machine) outranked it: kiln names the three busiest.
    if !starved.1.contains("neighbour") {
        let went = starved.1.split("the CPUs went to ").nth(1).unwrap_or("");
        let others = went
            .split(", ")
            .filter(|t| !t.starts_with("kiln ") && t.contains(" CPU"))
            .count();
        assert!(others >= 3, "the neighbour is not named:\n{text}");
    }
    // First: the starvation, or — when the server's threads won most of the CPU it is
    // pinned to from the one neighbour thread (the scheduler shares by thread) — that
    // pinned CPU, full: both are so, and the second is the setting to change.
    assert!(
        found[0].0 == "cpu-starvation"
            || (found[0].0 == "cpu-bound" && found[0].1.contains("CPU affinity")),
        "{text}"
    );
}

#[test]
fn a_per_request_fdatasync_is_a_disk_wait() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // A directory on a real file system (a tmpfs would make fdatasync free).
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let p = Planted::start(&planted_exe(dir.path()), "fsync", dir.path(), None);
    let Some(bt) = bpftrace_or_skip("fdatasync", p.pid(), 6) else {
        return;
    };
    let (text, v, k) = run(&dir.path().join("r.db"), "fsync", &p, 8);
    let synced = bt.under_load();
    println!("{text}\nbpftrace: {synced:.2} s in fdatasync per second under the load");
    let found = findings(&v);
    none_contradicted(&found, &k, 9.0, &text);
    // The disk took a fair share of the 8 connections' time, by the kernel's account.
    if synced / 8.0 < 0.15 {
        eprintln!("fdatasync took {synced:.2} s/s here (a fast disk): no disk finding required");
        return;
    }
    let disk = named(&found, "disk-io").unwrap_or_else(|| panic!("no disk named:\n{text}"));
    assert!(disk.1.contains("append_and_sync"), "{text}");
    disk_share_agrees(disk.2, synced / 8.0, 25.0, &k, &text);
}

/// A memory cgroup this test made (v1's `memory` controller, or v2 with it enabled),
/// removed when dropped (its processes ended first).
struct MemoryCgroup {
    dir: PathBuf,
    v1: bool,
}

impl MemoryCgroup {
    /// A cgroup limited to `bytes`, or `None` where none can be made.
    fn create(bytes: u64) -> Option<MemoryCgroup> {
        let name = format!("kiln-test-{}", std::process::id());
        let v1 = Path::new("/sys/fs/cgroup/memory/memory.stat").exists();
        let (dir, limit) = if v1 {
            (
                Path::new("/sys/fs/cgroup/memory").join(&name),
                "memory.limit_in_bytes",
            )
        } else {
            let root = Path::new("/sys/fs/cgroup");
            let ctl = std::fs::read_to_string(root.join("cgroup.subtree_control")).ok()?;
            if !ctl.split_whitespace().any(|c| c == "memory") {
                return None;
            }
            (root.join(&name), "memory.max")
        };
        std::fs::create_dir(&dir).ok()?;
        let cg = MemoryCgroup { dir, v1 };
        std::fs::write(cg.dir.join(limit), bytes.to_string()).ok()?;
        Some(cg)
    }

    /// File pages its processes read again after their eviction, so far (`memory.stat`).
    fn refaults(&self) -> u64 {
        let key = if self.v1 {
            "total_workingset_refault_file "
        } else {
            "workingset_refault_file "
        };
        let stat = std::fs::read_to_string(self.dir.join("memory.stat")).unwrap();
        stat.lines()
            .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
            .expect("workingset_refault_file in memory.stat")
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // Its processes are gone by now (a killed process leaves its cgroup at once).
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A server whose cgroup may keep 32 MiB (its memory and its file cache) and that reads
/// 64 KiB at random from a 192 MiB file: its cache keeps evicting the pages it reads, and
/// they are read from the disk again. kiln must name the limit first (its waits for the
/// disk, and the CPU it spends reading pages back, are the limit's), with the pages read
/// again per second the cgroup's own `memory.stat` counts over the same run.
#[test]
fn a_memory_limit_too_small_for_the_file_cache_is_why_the_disk_is_read() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cg) = MemoryCgroup::create(32 << 20) else {
        kiln_testkit::skip("no memory cgroup can be made here");
        return;
    };
    // On a real file system, out of the page cache (written here, its pages charged to
    // this test's cgroup, not the server's).
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let data = dir.path().join("data");
        let mut f = std::fs::File::create(&data).unwrap();
        let mut block = vec![0u8; 1 << 20];
        for (i, b) in block.iter_mut().enumerate() {
            *b = (i * 7 + 3) as u8;
        }
        for _ in 0..192 {
            f.write_all(&block).unwrap();
        }
        f.sync_all().unwrap();
        // SAFETY: advice on a descriptor this block owns.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
    let exe = planted_exe(dir.path());
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!(
            "echo $$ > {}; exec \"$0\" cache 0 \"$1\"",
            cg.dir.join("cgroup.procs").display()
        ))
        .arg(&exe)
        .arg(dir.path());
    let p = Planted::serve(cmd);
    // The cgroup's count four times a second while the run goes: its rate from the first
    // change to the last is the load's (kiln's own start and end left out).
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let counts = std::thread::scope(|sc| {
        let d = done.clone();
        let cg = &cg;
        let h = sc.spawn(move || {
            let mut v = Vec::new();
            while !d.load(std::sync::atomic::Ordering::Relaxed) {
                v.push((Instant::now(), cg.refaults()));
                std::thread::sleep(Duration::from_millis(250));
            }
            v
        });
        let r = run(&dir.path().join("r.db"), "cache", &p, 8);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (r, h.join().unwrap())
    });
    let ((text, v, k), counts) = counts;
    drop(p);
    let moved: Vec<_> = counts.windows(2).filter(|w| w[1].1 > w[0].1).collect();
    let (first, last) = (
        moved.first().expect("refaults counted")[0],
        moved.last().unwrap()[1],
    );
    let by_cgroup = (last.1 - first.1) as f64 / (last.0 - first.0).as_secs_f64();
    println!(
        "{text}
memory.stat: {by_cgroup:.0} file pages a second read again after eviction"
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 9.0, &text);
    let limit = named(&found, "memory-limit").unwrap_or_else(|| panic!("no limit named:\n{text}"));
    assert!(limit.1.contains("memory limit (32 MiB"), "{text}");
    // First — or, on a machine so busy the server mostly waited for a CPU, after that.
    let at = |c: &str| found.iter().position(|f| f.0 == c);
    assert!(
        at("memory-limit") == Some(0)
            || (found[0].0 == "cpu-starvation" && at("memory-limit") == Some(1)),
        "{text}"
    );
    // The disk waits, when said, are the limit's, said below it at the read.
    if let Some(disk) = named(&found, "disk-io") {
        assert!(disk.1.contains("read_block"), "{text}");
        assert!(at("disk-io") > at("memory-limit"), "{text}");
    }
    let said: f64 = limit
        .1
        .split("the kernel read ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no pages a second in: {}", limit.1));
    // The run's warm-up and its end are in the cgroup's count, not in kiln's window.
    assert!(
        said > 0.6 * by_cgroup && said < 1.6 * by_cgroup,
        "kiln: {said:.0} pages a second read again; memory.stat: {by_cgroup:.0}\n{text}"
    );
}

/// A server that keeps 256 KiB of every request, in a cgroup that may keep 64 MiB, under
/// 80 requests a second: the kernel's OOM killer ends it within the measurement. The run
/// must be kept, marked incomplete with the kill as its reason, and its first finding
/// the growth that got it killed, at the rate the server allocates (80 × 256 KiB a
/// second) — the cgroup's own count of OOM kills is the kernel's account.
#[test]
fn a_server_killed_for_its_memory_is_said_to() {
    let Some(cg) = MemoryCgroup::create(64 << 20) else {
        kiln_testkit::skip("no memory cgroup can be made here");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!(
            "echo $$ > {}; exec /usr/bin/python3 \"$0\"",
            cg.dir.join("cgroup.procs").display()
        ))
        .arg(program_path("leak.py"));
    let p = Planted::serve(cmd);
    let store = dir.path().join("r.db");
    let out = kiln_testkit::kiln_process()
        .env("KILN_STORE", &store)
        .args([
            "run", "--name", "leak", "-e", "cpu", "-d", "8", "--warmup", "1",
        ])
        .args(["--no-report", "-p", &p.pid().to_string()])
        .args(["load", "http", "-d", "60s", "-c", "2", "-R", "80"])
        .arg(format!("http://127.0.0.1:{}/", p.port))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    println!("{text}");
    // Stored, and its exit says it is incomplete.
    assert_eq!(out.status.code(), Some(1), "{text}\n{err}");
    let kills = {
        let (file, key) = if cg.v1 {
            ("memory.oom_control", "oom_kill ")
        } else {
            ("memory.events", "oom_kill ")
        };
        std::fs::read_to_string(cg.dir.join(file))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    assert_eq!(kills, 1, "the cgroup counts one OOM kill");
    let v = shown(&store, "leak");
    let reason = v["status"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("the kernel's OOM killer killed it")
            && reason.contains(&format!("Killed process {} (", p.pid())),
        "{reason}"
    );
    let found = findings(&v);
    let first = &found[0];
    assert_eq!(first.0, "memory-growth", "{text}");
    assert!(first.1.contains("OOM killer"), "{text}");
    // Memory taken and kept is not memory given back and taken again.
    assert!(named(&found, "memory-churn").is_none(), "{text}");
    // "(N MiB/s)": the rate it grew, against what the server keeps a second.
    let said: f64 = first
        .1
        .split(" MiB/s)")
        .next()
        .and_then(|x| x.rsplit('(').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no rate in {}", first.1));
    let kept = 80.0 * 256.0 / 1024.0;
    assert!(
        (said - kept).abs() <= 0.35 * kept,
        "kiln: grew {said} MiB/s; the server keeps {kept} MiB/s\n{text}"
    );
}

/// A Python server whose requests each write to one SQLite file on their own connection:
/// one writes at a time, the others wait in SQLite's busy handler, which sleeps between
/// tries. kiln must say the database's lock, not a sleep, at the function that writes,
/// with the share of the 8 connections' time the kernel counts in the handler's sleeps
/// (bpftrace: clock_nanosleep).
#[test]
fn requests_waiting_for_an_sqlite_write_lock_are_lock_contention() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut python = Command::new("/usr/bin/python3");
    python
        .arg(program_path("sqlite_hits.py"))
        .arg(dir.path().join("hits.db"));
    let p = Planted::serve(python);
    let Some(bt) = bpftrace_or_skip("clock_nanosleep", p.pid(), 6) else {
        return;
    };
    let (text, v, k) = run(&dir.path().join("r.db"), "sqlite", &p, 8);
    let slept = bt.under_load();
    println!("{text}\nbpftrace: {slept:.2} s in clock_nanosleep per second under the load");
    let found = findings(&v);
    none_contradicted(&found, &k, 9.0, &text);
    assert!(named(&found, "sleep-in-path").is_none(), "{text}");
    let first = found.iter().find(|f| f.0 != "cpu-starvation").unwrap();
    assert_eq!(first.0, "lock-contention", "{text}");
    assert!(
        first.1.contains("SQLite database's lock") && first.1.contains("record_hit"),
        "{text}"
    );
    assert!(
        (first.2 - 100.0 * slept / 8.0).abs() <= 25.0,
        "kiln: {:.0}% of the requests' time; bpftrace: {:.0}% in the busy handler's sleeps\n{text}",
        first.2,
        100.0 * slept / 8.0
    );
}

/// The JSON a test program answers `GET path` with on `port` (its own account).
fn get_json(port: u16, path: &str) -> serde_json::Value {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut got = String::new();
    s.read_to_string(&mut got).unwrap();
    let body = got.split("\r\n\r\n").nth(1).expect("an answer with a body");
    serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("{e}: {got}"))
}

/// A disk finding's share of the requests' time against a trace's: the time in the calls
/// (blocked, on a CPU inside them, waiting for a CPU there) over the connections' time
/// (`traced`, 0–1), within `points`. Starved of CPU (its threads waited for one more than
/// they ran), the trace's own seconds run late — 121% of the connections' time was counted
/// in the calls beside a second suite — and the figure is not held to it.
fn disk_share_agrees(said: f64, traced: f64, points: f64, k: &Kernel, text: &str) {
    if k.runnable > k.on_cpu {
        eprintln!(
            "starved (runnable {:.2} > on CPU {:.2}): the disk named, its share not held",
            k.runnable, k.on_cpu
        );
        return;
    }
    assert!(
        (said - 100.0 * traced).abs() < points,
        "kiln {said:.1}% against bpftrace's {:.1}%:\n{text}",
        100.0 * traced
    );
}

/// A Node server that appends each order to a journal and syncs it (`fs.write`, then
/// `fs.fdatasync`) through libuv's pool of two threads, recorded as the README records a server (`-e
/// cpu,offcpu,runnable`): the disk is said at the call that waited, `fdatasync` in
/// libuv's `uv__fs_work`, with its share of the requests' time as bpftrace times the
/// server's fdatasync calls; and the pool's waits for work keep their callers (the
/// preemptions' stack copies once filled the kernel's buffer, and the pool's idle waits
/// read as lock waits under a caller the stack did not show).
#[test]
fn a_node_server_syncing_each_request_waits_for_the_disk_in_libuvs_pool() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // A directory on a real file system (a tmpfs would make fdatasync free).
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // A pool of two: the requests queue for its threads, in no thread's work, and the
    // server holds no socket but its clients' (the time once said to be outside it).
    let mut node = Command::new("node");
    node.current_dir(dir.path())
        .env("UV_THREADPOOL_SIZE", "2")
        .arg("--perf-basic-prof")
        .arg(program_path("journal_fsync.js"));
    let p = Planted::serve(node);
    let Some(bt) = Bpftrace::time_where("fdatasync", &format!("pid == {}", p.pid()), 6) else {
        kiln_testkit::skip("bpftrace is not installed or cannot trace system calls");
        return;
    };
    let before = get_json(p.port, "/stats");
    let (text, v, k) = run_events(
        &dir.path().join("r.db"),
        "journal",
        &p,
        16,
        "cpu,offcpu,runnable",
        &[],
    );
    let after = get_json(p.port, "/stats");
    let delta = |key: &str| after[key].as_f64().unwrap() - before[key].as_f64().unwrap();
    // The server's own account: the time from each append's call to its last callback
    // (the write and the sync, with their waits for a pool thread and the event loop)
    // over the 16 connections' time from before kiln started to after it ended — the
    // seconds without load counted too, a lower bound.
    let appended = delta("append_ns") / (16.0 * delta("now_ns"));
    let synced = bt.under_load();
    println!(
        "{text}\nbpftrace: {synced:.2} s in fdatasync per second under the load; the server: {:.1}% of the connections' time in its appends",
        100.0 * appended
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 9.0, &text);
    // The pool's waits keep their callers: no lock or condition of the program's said
    // under a caller the stack does not show.
    let unseen: f64 = text
        .lines()
        .skip_while(|l| !l.contains("where threads waited"))
        .skip(1)
        .take_while(|l| l.starts_with("     "))
        .filter(|l| l.contains("a caller the stack does not show"))
        .filter_map(|l| l.trim().split('%').next()?.parse::<f64>().ok())
        .sum();
    assert!(
        unseen < 3.0,
        "{unseen:.1}% of the waits lost their callers:\n{text}"
    );
    if synced / 16.0 < 0.05 {
        eprintln!("fdatasync took {synced:.2} s/s here (a fast disk): no disk finding required");
        return;
    }
    let disk = named(&found, "disk-io").unwrap_or_else(|| panic!("no disk named:\n{text}"));
    assert!(
        disk.1.contains("fdatasync in uv__fs_work under worker"),
        "{text}"
    );
    assert!(
        named(&found, "network-wait").is_none(),
        "a server with nothing outside it said to wait outside:\n{text}"
    );
    if disk.1.contains("waited inside it for its threads") {
        // The requests queued for the pool that syncs: their time in the server against
        // its own timing of the appends (the rest is its event loop's and the network's).
        assert!(
            disk.2 >= 100.0 * appended - 20.0 && disk.2 <= 100.0,
            "kiln {:.1}% inside; the server {:.1}% in its appends:\n{text}",
            disk.2,
            100.0 * appended
        );
    } else {
        disk_share_agrees(disk.2, synced / 16.0, 15.0, &k, &text);
    }
}

#[test]
fn memory_given_back_and_taken_again_is_churn_and_perf_counts_the_faults() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::start(&planted_exe(dir.path()), "churn", dir.path(), None);
    // perf's own count of the page faults, a quarter of a second at a time over 2 s of
    // the load. `perf stat -p` counts the threads there when it starts, and the server
    // makes one per connection: it starts once the 8 connections' threads are there.
    let pid = p.pid();
    let perf = std::thread::spawn(move || {
        let threads = || std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count());
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while threads() < 9 {
            assert!(
                std::time::Instant::now() < deadline,
                "the server never had its 8 connections' threads"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Command::new("perf")
            .args(["stat", "-I", "250", "-x", ",", "-e", "page-faults", "-p"])
            .arg(pid.to_string())
            .args(["--", "sleep", "2"])
            .stderr(Stdio::piped())
            .output()
            .expect("perf runs")
    });
    let (text, v, k) = run(&dir.path().join("r.db"), "churn", &p, 8);
    let perf = perf.join().unwrap();
    let perf_text = String::from_utf8_lossy(&perf.stderr);
    // Each interval's line: its end time, then its count.
    let mut per_s: Vec<f64> = perf_text
        .lines()
        .filter(|l| l.contains("page-faults"))
        .filter_map(|l| l.split(',').nth(1)?.trim().parse::<f64>().ok())
        .map(|n| n / 0.25)
        .collect();
    assert!(!per_s.is_empty(), "perf stat: {perf_text}");
    // The loaded quarters: those within half of the busiest, their median.
    let top = per_s.iter().copied().fold(0.0, f64::max);
    per_s.retain(|&x| x >= 0.5 * top);
    per_s.sort_by(f64::total_cmp);
    let perf_rate = per_s[per_s.len() / 2];
    println!("{text}\nperf: {perf_rate:.0} page faults a second under load");
    let found = findings(&v);
    none_contradicted(&found, &k, 9.0, &text);
    let churn = named(&found, "memory-churn").unwrap_or_else(|| panic!("no churn:\n{text}"));
    assert!(churn.1.contains("new pages per req"), "{text}");
    // kiln's own series of minor faults against perf's count: the same order of faults
    // per second under load (perf's quarters and kiln's seconds are not the same ones).
    let target = v["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "target")
        .unwrap();
    let col = target["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "minor faults")
        .unwrap();
    let vals: Vec<f64> = col["values"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x.as_f64())
        .collect();
    let kiln_rate = vals.iter().sum::<f64>() / vals.len() as f64;
    assert!(
        kiln_rate > perf_rate * 0.3 && kiln_rate < perf_rate * 3.0,
        "kiln {kiln_rate:.0}/s, perf {perf_rate:.0}/s"
    );
}

/// A keep-alive client of the test's own: the median time of `n` requests (ms).
fn client_median_ms(port: u16, n: usize) -> f64 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut times = Vec::new();
    let mut buf = [0u8; 4096];
    for _ in 0..n {
        let t = std::time::Instant::now();
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut got = Vec::new();
        while !got.ends_with(b"ok") {
            let r = s.read(&mut buf).unwrap();
            assert!(r > 0);
            got.extend_from_slice(&buf[..r]);
        }
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    times[n / 2]
}

#[test]
fn a_response_held_by_nagle_is_time_outside_the_server() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let exe = planted_exe(dir.path());
    let p = Planted::start(&exe, "nagle", dir.path(), None);
    let median = client_median_ms(p.port, 40);
    let (text, v, k) = run(&dir.path().join("r.db"), "nagle", &p, 16);
    println!("{text}\nthe test's client: median {median:.1} ms");
    let found = findings(&v);
    none_contradicted(&found, &k, 17.0, &text);
    // The delayed ACK as the test's own client saw it.
    assert!(median > 30.0, "no delayed-ACK stall here: {median:.1} ms");
    let outside = named(&found, "network-wait").unwrap_or_else(|| panic!("not outside:\n{text}"));
    assert!(outside.1.contains("delayed-ACK"), "{text}");
    assert_eq!(found[0].0, "network-wait", "{text}");
    // With TCP_NODELAY the same server answers at once, and nothing says Nagle.
    let q = Planted::start(&exe, "nodelay", dir.path(), None);
    assert!(client_median_ms(q.port, 40) < 10.0);
    let (text, v, _) = run(&dir.path().join("r.db"), "nodelay", &q, 16);
    assert!(!text.contains("delayed-ACK"), "{text}");
    let found = findings(&v);
    assert!(named(&found, "network-wait").is_none_or(|f| !f.1.contains("delayed-ACK")));
}

/// Python's standard HTTP server as the library makes it (two sends per response, Nagle's
/// algorithm left on): the stall is named with the remedy in the library's own terms.
#[test]
fn a_python_stdlib_server_held_by_nagle_is_told_its_own_remedy() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::python("stdlib_nagle.py");
    let median = client_median_ms(p.port, 20);
    let (text, v, k) = run(&dir.path().join("r.db"), "stdlib", &p, 16);
    println!("{text}\nthe test's client: median {median:.1} ms");
    let found = findings(&v);
    none_contradicted(&found, &k, 17.0, &text);
    assert!(median > 30.0, "no delayed-ACK stall here: {median:.1} ms");
    let first = &found[0];
    assert_eq!(first.0, "network-wait", "{text}");
    assert!(
        first.1.contains("delayed-ACK") && first.1.contains("disable_nagle_algorithm = True"),
        "{text}"
    );
}

/// A Python server that runs `date` for every answer (subprocess.run): the programs' CPU
/// is outside the server's own figures, and the GIL waits it causes are not the first
/// thing to say. The kernel's account: the server's children's CPU (cutime + cstime).
#[test]
fn a_python_server_running_a_program_per_request_is_said_to() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = Planted::python("spawn_per_request.py");
    let (text, v, k) = run(&dir.path().join("r.db"), "spawn", &p, 16);
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; its children's CPU {:.2}",
        k.on_cpu, k.runnable, k.children
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 17.0, &text);
    // First: the GIL waits the starts cause (Python holds it through fork_exec and
    // subprocess's own code) are said as theirs, and rank under them.
    let at = found
        .iter()
        .position(|f| f.0 == "child-processes")
        .unwrap_or_else(|| panic!("the programs not said:\n{text}"));
    assert_eq!(at, 0, "{text}");
    if found
        .iter()
        .any(|f| f.0 == "lock-contention" && f.1.contains("GIL") && f.2 >= 10.0)
    {
        assert!(found[0].1.contains("waits for the GIL"), "{text}");
    }
    let said_as = &found[at];
    assert!(
        said_as.1.contains("stamp_receipt") && said_as.1.contains("date"),
        "{text}"
    );
    // kiln's figure of the children's CPU against the kernel's over the same seconds.
    let said = v["findings"][at]["evidence"][0]["value"]
        .as_str()
        .and_then(|s| s.split(" CPU").next())
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no children's CPU in the evidence:\n{text}"));
    assert!(
        (said - k.children).abs() <= 0.1 + 0.3 * k.children,
        "kiln: {said:.2} CPU; the kernel: {:.2}\n{text}",
        k.children
    );
}

/// The kernel's count of TCP connections accepted on this machine (`PassiveOpens` in
/// /proc/net/snmp), as nstat reads it.
fn passive_opens() -> u64 {
    let snmp = std::fs::read_to_string("/proc/net/snmp").unwrap();
    let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
    let (names, values) = (tcp.next().unwrap(), tcp.next().unwrap());
    let at = names
        .split_whitespace()
        .position(|n| n == "PassiveOpens")
        .unwrap();
    values.split_whitespace().nth(at).unwrap().parse().unwrap()
}

/// Keep-alive off at the server: every response says `Connection: close` and the
/// connection ends with it, so each request is a new connection. kiln's count of them
/// is held to the kernel's (PassiveOpens over the run, which holds it); with keep-alive
/// on, the same server draws no such word.
#[test]
fn a_server_that_closes_after_each_answer_costs_a_connection_per_request() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let exe = planted_exe(dir.path());
    let p = Planted::start(&exe, "close", dir.path(), None);
    let before = passive_opens();
    let (text, v, k) = run(&dir.path().join("r.db"), "close", &p, 16);
    let accepted = passive_opens() - before;
    println!(
        "{text}
the kernel: {accepted} connections accepted over the run"
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 17.0, &text);
    let churn = named(&found, "connection-churn").unwrap_or_else(|| panic!("{text}"));
    assert!(churn.2 >= 90.0, "{text}");
    assert!(churn.1.contains("Connection: close"), "{text}");
    let opened: u64 = churn
        .1
        .split(": ")
        .nth(1)
        .and_then(|x| x.split(" new connections").next())
        .map(|n| n.replace(',', ""))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of connections in {}", churn.1));
    assert!(
        opened > 100 && opened <= accepted,
        "kiln: {opened} new connections in its window; the kernel accepted {accepted} over the whole run\n{text}"
    );
    let q = Planted::start(&exe, "work", dir.path(), None);
    let (text, v, _) = run(&dir.path().join("r.db"), "kept", &q, 16);
    assert!(named(&findings(&v), "connection-churn").is_none(), "{text}");
}

/// The CPU time of the children `pid` has waited for (`cutime` + `cstime` of
/// /proc/PID/stat), seconds.
fn children_cpu_s(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command's closing parenthesis, from the third (state).
    let rest: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .collect();
    let ticks: f64 = rest[13].parse::<f64>().unwrap() + rest[14].parse::<f64>().unwrap();
    ticks / 100.0
}

/// The processes this machine has started since it booted (`processes` of /proc/stat).
fn forks() -> u64 {
    std::fs::read_to_string("/proc/stat")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("processes "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A server that runs a program per request and waits for it: kiln names the wait for the
/// child processes, counts them under the processes the kernel started over the run, and
/// gives the children's CPU as the kernel counts it for the parent (`cutime` + `cstime`).
#[test]
fn a_server_that_runs_a_program_per_request_waits_for_its_children() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let exe = planted_exe(dir.path());
    let p = Planted::start(&exe, "spawn", dir.path(), None);
    let forks0 = forks();
    let (text, v, k) = run(&dir.path().join("r.db"), "spawn", &p, 8);
    let (cpu, started) = (k.children, forks() - forks0);
    println!("{text}\nthe kernel: {started} processes started on the machine over the run; the children's CPU {cpu:.2} CPUs while kiln measured");
    let found = findings(&v);
    none_contradicted(&found, &k, 9.0, &text);
    let first = &found[0];
    assert_eq!(first.0, "child-processes", "{text}");
    let claim = &first.1;
    let number_before = |what: &str| -> f64 {
        let head = &claim[..claim
            .find(what)
            .unwrap_or_else(|| panic!("no {what:?} in {claim}"))];
        head.rsplit(|c: char| !(c.is_ascii_digit() || c == '.'))
            .find(|x| !x.is_empty())
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("no number before {what:?} in {claim}"))
    };
    let waits = number_before(" waits for a child to end");
    assert!(
        waits > 100.0 && waits <= started as f64,
        "kiln: {waits} children waited for; the machine started {started}\n{text}"
    );
    let per = number_before(" per req");
    assert!(
        // At most one child per request; fewer when the kernel lost records of blocks.
        (0.5..=1.1).contains(&per),
        "{per} children per request\n{text}"
    );
    let said: f64 = claim
        .split(" used ")
        .nth(1)
        .and_then(|x| x.split(' ').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no CPU of the children in {claim}"));
    assert!(
        said >= 0.75 * cpu && said <= 1.25 * cpu,
        "kiln: the children used {said} CPUs; the kernel: {cpu:.2}\n{text}"
    );
}

/// Go's own account of where its goroutines are: `/debug/pprof/goroutine?debug=1`, the
/// goroutines counted under each program (`main.`) function on their stacks.
fn goroutines_in(port: u16) -> std::collections::HashMap<String, u64> {
    let mut by = std::collections::HashMap::new();
    let body = get(port, "/debug/pprof/goroutine?debug=1");
    // "N @ 0x..." then "#\t0x...\tfunc+0x..\tfile:line" lines, leaf first.
    let mut count = 0u64;
    let mut seen: Vec<String> = Vec::new();
    for line in body.lines() {
        if let Some((n, _)) = line.split_once(" @ ") {
            count = n.trim().parse().unwrap_or(0);
            seen.clear();
        } else if let Some(rest) = line.strip_prefix("#\t") {
            let func = rest.split('\t').nth(1).unwrap_or("");
            let func = func.split('+').next().unwrap_or("");
            if func.starts_with("main.") && !seen.iter().any(|s| s == func) {
                *by.entry(func.to_string()).or_insert(0) += count;
                seen.push(func.to_string());
            }
        }
    }
    by
}

/// Builds the Go program in crates/findings/tests/programs/`name` into `dir` and starts
/// it, waiting for the port it says it listens on.
fn go_server(name: &str, dir: &Path) -> Planted {
    let src = program_path(name);
    let exe = dir.join(name);
    let out = kiln_testkit::go_oracle::go()
        .current_dir(&src)
        .args(["build", "-o"])
        .arg(&exe)
        .arg(".")
        .output()
        .expect("go build");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Planted::serve(Command::new(&exe))
}

/// A GET of `path` on 127.0.0.1:`port`, its whole answer (headers too); empty if it fails.
fn get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    body
}

#[test]
fn a_goroutine_that_serves_every_request_is_the_limit() {
    if !kiln_testkit::go_oracle::have_go() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = go_server("one_worker", dir.path());
    let port = p.port;
    // Go's account while the load runs: the goroutines in the worker and in the handlers,
    // read until kiln's run ends.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let done = done.clone();
        std::thread::spawn(move || {
            // The most goroutines seen in the worker, and in the handlers, over the
            // dumps (a dump can miss the goroutine running on a CPU as it is taken).
            let mut most = (0u64, 0u64);
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let by = goroutines_in(port);
                most.0 = most.0.max(by.get("main.worker").copied().unwrap_or(0));
                most.1 = most.1.max(by.get("main.handle").copied().unwrap_or(0));
                std::thread::sleep(Duration::from_millis(200));
            }
            most
        })
    };
    let (text, v, k) = run(&dir.path().join("r.db"), "worker", &p, 24);
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let (workers, handling) = watcher.join().unwrap();
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; Go: {workers} goroutine(s) in main.worker while {handling} waited in main.handle",
        k.on_cpu, k.runnable
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 8.0, &text);
    // Go's own account: one goroutine does the work while the handlers wait for it, and
    // the kernel's: the process ran about one CPU of the two.
    assert_eq!(workers, 1, "{text}");
    assert!(
        handling >= 12,
        "Go saw {handling} handlers waiting:\n{text}"
    );
    assert!(
        k.on_cpu <= 1.3,
        "the kernel saw {:.2} CPUs:\n{text}",
        k.on_cpu
    );
    if k.on_cpu < 0.7 {
        eprintln!(
            "the server ran {:.2} CPU here (starved): no finding required",
            k.on_cpu
        );
        return;
    }
    let first = &found[0];
    assert_eq!(first.0, "one-thread-saturated", "{text}");
    assert!(
        first.1.contains("main.worker") && first.1.contains("one thread at a time"),
        "{text}"
    );
}

/// Compiles the BEAM test server `module` (crates/findings/tests/programs/`module`.erl,
/// with the HTTP front they share) into `dir` and starts it on a node with its JIT's perf
/// map, its own account written to the file returned beside it.
fn erlang_server(module: &str, dir: &Path) -> (Planted, PathBuf) {
    kiln_testkit::succeeded(
        &Command::new("erlc")
            .arg("-o")
            .arg(dir)
            .arg(program_path("http_front.erl"))
            .arg(program_path(&format!("{module}.erl")))
            .output()
            .unwrap(),
    );
    let samples = dir.join("samples");
    let mut erl = Command::new("erl");
    erl.args(["-noshell", "+JPperf", "true", "-pa"])
        .arg(dir)
        .arg("-eval")
        .arg(format!("{module}:start(\"{}\")", samples.display()));
    (Planted::serve(erl), samples)
}

/// A gen_server every request calls (crates/findings/tests/programs/ledger.erl, ~1 ms of
/// work in handle_call): the work runs in one Erlang process, on one scheduler thread at a
/// time, whichever it is given, so no thread stands out; the node's own account (the
/// process's status every 10 ms) says it was running or runnable nearly all the time.
#[test]
fn an_erlang_process_every_request_calls_is_the_limit() {
    let have = |c: &str| {
        Command::new(c)
            .arg("-version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    };
    if !have("erlc") || !have("erl") {
        kiln_testkit::skip("no erlc or erl (Debian package erlang-nox)");
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (p, samples) = erlang_server("ledger", dir.path());
    let (text, v, k) = run(&dir.path().join("r.db"), "ledger", &p, 16);
    // The node's account, a second at a time (cumulative counts: running or runnable,
    // idle): its busiest second, one under the load.
    let account = std::fs::read_to_string(&samples).unwrap_or_default();
    let rows: Vec<Vec<u64>> = account
        .lines()
        .map(|l| {
            l.split(' ')
                .filter_map(|x| x.trim().parse().ok())
                .collect::<Vec<u64>>()
        })
        .filter(|r| r.len() == 5)
        .collect();
    let busy = rows
        .windows(2)
        .map(|w| {
            (w[1][1] - w[0][1]) as f64 / ((w[1][1] + w[1][2]) - (w[0][1] + w[0][2])).max(1) as f64
        })
        .fold(0.0, f64::max);
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; the node: the ledger running or runnable {:.0}% of its busiest second",
        k.on_cpu,
        k.runnable,
        busy * 100.0
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 4.0, &text);
    assert!(
        busy > 0.8,
        "the node saw its ledger busy {busy:.2}:\n{text}"
    );
    if k.on_cpu < 0.6 {
        eprintln!(
            "the node ran {:.2} CPU here (starved): no finding required",
            k.on_cpu
        );
        return;
    }
    let first = &found[0];
    assert_eq!(first.0, "one-thread-saturated", "{text}");
    assert!(
        first.1.contains("$ledger:handle_call/3")
            && first.1.contains("one thread at a time")
            && first.1.contains("one Erlang process"),
        "{text}"
    );
}

/// An Erlang server whose every request builds a large list
/// (crates/findings/tests/programs/heaps.erl): each connection's process grows a heap the
/// runtime collects on its dirty CPU schedulers. kiln's share of the server's CPU in
/// garbage collection is held to the node's own account, msacc's `gc` state over its
/// threads' awake time, dirty schedulers included, at a rate that leaves CPUs to spare
/// (msacc counts wall time: a thread waiting for a CPU would count in its state).
#[test]
fn an_erlang_server_collecting_large_heaps_is_said_to_spend_it_in_garbage_collection() {
    if Command::new("erlc").arg("-h").output().is_err() {
        kiln_testkit::skip("no erlc or erl (Debian package erlang-nox)");
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (p, samples) = erlang_server("heaps", dir.path());
    let (text, v, k) = run_events(
        &dir.path().join("r.db"),
        "heaps",
        &p,
        4,
        "cpu,offcpu,runnable",
        &["-R", "300"],
    );
    // The node's account, a second at a time: time in gc and awake, summed over its
    // threads; the seconds under the load (awake at least a third of the most).
    let rows: Vec<Vec<u64>> = std::fs::read_to_string(&samples)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split(' ').filter_map(|x| x.trim().parse().ok()).collect())
        .filter(|r: &Vec<u64>| r.len() == 4)
        .collect();
    let most = rows.iter().map(|r| r[2]).max().unwrap_or(0);
    let (gc, awake) = rows
        .iter()
        .filter(|r| r[2] * 3 >= most)
        .fold((0, 0), |(g, a), r| (g + r[1], a + r[2]));
    let msacc = gc as f64 / awake.max(1) as f64 * 100.0;
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; msacc: gc {msacc:.1}% of the threads' awake time",
        k.on_cpu, k.runnable
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 16.0, &text);
    assert!(
        msacc >= 5.0,
        "the node collected {msacc:.1}% of its time:\n{text}"
    );
    let said = named(&found, "garbage-collection")
        .unwrap_or_else(|| panic!("no garbage collection finding (msacc {msacc:.1}%):\n{text}"));
    assert!(said.1.contains("garbage collection took"), "{text}");
    // (On a machine busy with other work, the node's threads wait for CPUs in their states
    // too: the shares are farther apart.)
    let points = if k.runnable > 0.2 { 20.0 } else { 10.0 };
    assert!(
        (said.2 - msacc).abs() <= points,
        "kiln's {:.1}% against msacc's {msacc:.1}% (within {points} points):\n{text}",
        said.2
    );
}

/// Go's block profile (`/debug/pprof/block?debug=1`): the seconds goroutines spent blocked
/// under each program (`main.`) function, from the process's start.
fn blocked_under(port: u16) -> std::collections::HashMap<String, f64> {
    let body = get(port, "/debug/pprof/block?debug=1");
    let mut by = std::collections::HashMap::new();
    let hz: f64 = body
        .lines()
        .find_map(|l| l.strip_prefix("cycles/second="))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0);
    if hz <= 0.0 {
        return by;
    }
    // "CYCLES COUNT @ ADDRS" then "#\tADDR\tFUNC+OFF\tFILE:LINE" lines, leaf first.
    let mut delay = 0.0;
    let mut seen: Vec<String> = Vec::new();
    for line in body.lines() {
        if let Some((head, _)) = line.split_once(" @ ") {
            delay = head
                .split_whitespace()
                .next()
                .and_then(|c| c.parse::<f64>().ok())
                .unwrap_or(0.0)
                / hz;
            seen.clear();
        } else if let Some(rest) = line.strip_prefix("#\t") {
            let func = rest.split('\t').nth(1).unwrap_or("");
            let func = func.split('+').next().unwrap_or("");
            if func.starts_with("main.") && !seen.iter().any(|s| s == func) {
                *by.entry(func.to_string()).or_insert(0.0) += delay;
                seen.push(func.to_string());
            }
        }
    }
    by
}

/// A counter the target keeps of itself (seconds blocked, nanoseconds waited), read every
/// 250 ms on a thread of its own until [`Watcher::plateau_rate`].
struct Watcher {
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    reads: std::thread::JoinHandle<Vec<(std::time::Instant, f64)>>,
}

impl Watcher {
    fn start(read: impl Fn() -> f64 + Send + 'static) -> Watcher {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop = done.clone();
        let reads = std::thread::spawn(move || {
            let mut reads = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let v = read();
                reads.push((std::time::Instant::now(), v));
                std::thread::sleep(Duration::from_millis(250));
            }
            reads
        });
        Watcher { done, reads }
    }

    /// Stops reading: the counter's rate a second at a time over the load's plateau (the
    /// seconds at half the steepest or more: not its ramp or its end), their median. (A
    /// wait is counted when it ends: on a busy machine one second may hold more than its
    /// share, another less.)
    fn plateau_rate(self) -> f64 {
        self.done.store(true, std::sync::atomic::Ordering::Relaxed);
        let reads = self.reads.join().unwrap();
        let mut rates: Vec<f64> = Vec::new();
        for (i, a) in reads.iter().enumerate() {
            let later = reads[i..]
                .iter()
                .find(|b| b.0.duration_since(a.0) >= Duration::from_secs(1));
            if let Some(b) = later {
                rates.push((b.1 - a.1) / b.0.duration_since(a.0).as_secs_f64());
            }
        }
        let steepest = rates.iter().copied().fold(0.0, f64::max);
        let mut plateau: Vec<f64> = rates.into_iter().filter(|r| *r >= 0.5 * steepest).collect();
        plateau.sort_by(f64::total_cmp);
        plateau.get(plateau.len() / 2).copied().unwrap_or(0.0)
    }
}

/// Goroutines that wait on a timer's channel (`<-time.After`) park in a channel receive
/// as those waiting for another goroutine do; the timer woke them, so kiln says a timer,
/// not a channel in the request's path. The server's own account: the time its requests
/// spent in that wait.
#[test]
fn goroutines_waiting_on_a_timers_channel_are_said_to_wait_on_the_timer() {
    if !kiln_testkit::go_oracle::have_go() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = go_server("go_timer", dir.path());
    let port = p.port;
    const CONNS: u32 = 16;
    let watcher = Watcher::start(move || {
        get(port, "/metrics")
            .lines()
            .find_map(|l| l.strip_prefix("waited_ns "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map_or(0.0, |ns| ns / 1e9)
    });
    let (text, v, k) = run(&dir.path().join("r.db"), "timer", &p, CONNS);
    let rate = watcher.plateau_rate();
    let share = (rate / f64::from(CONNS)).min(1.0);
    println!(
        "{text}\nthe server's account: {rate:.2} s a second waiting on the timer (of {CONNS} connections: {:.0}%)",
        share * 100.0
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 8.0, &text);
    assert!(share >= 0.5, "the server waited {rate:.2} s/s:\n{text}");
    let first = &found[0];
    assert_eq!(first.0, "sleep-in-path", "{text}");
    assert!(
        first.1.contains("timer's channel") && first.1.contains("main.throttle"),
        "{text}"
    );
    // Starved (its threads waiting for a CPU more than running: 1.02 against 0.37 in a CI
    // run beside another suite), the goroutines' parks traced one second in five and scaled
    // vary more from second to second, and the server's share is of its connections' time,
    // the client's own moments included (kiln's load generator the limit then): 100%
    // against 80% in that run.
    let within = if k.runnable > k.on_cpu { 0.3 } else { 0.2 };
    assert!(
        (first.2 / 100.0 - share).abs() <= within,
        "kiln: {}%; the server: {:.0}%\n{text}",
        first.2,
        share * 100.0
    );
}

#[test]
fn goroutines_parked_on_a_mutex_are_seen_without_the_programs_profiles() {
    if !kiln_testkit::go_oracle::have_go() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = go_server("go_mutex", dir.path());
    let port = p.port;
    // Enough connections that the server's threads are nearly idle while the requests
    // wait: their time is the parked goroutines', inside the server.
    const CONNS: u32 = 32;
    // Go's own account: its block profile read until kiln's run ends, the seconds
    // blocked under main.updateInventory, a second at a time over the load's plateau.
    let watcher = Watcher::start(move || {
        blocked_under(port)
            .get("main.updateInventory")
            .copied()
            .unwrap_or(0.0)
    });
    let (text, v, k) = run(&dir.path().join("r.db"), "mutex", &p, CONNS);
    let rate = watcher.plateau_rate();
    println!(
        "{text}\nkernel: on CPU {:.2}, runnable {:.2}; Go's block profile: {rate:.2} s blocked per second under main.updateInventory (of {CONNS} connections)",
        k.on_cpu, k.runnable
    );
    let found = findings(&v);
    none_contradicted(&found, &k, 8.0, &text);
    assert!(
        named(&found, "network-wait").is_none(),
        "the goroutines' wait said to be outside the server:\n{text}"
    );
    let share = (rate / f64::from(CONNS)).min(1.0);
    assert!(
        share >= 0.5,
        "Go's block profile saw {rate:.2} s/s blocked:\n{text}"
    );
    let first = &found[0];
    assert_eq!(first.0, "lock-contention", "{text}");
    assert!(
        first.1.contains("goroutines waited on a lock") && first.1.contains("main.updateInventory"),
        "{text}"
    );
    // kiln's share of the requests' time against Go's own account of the same load.
    assert!(
        (first.2 / 100.0 - share).abs() <= 0.2,
        "kiln: {}%; Go: {:.0}%\n{text}",
        first.2,
        share * 100.0
    );
}

/// A RabbitMQ node in its memory alarm (a high watermark of one byte: set as it starts)
/// blocks every publishing connection (`connection.blocked`): kiln says the broker held
/// the load back, in the broker's words, and not that the time was outside it. The
/// broker's own account: `rabbit_alarm:get_alarms()` names the memory alarm.
#[test]
fn a_broker_that_blocks_its_publishers_holds_the_load_back() {
    let Ok(b) = kiln_testkit::RabbitMq::start_with(&kiln_testkit::RabbitMqOptions {
        extra_config: vec!["vm_memory_high_watermark.absolute = 1".into()],
        ..Default::default()
    }) else {
        kiln_testkit::skip("RabbitMQ does not start here (Debian package rabbitmq-server)");
        return;
    };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("r.db");
    let pid = b.beam_pid().expect("the node's pid").to_string();
    let uri = b.uri();
    let load = ["amqp", "-h", &uri, "-x", "2", "-y", "1", "-z", "60"];
    let out = start_run(&store, "alarm", &pid, "3", &load)
        .wait_with_output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let alarms = b.ctl(&["eval", "rabbit_alarm:get_alarms()."]).unwrap();
    let alarms = String::from_utf8_lossy(&alarms.stdout).into_owned();
    println!("{text}\nthe broker's alarms: {alarms}");
    let v = shown(&store, "alarm");
    let found = findings(&v);
    assert!(alarms.contains("memory"), "the node's alarm: {alarms}");
    let first = &found[0];
    assert_eq!(first.0, "held-back", "{text}");
    assert!(
        first.1.contains("low on memory") && first.1.contains("memory alarm"),
        "{text}"
    );
    // The whole window blocked, as the load's own flag counted it.
    assert!(first.1.contains("100% of the window"), "{text}");
    assert!(named(&found, "network-wait").is_none(), "{text}");
}

/// A load that asks for a URL the server does not serve measures the answer 'not found',
/// not the work: kiln says so first, with the status the server gave. The server's own
/// account: Python's http.server logs each request's status.
#[test]
fn a_load_answered_not_found_is_said_to_measure_the_refusal() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let mut python = Command::new("python3");
    python
        .current_dir(dir.path())
        .arg("-c")
        .arg(
            "import http.server as h\n\
             s = h.ThreadingHTTPServer(('127.0.0.1', 0), h.SimpleHTTPRequestHandler)\n\
             print('ready', s.server_address[1], flush=True)\n\
             s.serve_forever()",
        )
        .stderr(std::fs::File::create(&log).unwrap());
    let p = Planted::serve(python);
    let url = format!("http://127.0.0.1:{}/no-such-page", p.port);
    let load = ["http", "-d", "60s", "-c", "4", &url];
    let out = start_run(
        &dir.path().join("r.db"),
        "missing",
        &p.pid().to_string(),
        "2",
        &load,
    )
    .wait_with_output()
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}");
    let v = shown(&dir.path().join("r.db"), "missing");
    let served = std::fs::read_to_string(&log).unwrap();
    let statuses: Vec<&str> = served
        .lines()
        .filter_map(|l| l.split("HTTP/1.1\" ").nth(1)?.split(' ').next())
        .collect();
    println!(
        "{text}\nthe server's log: {} requests, {} answered 404",
        statuses.len(),
        statuses.iter().filter(|s| **s == "404").count()
    );
    assert!(
        !statuses.is_empty() && statuses.iter().all(|s| *s == "404"),
        "{served}"
    );
    let found = findings(&v);
    let first = &found[0];
    assert_eq!(first.0, "errors", "{text}");
    assert!(
        first.1.starts_with("100% of the reqs failed")
            && first.1.contains("client error (404)")
            && first.1.contains("Not Found"),
        "{text}"
    );
}

/// A private mosquitto with `config`'s lines, its pid and port; `None` (the test skipped)
/// where it does not start.
fn mosquitto_with(config: &[&str]) -> Option<(kiln_testkit::Mosquitto, String, String)> {
    let Ok(b) = kiln_testkit::Mosquitto::start_with(&kiln_testkit::MosquittoOptions {
        extra_config: config.iter().map(|l| l.to_string()).collect(),
        ..Default::default()
    }) else {
        kiln_testkit::skip("mosquitto does not start here (Debian package mosquitto)");
        return None;
    };
    let pid = b.pid().expect("the broker's pid").to_string();
    let port = b.port().to_string();
    Some((b, pid, port))
}

/// A broker that takes 40 connections (mosquitto's max_connections) and a fleet of 80:
/// kiln says the broker refused half the fleet, with the reasons the load counted, and
/// not that the fleet was still connecting. The broker's own account: the connections
/// established to its port as the kernel lists them (`/proc/net/tcp`).
#[test]
fn a_broker_that_refuses_part_of_a_fleet_is_said_to() {
    let Some((b, pid, port)) = mosquitto_with(&["max_connections 40"]) else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("r.db");
    let load = [
        "mqtt",
        "conn",
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "-c",
        "80",
        "-i",
        "5",
        "-z",
        "60",
    ];
    let mut child = start_run(&store, "fleet", &pid, "2", &load);
    let mut stderr = Lines::follow(child.stderr.take().unwrap());
    // The broker's connections while kiln measures (its own count: the sockets the
    // kernel holds established on its port).
    stderr
        .wait_for(Duration::from_secs(120), |l| l.starts_with("measuring"))
        .expect("kiln measures");
    // (The fewest over half a second: a connection the broker refused stays established
    // until it has read its CONNECT and closed it, later on a busy machine.)
    let hex = format!(":{:04X} ", b.port());
    let established = (0..5)
        .map(|i| {
            if i > 0 {
                std::thread::sleep(Duration::from_millis(100));
            }
            std::fs::read_to_string("/proc/net/tcp")
                .unwrap()
                .lines()
                .filter(|l| {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    w.len() > 3 && w[1].ends_with(hex.trim_end()) && w[3] == "01"
                })
                .count()
        })
        .min()
        .unwrap_or(0);
    let text = Lines::follow(child.stdout.take().unwrap()).all();
    let err = stderr.all();
    assert!(child.wait().unwrap().success(), "{text}\n{err}");
    println!("{text}\n{err}\nthe broker's port: {established} connections established");
    let v = shown(&store, "fleet");
    let found = findings(&v);
    // (40 or 41: the broker counts its limit its own way; kiln's count is held to the
    // kernel's.)
    assert!((40..=41).contains(&established), "{text}");
    let first = &found[0];
    assert_eq!(first.0, "errors", "{text}");
    let said = format!(
        "{} of the 80 connections asked for failed, and the fleet held {established}",
        80 - established
    );
    assert!(
        first.1.starts_with(&said) && first.1.contains("max_connections"),
        "{said:?} not said:\n{text}"
    );
    assert!(!text.contains("still connecting"), "{text}");
}

/// A broker's one thread saturated by fan-out: mosquitto (one thread) asked for 400,000
/// deliveries a second (20 publishers at 1,000 msg/s, 20 subscribers to all of them). Its
/// thread is the limit and kiln says so first; the deliveries it had not made when the
/// load stopped are counted as deliveries owed (each message to 20 subscribers), and said
/// to be behind, not dropped, when they came after the last each subscriber received. The
/// kernel's account: the broker's threads (/proc/PID/task) and its thread's CPU time
/// (schedstat) over the measurement.
#[test]
fn a_broker_saturated_by_fan_out_is_its_one_thread() {
    let Some((_broker, pid, port)) = mosquitto_with(&[]) else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("r.db");
    let load = [
        "mqtt",
        "pubsub",
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "-c",
        "20",
        "--subscribers",
        "20",
        "-I",
        "1",
        "-q",
        "0",
        "-t",
        "fan/%i",
        "--sub-topic",
        "fan/#",
    ];
    let oncpu_ns = || -> u64 {
        std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let mut child = start_run(&store, "fan", &pid, "4", &load);
    let mut out = child.stdout.take().unwrap();
    let mut err = Lines::follow(child.stderr.take().unwrap());
    // The measurement's seconds, as kiln says them on its progress lines.
    let _ = err.wait_for(Duration::from_secs(60), |l| l.starts_with("measuring"));
    let (t0, c0) = (std::time::Instant::now(), oncpu_ns());
    let _ = err.wait_for(Duration::from_secs(60), |l| l.starts_with("finishing"));
    let busy = (oncpu_ns() - c0) as f64 / 1e9 / t0.elapsed().as_secs_f64();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut out, &mut text).unwrap();
    assert!(child.wait().unwrap().success(), "{text}");
    let threads = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .count();
    println!(
        "{text}
kernel: the broker's {threads} thread(s) on a CPU {busy:.2} of the measurement"
    );
    let v = shown(&store, "fan");
    let found = findings(&v);
    if busy < 0.85 {
        eprintln!("the broker's thread was busy {busy:.2} here: no finding required");
        return;
    }
    let first = &found[0];
    assert_eq!(first.0, "one-thread-saturated", "{text}");
    // "thread ran N% of a CPU", or on a busy machine "thread was busy M% of the time (on
    // a CPU N%, waiting for one …)": N against the kernel's.
    assert!(
        first.1.contains("'mosquitto' thread ran")
            || first.1.contains("'mosquitto' thread was busy"),
        "{text}"
    );
    let marker = if first.1.contains(" thread ran ") {
        " thread ran "
    } else {
        "(on a CPU "
    };
    let said = first
        .1
        .split(marker)
        .nth(1)
        .and_then(|r| r.split('%').next())
        .and_then(|x| x.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no CPU share in {}", first.1))
        / 100.0;
    assert!(
        (said - busy).abs() <= 0.15,
        "kiln: the thread ran {said:.2}; the kernel: {busy:.2}\n{text}"
    );
    if let Some(lost) = found.iter().find(|f| f.0 == "messages-lost") {
        assert!(
            lost.1.contains("deliveries owed") && lost.1.contains("each to 20 subscribers"),
            "{text}"
        );
    }
}

/// A broker that keeps five messages for a subscriber (mosquitto's max_queued_messages,
/// one in flight) under ten publishers at QoS 1 into one subscriber: it drops the rest,
/// and kiln says the messages were lost, not that they queued. The broker's own account:
/// its $SYS counts of the PUBLISH packets it received and sent over its life (this load's
/// alone), the difference the ones it dropped.
#[test]
fn a_broker_that_drops_a_subscribers_messages_is_said_to_lose_them() {
    let config = [
        "max_queued_messages 5",
        "max_inflight_messages 1",
        "sys_interval 1",
    ];
    let Some((_broker, pid, port)) = mosquitto_with(&config) else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("r.db");
    let load = [
        "mqtt",
        "pubsub",
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "-c",
        "10",
        "-I",
        "1",
        "-q",
        "1",
        "-t",
        "prices/1",
    ];
    let mut child = start_run(&store, "drops", &pid, "3", &load);
    let text = Lines::follow(child.stdout.take().unwrap()).all();
    let err = Lines::follow(child.stderr.take().unwrap()).all();
    assert!(child.wait().unwrap().success(), "{text}\n{err}");
    // The broker's counts, published each second under $SYS: the last of each.
    let sys = Command::new("mosquitto_sub")
        .args([
            "-p",
            &port,
            "-t",
            "$SYS/broker/publish/messages/+",
            "-v",
            "-W",
            "3",
        ])
        .output()
        .expect("mosquitto_sub runs");
    let sys = String::from_utf8_lossy(&sys.stdout).into_owned();
    let last = |k: &str| {
        sys.lines()
            .filter_map(|l| l.strip_prefix(&format!("$SYS/broker/publish/messages/{k} ")))
            .filter_map(|v| v.trim().parse::<f64>().ok())
            .next_back()
    };
    let (Some(into), Some(out)) = (last("received"), last("sent")) else {
        panic!("no $SYS counts:\n{sys}");
    };
    println!(
        "{text}\nthe broker's $SYS: {into} PUBLISH received, {out} sent: {} dropped",
        into - out
    );
    let v = shown(&store, "drops");
    let found = findings(&v);
    let first = &found[0];
    assert_eq!(first.0, "messages-lost", "{text}");
    assert!(!found.iter().any(|f| f.0 == "queue-growing"), "{text}");
    // "40,227 of the 110,079 msgs published at QoS 1 never reached a subscriber"
    let lost: f64 = first
        .1
        .split(' ')
        .next()
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap();
    let dropped = into - out;
    assert!(
        dropped > 0.0 && (lost - dropped).abs() <= 0.1 * dropped,
        "kiln: {lost} lost; the broker: {dropped} dropped\n{text}"
    );
}

/// A server allowed 40 open files (`prlimit --nofile`) under 64 connections: accept()
/// fails at the limit, and kiln says the limit first. The kernel's account: the target's
/// `/proc/PID/fd` and `/proc/PID/limits`, read while kiln measures.
#[test]
fn a_server_at_its_open_files_limit_is_said_to_be() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut server = Command::new("prlimit");
    server.args(["--nofile=40:40", "python3", "-c"]).arg(
        "import http.server as h\n\
         class H(h.BaseHTTPRequestHandler):\n\
         \x20   protocol_version = 'HTTP/1.1'\n\
         \x20   def do_GET(self):\n\
         \x20       self.send_response(200)\n\
         \x20       self.send_header('Content-Length', '2')\n\
         \x20       self.end_headers()\n\
         \x20       self.wfile.write(b'ok')\n\
         \x20   def log_message(self, *a):\n\
         \x20       pass\n\
         s = h.ThreadingHTTPServer(('127.0.0.1', 0), H)\n\
         print('ready', s.server_address[1], flush=True)\n\
         s.serve_forever()",
    );
    let p = Planted::serve(server);
    let url = format!("http://127.0.0.1:{}/", p.port);
    let load = ["http", "-d", "60s", "-c", "64", &url];
    let mut child = start_run(
        &dir.path().join("r.db"),
        "fds",
        &p.pid().to_string(),
        "3",
        &load,
    );
    let mut stderr = Lines::follow(child.stderr.take().unwrap());
    stderr
        .wait_for(Duration::from_secs(120), |l| l.starts_with("measuring"))
        .expect("kiln measures");
    // The most files it held while kiln measured, read every 50 ms.
    let mut open = 0;
    while stderr
        .wait_for(Duration::from_millis(50), |l| l.starts_with("finishing"))
        .is_none()
        && child.try_wait().unwrap().is_none()
    {
        let now = std::fs::read_dir(format!("/proc/{}/fd", p.pid())).map_or(0, |d| d.count());
        open = open.max(now);
    }
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", p.pid())).unwrap();
    let text = Lines::follow(child.stdout.take().unwrap()).all();
    let err = stderr.all();
    assert!(child.wait().unwrap().success(), "{text}\n{err}");
    println!("{text}\nthe kernel: {open} files open; {limits}");
    assert!(limits
        .lines()
        .any(|l| l.starts_with("Max open files") && l.contains(" 40 ")));
    assert!(
        open >= 38,
        "the server was not at its limit here: {open} open"
    );
    let v = shown(&dir.path().join("r.db"), "fds");
    let found = findings(&v);
    let first = &found[0];
    assert_eq!(first.0, "open-files-limit", "{text}");
    let said: usize = first
        .1
        .split(" files open, the limit 40")
        .next()
        .and_then(|s| s.rsplit('(').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count said:\n{text}"));
    assert!(
        said.abs_diff(open) <= 2,
        "kiln: {said} open; the kernel: {open}\n{text}"
    );
}

/// `psql` on the test's PostgreSQL: one statement's rows, fields split on `|`.
fn psql(port: u16, sql: &str) -> Vec<Vec<String>> {
    let out = Command::new("psql")
        .args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-h",
            "127.0.0.1",
            "-U",
            "kiln",
            "-d",
            "postgres",
        ])
        .args(["-p", &port.to_string(), "-c", sql])
        .stdin(Stdio::null())
        .output()
        .expect("psql runs");
    assert!(
        out.status.success(),
        "psql -c {sql:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split('|').map(str::to_string).collect())
        .collect()
}

/// A run of `kiln run -e cpu,offcpu,runnable` on a fresh PostgreSQL set up with `setup`
/// (statements, one at a time),
/// its load pgbench's `clients` running `script` over and over (`connect_each`: a new
/// connection for each transaction, pgbench's `-C`); with PostgreSQL's own
/// account over the measured seconds: the client backends' wait events
/// (`wait_event_type:wait_event`, `-:-` for none) every 100 ms, and the sessions it
/// counted over the run.
struct Pgbench {
    text: String,
    found: Vec<(String, String, f64)>,
    waits: Vec<String>,
    run: serde_json::Value,
    sessions: f64,
    /// The CPU of the backends the postmaster reaped over the run (its cutime + cstime),
    /// CPUs: the kernel's account of what the ended backends used.
    reaped_cpus: f64,
}

impl Pgbench {
    /// `None` (the test skipped, saying so) where PostgreSQL is not installed.
    fn run(
        name: &str,
        durable: bool,
        setup: &[&str],
        script: &str,
        clients: u32,
    ) -> Option<Pgbench> {
        Self::run_with(name, durable, setup, script, clients, false)
    }

    fn run_with(
        name: &str,
        durable: bool,
        setup: &[&str],
        script: &str,
        clients: u32,
        connect_each: bool,
    ) -> Option<Pgbench> {
        if !kiln_testkit::have_postgres() {
            return None;
        }
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let pg = if durable {
            kiln_testkit::Postgres::start_durable()
        } else {
            kiln_testkit::Postgres::start()
        }
        .unwrap();
        let port = pg.port();
        for sql in setup {
            psql(port, sql);
        }
        let file = dir.path().join("script.sql");
        std::fs::write(&file, script).unwrap();
        let store = dir.path().join("r.db");
        // The server's own count of what pgbench did: its committed transactions.
        let commits = || -> f64 {
            psql(
                port,
                "select xact_commit from pg_stat_database where datname = 'postgres'",
            )[0][0]
                .parse()
                .unwrap()
        };
        let sessions = || -> f64 {
            psql(
                port,
                "select sessions from pg_stat_database where datname = 'postgres'",
            )[0][0]
                .parse()
                .unwrap()
        };
        let postmaster = pg.pid().unwrap();
        let reaped = || -> f64 {
            let stat = std::fs::read_to_string(format!("/proc/{postmaster}/stat")).unwrap();
            let f: Vec<&str> = stat
                .rsplit_once(')')
                .unwrap()
                .1
                .split_whitespace()
                .collect();
            // cutime and cstime: fields 16 and 17, the 14th and 15th after the comm.
            let ticks: f64 = f[13].parse::<f64>().unwrap() + f[14].parse::<f64>().unwrap();
            ticks / 100.0
        };
        let (commits_before, sessions_before, reaped_before) = (commits(), sessions(), reaped());
        let started = Instant::now();
        let mut child = kiln_testkit::kiln_process()
            .env("KILN_STORE", &store)
            .args(["run", "--name", name, "-e", "cpu,offcpu,runnable"])
            .args(["-d", "4", "--warmup", "2", "--no-report"])
            .args(["-p", &pg.pid().unwrap().to_string(), "exec", "--"])
            .args(["pgbench", "-h", "127.0.0.1", "-U", "kiln", "-n", "-j", "2"])
            .args(["-c", &clients.to_string(), "-p", &port.to_string()])
            .args(if connect_each { &["-C"][..] } else { &[][..] })
            .args(["-P", "1", "-T", "120", "-f"])
            .arg(&file)
            .arg("postgres")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = Lines::follow(child.stdout.take().unwrap());
        let mut stderr = Lines::follow(child.stderr.take().unwrap());
        let mut waits = Vec::new();
        if stderr
            .wait_for(Duration::from_secs(300), |l| l.starts_with("measuring"))
            .is_some()
        {
            while stderr
                .wait_for(Duration::from_millis(100), |l| l.starts_with("finishing"))
                .is_none()
            {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                waits.extend(psql(
                    port,
                    "select coalesce(wait_event_type, '-') || ':' || coalesce(wait_event, '-') from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid()",
                ).into_iter().map(|r| r[0].clone()));
            }
        }
        let status = child.wait().unwrap();
        let reaped_cpus = (reaped() - reaped_before) / started.elapsed().as_secs_f64();
        let (text, err) = (stdout.all(), stderr.all());
        assert!(status.success(), "kiln run failed:\n{text}\n{err}");
        assert!(
            !waits.is_empty(),
            "pg_stat_activity saw no client:\n{err}\n{text}"
        );
        assert!(
            connect_each
                || text.contains(&format!(
                    "forked {clients} processes running its own program"
                )),
            "kiln did not say it followed the backends:\n{err}\n{text}"
        );
        let run = shown(&store, name);
        // Stopped by kiln before its summary, pgbench's progress lines give the rate; the
        // transactions they count are the ones PostgreSQL committed (less the part-second
        // after the last line, and the statements psql ran here).
        // A backend reports its counts as it exits: once pgbench's are gone.
        let deadline = Instant::now() + Duration::from_secs(20);
        while psql(port, "select count(*) from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid()")[0][0] != "0"
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(100));
        }
        // A backend's start commits a transaction of its own: with a connection for each,
        // PostgreSQL's count of them is its sessions'.
        let did = if connect_each {
            sessions() - sessions_before
        } else {
            commits() - commits_before
        };
        let sessions = sessions() - sessions_before;
        let parsed = &run["load"]["report"]["parsed"];
        let counted = parsed["requests"].as_f64().unwrap_or(0.0);
        println!("pgbench counted {counted} transactions; PostgreSQL committed {did}");
        assert!(
            parsed["tool"] == "pgbench"
                && run["load"]["unit"] == "tx"
                && run["headline"]["throughput"].as_f64().is_some()
                && counted <= did * 1.02 + 10.0
                && counted >= did * 0.6,
            "pgbench's figures {parsed} against {did} commits PostgreSQL counted:\n{text}"
        );
        let found = findings(&run);
        assert!(
            !found.iter().any(|f| f.0 == "child-processes"),
            "the backends were said to be programs the server ran:\n{text}"
        );
        Some(Pgbench {
            text,
            found,
            waits,
            run,
            sessions,
            reaped_cpus,
        })
    }

    /// The share of the backends' samples (%) whose wait event `pred` holds for.
    fn share(&self, pred: impl Fn(&str) -> bool) -> f64 {
        let n = self.waits.iter().filter(|w| pred(w)).count();
        100.0 * n as f64 / self.waits.len() as f64
    }
}

/// A connection for every transaction: 8 pgbench clients connect anew for each (`-C`), one
/// primary-key lookup a connection. PostgreSQL forks a backend per connection, which
/// starts, authenticates, loads its caches and exits: kiln must say the server started a
/// copy of itself per connection first (before the CPU or the network it shows up as),
/// at the pace PostgreSQL's own count of its sessions gives, and with what the ended
/// backends used as the kernel counted it for the postmaster (its cutime + cstime).
#[test]
fn a_database_whose_clients_connect_for_every_transaction_is_said_to_fork_a_backend_for_each() {
    let Some(r) = Pgbench::run_with(
        "connect",
        false,
        &["create table orders(id int primary key, total int); insert into orders select g, g % 97 from generate_series(1, 10000) g"],
        "\\set id random(1, 10000)\nSELECT total FROM orders WHERE id = :id;\n",
        8,
        true,
    ) else {
        return;
    };
    let tps = r.run["headline"]["throughput"].as_f64().unwrap();
    println!(
        "{}\nPostgreSQL: {} sessions over the run, pgbench {tps:.0} tx/s; the postmaster reaped {:.2} CPUs of backends",
        r.text, r.sessions, r.reaped_cpus
    );
    let first = r.found.iter().find(|f| f.0 != "cpu-starvation").unwrap();
    assert_eq!(first.0, "connection-churn", "{}", r.text);
    assert!(first.1.contains("copy of itself"), "{}", first.1);
    // Its pace (the new processes that ran a sample, a lower bound) against pgbench's
    // transactions a second, each on its own connection, as PostgreSQL's sessions say.
    let pace: f64 = first
        .1
        .split(" a second, at least")
        .next()
        .and_then(|x| x.rsplit('(').next())
        .and_then(|x| x.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pace in {}", first.1));
    assert!(
        pace >= 0.5 * tps && pace <= 1.15 * tps,
        "kiln: {pace} new processes a second; pgbench: {tps:.0} tx/s\n{}",
        r.text
    );
    // What the ended backends used, against the kernel's count for the postmaster over
    // the whole run (warm-up and its end included: loosely).
    let used: f64 = first
        .1
        .split("under a second old used ")
        .nth(1)
        .and_then(|x| x.split(' ').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no CPU in {}", first.1));
    assert!(
        used >= 0.5 * r.reaped_cpus && used <= 2.0 * r.reaped_cpus,
        "kiln: the ended backends used {used} CPUs; the kernel: {:.2}\n{}",
        r.reaped_cpus,
        r.text
    );
}

/// PostgreSQL's clients queued behind one row's lock: 16 pgbench clients each update row
/// 1 and sleep 2 ms before committing, so that the row stays locked while its holder
/// sleeps. The backends are forked when pgbench connects, while kiln loads its programs
/// (kiln follows them), and their wait is a latch's epoll in the kernel: kiln must say a
/// lock at PostgreSQL's row-lock wait, not the network, nor programs the server ran (a
/// backend is the server forked, not a program), with the share PostgreSQL's own
/// pg_stat_activity gives over the same seconds.
#[test]
fn a_database_whose_clients_queue_for_a_row_lock_is_said_to() {
    let Some(r) = Pgbench::run(
        "rowlock",
        false,
        &["create table hot(id int primary key, n bigint); insert into hot values (1, 0), (2, 0)"],
        "BEGIN;\nUPDATE hot SET n = n + 1 WHERE id = 1;\nSELECT pg_sleep(0.002);\nCOMMIT;\n",
        16,
    ) else {
        return;
    };
    let by_pg = r.share(|w| w.starts_with("Lock:"));
    println!(
        "{}\npg_stat_activity: {by_pg:.0}% of the client backends' samples waiting for a Lock",
        r.text
    );
    // On a busy machine CPU starvation may come first (its share is others'); the lock
    // must come before any other.
    let first = r.found.iter().find(|f| f.0 != "cpu-starvation").unwrap();
    assert_eq!(first.0, "lock-contention", "{}", r.text);
    assert!(
        first.1.contains("XactLockTableWait") || first.1.contains("LockTuple"),
        "the lock not named at PostgreSQL's row-lock wait: {}",
        first.1
    );
    // The share of the server's working time (PostgreSQL's background processes, idle,
    // left out), against PostgreSQL's share of its 16 backends' samples; on a busy
    // machine a backend waiting for a CPU is 'active' to PostgreSQL, and runnable to kiln
    // (starved, the two part further).
    let within = if named(&r.found, "cpu-starvation").is_some() {
        35.0
    } else {
        25.0
    };
    assert!(
        (first.2 - by_pg).abs() <= within,
        "kiln: a lock {:.0}% of the server's working time; pg_stat_activity: {by_pg:.0}% of the backends'\n{}",
        first.2,
        r.text
    );
}

/// Every commit waits for the WAL to reach the disk: 8 pgbench clients each insert one row
/// per transaction (PostgreSQL's defaults: fsync and synchronous_commit on). A backend
/// waits in its own fdatasync, or for the WAL's lock while another syncs it (group
/// commit): kiln must say the disk, at XLogFlush, not a lock, with the share
/// pg_stat_activity gives (WALWrite, WALSync) over the same seconds.
#[test]
fn a_database_whose_commits_wait_for_the_wal_to_reach_the_disk_is_said_to() {
    let Some(r) = Pgbench::run(
        "walsync",
        true,
        &["create table journal(id bigserial primary key, entry text)"],
        "INSERT INTO journal(entry) VALUES (repeat('x', 50));\n",
        8,
    ) else {
        return;
    };
    let by_pg = r.share(|w| w == "LWLock:WALWrite" || w == "IO:WALSync");
    println!("{}\npg_stat_activity: {by_pg:.0}% of the client backends' samples waiting for the WAL's lock or its sync", r.text);
    let disk = named(&r.found, "disk-io").unwrap_or_else(|| panic!("no disk finding:\n{}", r.text));
    assert!(
        disk.1.contains("XLogFlush"),
        "the wait not named at XLogFlush: {}",
        disk.1
    );
    assert!(
        r.found
            .iter()
            .position(|f| f.0 == "lock-contention")
            .is_none_or(|l| r.found.iter().position(|f| f.0 == "disk-io") < Some(l)),
        "the WAL's lock said before the disk it waits for:\n{}",
        r.text
    );
    // On a busy machine CPU starvation may come first (PostgreSQL counts a backend
    // waiting for a CPU as active with no wait); the disk must come before any other.
    let first = r.found.iter().find(|f| f.0 != "cpu-starvation").unwrap();
    assert_eq!(first.0, "disk-io", "{}", r.text);
    assert!(
        (disk.2 - by_pg).abs() <= 25.0,
        "kiln: the disk {:.0}% of the server's working time; pg_stat_activity: {by_pg:.0}% of the backends'\n{}",
        disk.2,
        r.text
    );
}
