//! Any bytes given to the native (.kiln) profile decoder: no panic, and what decodes
//! writes back to bytes that decode to the same profiles.
#![no_main]
use kiln_model::native::{decode, write};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(profiles) = decode(data, Path::new("fuzz")) else {
        return;
    };
    let mut out = Vec::new();
    write(&profiles, &mut out).unwrap();
    let again = decode(&out, Path::new("again")).expect("kiln's own output decodes");
    let mut out2 = Vec::new();
    write(&again, &mut out2).unwrap();
    assert_eq!(out, out2);
});
