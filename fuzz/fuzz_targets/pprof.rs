//! Any bytes given to kiln's pprof reader (gzipped or not): no panic; what decodes is
//! written back as pprof (gzipped and not), kiln's output decodes again, and each of its
//! sample types reads back to the total of the values written. A profile minus itself
//! (`kiln run --pprof`'s deltas) leaves nothing; minus an empty base, itself.
#![no_main]
use kiln_formats::pprof;
use kiln_model::input::DEFAULT_LIMIT as LIMIT;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kiln_formats::sniff(data);
    let Ok(decoded) = pprof::decode("fuzz.pb", data, LIMIT) else {
        return;
    };
    assert_eq!(decoded.profiles.len(), decoded.info.sample_types.len());
    if let Ok(msg) = pprof::decode_message("fuzz.pb", data, LIMIT) {
        if let Ok((d, st)) = pprof::subtract("fuzz.pb", &msg, &msg, &|_| true) {
            // Saturated sums aside, a profile minus itself leaves nothing.
            let huge = msg.sample.iter().any(|s| s.value.iter().any(|v| v.unsigned_abs() > 1 << 60));
            assert!(huge || d.sample.is_empty(), "a profile minus itself");
            assert_eq!(st.kept, d.sample.len());
            let mut empty = msg.clone();
            empty.sample.clear();
            let (same, _) =
                pprof::subtract("fuzz.pb", &msg, &empty, &|_| true).expect("an empty base");
            assert!(same.sample.len() <= msg.sample.len());
            let back = pprof::decode_message("fuzz-delta.pb", &pprof::encode_gz(&d), LIMIT)
                .expect("a delta decodes");
            assert_eq!(back.sample.len(), d.sample.len());
        }
    }
    for (i, p) in decoded.profiles.iter().enumerate() {
        let mut out = Vec::new();
        pprof::write(p, &Default::default(), i % 2 == 0, &mut out).expect("write to memory");
        let written =
            pprof::decode_message("fuzz-out.pb", &out, LIMIT).expect("kiln's output decodes");
        let again = pprof::decode("fuzz-out.pb", &out, LIMIT).expect("kiln's output converts");
        assert_eq!(again.profiles.len(), written.sample_type.len());
        // kiln writes counts, nanoseconds and bytes: read back as they are.
        for (t, back) in again.profiles.iter().enumerate() {
            let want: u128 = written
                .sample
                .iter()
                .filter(|s| !s.location_id.is_empty())
                .map(|s| s.value[t].max(0) as u128)
                .sum();
            let got: u128 = back.samples.weight.iter().map(|&w| w as u128).sum();
            assert_eq!(got, want, "sample type {t}");
        }
    }
});
