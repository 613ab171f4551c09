//! What `kiln run --pprof` does with a server's answers: any bytes as the body of a
//! snapshot at the window's start and at its end (inflated within the input limit,
//! recognised, decoded), their difference, and its profiles. No panic, no abort; an
//! answer that decodes subtracted from itself leaves nothing.
#![no_main]
use kiln_formats::pprof;
use libfuzzer_sys::fuzz_target;

/// The input limit of the fuzzed reads: hostile sizes within it must not cost gigabytes.
const LIMIT: u64 = 64 << 20;

fuzz_target!(|data: &[u8]| {
    // Two answers: the first byte says where the first ends.
    let (start, end) = match data.split_first() {
        Some((&cut, rest)) => rest.split_at((cut as usize).min(rest.len())),
        None => return,
    };
    let url = "http://127.0.0.1:6060/debug/pprof/mutex";
    let a = kiln_run::pprof::parse_answer(url, start.to_vec(), LIMIT);
    let b = kiln_run::pprof::parse_answer(url, end.to_vec(), LIMIT);
    for r in [&a, &b] {
        if let Err(e) = r {
            assert!(!e.contains('\u{1b}'), "a server's bytes shown raw: {e:?}");
        }
    }
    if let (Ok((_, s)), Ok((_, e))) = (&a, &b) {
        if let Ok((delta, _)) = pprof::subtract(url, e, s, &|_| true) {
            let _ = pprof::convert(url, &delta);
            let back = pprof::encode_gz(&delta);
            let _ = kiln_run::pprof::parse_answer(url, back, LIMIT);
        }
    }
    if let Ok((body, m)) = &a {
        let _ = pprof::convert(url, m);
        if let Ok((same, _)) = pprof::subtract(url, m, m, &|_| true) {
            let huge = m.sample.iter().any(|s| s.value.iter().any(|v| v.unsigned_abs() > 1 << 60));
            assert!(huge || same.sample.is_empty(), "an answer minus itself");
        }
        assert!(!body.is_empty());
    }
});
