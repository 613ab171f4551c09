//! The HTTP/1.1 response reader: arbitrary bytes, split at arbitrary points, never panic,
//! and the responses read do not depend on how the bytes were split.
#![no_main]
use kiln_loadgen::http::response::{ParseError, Response, ResponseReader};
use libfuzzer_sys::fuzz_target;

fn read(data: &[u8], cuts: &[usize], head: bool) -> (Vec<Response>, Option<ParseError>) {
    let mut r = ResponseReader::new();
    let mut out = Vec::new();
    let mut last = 0;
    let mut bounds: Vec<usize> = cuts.iter().map(|&c| c.min(data.len())).collect();
    bounds.sort_unstable();
    bounds.push(data.len());
    for b in bounds {
        let mut p = &data[last..b];
        last = b;
        loop {
            match r.feed(p, head) {
                Ok((n, Some(resp))) => {
                    assert!(n <= p.len());
                    p = &p[n..];
                    out.push(resp);
                }
                Ok((n, None)) => {
                    assert_eq!(n, p.len(), "bytes left without a response");
                    break;
                }
                Err(e) => return (out, Some(e)),
            }
        }
    }
    match r.eof() {
        Ok(Some(resp)) => out.push(resp),
        Ok(None) => {}
        Err(e) => return (out, Some(e)),
    }
    (out, None)
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 2 {
        return;
    }
    let head = input[0] & 1 == 1;
    let cut = input[1] as usize;
    let data = &input[2..];
    let whole = read(data, &[], head);
    let split = read(data, &[cut, cut * 7, cut * 31], head);
    // Complete responses before any error are the same whatever the split.
    if whole.1.is_none() && split.1.is_none() {
        assert_eq!(whole.0, split.0);
    }
    for r in &whole.0 {
        assert!(r.head_bytes > 0);
    }
});
