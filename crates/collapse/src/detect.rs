use crate::Format;

/// Guesses the format of `data` from its first meaningful lines; `None` if it looks like
/// none of them. Reading a stored run or perf.data (binary) is the caller's business.
pub fn detect(data: &[u8]) -> Option<Format> {
    let head = &data[..data.len().min(64 * 1024)];
    let mut lines = head
        .split(|&c| c == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    while let Some(line) = lines.next() {
        if line.is_empty() || line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if line.starts_with(b"#") {
            continue;
        }
        if line.starts_with(b"Attaching ") || line.starts_with(b"@") {
            return Some(Format::Bpftrace);
        }
        if let Some(h) = crate::perf::parse_header(line) {
            // With a timestamp it is surely perf; without one, the next line must be a frame.
            let next_is_frame = lines.next().is_some_and(|n| {
                n.first().is_some_and(|c| *c == b' ' || *c == b'\t')
                    && crate::perf::parse_frame(n).is_some()
            });
            if h.time != kiln_model::NO_TIME || next_is_frame {
                return Some(Format::Perf);
            }
        }
        let has_count = line
            .rsplit(|&c| c == b' ')
            .next()
            .is_some_and(|t| !t.is_empty() && t.iter().all(|c| c.is_ascii_digit() || *c == b'.'));
        if has_count && line.contains(&b' ') {
            return Some(Format::Folded);
        }
        return None;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects() {
        assert_eq!(detect(b"a;b 1\n"), Some(Format::Folded));
        assert_eq!(
            detect(b"# x\nswapper     0 [000] 158665.570607: cpu-clock: \n  ffff f (k)\n"),
            Some(Format::Perf)
        );
        assert_eq!(
            detect(b"Attaching 1 probe...\n@[\n"),
            Some(Format::Bpftrace)
        );
        assert_eq!(detect(b"hello world\n"), None);
        assert_eq!(detect(b""), None);
    }
}
