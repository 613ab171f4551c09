//! Any bytes given to the unwind-table builder, as a whole ELF file and as the bytes of
//! an `.eh_frame` section: no panic, and the rows it returns are what the kernel's binary
//! search needs (sorted by address, one row per address, no two neighbours alike).
#![no_main]
use kiln_bpf::unwind_table::{build, from_eh_frame, UnwindTable};
use libfuzzer_sys::fuzz_target;

fn check(t: &UnwindTable) {
    assert!(t.rows.windows(2).all(|w| w[0].pc < w[1].pc));
    assert!(t.functions.windows(2).all(|w| w[0] <= w[1]));
    assert!(t.functions.iter().all(|&(s, e)| s < e));
}

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = build(data) {
        check(&t);
    }
    let bases = gimli::BaseAddresses::default()
        .set_eh_frame(0x1000)
        .set_text(0x2000);
    check(&from_eh_frame(data, &bases));
});
