//! The MQTT decoder on arbitrary bytes from a server: never a panic, never a length past
//! the input, in every protocol version; a stream of packets decodes to its end or to an
//! error.
#![no_main]
use kiln_loadgen::mqtt::codec::{decode, Version};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for v in [Version::V3, Version::V4, Version::V5] {
        let mut at = 0;
        while at < data.len() {
            match decode(&data[at..], v, 1 << 20) {
                Ok(Some((_, n))) => {
                    assert!(n > 0 && at + n <= data.len());
                    at += n;
                }
                Ok(None) | Err(_) => break,
            }
        }
    }
});
