//! AMQP 0.9.1 framing on arbitrary bytes from a broker: frames split off never panic nor
//! pass the input's end, deliveries assemble or fail naming the frame, every method's
//! arguments read with bounds; a method frame read off the input and written again from
//! its channel, id and arguments is the same bytes; an acknowledgement with a tag from the
//! input reads back as that tag; and a message the producer encodes, with a size, a stamp
//! and a frame-max from the input, splits back into its frames with its body intact.
#![no_main]
use kiln_loadgen::amqp::codec::{
    ack, method, method_frame, method_id, parse_frame, read_ack, Assembled, Dec, Deliveries,
    Publish, FRAME_BODY, FRAME_HEADER, FRAME_METHOD,
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

/// The first frame of the input, when it is a method frame, written again by the encoder
/// from what the decoder read of it: the same bytes.
fn re_encode(data: &[u8]) {
    let Ok(Some((f, n))) = parse_frame(data, 131_072) else {
        return;
    };
    if f.kind != FRAME_METHOD {
        return;
    }
    let Some(id) = method_id(f.payload) else {
        return;
    };
    let mut out = Vec::new();
    method_frame(&mut out, f.channel, id, |e| {
        for &b in &f.payload[4..] {
            e.u8(b);
        }
    });
    assert_eq!(out, &data[..n]);
}

/// `basic.ack` of a tag and `multiple` bit taken from the input reads back as both.
fn ack_round_trip(params: &[u8]) {
    let Some((tag, rest)) = params.split_first_chunk::<8>() else {
        return;
    };
    let tag = u64::from_be_bytes(*tag);
    let multiple = rest.first().is_some_and(|b| b & 1 == 1);
    let mut out = vec![0x55];
    ack(&mut out, tag, multiple);
    let (f, n) = parse_frame(&out[1..], 4096)
        .expect("kiln's ack parses")
        .expect("kiln's ack is whole");
    assert_eq!((f.kind, f.channel, n), (FRAME_METHOD, 1, out.len() - 1));
    let (id, mut args) = method(f.payload);
    assert_eq!(id, Some((60, 80)));
    assert_eq!(read_ack(&mut args).ok(), Some((tag, multiple)));
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
    re_encode(data);
    ack_round_trip(data);
    round_trip(data);
});
