//! kiln's AMQP 0.9.1 framing against the `amq-protocol` crate (lapin's codec), on the
//! frames kiln's load exchanges with a broker: a producer's `basic.publish` + content
//! header + body, a consumer's `basic.deliver` + content header + body, and `basic.ack`
//! both ways (a consumer's acknowledgement, a broker's publisher confirm).
//!
//! Before timing anything the two are checked against each other: the bytes kiln writes
//! are the bytes amq-protocol writes for the same frames, and what each reads from the
//! same bytes agrees (delivery tag, body size, body's first bytes).
//!
//! Bodies of 12 bytes (PerfTest's and kiln's default `--size`) and 4 KB.
use amq_protocol::frame::{gen_frame, parse_frame, AMQPContentHeader, AMQPFrame};
use amq_protocol::protocol::{basic, AMQPClass};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kiln_loadgen::amqp::codec as kiln;
use std::hint::black_box;

const FRAME_MAX: usize = 131_072;
const EXCHANGE: &str = "direct";
const ROUTING_KEY: &str = "7b9c1f7e-kiln-queue";
const SIZES: [usize; 2] = [12, 4096];

/// A body as kiln's producer stamps it: 12 bytes of sequence and send time, then zeros.
fn stamp() -> [u8; 12] {
    let mut s = [0u8; 12];
    s[..4].copy_from_slice(&7u32.to_be_bytes());
    s[4..].copy_from_slice(&1_764_835_200_000_000_000u64.to_be_bytes());
    s
}

fn body(size: usize) -> Vec<u8> {
    let mut b = vec![0u8; size];
    b[..12].copy_from_slice(&stamp());
    b
}

/// The frames of one published message, made as a client using amq-protocol makes them
/// (each message its own frames: the body is the caller's, the names the channel's).
fn amq_publish_frames(body: Vec<u8>, persistent: bool) -> [AMQPFrame; 3] {
    let mut props = basic::AMQPProperties::default();
    if persistent {
        props = props.with_delivery_mode(2);
    }
    [
        AMQPFrame::Method(
            1,
            AMQPClass::Basic(basic::AMQPMethod::Publish(basic::Publish {
                exchange: EXCHANGE.into(),
                routing_key: ROUTING_KEY.into(),
                mandatory: false,
                immediate: false,
            })),
        ),
        AMQPFrame::Header(
            1,
            AMQPContentHeader {
                class_id: 60,
                body_size: body.len() as u64,
                properties: props,
            },
        ),
        AMQPFrame::Body(1, body),
    ]
}

fn amq_gen(frames: &[AMQPFrame], mut buf: Vec<u8>) -> Vec<u8> {
    for f in frames {
        buf = cookie_factory::gen_simple(gen_frame(f), buf).expect("amq-protocol encodes");
    }
    buf
}

/// A delivery as the broker sends it, written by amq-protocol.
fn delivery_bytes(tag: u64, size: usize) -> Vec<u8> {
    let frames = [
        AMQPFrame::Method(
            1,
            AMQPClass::Basic(basic::AMQPMethod::Deliver(basic::Deliver {
                consumer_tag: "kiln-0".into(),
                delivery_tag: tag,
                redelivered: false,
                exchange: EXCHANGE.into(),
                routing_key: ROUTING_KEY.into(),
            })),
        ),
        AMQPFrame::Header(
            1,
            AMQPContentHeader {
                class_id: 60,
                body_size: size as u64,
                properties: basic::AMQPProperties::default(),
            },
        ),
        AMQPFrame::Body(1, body(size)),
    ];
    amq_gen(&frames, Vec::new())
}

fn amq_ack(tag: u64, multiple: bool) -> AMQPFrame {
    AMQPFrame::Method(
        1,
        AMQPClass::Basic(basic::AMQPMethod::Ack(basic::Ack {
            delivery_tag: tag,
            multiple,
        })),
    )
}

/// kiln's consumer reading one delivery: frames split off the buffer, the delivery
/// assembled (tag, size, the body's first bytes).
fn kiln_read_delivery(bytes: &[u8], ds: &mut kiln::Deliveries) -> Option<kiln::Delivery> {
    let mut at = 0;
    while let Some((f, n)) = kiln::parse_frame(&bytes[at..], FRAME_MAX).expect("AMQP framing") {
        at += n;
        if let Ok(kiln::Assembled::Delivery(d)) = ds.feed(f) {
            return Some(d);
        }
    }
    None
}

/// amq-protocol reading the same: every frame parsed whole; (tag, size, first bytes).
fn amq_read_delivery(mut bytes: &[u8]) -> (u64, u64, Vec<u8>) {
    let (mut tag, mut size, mut first) = (0, 0, Vec::new());
    while !bytes.is_empty() {
        let (rest, f) = parse_frame(bytes).expect("amq-protocol parses");
        bytes = rest;
        match f {
            AMQPFrame::Method(_, AMQPClass::Basic(basic::AMQPMethod::Deliver(d))) => {
                tag = d.delivery_tag
            }
            AMQPFrame::Header(_, h) => size = h.body_size,
            AMQPFrame::Body(_, b) => first = b[..b.len().min(20)].to_vec(),
            _ => {}
        }
    }
    (tag, size, first)
}

/// The two codecs agree on every frame benchmarked, or nothing is timed.
fn check_equal() {
    for size in SIZES {
        for persistent in [false, true] {
            let p = kiln::Publish::new(EXCHANGE, ROUTING_KEY, false, FRAME_MAX, persistent);
            let mut ours = Vec::new();
            p.message(&mut ours, size, &stamp(), None);
            let theirs = amq_gen(&amq_publish_frames(body(size), persistent), Vec::new());
            assert_eq!(ours, theirs, "publish of {size} bytes, persistent {persistent}");
        }
        let bytes = delivery_bytes(42, size);
        let d = kiln_read_delivery(&bytes, &mut kiln::Deliveries::default()).expect("a delivery");
        let (tag, len, first) = amq_read_delivery(&bytes);
        assert_eq!((d.tag, d.size), (tag, len));
        assert_eq!(&d.prefix[..d.got], &first[..]);
    }
    let mut ours = Vec::new();
    kiln::ack(&mut ours, 1_000_000, true);
    assert_eq!(ours, amq_gen(&[amq_ack(1_000_000, true)], Vec::new()));
}

fn publish(c: &mut Criterion) {
    let mut g = c.benchmark_group("publish: encode basic.publish + header + body");
    g.throughput(Throughput::Elements(1));
    for size in SIZES {
        let p = kiln::Publish::new(EXCHANGE, ROUTING_KEY, false, FRAME_MAX, false);
        let mut buf = Vec::with_capacity(64 * 1024);
        g.bench_with_input(BenchmarkId::new("kiln", size), &size, |b, &size| {
            b.iter(|| {
                buf.clear();
                p.message(&mut buf, size, black_box(&stamp()), None);
                black_box(buf.len())
            })
        });
        let mut buf = Vec::with_capacity(64 * 1024);
        g.bench_with_input(BenchmarkId::new("amq-protocol", size), &size, |b, &size| {
            b.iter(|| {
                buf.clear();
                let frames = amq_publish_frames(body(black_box(size)), false);
                buf = amq_gen(&frames, std::mem::take(&mut buf));
                black_box(buf.len())
            })
        });
        let frames = amq_publish_frames(body(size), false);
        let mut buf = Vec::with_capacity(64 * 1024);
        g.bench_with_input(
            BenchmarkId::new("amq-protocol, frames made once", size),
            &size,
            |b, _| {
                b.iter(|| {
                    buf.clear();
                    buf = amq_gen(black_box(&frames), std::mem::take(&mut buf));
                    black_box(buf.len())
                })
            },
        );
    }
    g.finish();
}

fn deliver(c: &mut Criterion) {
    let mut g = c.benchmark_group("deliver: decode basic.deliver + header + body");
    g.throughput(Throughput::Elements(1));
    for size in SIZES {
        let bytes = delivery_bytes(42, size);
        let mut ds = kiln::Deliveries::default();
        g.bench_with_input(BenchmarkId::new("kiln", size), &bytes, |b, bytes| {
            b.iter(|| black_box(kiln_read_delivery(black_box(bytes), &mut ds)))
        });
        g.bench_with_input(BenchmarkId::new("amq-protocol", size), &bytes, |b, bytes| {
            b.iter(|| black_box(amq_read_delivery(black_box(bytes))))
        });
    }
    g.finish();
}

fn ack(c: &mut Criterion) {
    let mut g = c.benchmark_group("ack: basic.ack");
    g.throughput(Throughput::Elements(1));
    let mut buf = Vec::with_capacity(4096);
    g.bench_function("kiln encode", |b| {
        b.iter(|| {
            buf.clear();
            kiln::ack(&mut buf, black_box(1_000_000), true);
            black_box(buf.len())
        })
    });
    let mut buf = Vec::with_capacity(4096);
    g.bench_function("amq-protocol encode", |b| {
        b.iter(|| {
            buf.clear();
            let f = amq_ack(black_box(1_000_000), true);
            buf = amq_gen(std::slice::from_ref(&f), std::mem::take(&mut buf));
            black_box(buf.len())
        })
    });
    let bytes = amq_gen(&[amq_ack(1_000_000, true)], Vec::new());
    g.bench_function("kiln decode", |b| {
        b.iter(|| {
            let (f, _) = kiln::parse_frame(black_box(&bytes), FRAME_MAX)
                .expect("framing")
                .expect("a frame");
            let (id, mut args) = kiln::method(f.payload);
            black_box((id, kiln::read_ack(&mut args).ok()))
        })
    });
    g.bench_function("amq-protocol decode", |b| {
        b.iter(|| {
            let (_, f) = parse_frame(black_box(&bytes[..])).expect("parses");
            black_box(f)
        })
    });
    g.finish();
}

fn checked(c: &mut Criterion) {
    check_equal();
    publish(c);
    deliver(c);
    ack(c);
}

criterion_group!(benches, checked);
criterion_main!(benches);
