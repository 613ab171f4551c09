//! Any bytes given to the folded reader: no panic, every line accounted for, and for
//! one-count input, folded → model → folded → model → folded is stable.
#![no_main]
use kiln_collapse::{folded, Input, Options};
use libfuzzer_sys::fuzz_target;

fn write(p: &kiln_model::Profile) -> Vec<u8> {
    let mut out = Vec::new();
    kiln_model::FoldedWriter::default().write(p, &mut out).unwrap();
    out
}

fuzz_target!(|data: &[u8]| {
    let Ok(c) = folded::collapse(Input { name: "fuzz", data }, &Options::default()) else {
        return;
    };
    assert_eq!(c.stats.read, c.stats.kept + c.stats.skipped_total());
    if c.after.is_some() {
        return;
    }
    let out = write(&c.profile);
    let again = folded::collapse(Input { name: "again", data: &out }, &Options::default()).unwrap();
    assert_eq!(again.stats.skipped_total(), 0);
    assert_eq!(out, write(&again.profile));
});
