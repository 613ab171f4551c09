//! Any bytes on an agent's channel (what `kiln run` reads from `ssh`): the greeting scan
//! and the frame reader end with a message or an error, never a panic; a frame that
//! decodes encodes back to one that decodes to the same message; and a message once
//! cleaned (as kiln does with every message before using it) has no text a terminal
//! would obey.
#![no_main]
use kiln_run::remote::wire::{
    await_magic, from_agent_limit, read_frame, read_frame_limited, write_frame, FromAgent,
    ToAgent,
};
use libfuzzer_sys::fuzz_target;

fn no_hidden(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::String(s) => !s.chars().any(kiln_model::text::is_hidden),
        serde_json::Value::Array(a) => a.iter().all(no_hidden),
        serde_json::Value::Object(o) => o.values().all(no_hidden),
        _ => true,
    }
}

fuzz_target!(|data: &[u8]| {
    let mut r = data;
    let _ = await_magic(&mut r);
    // As kiln reads an agent: by the limits of the kinds the frames name.
    let mut r = data;
    while read_frame_limited::<FromAgent>(&mut r, &from_agent_limit, 64 << 20).is_ok() {}
    let mut r = data;
    while let Ok((m, blobs)) = read_frame::<FromAgent>(&mut r) {
        let refs: Vec<&[u8]> = blobs.iter().map(|b| b.as_slice()).collect();
        let mut out = Vec::new();
        write_frame(&mut out, &m, &refs).unwrap();
        let (again, blobs2) =
            read_frame::<FromAgent>(&mut &out[..]).expect("kiln's own frame decodes");
        assert_eq!(format!("{m:?}"), format!("{again:?}"));
        assert_eq!(blobs, blobs2);
        // A load's report and a recording's target and series are data (cleaned where
        // they are shown, as this host's own are): the messages' words are checked.
        let cleaned = match m.cleaned() {
            FromAgent::LoadDone(o) => serde_json::to_value(o.failure),
            FromAgent::Recorded(r) => serde_json::to_value((r.stopped, r.warnings, r.error)),
            other => serde_json::to_value(other),
        }
        .unwrap();
        assert!(no_hidden(&cleaned), "{cleaned}");
    }
    let mut r = data;
    while read_frame::<ToAgent>(&mut r).is_ok() {}
});
