//! kiln's MQTT codec vs mqttbytes 0.6 (the codec crate of rumqtt) on the load generator's
//! hot path: encode a QoS 1 PUBLISH of 100 bytes whose payload starts with a 24-byte stamp,
//! and decode a stream of them. Best of 5 runs of 1,000,000 packets each, ns per packet.
use kiln_loadgen::mqtt::codec::{self, Packet, Version};
use std::hint::black_box;
use std::time::Instant;

const N: usize = 1_000_000;
const SIZE: usize = 100;

fn best(mut f: impl FnMut() -> usize) -> f64 {
    (0..5)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed().as_nanos() as f64 / N as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let topic = "bench/17";
    let stamp = [7u8; 24];
    // kiln: append to one reused buffer, stamp in place, zero padding.
    let mut out = Vec::with_capacity(1 << 20);
    let kiln_enc = best(|| {
        let mut bytes = 0;
        for i in 0..N {
            out.clear();
            codec::publish(
                &mut out,
                &codec::Publish {
                    version: Version::V4,
                    qos: 1,
                    retain: false,
                    dup: false,
                    topic: topic.as_bytes(),
                    pid: (i % 65535 + 1) as u16,
                    topic_alias: None,
                    message_expiry: None,
                },
                &stamp,
                SIZE,
            );
            bytes += out.len();
        }
        bytes
    });
    // mqttbytes: a Publish owns its topic String and payload Bytes, written to a BytesMut.
    let mut bm = bytes::BytesMut::with_capacity(1 << 20);
    let mb_enc = best(|| {
        let mut bytes = 0;
        for i in 0..N {
            bm.clear();
            let mut payload = vec![0u8; SIZE];
            payload[..24].copy_from_slice(&stamp);
            let mut p = mqttbytes::v4::Publish::new(topic, mqttbytes::QoS::AtLeastOnce, payload);
            p.pkid = (i % 65535 + 1) as u16;
            bytes += p.write(&mut bm).unwrap_or(0);
        }
        bytes
    });
    // A stream of packets to decode.
    let mut stream = Vec::new();
    for i in 0..N {
        codec::publish(
            &mut stream,
            &codec::Publish {
                version: Version::V4,
                qos: 1,
                retain: false,
                dup: false,
                topic: topic.as_bytes(),
                pid: (i % 65535 + 1) as u16,
                topic_alias: None,
                message_expiry: None,
            },
            &stamp,
            SIZE,
        );
    }
    let kiln_dec = best(|| {
        let (mut at, mut sum) = (0, 0usize);
        while let Ok(Some((p, n))) = codec::decode(&stream[at..], Version::V4, 1 << 20) {
            if let Packet::Publish { payload, .. } = p {
                sum += payload[0] as usize;
            }
            at += n;
        }
        sum
    });
    let mb_dec = best(|| {
        let mut b = bytes::BytesMut::from(&stream[..]);
        let mut sum = 0usize;
        while let Ok(p) = mqttbytes::v4::read(&mut b, 1 << 20) {
            if let mqttbytes::v4::Packet::Publish(p) = p {
                sum += p.payload[0] as usize;
            }
        }
        sum
    });
    println!("ns per QoS 1 PUBLISH of {SIZE} bytes (best of 5 × {N}):");
    println!("  encode: kiln {kiln_enc:.1}  mqttbytes 0.6 {mb_enc:.1}  ratio {:.2}", mb_enc / kiln_enc);
    println!("  decode: kiln {kiln_dec:.1}  mqttbytes 0.6 {mb_dec:.1}  ratio {:.2}", mb_dec / kiln_dec);
}
