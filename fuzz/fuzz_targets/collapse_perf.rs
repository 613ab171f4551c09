//! Any bytes given to the perf collapser: no panic, every sample accounted for, the
//! profile writes as folded stacks, and 1 and 2 parser threads agree.
#![no_main]
use kiln_collapse::{perf, Input, Options};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut outs = Vec::new();
    for threads in [1, 2] {
        let mut opts = Options::default();
        opts.perf.threads = threads;
        let Ok(c) = perf::collapse(Input { name: "fuzz", data }, &opts) else {
            return;
        };
        assert_eq!(c.stats.read, c.stats.kept + c.stats.skipped_total());
        let mut out = Vec::new();
        kiln_model::FoldedWriter::default().write(&c.profile, &mut out).unwrap();
        outs.push(out);
    }
    assert_eq!(outs[0], outs[1]);
});
