//! AMQP 0.9.1 framing on arbitrary bytes from a broker: frames split off never panic nor
//! pass the input's end, deliveries assemble or fail naming the frame, every method's
//! arguments read with bounds; and a message the producer encodes, with a size, a stamp
//! and a frame-max from the input, splits back into its frames with its body intact.
#![no_main]
use kiln_loadgen::amqp::codec::{
    method, parse_frame, read_ack, Assembled, Dec, Deliveries, Publish, FRAME_BODY,
    FRAME_HEADER, FRAME_METHOD,
};
use libfuzzer_sys::fuzz_target;

/// What a broker sends a client, read as the consumer and the producer read it.
fn read_stream(data: &[u8], frame_max: usize) {
    let mut deliveries = Deliveries::default();
    let mut at = 0;
    while at < data.len() {
        let Ok(Some((f, n))) = parse_frame(&data[at..], frame_max) else {
            break;
        };
        assert!(n >= 8 && at + n <= data.len());
        assert_eq!(f.payload.len(), n - 8);
        at += n;
        if f.kind == FRAME_METHOD {
            let (_, mut args) = method(f.payload);
            let _ = read_ack(&mut args);
        }
        match deliveries.feed(f) {
            Ok(Assembled::Delivery(d)) => assert!(d.got <= d.prefix.len()),
            Ok(Assembled::Method(_, mut args)) => while args.u8().is_ok() {},
            Ok(Assembled::Nothing) | Err(_) => {}
        }
    }
}

/// A message encoded with the input's parameters splits back into publish, header and
/// body frames that hold what was encoded.
fn round_trip(params: &[u8]) {
    let [a, b, c, d, flags, rest @ ..] = params else {
        return;
    };
    let size = u16::from_be_bytes([*a, *b]) as usize;
    let frame_max = 4096 + u16::from_be_bytes([*c, *d]) as usize;
    let prefix = &rest[..rest.len().min(36)];
    let p = Publish::new("ex", "key", flags & 1 == 1, frame_max, flags & 2 == 2);
    let mut buf = vec![0xAA];
    p.message(&mut buf, size, prefix, None);
    let body_len = size.max(prefix.len());
    assert_eq!(buf.len() - 1, p.encoded_len(body_len));
    let mut at = 1;
    let mut kinds = Vec::new();
    let mut body = Vec::new();
    while let Some((f, n)) = parse_frame(&buf[at..], frame_max).expect("kiln's frames parse") {
        kinds.push(f.kind);
        if f.kind == FRAME_HEADER {
            let mut h = Dec::new(f.payload);
            let (_, _, len) = (h.u16(), h.u16(), h.u64());
            assert_eq!(len.ok(), Some(body_len as u64));
        } else if f.kind == FRAME_BODY {
            assert!(f.payload.len() <= frame_max - 8);
            body.extend_from_slice(f.payload);
        }
        at += n;
    }
    assert_eq!(at, buf.len());
    assert_eq!(&kinds[..2], &[FRAME_METHOD, FRAME_HEADER]);
    assert_eq!(body.len(), body_len);
    assert_eq!(&body[..prefix.len()], prefix);
    assert!(body[prefix.len()..].iter().all(|&x| x == 0));
}

fuzz_target!(|data: &[u8]| {
    read_stream(data, 131_072);
    read_stream(data, 4096);
    round_trip(data);
});
