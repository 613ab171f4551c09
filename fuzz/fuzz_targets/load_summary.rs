//! Any output of a load command (`kiln run … exec --`: stdout, a NUL, then stderr): every
//! summary reader ends with figures or nothing, never a panic, and the figures it keeps
//! are finite and not negative (they reach the store and `kiln compare`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (out, err) = text.split_once('\0').unwrap_or((&text, ""));
    if let Some(s) = kiln_run::summary::parse(out, err) {
        let finite = |v: f64| v.is_finite() && v >= 0.0;
        assert!(finite(s.requests_per_s) && finite(s.seconds), "{s:?}");
        assert!(s.sent_per_s.is_none_or(finite), "{s:?}");
        assert!(s.mean_latency_us.is_none_or(finite), "{s:?}");
        assert!(s.latency_us.iter().all(|&(p, v)| finite(p) && finite(v)), "{s:?}");
    }
});
