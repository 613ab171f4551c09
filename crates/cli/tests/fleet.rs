//! Fleets past one source address, in a network namespace of the test's own whose
//! ephemeral port range is 100 ports (61000-61099): the pre-flight check predicts what
//! one source address carries (100) and refuses more before any connection; run anyway,
//! one address fails at exactly that; spread over three, 250 connections hold. The
//! brokers' own views are the oracles: mosquitto's `$SYS/broker/clients/connected` and
//! its log, `ss` of the namespace, nginx's access log (`$remote_addr`).
use kiln_testkit::{
    in_private_netns, kiln_process, set_sysctl, Mosquitto, MosquittoOptions, Nginx,
};
use std::collections::BTreeMap;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const RANGE: &str = "61000 61099";

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Established connections to `port` in this namespace, by source address (`ss`).
fn sources_seen(port: u16) -> BTreeMap<String, u32> {
    let o = Command::new("ss")
        .args(["-Htn", "state", "established"])
        .arg(format!("( dport = :{port} )"))
        .output()
        .expect("ss (iproute2)");
    let mut by = BTreeMap::new();
    for l in String::from_utf8_lossy(&o.stdout).lines() {
        // Recv-Q Send-Q Local:Port Peer:Port
        let local = l.split_whitespace().nth(2).unwrap_or_default();
        let ip = local.rsplit_once(':').map_or(local, |(a, _)| a);
        *by.entry(ip.to_string()).or_default() += 1;
    }
    by
}

/// mosquitto's own count of connected clients ($SYS, retained, published every second).
fn broker_connected(port: u16) -> Option<u64> {
    let o = Command::new("mosquitto_sub")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["-t", "$SYS/broker/clients/connected", "-C", "1", "-W", "3"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    String::from_utf8_lossy(&o.stdout).trim().parse().ok()
}

#[test]
fn an_mqtt_fleet_spreads_over_source_addresses_as_the_preflight_check_predicts() {
    in_private_netns(|| {
        let b = Mosquitto::start_with(&MosquittoOptions {
            extra_config: vec!["sys_interval 1".into()],
            ..Default::default()
        })
        .expect("mosquitto starts");
        // After the broker took its port from the default range.
        set_sysctl("net.ipv4.ip_local_port_range", RANGE).unwrap();
        let port = b.port().to_string();
        let fleet = |c: &str, extra: &[&str]| {
            let mut cmd = kiln_process();
            cmd.args(["load", "mqtt", "conn", "-h", "127.0.0.1", "-p", &port])
                .args(["-c", c, "-i", "0", "-k", "60"])
                .args(extra);
            cmd
        };
        // The check, before any connection: one address carries 100, no more.
        for (c, want) in [
            ("101", "need 2 source addresses: --source-address 127.0.0.2,127.0.0.3 "),
            (
                "250",
                "need 3 source addresses: --source-address 127.0.0.2,127.0.0.3,127.0.0.4 ",
            ),
        ] {
            let o = fleet(c, &["-z", "1", "--source-address", "127.0.0.2"])
                .output()
                .unwrap();
            let (_, err) = text(&o);
            assert_eq!(o.status.code(), Some(1), "{err}");
            assert!(
                err.contains(&format!("{c} connections to 127.0.0.1:{port} {want}"))
                    && err.contains("100 ephemeral ports each, net.ipv4.ip_local_port_range 61000-61099")
                    && err.contains("--no-preflight"),
                "{err}"
            );
        }
        assert!(
            !b.log().contains("New client connected"),
            "refused before any connection:\n{}",
            b.log()
        );
        // Run anyway: the one address fails exactly where the check said.
        let o = fleet("250", &["-z", "1", "--source-address", "127.0.0.2", "--no-preflight"])
            .output()
            .unwrap();
        let (out, err) = text(&o);
        assert!(
            err.contains("warning: pre-flight (run anyway, --no-preflight): 250 connections"),
            "{err}"
        );
        assert!(
            out.contains("100 connections established, 150 failed")
                && out.contains("no ephemeral port left from 127.0.0.2 (net.ipv4.ip_local_port_range 61000-61099: 100 ports per source address); add source addresses (--source-address) × 150"),
            "{out}\n{err}"
        );
        let from = |log: &str, ip: &str| {
            log.matches(&format!("New client connected from {ip}:"))
                .count()
        };
        assert_eq!(from(&b.log(), "127.0.0.2"), 100, "the broker's log");
        // Three addresses hold 250, round-robin: in the broker's count and in ss.
        let k = fleet(
            "250",
            &["-z", "30", "--source-address", "127.0.0.3,127.0.0.4,127.0.0.5"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen = None;
        while Instant::now() < deadline && seen != Some(250) {
            std::thread::sleep(Duration::from_millis(300));
            seen = broker_connected(b.port());
        }
        let by = sources_seen(b.port());
        // SAFETY: the kiln started above, by its PID: it stops and prints its summary.
        unsafe { libc::kill(k.id() as i32, libc::SIGINT) };
        let o = k.wait_with_output().unwrap();
        let (out, err) = text(&o);
        assert_eq!(seen, Some(250), "$SYS/broker/clients/connected\n{out}\n{err}");
        let want: BTreeMap<String, u32> = [("127.0.0.3", 84), ("127.0.0.4", 83), ("127.0.0.5", 83)]
            .into_iter()
            .map(|(a, n)| (a.to_string(), n))
            .collect();
        assert_eq!(by, want, "ss: established connections by source address");
        let log = b.log();
        for (ip, n) in &want {
            assert_eq!(from(&log, ip) as u32, *n, "the broker's log for {ip}");
        }
        assert!(
            err.contains(&format!("pre-flight: 250 connections to 127.0.0.1:{port} from 3 source addresses (127.0.0.3,127.0.0.4,127.0.0.5): room for 300 (100 ephemeral ports per address")),
            "{err}"
        );
        assert!(out.contains("250 connections established, 0 failed"), "{out}");
    })
    .expect("a private network namespace (run as root)");
}

#[test]
fn an_http_load_spreads_its_connections_over_source_addresses() {
    in_private_netns(|| {
        let n = Nginx::start().expect("nginx starts");
        set_sysctl("net.ipv4.ip_local_port_range", RANGE).unwrap();
        let url = n.url("/");
        let load = |sources: &str| {
            kiln_process()
                .args(["load", "http", "-c", "150", "-t", "2", "-d", "1s"])
                .args(["--source-address", sources, &url])
                .output()
                .unwrap()
        };
        let o = load("127.0.0.2");
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!(
                "150 connections to 127.0.0.1:{} need 2 source addresses: --source-address 127.0.0.2,127.0.0.3 ",
                n.port()
            )),
            "{err}"
        );
        assert!(n.access_entries().unwrap().is_empty(), "nothing was sent");
        let o = load("127.0.0.2,127.0.0.3");
        let (out, err) = text(&o);
        assert!(o.status.success(), "{out}\n{err}");
        assert!(out.contains("err_connect: 0,"), "{out}");
        // nginx's view: each source address's connections (by nginx's serial number).
        let mut conns: BTreeMap<String, std::collections::BTreeSet<u64>> = BTreeMap::new();
        for e in n.access_entries_settled(Duration::from_secs(5)).unwrap() {
            conns
                .entry(e.remote.to_string())
                .or_default()
                .insert(e.connection);
        }
        let counts: Vec<(String, usize)> = conns.into_iter().map(|(a, c)| (a, c.len())).collect();
        assert_eq!(
            counts,
            vec![("127.0.0.2".to_string(), 75), ("127.0.0.3".to_string(), 75)],
            "nginx's access log: connections by client address"
        );
    })
    .expect("a private network namespace (run as root)");
}
