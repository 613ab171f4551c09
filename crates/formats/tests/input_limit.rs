//! The input limit travels with the read: two reads in one process, each with its own
//! limit, hold each to its own.
use kiln_formats::{read, FormatError, ReadOptions};
use std::io::Write;

/// Folded stacks, gzipped, that inflate to `bytes` or a little more.
fn gzipped_folded(bytes: usize) -> Vec<u8> {
    let line = b"main;serve;parse 1\n";
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    for _ in 0..bytes.div_ceil(line.len()) {
        z.write_all(line).unwrap();
    }
    z.finish().unwrap()
}

#[test]
fn two_reads_in_one_process_keep_their_own_limits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stacks.folded.gz");
    // 2 MiB once inflated: past the small limit, within the large one.
    std::fs::write(&path, gzipped_folded(2 << 20)).unwrap();
    let small = ReadOptions {
        max_input: 1 << 20,
        ..Default::default()
    };
    let large = ReadOptions {
        max_input: 8 << 20,
        ..Default::default()
    };
    let refused = |opts: &ReadOptions| match read(Some(&path), opts) {
        Err(FormatError::TooLarge(t)) => t,
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("read past a limit of {} bytes", opts.max_input),
    };
    let t = refused(&small);
    assert_eq!(t.limit, 1 << 20);
    assert_eq!(
        FormatError::TooLarge(t).to_string(),
        format!(
            "'{}': the inflated data exceeds the input limit of 1 MiB (--max-input raises it)",
            path.display()
        )
    );
    // The large limit set after the small one changes nothing for the small one.
    let r = read(Some(&path), &large).unwrap();
    assert_eq!(r.collapsed.stats.kept, 110_377);
    assert_eq!(refused(&small).limit, 1 << 20);
    // And at the same time, on two threads.
    std::thread::scope(|s| {
        let a = s.spawn(|| refused(&small).limit);
        let b = s.spawn(|| read(Some(&path), &large).map(|_| ()));
        assert_eq!(a.join().unwrap(), 1 << 20);
        b.join().unwrap().unwrap();
    });
}
