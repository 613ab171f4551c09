//! What the pre-flight check of a fleet reads: `--source-address` lists and ranges, and
//! `/proc/net/tcp` tables. Arbitrary text never panics; parsed addresses print back as a
//! list that parses to the same addresses.
#![no_main]
use kiln_loadgen::engine::fleet::{format_sources, parse_sources, parse_tcp_table};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let text = String::from_utf8_lossy(input);
    if let Ok(addrs) = parse_sources(&text) {
        assert!(!addrs.is_empty());
        assert_eq!(parse_sources(&format_sources(&addrs)).ok(), Some(addrs));
    }
    for row in parse_tcp_table(&text) {
        let _ = (row.local.port(), row.remote.ip(), row.state, row.timer);
    }
});
