//! `kiln run` over several hosts: network namespaces made by the tests (veth pairs, a
//! bridge, 10.200.S.N), Debian's sshd in each with a key made by the test, kiln's agent
//! started there over ssh, real brokers on the test network, real targets in the
//! namespaces.
use kiln_testkit::{alive, json};
use kiln_testkit::{Mosquitto, MosquittoOptions, SshKeys, Sshd, TestNet};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A test network of `n` hosts, each with its sshd, and the directory kiln's agents live in.
struct Hosts {
    sshd: Vec<Sshd>,
    keys: SshKeys,
    agent_dir: tempfile::TempDir,
    net: TestNet,
}

impl Hosts {
    /// `n` hosts; host `i` gets a CLOCK_MONOTONIC `offsets[i]` seconds ahead. With
    /// `preinstalled`, kiln is already in the agent directory (a hard link: no copy).
    fn new(n: usize, offsets: &[Option<i64>], preinstalled: bool) -> Hosts {
        let net = TestNet::create(n).expect("test network (root, iproute2)");
        let keys = SshKeys::generate().expect("ssh-keygen");
        let sshd = (0..n)
            .map(|i| {
                Sshd::start(net.host(i), &keys, offsets.get(i).copied().flatten())
                    .expect("sshd starts")
            })
            .collect();
        let agent_dir = tempfile::tempdir().unwrap();
        if preinstalled {
            let to = agent_dir
                .path()
                .join(format!("kiln-{}", kiln_testkit::kiln_build_id()));
            std::fs::hard_link(kiln_testkit::kiln_bin(), &to)
                .or_else(|_| std::fs::copy(kiln_testkit::kiln_bin(), &to).map(|_| ()))
                .unwrap();
        }
        Hosts {
            sshd,
            keys,
            agent_dir,
            net,
        }
    }

    /// `kiln run` with the store, the ssh command and the agent directory set.
    fn kiln(&self, store: &Path) -> Command {
        let mut c = kiln_testkit::kiln_process();
        c.env("KILN_STORE", store)
            .env("KILN_SSH", self.keys.ssh_command())
            .arg("run")
            .arg("--agent-dir")
            .arg(self.agent_dir.path())
            .arg("--no-report");
        c
    }

    /// `kiln run RUN_ARGS -p BROKER --agent h0 --agent h1 load mqtt conn`: a fleet of
    /// `conns` idle connections with keepalive `keepalive` s, split over both agents,
    /// against `b`, whose process is recorded.
    fn mqtt_fleet(
        &self,
        store: &Path,
        run_args: &[&str],
        b: &Mosquitto,
        conns: u32,
        keepalive: u32,
    ) -> Command {
        let mut c = self.kiln(store);
        c.args(run_args)
            .arg("-p")
            .arg(b.pid().unwrap().to_string())
            .args(["--agent", &self.dest(0), "--agent", &self.dest(1)])
            .args(["load", "mqtt", "conn", "-h", &b.address().to_string()])
            .args(["-p", &b.port().to_string(), "-c", &conns.to_string()])
            .args(["-i", "0", "-k", &keepalive.to_string()]);
        c
    }

    /// `NAME=ssh://…` of host `i`, named `h{i}`.
    fn dest(&self, i: usize) -> String {
        format!("h{i}={}", self.sshd[i].destination())
    }

    /// The PIDs of kiln agents running in host `i`'s namespace.
    fn agents(&self, i: usize) -> Vec<u32> {
        self.net
            .host(i)
            .pids()
            .into_iter()
            .filter(|p| {
                std::fs::read_link(format!("/proc/{p}/exe"))
                    .is_ok_and(|e| e.starts_with(self.agent_dir.path()))
            })
            .collect()
    }
}

fn broker(net: &TestNet) -> Mosquitto {
    Mosquitto::start_with(&MosquittoOptions {
        address: Some(net.gateway()),
        extra_config: vec!["sys_interval 1".into()],
        ..Default::default()
    })
    .expect("mosquitto starts")
}

/// The stored run `name`: its metadata (as `kiln runs show --json` prints it) and its
/// series.
fn show(store: &Path, name: &str) -> Value {
    let meta = kiln_testkit::show(store, name);
    let run = load_run(store, name);
    serde_json::json!({
        "meta": meta,
        "series": serde_json::to_value(&run.series).unwrap(),
    })
}

fn host<'a>(meta: &'a Value, name: &str) -> &'a Value {
    meta["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == name)
        .unwrap_or_else(|| panic!("no host {name} in {:#}", meta["hosts"]))
}

fn total(report: &Value, counter: &str) -> u64 {
    report["headline"]["totals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == counter)
        .and_then(|c| c["value"].as_u64())
        .unwrap_or(0)
}

/// Follows mosquitto's own count of connected clients (`$SYS/broker/clients/connected`,
/// published every second) from a subscriber that stays connected: its values include the
/// subscriber itself.
struct SysCount {
    child: Child,
    values: std::sync::Arc<std::sync::Mutex<Vec<u64>>>,
}

impl SysCount {
    fn follow(b: &Mosquitto) -> SysCount {
        let mut child = Command::new("mosquitto_sub")
            .args(["-h", &b.address().to_string(), "-p", &b.port().to_string()])
            .args(["-t", "$SYS/broker/clients/connected"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("mosquitto_sub");
        let out = child.stdout.take().unwrap();
        let values = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let v = values.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(n) = l.trim().parse() {
                    v.lock().unwrap().push(n);
                }
            }
        });
        SysCount { child, values }
    }
    fn max(&self) -> u64 {
        self.values
            .lock()
            .unwrap()
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
    }
    fn last(&self) -> u64 {
        self.values.lock().unwrap().last().copied().unwrap_or(0)
    }
}

impl Drop for SysCount {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An MQTT fleet split over two agents (one on a host whose clock is 5,000 s ahead), held
/// past two keepalives: mosquitto's own count of connected clients equals kiln's merged
/// count, each agent's seconds are kept, and the seconds of both agents end at the same
/// instants of the controlling host's clock within their clocks' uncertainty. The first
/// agent start copies kiln to the hosts.
#[test]
fn an_mqtt_fleet_over_two_agents_is_counted_as_the_broker_counts_it() {
    let h = Hosts::new(2, &[None, Some(5000)], false);
    let b = broker(&h.net);
    let sys = SysCount::follow(&b);
    let store = h.agent_dir.path().join("runs.db");
    let out = h
        .mqtt_fleet(
            &store,
            &["--name", "fleet", "-d", "5", "--warmup", "1"],
            &b,
            1000,
            2,
        )
        .output()
        .unwrap();
    kiln_testkit::succeeded(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("copied kiln to"), "{stderr}");
    let run = show(&store, "fleet");
    let meta = &run["meta"];
    // The broker saw both agents' fleets at once (and the subscriber counting them).
    let held =
        total(&meta["load"]["report"], "connected") - total(&meta["load"]["report"], "dropped");
    assert_eq!(held, 2000, "{:#}", meta["load"]["report"]["headline"]);
    assert_eq!(sys.max(), held + 1, "mosquitto's count against kiln's");
    // Held past two keepalives: every connection pinged at least twice, and answered.
    assert!(
        total(&meta["load"]["report"], "pongs") >= 2 * held,
        "{:#}",
        meta["load"]["report"]["headline"]
    );
    // Each agent's own report and series.
    let agents = meta["load"]["report"]["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    for a in agents {
        assert_eq!(total(&a["report"], "connected"), 1000, "{a:#}");
    }
    assert_eq!(meta["load"]["concurrency"], 2000.0);
    // Clocks: host 1 is 5,000 s ahead, and kiln says so within its uncertainty.
    let c0 = &host(meta, "h0")["clock"];
    let c1 = &host(meta, "h1")["clock"];
    let (o0, u0) = (
        c0["offset_ns"].as_i64().unwrap(),
        c0["uncertainty_ns"].as_i64().unwrap(),
    );
    let (o1, u1) = (
        c1["offset_ns"].as_i64().unwrap(),
        c1["uncertainty_ns"].as_i64().unwrap(),
    );
    assert!(o0.abs() <= u0, "host 0 offset {o0} ± {u0}");
    assert!(
        (o1 - 5_000_000_000_000).abs() <= u1,
        "host 1 offset {o1} ± {u1}"
    );
    assert!(u1 < 100_000_000, "uncertainty {u1} ns");
    // The agents' seconds, placed on this host's clock, end together.
    let series = |name: &str| -> Vec<u64> {
        run["series"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no series {name}"))["time_ns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_u64().unwrap())
            .collect()
    };
    let (a, bb) = (series("load@h0"), series("load@h1"));
    let common: Vec<(u64, u64)> = a
        .iter()
        .filter_map(|&x| {
            bb.iter()
                .find(|&&y| (x as i64 - y as i64).abs() < 500_000_000)
                .map(|&y| (x, y))
        })
        .collect();
    assert!(common.len() >= 4, "{a:?} {bb:?}");
    for (x, y) in &common[..common.len() - 1] {
        assert!(
            (*x as i64 - *y as i64).unsigned_abs() <= (u0 + u1) as u64 + 2_000_000,
            "seconds end at {x} and {y}"
        );
    }
    let merged = series("load");
    assert!(merged.len() >= a.len().max(bb.len()) - 1, "{merged:?}");
    drop(sys);
}

/// `kiln run` of two agents running the same MQTT pubsub load (QoS 1, `extra` flags) on
/// the same topics, and an independent subscriber's count of the run's messages.
fn two_mqtt_agents(name: &str, extra: &[&str]) -> (Value, u64) {
    let h = Hosts::new(2, &[None, None], true);
    let b = broker(&h.net);
    let witness = kiln_testkit::Witness::start(&b, "bench/+").unwrap();
    let store = h.agent_dir.path().join("runs.db");
    let out = h
        .kiln(&store)
        .args(["--name", name, "-d", "4", "--warmup", "1", "-p"])
        .arg(b.pid().unwrap().to_string())
        .args(["--agent", &h.dest(0), "--agent", &h.dest(1)])
        .args(["load", "mqtt", "pubsub", "-h", &b.address().to_string()])
        .args([
            "-p",
            &b.port().to_string(),
            "-c",
            "4",
            "-q",
            "1",
            "-I",
            "10",
        ])
        .args(extra)
        .output()
        .unwrap();
    kiln_testkit::succeeded(&out);
    let run = show(&store, name);
    let sent = total(&run["meta"]["load"]["report"], "sent");
    (run, witness.count(sent))
}

/// Each agent's load id: the run's nonce, and its own index.
fn agents_loads(agents: &[Value]) {
    let loads: Vec<&str> = agents
        .iter()
        .map(|a| a["report"]["summary"]["load"].as_str().unwrap())
        .collect();
    let (n0, i0) = loads[0].split_once('/').unwrap();
    let (n1, i1) = loads[1].split_once('/').unwrap();
    assert_eq!(n0, n1, "the run's nonce: {loads:?}");
    assert_ne!(i0, i1, "each agent its index: {loads:?}");
}

/// Two agents run the same MQTT pubsub load on the same topics at QoS 1: each counts its
/// own messages exactly (0 lost, 0 duplicated, its own sent = its own received) and the
/// other's as foreign, both carry the run's nonce with their own index, and the run's
/// sent and received equal what an independent subscriber got.
#[test]
fn two_mqtt_agents_on_the_same_topics_count_their_own_messages() {
    let (run, witness) = two_mqtt_agents("ps", &[]);
    let report = &run["meta"]["load"]["report"];
    let agents = report["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    for a in agents {
        let r = &a["report"];
        let verdict = r["summary"]["verdict"].as_str().unwrap_or_default();
        assert_eq!(total(r, "lost"), 0, "{verdict}");
        assert_eq!(total(r, "duplicated"), 0, "{verdict}");
        assert!(total(r, "foreign") > 0, "{verdict}");
        assert!(total(r, "sent") > 0, "{verdict}");
        assert_eq!(total(r, "sent"), total(r, "received"), "{verdict}");
        assert!(verdict.contains("at least once held"), "{verdict}");
    }
    agents_loads(agents);
    let sent = total(report, "sent");
    assert_eq!(
        sent,
        total(&agents[0]["report"], "sent") + total(&agents[1]["report"], "sent")
    );
    assert_eq!(total(report, "received"), sent);
    assert_eq!(witness, sent, "the independent subscriber");
    assert_eq!(report["delivery"]["lost"], 0, "{:#}", report["delivery"]);
    // The measured seconds' count, not a rate times the window.
    let h = &run["meta"]["headline"];
    let ops = h["operations"].as_u64().unwrap();
    assert!(ops > 0 && ops <= sent, "{h:#}");
}

/// Two agents whose subscribers share one subscription group: neither calls lost what the
/// other's subscribers got; the run as a whole judges, and its sum is exact against an
/// independent subscriber.
#[test]
fn two_mqtt_agents_sharing_a_subscription_are_judged_by_the_run() {
    let (run, witness) = two_mqtt_agents("shared", &["--sub-topic", "$share/g/bench/+"]);
    let report = &run["meta"]["load"]["report"];
    let agents = report["agents"].as_array().unwrap();
    let mut from_run = 0;
    for a in agents {
        let r = &a["report"];
        let verdict = r["summary"]["verdict"].as_str().unwrap_or_default();
        assert_eq!(total(r, "lost"), 0, "{verdict}");
        assert_eq!(total(r, "duplicated"), 0, "{verdict}");
        assert!(total(r, "foreign") > 0, "{verdict}");
        assert!(
            verdict.contains("judged by the run as a whole"),
            "{verdict}"
        );
        from_run += r["summary"]["from_run"].as_u64().unwrap();
    }
    agents_loads(agents);
    let sent = total(report, "sent");
    let d = &report["delivery"];
    assert_eq!(d["shared"], true, "{d:#}");
    assert_eq!(d["sent"], sent, "{d:#}");
    assert_eq!(total(report, "received") + from_run, sent, "{d:#}");
    assert_eq!(d["received"], sent, "{d:#}");
    assert_eq!(d["lost"], 0, "{d:#}");
    assert!(
        d["verdict"]
            .as_str()
            .unwrap()
            .contains("every message delivered once"),
        "{d:#}"
    );
    assert_eq!(witness, sent, "the independent subscriber");
}

/// A fixed-rate AMQP load from two agents: the run's latency histogram of the measurement
/// is the exact merge of the two agents' (every bucket the sum of theirs), and holds one
/// value per message received.
#[test]
fn fixed_rate_amqp_from_two_agents_merges_histograms_exactly() {
    let h = Hosts::new(2, &[], true);
    let rmq = kiln_testkit::RabbitMq::start_with(&kiln_testkit::RabbitMqOptions {
        address: Some(h.net.gateway()),
        ..Default::default()
    })
    .expect("rabbitmq starts");
    let store = h.agent_dir.path().join("runs.db");
    let out = h
        .kiln(&store)
        .args(["--name", "amqp2", "-d", "4", "--warmup", "1", "-p"])
        .arg(rmq.beam_pid().unwrap().to_string())
        .args(["--agent", &h.dest(0), "--agent", &h.dest(1)])
        .args([
            "load",
            "amqp",
            "-h",
            &rmq.uri(),
            "-x",
            "1",
            "-y",
            "1",
            "-r",
            "300",
        ])
        .output()
        .unwrap();
    kiln_testkit::succeeded(&out);
    let export = h.agent_dir.path().join("amqp2.kiln");
    let st = kiln_testkit::kiln_process()
        .env("KILN_STORE", &store)
        .args(["runs", "export", "amqp2", "-o"])
        .arg(&export)
        .status()
        .unwrap();
    assert!(st.success());
    let run = show(&store, "amqp2");
    let meta = &run["meta"];
    assert_eq!(meta["load"]["rate"], 600.0, "{:#}", meta["load"]);
    assert_eq!(meta["status"]["complete"], true, "{:#}", meta["status"]);
    let hists = kiln_histograms(&store, "amqp2");
    let pick = |window: &str| {
        hists
            .iter()
            .find(|(n, w, _)| w == window && n.starts_with("consumer"))
            .unwrap_or_else(|| {
                panic!(
                    "no histogram of {window}: {:?}",
                    hists.iter().map(|h| (&h.0, &h.1)).collect::<Vec<_>>()
                )
            })
            .2
            .clone()
    };
    let merged = pick("measure");
    let (a, b) = (pick("measure@h0"), pick("measure@h1"));
    assert!(a.1 > 0 && b.1 > 0);
    let mut sum = a.0.clone();
    for (v, c) in &b.0 {
        *sum.entry(*v).or_default() += c;
    }
    assert_eq!(merged.0, sum, "every bucket is the sum of the agents'");
    assert_eq!(merged.1, a.1 + b.1);
    // One latency per message received in the window's seconds (those whose middle lies
    // in it), as the merged series counts them.
    let load = run["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "load")
        .unwrap();
    let times: Vec<u64> = load["time_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap())
        .collect();
    let received = load["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "received")
        .unwrap()["values"]
        .as_array()
        .unwrap()
        .clone();
    let (start, end) = (
        meta["measure"]["start_ns"].as_u64().unwrap(),
        meta["measure"]["end_ns"].as_u64().unwrap(),
    );
    let mut in_window = 0.0;
    for i in 1..times.len() {
        let interval = (times[i] - times[i - 1]) as f64 / 1e9;
        let mid = times[i] - (interval * 0.5e9) as u64;
        if mid >= start && mid < end {
            in_window += (received[i].as_f64().unwrap_or(0.0) * interval).round();
        }
    }
    assert!(
        (merged.1 as f64 - in_window).abs() <= 1.0,
        "{} values, {in_window} messages",
        merged.1
    );
    let thr = meta["headline"]["throughput"].as_f64().unwrap();
    assert!((thr - 600.0).abs() < 60.0, "throughput {thr}");
}

/// A histogram as bucket → count, and its total count.
type Buckets = (std::collections::BTreeMap<u64, u64>, u64);

/// The stored run `name`, read with the store's own reader.
fn load_run(store: &Path, name: &str) -> kiln_store::RunData {
    let st = kiln_store::open_existing(store).unwrap();
    let id = st.resolve(name).unwrap()[0].id.unwrap();
    st.load(id).unwrap()
}

/// Every stored histogram of a window of run `name` (not the per-second interval logs):
/// (name, window, buckets).
fn kiln_histograms(store: &Path, name: &str) -> Vec<(String, String, Buckets)> {
    load_run(store, name)
        .histograms
        .iter()
        .filter(|h| h.window != kiln_store::PER_SECOND)
        .map(|h| {
            let d = kiln_hdr::decode_histogram(&h.data).unwrap_or_else(|| {
                panic!(
                    "{}/{} ({} bytes) does not decode",
                    h.window,
                    h.name,
                    h.data.len()
                )
            });
            let buckets = d
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect();
            (h.name.clone(), h.window.clone(), (buckets, d.len()))
        })
        .collect()
}

/// A process on another host (a C program in a namespace whose clock is 5,000 s ahead) is
/// recorded through its agent: its frames are in the run, labelled with the host, on this
/// host's clock (inside the measurement window, within the clock's uncertainty).
#[test]
fn a_process_on_another_host_is_recorded_on_this_hosts_clock() {
    let h = Hosts::new(1, &[Some(5000)], true);
    let dir = tempfile::tempdir().unwrap();
    let exe = kiln_testkit::build_hot(
        dir.path(),
        &["-O1", "-fno-omit-frame-pointer", "-fno-inline"],
    );
    let mut target = h
        .net
        .host(0)
        .command(&exe)
        .arg("30")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let local = kiln_testkit::Started::new(&exe, &["30"]);
    let store = h.agent_dir.path().join("runs.db");
    let out = h
        .kiln(&store)
        .args(["--name", "remote", "-d", "2", "--host", &h.dest(0), "-p"])
        .arg(format!("h0:{},{}", target.id(), local.pid()))
        .args(["exec", "--", "sleep", "600"])
        .output()
        .unwrap();
    let _ = target.kill();
    let _ = target.wait();
    kiln_testkit::succeeded(&out);
    let run = show(&store, "remote");
    let meta = &run["meta"];
    let c = &host(meta, "h0")["clock"];
    let (o, u) = (
        c["offset_ns"].as_i64().unwrap(),
        c["uncertainty_ns"].as_i64().unwrap(),
    );
    assert!((o - 5_000_000_000_000).abs() <= u, "offset {o} ± {u}");
    // The remote node's flame graph: its own functions, under its host label.
    let folded = kiln_testkit::kiln_process()
        .env("KILN_STORE", &store)
        .args(["collapse", "--focus-label", "host=h0", "run:remote"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&folded.stdout);
    assert!(
        text.contains("hot_a") || text.contains("work"),
        "{text}\n{}",
        String::from_utf8_lossy(&folded.stderr)
    );
    // Its samples are on this host's clock: inside the measurement window (the offset of
    // 5,000 s taken off, the kernel's timestamps corrected for the time namespace).
    let (start, end) = (
        meta["measure"]["start_ns"].as_u64().unwrap() as i64,
        meta["measure"]["end_ns"].as_u64().unwrap() as i64,
    );
    let times = sample_times(&store, "remote", "h0");
    assert!(!times.is_empty());
    let slack = u + 50_000_000;
    for t in &times {
        assert!(
            *t >= start - slack && *t <= end + slack,
            "sample at {t} outside [{start}, {end}]"
        );
    }
    // Its /proc series.
    let names: Vec<&str> = run["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"target@h0"), "{names:?}");
    // The report shows each node's flame graph beside the cluster's; kiln compare compares
    // the cluster node by node and as a whole.
    let html = h.agent_dir.path().join("remote.html");
    let st = kiln_testkit::kiln_process()
        .env("KILN_STORE", &store)
        .args(["runs", "report", "remote", "-o"])
        .arg(&html)
        .status()
        .unwrap();
    assert!(st.success());
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .contains("cpu-clock on h0"));
    let cmp = kiln_testkit::kiln_process()
        .env("KILN_STORE", &store)
        .args(["compare", "remote", "remote", "--format", "json"])
        .output()
        .unwrap();
    let cmp = json(&cmp.stdout);
    let events: Vec<&str> = cmp["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["event"].as_str().unwrap())
        .collect();
    assert!(
        events.contains(&"cpu-clock") && events.contains(&"cpu-clock on h0"),
        "{events:?}"
    );
}

/// The times of a run's samples labelled `host=HOST`.
fn sample_times(store: &Path, name: &str, host: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for p in load_run(store, name).profiles {
        let m = kiln_model::LabelMatch::parse(&format!("host={host}")).unwrap();
        for i in 0..p.samples.len() {
            let labels = p.samples.label_sets.get(p.samples.label_set(i));
            if m.matches(&p.strings, labels) && p.samples.time[i] != kiln_model::NO_TIME {
                out.push(p.samples.time[i] as i64);
            }
        }
    }
    out
}

/// An agent killed mid-run is marked in the run with its reason; the other agent's load
/// goes on to the end of the measurement.
#[test]
fn an_agent_killed_mid_run_is_marked_and_the_other_goes_on() {
    let h = Hosts::new(2, &[], true);
    let b = broker(&h.net);
    let store = h.agent_dir.path().join("runs.db");
    let mut kiln = h
        .mqtt_fleet(&store, &["--name", "killed", "-d", "4"], &b, 50, 5)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut progress = kiln_testkit::Lines::follow(kiln.stderr.take().unwrap());
    let victim = kiln_testkit::poll_until(Duration::from_secs(30), || !h.agents(1).is_empty())
        .map(|_| h.agents(1)[0])
        .expect("the agent on h1 starts");
    // Killed mid-measurement: once the run says it measures, however busy the machine.
    let measuring = progress.wait_for(Duration::from_secs(60), |l| l.contains("measuring"));
    assert!(measuring.is_some(), "the run never measured");
    kiln_testkit::signal(victim, 9);
    let out = kiln.wait_with_output().unwrap();
    let stderr = progress.all();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let meta = &show(&store, "killed")["meta"];
    assert_eq!(meta["status"]["complete"], false);
    let reason = meta["status"]["reason"].as_str().unwrap();
    assert!(reason.contains("host h1 failed"), "{reason}");
    assert!(
        host(meta, "h1")["failure"].is_string(),
        "{:#}",
        meta["hosts"]
    );
    assert!(host(meta, "h0")["failure"].is_null(), "{:#}", meta["hosts"]);
    // h0's load ran to the end: its report is there, h1's is not.
    let agents = meta["load"]["report"]["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 1);
    assert_eq!(agents[0]["host"], "h0");
    assert!(
        meta["measure"]["end_ns"].as_u64().unwrap() - meta["measure"]["start_ns"].as_u64().unwrap()
            >= 3_900_000_000
    );
}

/// The ssh connection of one agent dropped, then kiln itself killed: every agent stops its
/// load and exits (checked by PID), none is left on any host.
#[test]
fn a_dropped_connection_or_a_killed_kiln_leaves_no_agent_behind() {
    let h = Hosts::new(2, &[], true);
    let b = broker(&h.net);
    let store = h.agent_dir.path().join("runs.db");
    let mut kiln = h
        .mqtt_fleet(&store, &["--name", "dropped", "-d", "60"], &b, 200, 5)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut progress = kiln_testkit::Lines::follow(kiln.stderr.take().unwrap());
    let up = kiln_testkit::poll_until(Duration::from_secs(30), || {
        !h.agents(0).is_empty() && !h.agents(1).is_empty()
    });
    assert!(up.is_some(), "agents start");
    // Both agents' loads run once the run measures.
    let measuring = progress.wait_for(Duration::from_secs(60), |l| l.contains("measuring"));
    assert!(measuring.is_some(), "the run never measured");
    let (a0, a1) = (h.agents(0)[0], h.agents(1)[0]);
    // The connection to h1 drops: its ssh client dies.
    let ssh1 = kiln_testkit::children(kiln.id())
        .into_iter()
        .find(|&p| {
            std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| {
                String::from_utf8_lossy(&c).contains(&h.net.host(1).addr.to_string())
            })
        })
        .expect("kiln's ssh to h1");
    kiln_testkit::signal(ssh1, 9);
    let t =
        kiln_testkit::poll_until(Duration::from_secs(10), || !alive(a1)).expect("h1's agent stops");
    eprintln!(
        "agent on h1 gone {:.3} s after its connection dropped",
        t.as_secs_f64()
    );
    assert!(alive(a0), "h0's agent goes on");
    // kiln killed: the other agent goes too.
    kiln_testkit::signal(kiln.id(), 9);
    let _ = kiln.wait();
    let t =
        kiln_testkit::poll_until(Duration::from_secs(10), || !alive(a0)).expect("h0's agent stops");
    eprintln!(
        "agent on h0 gone {:.3} s after kiln was killed",
        t.as_secs_f64()
    );
    assert!(h.agents(0).is_empty() && h.agents(1).is_empty());
    // And their load with them: the broker's count falls to its subscriber alone.
    let sys = SysCount::follow(&b);
    assert!(
        kiln_testkit::poll_until(Duration::from_secs(10), || sys.last() == 1).is_some(),
        "the broker still counts {} clients",
        sys.last()
    );
}

/// Both nodes of a two-node RabbitMQ cluster (RabbitMQ's own clustering, on this machine)
/// profiled in one run, each through the agent of a host of its own (-p h0:BEAM -p
/// h1:BEAM), under a quorum queue's load (its replicas on both nodes): each node's samples,
/// under its host label, have Erlang frames from its JIT's perf map.
#[test]
fn both_nodes_of_a_rabbitmq_cluster_are_profiled_with_erlang_frames() {
    let h = Hosts::new(2, &[None, None], true);
    let a = kiln_testkit::RabbitMq::start().expect("RabbitMQ starts");
    let b = a.start_joined().expect("a second node joins the first");
    let status = a.ctl(&["cluster_status"]).unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains(b.node()), "{status}");
    let (ba, bb) = (a.beam_pid().unwrap(), b.beam_pid().unwrap());
    let store = h.agent_dir.path().join("runs.db");
    let out = h
        .kiln(&store)
        .args(["--name", "cluster", "-d", "3", "--warmup", "1"])
        .args(["--host", &h.dest(0), "--host", &h.dest(1)])
        .arg("-p")
        .arg(format!("h0:{ba}"))
        .arg("-p")
        .arg(format!("h1:{bb}"))
        .args([
            "load",
            "amqp",
            "-h",
            &a.uri(),
            "-x",
            "1",
            "-y",
            "1",
            "-r",
            "500",
        ])
        .args(["-u", "kiln-cluster", "--queue-args", "x-queue-type=quorum"])
        .output()
        .unwrap();
    kiln_testkit::succeeded(&out);
    for node in ["h0", "h1"] {
        let folded = kiln_testkit::kiln_process()
            .env("KILN_STORE", &store)
            .args([
                "collapse",
                "--focus-label",
                &format!("host={node}"),
                "run:cluster",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&folded.stdout);
        // The JIT's perf map names Erlang functions `$module:function/arity`.
        let erlang = text
            .lines()
            .filter(|l| l.split(';').any(|f| f.starts_with('$') && f.contains(':')))
            .count();
        assert!(
            erlang > 0,
            "no Erlang frame on {node} ({erlang} stacks):\n{}\n{}",
            text.lines().take(20).collect::<Vec<_>>().join("\n"),
            String::from_utf8_lossy(&folded.stderr)
        );
    }
    drop(b);
}
