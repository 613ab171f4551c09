//! Records off-CPU time for a while and prints one line per entry.
//!
//! `cargo run -p kiln-bpf --example offcpu -- SECONDS [PID...]` (as root).
//! Without pids it records the whole system. Output (stdout), one line per block:
//! `pid tid comm start_ns duration_us kernel_depth user_depth stack_bytes`, then the
//! statistics on stderr. Used by bench/offcpu to measure overhead.

use std::time::{Duration, Instant};

use kiln_bpf::offcpu::{OffCpuCollector, OffCpuConfig};

fn main() {
    let mut args = std::env::args().skip(1);
    let secs: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let pids: Vec<u32> = args.filter_map(|s| s.parse().ok()).collect();
    let cfg = OffCpuConfig {
        pids: if pids.is_empty() { None } else { Some(pids) },
        min_block_us: 0,
        user_stack_bytes: 16384,
        ..Default::default()
    };
    let mut collector = match OffCpuCollector::start(&cfg) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("Error: {e}");
            std::process::exit(1);
        }
    };
    eprintln!("recording");
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut entries = Vec::new();
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100).min(end - Instant::now()));
        match collector.drain() {
            Ok(mut e) => entries.append(&mut e),
            Err(e) => {
                eprintln!("Error: {e}");
                std::process::exit(1);
            }
        }
    }
    for e in &entries {
        println!(
            "{} {} {} {} {} {} {} {}",
            e.blocked.pid,
            e.blocked.tid,
            String::from_utf8_lossy(&e.blocked.comm),
            e.start_ns,
            e.duration_ns / 1000,
            e.blocked.kernel_ips.len(),
            e.blocked.user_ips.len(),
            e.blocked.user.as_ref().map_or(0, |u| u.stack.len())
        );
    }
    eprintln!(
        "blocks: {}, distinct snapshots: {}",
        entries.len(),
        collector.distinct_snapshots()
    );
    eprintln!("{:#?}", collector.stats());
}
