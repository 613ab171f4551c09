//! Broken pprof input: clear errors naming the file and what is wrong, never a panic.
use kiln_formats::pprof::{self, proto};
use kiln_formats::{read, FormatError, ReadOptions};
use kiln_model::input::DEFAULT_LIMIT as LIMIT;
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
    match pprof::decode("bad.pb.gz", bytes, LIMIT) {
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
    let d = pprof::decode("ok.pb", &valid().encode_to_vec(), LIMIT).unwrap();
    assert_eq!(d.profiles.len(), 1);
    assert_eq!(d.profiles[0].samples.weight.iter().sum::<u64>(), 8);
    let d = pprof::decode("ok.pb.gz", &gzip(&valid().encode_to_vec()), LIMIT).unwrap();
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
    let (mut errors, mut profiles) = (0, 0);
    // An error names the file. A profile read agrees with prost's decoder, the
    // independent reader: the same total per sample type where prost reads the message
    // too; where prost refuses it, only for a known field with another wire type, which
    // kiln skips as an unknown field as Go's decoder (go tool pprof's) does.
    let mut check = |name: &str, d: &[u8]| match pprof::decode(name, d, LIMIT) {
        Ok(got) => {
            match pprof::decode_message(name, d, LIMIT) {
                Ok(m) => {
                    for (i, p) in got.profiles.iter().enumerate() {
                        let want: i64 = m
                            .sample
                            .iter()
                            .filter_map(|s| s.value.get(i))
                            .filter(|&&v| v > 0)
                            .sum();
                        assert_eq!(p.total_weight() as i64, want, "{name}: {d:?}");
                    }
                }
                Err(e) => assert!(
                    e.to_string().contains("invalid wire type"),
                    "{name}: read as a profile, but prost says {e}: {d:?}"
                ),
            }
            profiles += 1;
        }
        Err(e) => {
            assert!(e.to_string().contains(name), "{e}");
            errors += 1;
        }
    };
    for data in [&bytes, &z] {
        for n in 0..data.len() {
            check("cut.pb", &data[..n]);
            for bit in 0..8 {
                let mut d = data.clone();
                d[n] ^= 1 << bit;
                check("flipped.pb", &d);
            }
        }
    }
    assert!(
        errors > 0 && profiles > 0,
        "{errors} errors, {profiles} profiles"
    );
    // A gzip stream cut short is always an error (its trailer is missing), never a
    // profile of what came before the cut.
    for n in 0..z.len() {
        assert!(
            pprof::decode("cut.pb.gz", &z[..n], LIMIT).is_err(),
            "cut at {n}"
        );
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

#[test]
fn a_stack_deeper_than_kiln_keeps_is_a_counted_skip() {
    // One sample of 1,100,000 frames (a location named over and over), one of two.
    let mut p = valid();
    p.sample[0].location_id = vec![1; 1_100_000];
    let d = pprof::decode("deep.pb", &p.encode_to_vec(), LIMIT).unwrap();
    let st = &d.stats[0];
    assert_eq!((st.read, st.kept), (2, 1));
    assert_eq!(
        st.skipped.get(&kiln_collapse::SkipReason::TooDeep),
        Some(&1),
        "{st:?}"
    );
    assert_eq!(d.profiles[0].samples.weight, [3]);
}

#[test]
fn read_in_place_two_types_inlined_frames_shared_and_identical_stacks() {
    // Two sample types, labels, an inlined frame, shared and identical stacks, and an
    // unsymbolised location; read in place from the message's bytes.
    let mut p = valid();
    p.sample_type.push(proto::ValueType { r#type: 4, unit: 2 });
    for s in &mut p.sample {
        s.value.push(7);
    }
    p.sample.push(p.sample[0].clone());
    p.sample.push(proto::Sample {
        location_id: vec![3, 2, 1],
        value: vec![1, 0],
        label: vec![proto::Label {
            key: 3,
            str: 4,
            ..Default::default()
        }],
    });
    p.location.push(proto::Location {
        id: 3,
        address: 0x4242,
        ..Default::default()
    });
    // Location 2: `work` inlined into `main`.
    p.location[1].line.push(proto::Line {
        function_id: 1,
        line: 5,
        column: 0,
    });
    let bytes = p.encode_to_vec();
    let d = pprof::decode("x.pb", &bytes, LIMIT).unwrap();
    let folded = |p: &kiln_model::Profile| {
        let mut v = Vec::new();
        kiln_model::FoldedWriter::new(Default::default())
            .write(p, &mut v)
            .unwrap();
        let mut lines: Vec<String> = String::from_utf8(v)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        lines.sort();
        lines
    };
    assert_eq!(
        folded(&d.profiles[0]),
        ["main 3", "main;main;work 10", "main;main;work;0x4242 1"]
    );
    assert_eq!(folded(&d.profiles[1]), ["main 7", "main;main;work 14"]);
    assert_eq!(d.zero, [0, 1]);
    // The labels are kept (the labelled sample weighs nothing of the second type), and
    // every sample type's profile reads back from kiln's format.
    assert!(d.profiles[0].samples.has_labels());
    for p in &d.profiles {
        let back = kiln_model::native::decode(
            &kiln_model::native::encode(std::slice::from_ref(p)),
            std::path::Path::new("x.kiln"),
        )
        .unwrap();
        assert_eq!(back[0].samples.labels, p.samples.labels);
    }
    // Only the chosen sample type is built; the others keep their counts.
    let (d, chosen) = pprof::decode_chosen("x.pb", &bytes, LIMIT, &|_| Ok(1)).unwrap();
    assert_eq!(chosen, 1);
    assert_eq!(d.profiles[1].samples.len(), 3);
    assert!(d.profiles[0].samples.is_empty());
    assert_eq!(d.stats[0].kept, 4);
}

/// Names that are not UTF-8 (a stripped binary's symbols, a thread named with any bytes):
/// kiln's pprof output is read by Go's protobuf runtime as the proto3 message it is —
/// which refuses a `string` that is not UTF-8 — with the stray bytes kept as `\xNN`.
#[test]
fn names_that_are_not_utf8_make_a_pprof_strict_decoders_read() {
    use kiln_testkit::go_oracle::{go_build, have_go};
    if !have_go() {
        return;
    }
    let mut p = kiln_model::Profile::new(kiln_model::EventInfo {
        name: "cpu-clock".into(),
        ..Default::default()
    });
    let th = p.thread(Some(1), Some(2), b"spin\xff");
    let frames = [
        p.frame(b"main", kiln_model::FrameKind::User),
        p.frame(b"cut\xd0", kiln_model::FrameKind::User),
        p.frame(b"\xff\xfe", kiln_model::FrameKind::User),
    ];
    p.add_sample_path(&frames, 10, 1_000, th);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.pb.gz");
    let mut out = Vec::new();
    kiln_formats::write(
        std::slice::from_ref(&p),
        kiln_formats::Format::Pprof,
        &Default::default(),
        &mut out,
    )
    .unwrap();
    std::fs::write(&file, &out).unwrap();
    let strict = go_build("pprofstrict", dir.path());
    let run = std::process::Command::new(&strict)
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let back = kiln_formats::read(Some(&file), &Default::default()).unwrap();
    let names: Vec<String> = back
        .collapsed
        .profile
        .frames
        .iter()
        .map(|(_, f)| {
            String::from_utf8_lossy(back.collapsed.profile.strings.get(f.name)).into_owned()
        })
        .collect();
    assert!(names.iter().any(|n| n == "cut\\xd0"), "{names:?}");
    assert!(names.iter().any(|n| n == "\\xff\\xfe"), "{names:?}");
}
