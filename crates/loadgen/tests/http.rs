//! The HTTP client against real servers started here: a private nginx (exact accounting
//! against its access log, a constant rate), misbehaving servers (stalls, resets, slow
//! headers, silence) and refused connections.
use kiln_loadgen::http::{self, ErrorKind, HttpOptions, Target};
use kiln_model::stop::Stop;
use kiln_testkit::{Fault, FaultServer, Nginx, NginxOptions};
use std::time::{Duration, Instant};

fn get(url: &str) -> Target {
    Target {
        method: "GET".into(),
        url: url.into(),
        headers: vec![],
        body: vec![],
    }
}

fn opts(url: &str) -> HttpOptions {
    HttpOptions {
        targets: vec![get(url)],
        connections: 4,
        threads: 2,
        duration: Some(Duration::from_secs(2)),
        ..Default::default()
    }
}

fn run(o: &HttpOptions) -> http::ThreadStats {
    let stop = Stop::new();
    http::start(o, &stop).expect("load starts").join()
}

fn status_count(t: &http::ThreadStats, code: u16) -> u64 {
    t.status[code as usize]
}

#[test]
fn every_request_nginx_logged_is_counted_once() {
    let n = Nginx::start().unwrap();
    let mut o = opts(&n.url("/index.html?i={i}"));
    o.targets.push(get(&n.url("/missing-{i}")));
    o.connections = 8;
    let t = run(&o);
    let log = n.access_entries_settled(Duration::from_secs(5)).unwrap();
    assert!(t.responses > 1000, "{} responses", t.responses);
    assert_eq!(t.failed(), 0, "{:?}", t.error_detail);
    assert_eq!(t.unanswered, 0);
    assert_eq!(t.sent, t.responses);
    assert_eq!(
        log.len() as u64,
        t.responses,
        "nginx logged every response once"
    );
    let ok = log.iter().filter(|e| e.status == 200).count() as u64;
    let missing = log.iter().filter(|e| e.status == 404).count() as u64;
    assert_eq!(status_count(&t, 200), ok);
    assert_eq!(status_count(&t, 404), missing);
    // Requests alternate between the two targets and {i} numbers them uniquely.
    let mut ids: Vec<u64> = log
        .iter()
        .filter_map(|e| {
            e.uri
                .strip_prefix("/index.html?i=")
                .or_else(|| e.uri.strip_prefix("/missing-"))
                .and_then(|s| s.parse().ok())
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), log.len(), "every {{i}} is distinct");
    // Keep-alive: about one connection per -c (reconnects would show more).
    let conns: std::collections::HashSet<u64> = log.iter().map(|e| e.connection).collect();
    assert_eq!(conns.len(), 8);
    // Bytes: every response's body as nginx counted it, plus heads.
    let body: u64 = log.iter().map(|e| e.body_bytes).sum();
    assert!(t.bytes_read > body);
}

#[test]
fn a_request_limit_is_exact_and_pipelining_works() {
    let n = Nginx::start().unwrap();
    let mut o = opts(&n.url("/"));
    o.duration = None;
    o.max_requests = 5001;
    o.pipeline = 4;
    o.connections = 3;
    let t = run(&o);
    let log = n.access_entries_settled(Duration::from_secs(5)).unwrap();
    assert_eq!(t.sent, 5001);
    assert_eq!(t.responses, 5001);
    assert_eq!(log.len(), 5001);
    let max_per_conn = log.iter().map(|e| e.connection_requests).max().unwrap();
    assert!(max_per_conn >= 5001 / 3, "{max_per_conn}");
}

#[test]
fn a_constant_rate_is_held() {
    let n = Nginx::start_with(&NginxOptions {
        access_log: true,
        ..Default::default()
    })
    .unwrap();
    let mut o = opts(&n.url("/"));
    o.rate = Some(2000.0);
    o.duration = Some(Duration::from_secs(3));
    let t = run(&o);
    let expected = 6000.0;
    let got = t.responses as f64;
    assert!(
        (got - expected).abs() / expected < 0.01,
        "{got} responses for 2000/s over 3 s"
    );
    assert_eq!(t.not_sent, 0);
    assert!(t.intended.len() == t.responses);
    assert_eq!(
        n.access_entries_settled(Duration::from_secs(5))
            .unwrap()
            .len() as u64,
        t.responses
    );
}

#[test]
fn stalls_show_in_latency_from_the_intended_send_time() {
    // No response leaves during the first 200 ms of every second.
    let f = FaultServer::start(Fault::StallEvery {
        period: Duration::from_secs(1),
        stall: Duration::from_millis(200),
    })
    .unwrap();
    let mut o = opts(&f.url("/"));
    o.rate = Some(500.0);
    o.connections = 8;
    o.duration = Some(Duration::from_secs(3));
    let t = run(&o);
    assert_eq!(t.failed(), 0, "{:?}", t.error_detail);
    let p = |h: &hdrhistogram::Histogram<u64>, q: f64| h.value_at_quantile(q);
    // About a fifth of the requests are meant to go out during a stall and wait for its
    // end: up to 200 ms, about 100 ms on average.
    assert!(
        p(&t.intended, 0.99) >= 150_000,
        "intended p99 {} µs",
        p(&t.intended, 0.99)
    );
    assert!(t.intended.max() >= 180_000);
    assert!(
        p(&t.intended, 0.90) >= 50_000,
        "intended p90 {} µs",
        p(&t.intended, 0.90)
    );
    // Measured from the actual send, most of them look fast: only the few requests that
    // were on the wire when a stall began waited. That is what a closed-loop tool reports.
    assert!(
        p(&t.service, 0.90) < p(&t.intended, 0.90) / 5,
        "service p90 {} µs vs intended {} µs",
        p(&t.service, 0.90),
        p(&t.intended, 0.90)
    );
}

#[test]
fn refused_and_invalid_targets_fail_at_once() {
    let port = kiln_testkit::free_port().unwrap();
    let stop = Stop::new();
    let t0 = Instant::now();
    let e = http::start(&opts(&format!("http://127.0.0.1:{port}/")), &stop).unwrap_err();
    assert!(e.to_string().contains("cannot connect"), "{e}");
    assert!(e.to_string().contains(&port.to_string()), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(2));
    for (url, want) in [
        ("https://127.0.0.1:1/", "https is not supported"),
        ("127.0.0.1:80/", "expected http://"),
        ("http://127.0.0.1:0/", "port '0'"),
    ] {
        let e = http::start(&opts(url), &stop).unwrap_err().to_string();
        assert!(e.contains(want), "{url}: {e}");
    }
}

#[test]
fn resets_mid_response_are_counted() {
    let f = FaultServer::start(Fault::ResetMidResponse { every: 10 }).unwrap();
    let mut o = opts(&f.url("/"));
    o.connections = 2;
    o.threads = 1;
    o.duration = Some(Duration::from_secs(1));
    let t = run(&o);
    let resets = t.errors[ErrorKind::Reset as usize] + t.errors[ErrorKind::Closed as usize];
    assert!(resets > 10, "{:?}", t.errors);
    assert!(t.responses > 50);
    // Every request is accounted for.
    assert_eq!(t.sent, t.responses + t.failed() + t.unanswered);
    // The server completed exactly the responses we counted.
    assert_eq!(f.responses(), t.responses);
}

#[test]
fn slow_headers_and_silent_servers_time_out_never_hang() {
    let f = FaultServer::start(Fault::SlowHeaders {
        delay: Duration::from_millis(400),
    })
    .unwrap();
    let mut o = opts(&f.url("/"));
    o.timeout = Duration::from_millis(100);
    o.duration = Some(Duration::from_secs(1));
    o.connections = 2;
    let t0 = Instant::now();
    let t = run(&o);
    assert!(t.errors[ErrorKind::Timeout as usize] >= 2, "{:?}", t.errors);
    assert_eq!(t.responses, 0);
    assert_eq!(t.sent, t.failed() + t.unanswered);
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert!(t.error_detail[ErrorKind::Timeout as usize]
        .as_deref()
        .unwrap()
        .contains("100ms"));

    let f = FaultServer::start(Fault::NeverAnswers).unwrap();
    let mut o = opts(&f.url("/"));
    o.timeout = Duration::from_millis(300);
    o.rate = Some(100.0);
    o.duration = Some(Duration::from_secs(1));
    let t0 = Instant::now();
    let t = run(&o);
    assert!(t.errors[ErrorKind::Timeout as usize] >= 4, "{:?}", t.errors);
    assert_eq!(t.responses, 0);
    // Tickets that never found a free connection are reported, not dropped.
    assert_eq!(
        t.sent + t.not_sent,
        100,
        "{} sent, {} not sent",
        t.sent,
        t.not_sent
    );
    assert!(t0.elapsed() < Duration::from_secs(3));
}

#[test]
fn a_stop_ends_the_load_with_results() {
    let n = Nginx::start().unwrap();
    let mut o = opts(&n.url("/"));
    o.duration = None;
    let stop = Stop::new();
    let r = http::start(&o, &stop).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    stop.raise();
    let t = r.join();
    assert!(t0.elapsed() < Duration::from_secs(1));
    assert!(t.responses > 100);
    assert_eq!(
        n.access_entries_settled(Duration::from_secs(5))
            .unwrap()
            .len() as u64,
        t.responses
    );
}
