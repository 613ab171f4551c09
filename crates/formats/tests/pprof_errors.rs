//! Broken pprof input: clear errors naming the file and what is wrong, never a panic.
use kiln_formats::pprof::{self, proto};
use kiln_formats::{read, FormatError, ReadOptions};
use prost::Message;
use std::io::Write;

/// A small valid profile: two samples over three functions.
fn valid() -> proto::Profile {
    let strings = ["", "samples", "count", "main", "work", "main.go"];
    proto::Profile {
        sample_type: vec![proto::ValueType { r#type: 1, unit: 2 }],
        sample: vec![
            proto::Sample {
                location_id: vec![2, 1],
                value: vec![5],
                label: vec![],
            },
            proto::Sample {
                location_id: vec![1],
                value: vec![3],
                label: vec![],
            },
        ],
        location: vec![
            proto::Location {
                id: 1,
                line: vec![proto::Line {
                    function_id: 1,
                    line: 3,
                    column: 0,
                }],
                ..Default::default()
            },
            proto::Location {
                id: 2,
                line: vec![proto::Line {
                    function_id: 2,
                    line: 9,
                    column: 0,
                }],
                ..Default::default()
            },
        ],
        function: vec![
            proto::Function {
                id: 1,
                name: 3,
                system_name: 3,
                filename: 5,
                start_line: 1,
            },
            proto::Function {
                id: 2,
                name: 4,
                system_name: 4,
                filename: 5,
                start_line: 7,
            },
        ],
        string_table: strings.iter().map(|s| s.as_bytes().to_vec()).collect(),
        ..Default::default()
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(bytes).unwrap();
    z.finish().unwrap()
}

fn err(bytes: &[u8]) -> String {
    match pprof::decode("bad.pb.gz", bytes) {
        Ok(_) => panic!("decoded"),
        Err(e) => {
            let s = e.to_string();
            assert!(s.contains("bad.pb.gz"), "{s}");
            s
        }
    }
}

#[test]
fn the_valid_profile_reads() {
    let d = pprof::decode("ok.pb", &valid().encode_to_vec()).unwrap();
    assert_eq!(d.profiles.len(), 1);
    assert_eq!(d.profiles[0].samples.weight.iter().sum::<u64>(), 8);
    let d = pprof::decode("ok.pb.gz", &gzip(&valid().encode_to_vec())).unwrap();
    assert_eq!(d.profiles[0].samples.len(), 2);
}

#[test]
fn malformed_protobuf() {
    // A length running past the end.
    let e = err(b"\x0a\xff\xff\x03\x08\x01");
    assert!(e.contains("not a valid profile.proto message"), "{e}");
    // A wire type that field 1 cannot have.
    let e = err(b"\x0d\x00\x00\x00\x00");
    assert!(e.contains("not a valid profile.proto message"), "{e}");
    // Cut in the middle of a message.
    let bytes = valid().encode_to_vec();
    let e = err(&bytes[..bytes.len() - 3]);
    assert!(e.contains("pprof"), "{e}");
}

#[test]
fn truncated_gzip() {
    let z = gzip(&valid().encode_to_vec());
    let e = err(&z[..z.len() / 2]);
    assert!(e.contains("gzip data is truncated"), "{e}");
    let mut damaged = z.clone();
    let n = damaged.len();
    damaged[n - 6] ^= 0xff; // the CRC
    let e = err(&damaged);
    assert!(e.contains("gzip"), "{e}");
}

#[test]
fn indexes_out_of_range() {
    let mut p = valid();
    p.sample_type[0].unit = 42;
    let e = err(&p.encode_to_vec());
    assert!(
        e.contains("sample_type 0 names string 42, but the string table has 6 strings"),
        "{e}"
    );
    let mut p = valid();
    p.function[1].name = -3;
    let e = err(&p.encode_to_vec());
    assert!(e.contains("names string -3"), "{e}");
    let mut p = valid();
    p.sample[0].location_id[0] = 77;
    let e = err(&p.encode_to_vec());
    assert!(
        e.contains("sample 0 names location 77, which does not exist"),
        "{e}"
    );
    let mut p = valid();
    p.location[0].line[0].function_id = 9;
    let e = err(&p.encode_to_vec());
    assert!(e.contains("names function 9, which does not exist"), "{e}");
    let mut p = valid();
    p.sample[1].value.push(4);
    let e = err(&p.encode_to_vec());
    assert!(
        e.contains("sample 1 has 2 values for 1 sample types"),
        "{e}"
    );
    let mut p = valid();
    p.string_table[0] = b"x".to_vec();
    let e = err(&p.encode_to_vec());
    assert!(e.contains("first string is not empty"), "{e}");
}

#[test]
fn every_truncation_and_bit_flip_is_an_error_or_a_profile() {
    let bytes = valid().encode_to_vec();
    let z = gzip(&bytes);
    for data in [&bytes, &z] {
        for n in 0..data.len() {
            let _ = pprof::decode("cut.pb", &data[..n]);
            for bit in 0..8 {
                let mut d = data.clone();
                d[n] ^= 1 << bit;
                let _ = pprof::decode("flipped.pb", &d);
            }
        }
    }
}

#[test]
fn files_with_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let z = gzip(&valid().encode_to_vec());
    let path = dir.path().join("cut.pb.gz");
    std::fs::write(&path, &z[..z.len() - 10]).unwrap();
    let e = read(Some(&path), &ReadOptions::default()).unwrap_err();
    assert!(matches!(e, FormatError::Malformed { .. }), "{e:?}");
    let s = e.to_string();
    assert!(s.contains("cut.pb.gz") && s.contains("truncated"), "{s}");
    // Gzipped, but a protobuf cut short inside.
    let bytes = valid().encode_to_vec();
    let path = dir.path().join("short.pb.gz");
    std::fs::write(&path, gzip(&bytes[..bytes.len() - 3])).unwrap();
    let s = read(Some(&path), &ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(s.contains("short.pb.gz"), "{s}");
    // An unknown sample type lists those there are.
    let path = dir.path().join("ok.pb");
    std::fs::write(&path, &bytes).unwrap();
    let opts = ReadOptions {
        sample_type: Some("alloc_space".into()),
        ..Default::default()
    };
    let s = read(Some(&path), &opts).unwrap_err().to_string();
    assert!(
        s.contains("has no sample type 'alloc_space' (it has: samples (count))"),
        "{s}"
    );
}
