//! Any bytes given to the reader of HdrHistogram interval logs (how a run keeps every
//! latency's per-second histograms, read again by the run report): no panic; a log that
//! reads, written again, reads back to the same intervals.
#![no_main]
use kiln_hdr::{read_interval_log, write_interval_log};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(log) = read_interval_log(data) else {
        return;
    };
    let Ok(again) = write_interval_log("fuzz", log.iter().map(|(end, h)| (*end, 1.0, h))) else {
        return;
    };
    let back = read_interval_log(&again).expect("a log kiln wrote reads back");
    assert_eq!(back.len(), log.len());
    for ((_, a), (_, b)) in log.iter().zip(&back) {
        assert_eq!(a.len(), b.len());
        assert_eq!(a.max(), b.max());
    }
});
