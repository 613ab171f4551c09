//! What `kiln run` does with a JVM's counters file (`hsperfdata`): any bytes read as its
//! counters, and the heap they give. No panic, no abort; an error says where.
#![no_main]
use kiln_run::jvm::perfdata;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match perfdata::parse(data) {
        Ok(c) => {
            if let Some(h) = perfdata::heap(&c) {
                assert!(h.used >= 0.0 && h.old_used >= 0.0 && h.old_max >= 0.0);
            }
        }
        Err((_, what)) => assert!(!what.is_empty()),
    }
});
