//! What `kiln run` does with a JVM's answer to a thread dump request: any bytes as the
//! answer (its result code line, then the dump), read into threads and summarised as the
//! run keeps them, and the summary through the store's JSON. No panic, no abort; every
//! BLOCKED thread kept is one the parse saw.
#![no_main]
use kiln_run::jvm::{attach, dump};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = match attach::answer_text(data) {
        Ok(t) => t,
        Err(e) => {
            assert!(!e.to_string().contains('\u{1b}'), "a JVM's bytes shown raw: {e}");
            return;
        }
    };
    let d = dump::parse(&text);
    let s = dump::summarise(&d, 1, 0.5);
    assert!(s.blocked.len() <= d.threads.iter().filter(|t| t.is_blocked()).count());
    let counted: u32 = s.groups.iter().map(|(_, n)| n).sum();
    assert_eq!(counted as usize, d.threads.len());
    let json = serde_json::to_vec(&s).expect("a summary serialises");
    let back: kiln_store::JvmDump = serde_json::from_slice(&json).expect("and reads back");
    assert_eq!(back, s);
});
