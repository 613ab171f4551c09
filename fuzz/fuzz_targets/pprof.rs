//! Any bytes given to kiln's pprof reader (gzipped or not): no panic; what decodes is
//! written back as pprof (gzipped and not), kiln's output decodes again, and each of its
//! sample types reads back to the total of the values written.
#![no_main]
use kiln_formats::pprof;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kiln_formats::sniff(data);
    let Ok(decoded) = pprof::decode("fuzz.pb", data) else {
        return;
    };
    assert_eq!(decoded.profiles.len(), decoded.info.sample_types.len());
    for (i, p) in decoded.profiles.iter().enumerate() {
        let mut out = Vec::new();
        pprof::write(p, &Default::default(), i % 2 == 0, &mut out).expect("write to memory");
        let written = pprof::decode_message("fuzz-out.pb", &out).expect("kiln's output decodes");
        let again = pprof::decode("fuzz-out.pb", &out).expect("kiln's output converts");
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
