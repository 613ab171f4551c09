//! Any bytes on an agent's channel (what `kiln run` reads from `ssh`): the greeting scan
//! and the frame reader end with a message or an error, never a panic, and a frame that
//! decodes encodes back to one that decodes to the same message.
#![no_main]
use kiln_run::remote::wire::{await_magic, read_frame, write_frame, FromAgent, ToAgent};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut r = data;
    let _ = await_magic(&mut r);
    let mut r = data;
    while let Ok((m, blobs)) = read_frame::<FromAgent>(&mut r) {
        let refs: Vec<&[u8]> = blobs.iter().map(|b| b.as_slice()).collect();
        let mut out = Vec::new();
        write_frame(&mut out, &m, &refs).unwrap();
        let (again, blobs2) = read_frame::<FromAgent>(&mut &out[..]).expect("kiln's own frame decodes");
        assert_eq!(format!("{m:?}"), format!("{again:?}"));
        assert_eq!(blobs, blobs2);
    }
    let mut r = data;
    while read_frame::<ToAgent>(&mut r).is_ok() {}
});
