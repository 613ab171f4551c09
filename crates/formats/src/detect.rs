//! Text format detection: which of the text formats (perf script, folded, bpftrace) an
//! input is, guessed from its first meaningful lines.
use crate::Format;
use kiln_collapse::perf::{parse_frame, parse_header};

/// At most this many meaningful lines are looked at.
const LINES: usize = 200;

/// Guesses the format of `data` (usually the first 64 KiB of an input) from its first
/// meaningful lines; `None` if it looks like none of them. Reading a stored run or
/// perf.data (binary) is the caller's business.
///
/// Several lines vote, so one malformed line (a negative count, a damaged header) does
/// not make a whole file unreadable: it is left to the reader, which counts it as one bad
/// line. `perf script` headers with a timestamp and bpftrace map entries are distinctive;
/// folded lines are what is left: a stack and a count, or failing that a line of frames
/// (which is all a long single line cut at 64 KiB shows).
pub(crate) fn detect(data: &[u8]) -> Option<Format> {
    let head = &data[..data.len().min(64 * 1024)];
    let mut lines: Vec<&[u8]> = head
        .split(|&c| c == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .collect();
    // The last piece has no newline after it: it may be cut. Use it only if there is
    // nothing else.
    let partial = lines.pop().unwrap_or_default();
    let meaningful =
        |l: &&[u8]| !l.is_empty() && !l.iter().all(u8::is_ascii_whitespace) && !l.starts_with(b"#");
    if !lines.iter().any(meaningful) {
        lines = vec![partial];
    }
    let (mut perf, mut bpf, mut folded, mut folded_like) = (0usize, 0usize, 0usize, 0usize);
    let mut seen = 0;
    for (i, line) in lines.iter().enumerate() {
        if !meaningful(line) {
            continue;
        }
        seen += 1;
        if seen > LINES {
            break;
        }
        if line.starts_with(b"Attaching ") || line.starts_with(b"@") {
            bpf += 2;
            continue;
        }
        if line.first().is_some_and(|c| *c == b'\t') && parse_frame(line).is_some() {
            perf += 1;
            continue;
        }
        if let Some(h) = parse_header(line) {
            // With a timestamp it is surely perf; without one, the next line must be a
            // frame.
            let next_is_frame = lines.get(i + 1).is_some_and(|n| {
                n.first().is_some_and(|c| *c == b' ' || *c == b'\t') && parse_frame(n).is_some()
            });
            if h.time != kiln_model::NO_TIME || next_is_frame {
                perf += 2;
                continue;
            }
        }
        if line.ends_with(b"]") || memchr::memmem::rfind(line, b"]:").is_some() {
            // The end of a bpftrace entry: `, comm]: 12`.
            if line.starts_with(b",") || line.starts_with(b"]") {
                bpf += 1;
                continue;
            }
        }
        let last = line.rsplit(|&c| c == b' ').next().unwrap_or_default();
        let numeric = !last.is_empty()
            && last.iter().all(|c| c.is_ascii_digit() || *c == b'.')
            && last.iter().any(u8::is_ascii_digit);
        if numeric && line.contains(&b' ') {
            folded += 1;
        } else if last
            .strip_prefix(b"-")
            .is_some_and(|n| !n.is_empty() && n.iter().all(|c| c.is_ascii_digit() || *c == b'.'))
            || line.contains(&b';')
        {
            // A negative count, or frames without a count (yet): folded, malformed.
            folded_like += 1;
        }
    }
    if bpf > 0 && bpf >= perf && bpf >= folded {
        Some(Format::Bpftrace)
    } else if perf > 0 && perf >= folded {
        Some(Format::PerfScript)
    } else if folded > 0 || folded_like > 0 {
        Some(Format::Folded)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects() {
        assert_eq!(detect(b"a;b 1\n"), Some(Format::Folded));
        assert_eq!(
            detect(b"# x\nswapper     0 [000] 158665.570607: cpu-clock: \n  ffff f (k)\n"),
            Some(Format::PerfScript)
        );
        assert_eq!(
            detect(b"Attaching 1 probe...\n@[\n"),
            Some(Format::Bpftrace)
        );
        assert_eq!(detect(b"hello world\n"), None);
        assert_eq!(detect(b""), None);
    }

    #[test]
    fn one_bad_line_does_not_decide() {
        // A first line with a negative count, or damaged, among folded lines.
        assert_eq!(detect(b"main;a -5\nmain;b 3\n"), Some(Format::Folded));
        assert_eq!(
            detect(b"garbage\nmain;b 3\nmain;c 4\n"),
            Some(Format::Folded)
        );
        // A damaged first header among perf samples.
        let perf = b"prog 12 [000] garbage\n\t1234 f (/bin/x)\n\nprog 12 [000] 1.000002: 7 cpu-clock:\n\t1234 g (/bin/x)\n";
        assert_eq!(detect(perf), Some(Format::PerfScript));
        // A bpftrace dump whose first entry is odd.
        assert_eq!(
            detect(b"@[\n    f+1\n    main+2\n]: x\n@[\n    g+1\n]: 3\n"),
            Some(Format::Bpftrace)
        );
    }

    #[test]
    fn a_long_single_line_cut_at_64_kib_is_folded() {
        let mut line = Vec::new();
        while line.len() < 10 << 20 {
            line.extend_from_slice(b"some_function_name;");
        }
        line.extend_from_slice(b"leaf 42\n");
        assert_eq!(detect(&line[..64 * 1024]), Some(Format::Folded));
        assert_eq!(detect(&line), Some(Format::Folded));
        // Text with no frames and no count is still nothing kiln reads.
        assert_eq!(detect(&[b'x'; 70_000]), None);
    }
}
