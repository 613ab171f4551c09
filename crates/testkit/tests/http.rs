//! The HTTP fixtures themselves: nginx serves and logs, the Go example answers queries,
//! the misbehaving servers misbehave, and every server is gone once stopped.
use kiln_testkit::{Fault, FaultServer, GoBlockCache, Nginx, NginxOptions};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn get(port: u16, path: &str, n: usize) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut req = String::new();
    for i in 0..n {
        let close = if i + 1 == n {
            "Connection: close\r\n"
        } else {
            ""
        };
        req.push_str(&format!("GET {path} HTTP/1.1\r\nHost: t\r\n{close}\r\n"));
    }
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

fn gone(pid: u32) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(5) {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(s) if s.contains(") Z") => return true,
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    false
}

#[test]
fn nginx_serves_keeps_alive_logs_and_stops() {
    let mut n = Nginx::start_with(&NginxOptions {
        body_bytes: 1000,
        ..Default::default()
    })
    .expect("nginx starts");
    assert_eq!(n.worker_pids().len(), 1);
    let out = get(n.port(), "/index.html?k=1", 3);
    assert_eq!(out.matches("HTTP/1.1 200 OK").count(), 3, "{out}");
    assert!(out.contains("Content-Length: 1000"));
    let e = n.access_entries_settled(Duration::from_secs(5)).unwrap();
    assert_eq!(e.len(), 3);
    assert!(e.iter().all(|e| e.status == 200 && e.body_bytes == 1000));
    assert_eq!(e[0].uri, "/index.html?k=1");
    // Three requests on one keep-alive connection.
    assert_eq!(
        e.iter().map(|e| e.connection_requests).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert!(e.iter().all(|x| x.connection == e[0].connection));
    let out = get(n.port(), "/missing", 1);
    assert!(out.starts_with("HTTP/1.1 404"), "{out}");
    assert_eq!(
        n.access_entries_settled(Duration::from_secs(5)).unwrap()[3].status,
        404
    );

    let (master, worker) = (n.pid(), n.worker_pids()[0]);
    n.stop();
    assert!(gone(master) && gone(worker), "nginx stopped by PID");
    assert!(TcpStream::connect(("127.0.0.1", n.port())).is_err());
}

#[test]
fn go_blockcache_answers_queries_and_counts_misses() {
    let mut g = GoBlockCache::start(1.0, &["-data-mb", "16"]).expect("go example starts");
    let out = get(
        g.addr().rsplit(':').next().unwrap().parse().unwrap(),
        "/query?city=5&days=30",
        2,
    );
    assert_eq!(out.matches("HTTP/1.1 200 OK").count(), 2, "{out}");
    assert!(out.contains("\"city\":5,\"days\":30,\"max\":"), "{out}");
    let port: u16 = g.addr().rsplit(':').next().unwrap().parse().unwrap();
    let stats = get(port, "/stats", 1);
    // The first query missed, the second hit.
    assert!(stats.contains("\"misses\":1"), "{stats}");
    assert!(stats.contains("\"hits\":1"), "{stats}");
    let pprof = get(port, "/debug/pprof/", 1);
    assert!(pprof.starts_with("HTTP/1.1 200"), "{pprof}");
    let bad = get(port, "/query?city=x", 1);
    assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
    let pid = g.pid();
    g.stop();
    assert!(gone(pid));
}

#[test]
fn stall_server_holds_responses_at_the_start_of_each_period() {
    let f = FaultServer::start(Fault::StallEvery {
        period: Duration::from_millis(500),
        stall: Duration::from_millis(200),
    })
    .unwrap();
    // Requests one after another for 1.2 s on one connection: some wait ~200 ms.
    let mut s = TcpStream::connect(("127.0.0.1", f.port())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let t = Instant::now();
    let mut worst = Duration::ZERO;
    let mut buf = [0u8; 256];
    while t.elapsed() < Duration::from_millis(1200) {
        let t0 = Instant::now();
        s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let n = s.read(&mut buf).unwrap();
        assert!(buf[..n].ends_with(b"ok"));
        worst = worst.max(t0.elapsed());
    }
    assert!(worst >= Duration::from_millis(100), "worst {worst:?}");
    assert_eq!(f.requests(), f.responses());
}

#[test]
fn reset_server_cuts_responses() {
    let f = FaultServer::start(Fault::ResetMidResponse { every: 1 }).unwrap();
    let mut s = TcpStream::connect(("127.0.0.1", f.port())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let err = loop {
        match s.read(&mut buf) {
            Ok(0) => break None,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => break Some(e.kind()),
        }
    };
    assert_eq!(err, Some(std::io::ErrorKind::ConnectionReset));
    assert!(got.len() < 1000 + 60);
}

#[test]
fn slow_and_silent_servers() {
    let f = FaultServer::start(Fault::SlowHeaders {
        delay: Duration::from_millis(300),
    })
    .unwrap();
    let t = Instant::now();
    let out = get(f.port(), "/", 1);
    assert!(out.ends_with("ok") && t.elapsed() >= Duration::from_millis(300));

    let f = FaultServer::start(Fault::NeverAnswers).unwrap();
    let mut s = TcpStream::connect(("127.0.0.1", f.port())).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let mut buf = [0u8; 16];
    assert!(s.read(&mut buf).is_err(), "no answer");
}
