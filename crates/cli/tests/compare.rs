//! `kiln compare` as a CI gate, and the knee of a sweep, on real servers: the testkit's
//! RabbitMQ (one private vhost per test, so that the firehose tracer traces nothing of
//! the other tests) and the Go example query server.
use kiln_testkit::json;
use kiln_testkit::row;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

/// The tests take turns: a sweep flooding the shared broker, or a Go server loading the
/// CPUs, is noise no gate should have to see.
static BROKER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn broker_turn() -> std::sync::MutexGuard<'static, ()> {
    BROKER.lock().unwrap_or_else(|p| p.into_inner())
}

use kiln_testkit::kiln_in as kiln;

/// A vhost of its own on the shared broker, with guest's permissions.
fn vhost(broker: &kiln_testkit::RabbitMq, name: &str) -> String {
    for args in [
        vec!["add_vhost", name],
        vec!["set_permissions", "-p", name, "guest", ".*", ".*", ".*"],
    ] {
        let out = broker.ctl(&args).expect("rabbitmqctl runs");
        assert!(out.status.success(), "rabbitmqctl {args:?}: {out:?}");
    }
    format!("{}/{name}", broker.uri())
}

/// Runs `kiln run` for `name`, `repeat` times, at a fixed rate against `uri`; returns its
/// standard output.
fn runs(store: &Path, beam: &str, uri: &str, name: &str, repeat: u32, rate: &str) -> String {
    let out = kiln(store)
        .args(["run", "--name", name, "--repeat", &repeat.to_string()])
        .args(["--tag", &format!("tracing={}", name == "firehose")])
        .args(["-d", "2", "--warmup", "1", "--no-report", "-p", beam])
        .args(["load", "amqp", "-h", uri, "-x", "1", "-y", "1", "-r", rate])
        .args(["--queue", "kiln-cmp"])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    kiln_testkit::succeeded(&out)
}

/// The ids of the runs of `name`, oldest first.
fn ids(store: &Path, name: &str) -> Vec<String> {
    let out = kiln(store).args(["runs", "--json"]).output().unwrap();
    let mut v: Vec<i64> = json(&out.stdout)
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["name"] == name)
        .filter_map(|r| r["id"].as_i64())
        .collect();
    v.sort();
    v.iter().map(|i| i.to_string()).collect()
}

/// Stops the firehose's consumer when the test ends, however it ends.
struct Tracer(Child);

impl Drop for Tracer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The gate on real RabbitMQ: groups of the same configuration never fire it; the
/// firehose tracer (`rabbitmqctl trace_on` with a consumer of amq.rabbitmq.trace, a real
/// server-side cost per message) fires it once each side has repeats enough, and is
/// "cannot tell" with one run each; a fixed rate the broker held is a setting, one it
/// could not hold is reported as not held.
#[test]
fn the_gate_fires_on_the_firehose_and_never_on_noise() {
    let _turn = broker_turn();
    let broker = kiln_testkit::shared_rabbitmq().expect("rabbitmq-server installed");
    let beam = broker.beam_pid().expect("broker pid").to_string();
    let vh = format!("kiln-cmp-{}", std::process::id());
    let uri = vhost(broker, &vh);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    // The baseline before and after an A/A group: its earlier group is the noise floor
    // between groups (the machine drifts from one group of runs to the next by more than
    // the runs of a group differ), and spans the A/A group's time.
    runs(&store, &beam, &uri, "base", 4, "2000");
    runs(&store, &beam, &uri, "again", 4, "2000");
    // Five against five: one stray run (a stall on this shared machine) still leaves
    // p = 0.016, where four against four would be 0.057.
    let text = runs(&store, &beam, &uri, "base", 5, "2000");
    assert!(text.contains("(rate set 2000/s: held)"), "{text}");
    // The change: every message published and delivered is copied to amq.rabbitmq.trace,
    // where a consumer takes the copies. A server-side change the runs' configuration
    // cannot show: tagged, so that the firehose's runs are not the baseline's history.
    let on = broker.ctl(&["trace_on", "-p", &vh]).unwrap();
    assert!(on.status.success(), "{on:?}");
    let tracer = Tracer(
        kiln_testkit::kiln_process()
            .args(["load", "amqp", "-h", &uri, "-x", "0", "-y", "1"])
            .args([
                "-e",
                "amq.rabbitmq.trace",
                "-t",
                "topic",
                "-k",
                "#",
                "-z",
                "300",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // The tracer takes the copies once the broker lists its consumer.
    let consuming = kiln_testkit::poll_until(Duration::from_secs(60), || {
        broker
            .ctl(&["list_consumers", "-p", &vh, "-q", "--no-table-headers"])
            .is_ok_and(|o| !String::from_utf8_lossy(&o.stdout).trim().is_empty())
    });
    assert!(consuming.is_some(), "the tracer never consumed");
    runs(&store, &beam, &uri, "firehose", 5, "2000");
    drop(tracer);
    let off = broker.ctl(&["trace_off", "-p", &vh]).unwrap();
    assert!(off.status.success(), "{off:?}");
    // A rate the broker cannot reach: 1 M msg/s from one producer.
    let text = runs(&store, &beam, &uri, "flood", 1, "1000000");
    assert!(text.contains("not held (\u{2212}"), "{text}");

    let gate = "cpu_per_msg>+10%";
    // A/A: the same configuration. Noise within the groups never fires the gate. What can
    // fire it is the machine changing between groups, which run one after the other: CI
    // once saw the whole A/A group at +21.7% CPU per message (p = 0.016, every run past
    // the limit) on this shared machine. So when it fires, the change is significant and
    // past the limit, never a change within noise as it once was (p = 0.69).
    let out = kiln(&store)
        .args([
            "compare",
            "base",
            "again",
            "--format",
            "json",
            "--fail-if",
            gate,
        ])
        .output()
        .unwrap();
    let aa = json(&out.stdout);
    if out.status.code() == Some(3) {
        let change = &row(&aa, "cpu_per_op")["changes"][1];
        assert!(
            change["p"].as_f64().unwrap() <= 0.05
                && change["percent"].as_f64().unwrap() > 10.0
                && change["verdict"] == "regressed",
            "{change:#}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let thr = row(&aa, "throughput");
    assert_eq!(thr["role"], "setting", "a held rate is a setting: {thr:#}");
    assert!(
        thr["held"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["held"] == true),
        "{thr:#}"
    );
    assert_eq!(row(&aa, "kiln_cpu")["role"], "context");
    // (The A/A verdict on one figure is not asserted: at alpha 0.05 it is wrong one run in
    // twenty by design, and groups run one after the other drift on a shared machine —
    // once +14.5% CPU per message, p = 0.032. What must hold whatever the noise is the
    // gate above: it fires only when the runs are surely past its limit.)
    assert!(
        aa["notes"].to_string().contains("A/A check"),
        "{}",
        aa["notes"]
    );
    // A/B with one run each: the change is there, but it cannot be told from noise. (Any
    // change is past one of these two limits: on a busy machine one run of each showed the
    // firehose at only +4.5% CPU per message, under the +10% gate's limit, and on a
    // saturated one (100% busy, the rate not held) at -0.9%, which passes a limit on rises.)
    let (b, f) = (ids(&store, "base"), ids(&store, "firehose"));
    let out = kiln(&store)
        .args([
            "compare",
            &b[0],
            &f[0],
            "--fail-if",
            "cpu_per_msg>+0%,cpu_per_msg<-0%",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{text}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot tell"),
        "{out:?}"
    );
    assert!(
        text.lines().next().unwrap().contains("cannot tell"),
        "{text}"
    );
    // A/B with five runs each: beyond noise, past the limit — the gate fires.
    let out = kiln(&store)
        .args(["compare", "base", "firehose", "--fail-if", gate])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // With the machine saturated while the firehose ran (other tests, a build beside), its
    // runs spread (once 150 to 247 µs of CPU per message) and the gate may only say it
    // cannot tell — which kiln must then say of that figure, not fire nor pass.
    let first = text.lines().next().unwrap();
    // Or the firehose's runs did not hold their rate (the broker starved by other work:
    // throughput 40 to 2,068 msg/s of 2,000): their CPU per message is no measure either.
    let rate_not_held = text
        .lines()
        .find(|l| l.starts_with("throughput"))
        .is_some_and(|l| l.contains("not held"));
    if out.status.code() == Some(4) && (busy_median(&text, 1) >= 95.0 || rate_not_held) {
        assert!(
            stderr.contains("fail-if: cpu_per_msg>+10%: cannot tell") && first.contains("worse: "),
            "{text}\n{stderr}"
        );
        eprintln!("the machine was saturated: the gate could not tell\n{text}");
    } else {
        assert_eq!(out.status.code(), Some(3), "{text}\n{stderr}");
        assert!(
            first.starts_with("firehose against base: ")
                && first.split("; ").next().unwrap().contains("worse: ")
                && first.contains("target CPU per msg +"),
            "{first}"
        );
        assert!(
            stderr.contains("fail-if: cpu_per_msg>+10%: FIRED"),
            "{stderr}"
        );
    }
    // The functions say where: the tracer's own, new in the candidate, beyond noise.
    let ab = json(
        &kiln(&store)
            .args(["compare", "base", "firehose", "--format", "json"])
            .output()
            .unwrap()
            .stdout,
    );
    let fns = ab["functions"][0]["rows"].as_array().unwrap();
    // Functions beyond noise, among every function (what the differential flame graph
    // colours); the shared broker writes the JIT's perf map (+JPperf map), so the
    // firehose's own Erlang code is named among them.
    let marked = ab["functions"][0]["beyond_noise"].as_array().unwrap();
    assert!(!marked.is_empty(), "{:#}", ab["functions"][0]);
    assert!(
        fns.iter().any(|f| f["name"]
            .as_str()
            .unwrap_or("")
            .starts_with("$rabbit_trace:")),
        "the firehose's code in the table: {fns:#?}"
    );
    assert!(
        fns.iter().all(|f| {
            let n = f["name"].as_str().unwrap_or("");
            !n.ends_with("_scheduler") && n != "start_thread" && n != "__clone3"
        }),
        "thread names and plumbing folded: {fns:#?}"
    );
    // The rate the broker could not hold.
    let fl = json(
        &kiln(&store)
            .args(["compare", "base", "flood", "--format", "json"])
            .output()
            .unwrap()
            .stdout,
    );
    let held = &row(&fl, "throughput")["held"][1];
    assert_eq!(held["held"], false, "{fl:#}");
    assert!(held["shortfall_pct"].as_f64().unwrap() < -50.0, "{held}");
}

/// A rate sweep on RabbitMQ: the sweep that ends before -d is complete, its table and
/// knee are printed, and the windows before and after the knee are compared.
#[test]
fn a_rate_sweep_finds_its_knee_and_what_grew() {
    let _turn = broker_turn();
    let broker = kiln_testkit::shared_rabbitmq().expect("rabbitmq-server installed");
    let beam = broker.beam_pid().expect("broker pid").to_string();
    let uri = vhost(broker, &format!("kiln-sweep-{}", std::process::id()));
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let out = kiln(&store)
        .args([
            "run",
            "--name",
            "sweep",
            "-d",
            "60",
            "--no-report",
            "-p",
            &beam,
        ])
        .args(["load", "amqp", "-h", &uri, "-x", "1", "-y", "1", "-z", "2"])
        .args(["--rate-sweep", "1000,3000,1000000", "--queue", "kiln-sweep"])
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // Three steps of 2 s under a -d of 60 s: the sweep ran every step, so the run is
    // complete.
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("(complete)"), "{text}");
    assert!(text.contains("sweep (rate):"), "{text}");
    for step in ["rate=1000", "rate=3000", "rate=1000000"] {
        assert!(text.contains(step), "{step}: {text}");
    }
    // The last step floods the broker: not held, so the knee is before it.
    assert!(text.contains("not held"), "{text}");
    assert!(
        text.contains("knee at rate=1000:") || text.contains("knee at rate=3000:"),
        "{text}"
    );
    // Why, at the step where it broke (the flood, not the step after the knee): the
    // findings of that step's window — the backlog the flood built (the broker's queue,
    // or messages sent and not received before it), with the wait it means by Little's
    // law.
    // On a machine busy with other work the broker (or the publisher) can fall behind
    // at 3,000/s already: the break is then that step, and it is explained there.
    if text.contains("knee at rate=1000:") && text.contains("at rate=3000 the outcome broke") {
        assert!(text.contains("\n    at rate=3000: "), "{text}");
    } else if text.contains("at rate=1000000: cpu-bound") {
        // On a busy machine the flood's two seconds can build less than a second of
        // backlog (the queue rule's threshold) while the broker fills the CPUs left to it:
        // that step is then the broker's CPU, and the run's own findings hold the backlog
        // the flood built, by Little's law.
        assert!(text.contains("Queue growing: "), "{text}");
        assert!(text.contains("Little's law"), "{text}");
    } else {
        assert!(text.contains("at rate=1000000: queue growing"), "{text}");
        assert!(text.contains("Little's law"), "{text}");
    }
    assert!(
        text.contains(" queue"),
        "the table has the queue's depth: {text}"
    );
}

/// The Go example's concurrency sweep under kiln run: a small cache read under one
/// mutex, so throughput stops growing after a few connections — the knee.
#[test]
fn the_go_examples_concurrency_sweep_has_a_plateau() {
    let _turn = broker_turn();
    let server = kiln_testkit::GoBlockCache::start(4.0, &["-block-kb", "1024", "-data-mb", "256"])
        .expect("go example starts");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let out = kiln(&store)
        .args(["run", "--name", "go", "-d", "60", "--no-report"])
        .args(["-p", &server.pid().to_string()])
        .args([
            "load",
            "http",
            "-t",
            "1",
            "-d",
            "4s",
            // The lock serialises the reads (798, 821, 921/s at 1, 8, 64 connections beside
            // a suite run); the disk's speed moves between steps under other work and gave
            // 733, 711, 981/s once (1.34x): growth of 50% is what a lock does not allow.
            "--plateau-threshold",
            "0.5",
        ])
        .args(["--concurrency-sweep", "1,8,64"])
        .arg(server.url("/query?city={rand:0-255}&days=30"))
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    let text = kiln_testkit::succeeded(&out);
    eprintln!("{text}");
    assert!(text.contains("sweep (connections):"), "{text}");
    assert!(text.contains("◀ knee"), "{text}");
    assert!(
        text.contains("knee at connections=1:") || text.contains("knee at connections=8:"),
        "{text}"
    );
}

/// What `msacc_of` read: kiln's standard output, what rabbitmqctl printed, the schedulers'
/// states (ns) and the seconds they cover (CLOCK_MONOTONIC ns, kiln's clock).
struct Msacc {
    out: String,
    /// What rabbitmqctl printed.
    read: String,
    states: Vec<(String, f64)>,
    span: (u64, u64),
}

/// The BEAM's own microstate accounting of its normal schedulers over `millis` inside the
/// seconds `cmd` (a `kiln run`) measures. One `rabbitmqctl eval`, started with kiln's
/// warm-up (so the CLI's own start and distribution handshake come before the
/// measurement), waits in the broker for a file the test writes when kiln says it
/// measures, then resets the accounting, sleeps `millis` and reads it, noting the OS's
/// monotonic clock (CLOCK_MONOTONIC, kiln's) at both ends, and answers once kiln has
/// ended (the answer and the CLI's goodbye are work). On a busy machine the broker's
/// sleep overshoots: the span it read is what kiln is compared over.
fn msacc_of(broker: &kiln_testkit::RabbitMq, mut cmd: std::process::Command, millis: u64) -> Msacc {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let (go, done) = (dir.path().join("go"), dir.path().join("done"));
    let eval = format!(
        "W = fun Wait(_, 0) -> timeout; Wait(F, N) -> case filelib:is_file(F) of \
             true -> ok; false -> timer:sleep(20), Wait(F, N - 1) end end, \
         Os = fun() -> {{time, T}} = lists:keyfind(time, 1, \
             erlang:system_info(os_monotonic_time_source)), \
             erlang:convert_time_unit(T, native, nanosecond) end, \
         ok = W(\"{}\", 1500), \
         erlang:system_flag(microstate_accounting, reset), \
         erlang:system_flag(microstate_accounting, true), \
         T0 = Os(), \
         timer:sleep({millis}), \
         S = erlang:statistics(microstate_accounting), \
         T1 = Os(), \
         erlang:system_flag(microstate_accounting, false), \
         ok = W(\"{}\", 3000), \
         L = [C || #{{type := scheduler, counters := C}} <- S], \
         M = lists:foldl(fun(C, A) -> maps:fold(fun(K, V, B) -> \
             maps:update_with(K, fun(X) -> X + V end, V, B) end, A, C) end, #{{}}, L), \
         io:format(\"span ~w ~w~n~w~n\", [T0, T1, lists:sort(maps:to_list(M))]).",
        go.display(),
        done.display(),
    );
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let out = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap());
    let mut err = String::new();
    let msacc = std::thread::scope(|scope| {
        let eval = &eval;
        let reading = scope.spawn(move || {
            let o = broker.ctl(&["eval", eval]).unwrap();
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
        });
        let mut told = false;
        for line in std::io::BufReader::new(child.stderr.take().unwrap()).lines() {
            let line = line.unwrap();
            err.push_str(&line);
            err.push('\n');
            // kiln says "measuring … (measured 0 s)" as its measurement begins.
            if !told && line.starts_with("measuring") {
                std::fs::write(&go, b"").unwrap();
                told = true;
            }
        }
        // Only now may the broker answer: its answer and the CLI's goodbye are work.
        std::fs::write(&done, b"").unwrap();
        reading.join().unwrap()
    });
    let status = child.wait().unwrap();
    let out = out.join().unwrap();
    assert!(status.success(), "{status}\n{out}\n{err}");
    assert!(
        !msacc.contains("timeout"),
        "the broker never saw kiln measure: {msacc}\n{err}"
    );
    let span: Vec<u64> = msacc
        .lines()
        .find_map(|l| l.strip_prefix("span "))
        .unwrap_or_else(|| panic!("no span in {msacc}"))
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    let states = msacc
        .split('{')
        .skip(1)
        .filter_map(|p| {
            let (k, v) = p.split_once(',')?;
            let v: f64 = v.split('}').next()?.trim().parse().ok()?;
            Some((k.trim().to_string(), v))
        })
        .collect();
    Msacc {
        out,
        read: msacc,
        states,
        span: (span[0], span[1]),
    }
}

/// kiln's share of the schedulers' awake time spent waiting for a CPU.
fn kiln_waiting(text: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.contains("waiting for a CPU (preempted"))
        .unwrap_or_else(|| panic!("no wait for a CPU: {text}"));
    line.rsplit_once("): ")
        .and_then(|(_, r)| r.split('%').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no share in {line}"))
}

/// The median of "machine busy" in `kiln compare`'s table for group `k` (0: the first).
fn busy_median(text: &str, k: usize) -> f64 {
    let line = text
        .lines()
        .find(|l| l.starts_with("machine busy"))
        .unwrap_or_else(|| panic!("no machine busy row: {text}"));
    line.split('%')
        .filter_map(|p| p.rsplit(' ').next()?.parse::<f64>().ok())
        .nth(k)
        .unwrap_or_else(|| panic!("no median {k} in {line}"))
}

/// How many samples kiln's summary says a profile of the run holds.
fn profile_samples(text: &str, event: &str) -> f64 {
    let key = format!("profile '{event}': ");
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix(key.as_str()))
        .unwrap_or_else(|| panic!("no {event} profile: {text}"));
    line.split(' ')
        .next()
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no sample count in {line}"))
}

/// The 12 heaviest folded stacks of `event` in a stored run's window whose thread names
/// `thread`: what a failed comparison with the runtime's own account prints to be read.
fn heaviest_stacks(store: &std::path::Path, window: &str, event: &str, thread: &str) -> String {
    let out = kiln(store)
        .args([
            "collapse",
            "--event-filter",
            event,
            &format!("run:{window}"),
        ])
        .output()
        .unwrap();
    let mut lines: Vec<(u64, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.split(';').next().is_some_and(|t| t.contains(thread)))
        .filter_map(|l| {
            let (stack, n) = l.rsplit_once(' ')?;
            Some((n.parse().ok()?, stack.to_string()))
        })
        .collect();
    lines.sort_by_key(|x| std::cmp::Reverse(x.0));
    lines
        .iter()
        .take(12)
        .map(|(n, s)| format!("{n} {s}\n"))
        .collect::<String>()
        + &String::from_utf8_lossy(&out.stderr)
}

/// One state's share in kiln's summary line of the BEAM's schedulers.
fn kiln_state(text: &str, state: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.contains("BEAM schedulers by state"))
        .unwrap_or_else(|| panic!("no scheduler states: {text}"));
    let at = line
        .find(&format!("({state}) "))
        .unwrap_or_else(|| panic!("no {state} in {line}"));
    line[at + state.len() + 3..]
        .split('%')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// The MQTT seed on RabbitMQ's MQTT plugin: an idle fleet, the schedulers' states by wall
/// time from a stripped VM's samples, printed beside the VM's own microstate accounting of
/// the same seconds; the busy-wait (`+sbwt medium`) by CPU falls with `+sbwt none`, and
/// `kiln compare` says so.
#[test]
fn the_beam_schedulers_spin_named_and_checked_against_msacc() {
    let _turn = broker_turn();
    let broker = |sbwt: &str| {
        kiln_testkit::RabbitMq::start_with_plugins(
            &kiln_testkit::RabbitMqOptions {
                env_conf: vec![format!("SCHEDULER_BUSY_WAIT_THRESHOLD={sbwt}")],
                ..Default::default()
            },
            &["rabbitmq_mqtt"],
        )
        .expect("rabbitmq-server with its MQTT plugin starts")
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    // `-e cpu,offcpu,runnable`: with the time the schedulers waited for a CPU and were
    // blocked, kiln's shares are of their wall time, as msacc counts it; with `cpu`, of
    // the CPU they used (what the busy-wait costs, which `kiln compare` judges).
    let fleet = |b: &kiln_testkit::RabbitMq,
                 name: &str,
                 repeat: &str,
                 secs: &str,
                 warm: &str,
                 events: &str,
                 hz: &str| {
        let mut c = kiln_testkit::kiln_process();
        c.env("KILN_STORE", &store)
            .args([
                "run", "--name", name, "--repeat", repeat, "-d", secs, "--warmup", warm,
            ])
            .args(["-e", events, "-F", hz])
            .args(["--no-report", "-p", &b.beam_pid().unwrap().to_string()])
            .args(["load", "mqtt", "conn", "-h", "127.0.0.1", "-p"])
            .arg(b.mqtt_port().unwrap().to_string())
            .args(["-V", "4", "-c", "1000", "-i", "0", "-k", "60"])
            // A broker still closing the last repeat's fleet on a busy machine answers late.
            .args(["--connect-timeout", "30"]);
        c
    };
    let medium = broker("medium");
    // The warm-up leaves the fleet time to connect and rabbitmqctl time to start on a busy
    // machine; msacc reads 7 s of kiln's 10 (a busy machine delays the broker's timer).
    // Sampled at 4,999 Hz: an idle broker's schedulers are awake a fifth of a second in
    // these seconds, which at 999 Hz is some 200 CPU samples, too few to resolve 5 points.
    let m = msacc_of(
        &medium,
        fleet(
            &medium,
            "spin",
            "1",
            "10",
            "8",
            "cpu,offcpu,runnable",
            "4999",
        ),
        7000,
    );
    let awake_ns: f64 = m
        .states
        .iter()
        .filter(|(k, _)| k != "sleep")
        .map(|(_, v)| v)
        .sum();
    assert!(awake_ns > 0.0, "msacc read: {}", m.read);
    let share = |state: &str| {
        m.states
            .iter()
            .find(|(k, _)| k == state)
            .map_or(0.0, |(_, v)| v * 100.0 / awake_ns)
    };
    // kiln over the seconds msacc read: the run seen through that window.
    let run = kiln_testkit::show(&store, "spin");
    let (start, end) = (
        run["measure"]["start_ns"].as_u64().unwrap(),
        run["measure"]["end_ns"].as_u64().unwrap(),
    );
    let (t0, t1) = m.span;
    let at = |t: u64| t.clamp(start, end).saturating_sub(start) as f64 / 1e9;
    let window = format!("spin@{:.3}-{:.3}", at(t0), at(t1));
    let out = kiln(&store)
        .args(["runs", "show", &window])
        .output()
        .unwrap();
    let text = &kiln_testkit::succeeded(&out);
    let waiting = kiln_waiting(text);
    let rows: Vec<(&str, f64, f64)> = ["other", "emulator", "gc", "port", "check_io", "aux"]
        .iter()
        .map(|&st| (st, kiln_state(text, st), share(st)))
        .collect();
    eprintln!(
        "kiln's measurement {start}-{end}, msacc's {t0}-{t1} (CLOCK_MONOTONIC ns); state, kiln %, msacc %: {rows:.1?}; the schedulers awake {:.3} s by msacc, waiting for a CPU {waiting:.1}% of it by kiln\n{text}\nthe whole run:\n{}",
        awake_ns / 1e9,
        m.out
    );
    assert!(text.contains("as msacc counts it"), "{text}");
    let sum: f64 = rows.iter().map(|r| r.1).sum();
    assert!(
        (sum - 100.0).abs() < 0.5,
        "shares of the awake time: {sum}\n{text}"
    );
    assert!((0.0..=100.0).contains(&waiting), "{text}");
    // msacc counts wall time in a state; so does kiln here, from the schedulers' CPU
    // samples, their time runnable (preempted, or yielded as they spin) and blocked, each
    // in the state its stack names, over the same seconds. Every state within 5 points —
    // when msacc's seconds lie inside kiln's measurement (a broker whose timer a busy
    // machine delayed past kiln's end counted seconds kiln did not record).
    // kiln's shares rest on its CPU samples in these seconds (time runnable and blocked
    // is exact; the profile's count bounds the schedulers'): the tolerance is 5 points or
    // three of their standard errors, whichever is larger. On a machine busy with other
    // work (the schedulers waiting for a CPU a fifth of their awake time or more) an idle
    // broker's 0.2 s awake come in bursts that share a state, far fewer than the samples:
    // the two accounts have been seen 9 points apart there (the suite's other tests
    // beside this one, 34% of the awake time waiting), and the tolerance is 10 points.
    let samples = profile_samples(text, "cpu-clock");
    let floor = if waiting >= 20.0 { 10.0 } else { 5.0 };
    let tolerance = |v: f64| (3.0 * (v * (100.0 - v) / samples.max(1.0)).sqrt()).max(floor);
    eprintln!("{samples} CPU samples of the broker in these seconds");
    if t0 >= start && t1 <= end {
        for (st, k, v) in &rows {
            if (k - v).abs() > tolerance(*v) {
                panic!(
                    "{st}: kiln {k:.1}%, msacc {v:.1}% of the schedulers' awake time\n{rows:.1?}\n{text}\n{}\nthe schedulers' heaviest runnable stacks in the window:\n{}",
                    m.read,
                    heaviest_stacks(&store, &window, "runnable", "scheduler")
                );
            }
        }
    } else {
        eprintln!("msacc read seconds outside kiln's measurement: not compared");
    }
    // Four runs a side, the fleet released between repeats; the spin falls with none.
    for (b, name) in [(&medium, "sbwt-medium"), (&broker("none"), "sbwt-none")] {
        let out = fleet(b, name, "4", "4", "2", "cpu", "999")
            .output()
            .unwrap();
        kiln_testkit::succeeded(&out);
    }
    let out = kiln(&store)
        .args(["compare", "sbwt-medium", "sbwt-none", "--format", "json"])
        .output()
        .unwrap();
    let cmp = json(&kiln_testkit::succeeded(&out).into_bytes());
    let spin = row(&cmp, "beam_busy_wait");
    let change = &spin["changes"][1];
    // The spin falls by far more than anything else moves it. It is a share of the
    // schedulers' awake time (it shrinks too when they get busier with real work): shown
    // beside the CPU figures it explains, never judged better or worse itself.
    // On a machine busy with other work an idle broker's schedulers are awake a few
    // milliseconds a second, mostly preempted, and four runs a side may not tell the fall
    // from the noise kiln measures between repeats: then kiln must say so (within noise),
    // never that the spin grew.
    let pct = change["percent"].as_f64().unwrap();
    if change["quiet"] == "within_noise" {
        eprintln!("the busy-wait's change {pct:.0}% is within the repeats' noise here");
    } else {
        assert!(pct < -20.0, "the busy-wait falls with +sbwt none: {spin:#}");
    }
    assert_eq!(spin["role"], "context", "{spin:#}");
    assert!(
        !cmp["overall"]["line"]
            .as_str()
            .unwrap()
            .contains("BEAM schedulers busy-waiting"),
        "a share of idle time is not an outcome: {cmp:#}"
    );
}
