//! Any bytes given to the perf.data reader, whole and cut short (the first byte picks
//! how much of the end to drop): no panic, no hang, and a cut file is either read up
//! to its damage or refused with an error.
#![no_main]
use kiln_record::perf_data::{read_bytes, PerfDataOptions};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let opts = PerfDataOptions::default();
    let _ = read_bytes(data, Path::new("fuzz.data"), &opts);
    if let Some(&cut) = data.first() {
        let keep = data.len().saturating_sub(cut as usize * 7);
        let _ = read_bytes(&data[..keep], Path::new("fuzz-cut.data"), &opts);
    }
});
