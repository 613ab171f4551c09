//! Reading `perf script` lines without copying them: sample headers (anchored on their
//! timestamp) and stack lines (address, symbol, module).
use kiln_model::NO_TIME;

/// A parsed sample header line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header<'a> {
    /// The task's name.
    pub comm: &'a [u8],
    /// Process id (`None` when perf printed only the thread id, or `-1`).
    pub pid: Option<u32>,
    /// Thread id.
    pub tid: Option<u32>,
    /// The pid text as printed (`?` when absent), for `--pid` root frames.
    pub pid_text: &'a [u8],
    /// The tid text as printed.
    pub tid_text: &'a [u8],
    /// Timestamp in nanoseconds, or [`NO_TIME`].
    pub time: u64,
    /// The sample period, where printed.
    pub period: Option<u64>,
    /// A period was printed but does not fit in 64 bits (`period` is then `None`).
    pub period_too_large: bool,
    /// The event name without the trailing colon (`cpu-clock`, `sched:sched_switch`).
    pub event: &'a [u8],
    /// Text after the event: tracepoint arguments, or the frame of a sample without a
    /// call chain.
    pub trailing: &'a [u8],
}

/// Whether two byte strings of the same length are equal, eight bytes at a time without
/// a call (stack lines, symbols and task names are short, and compared millions of
/// times; `==` on slices calls memcmp).
#[inline]
pub(super) fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    debug_assert_eq!(n, b.len());
    let w = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
    if n >= 8 {
        let mut i = 0;
        while i + 8 < n {
            if w(a, i) != w(b, i) {
                return false;
            }
            i += 8;
        }
        w(a, n - 8) == w(b, n - 8)
    } else {
        a == b
    }
}

/// Finds newlines. `perf script` lines are short (50-150 bytes): the SSE2 searcher, built
/// once, finds them with less setup per line than `memchr::memchr`'s dispatch to AVX2
/// (10-15% less time to cut 100 MB into lines here).
#[derive(Clone, Copy)]
pub(super) struct Newlines {
    #[cfg(target_arch = "x86_64")]
    sse2: Option<memchr::arch::x86_64::sse2::memchr::One>,
}

impl Newlines {
    pub(super) fn new() -> Self {
        Newlines {
            #[cfg(target_arch = "x86_64")]
            sse2: memchr::arch::x86_64::sse2::memchr::One::new(b'\n'),
        }
    }

    /// The end of the line starting at `pos` (its newline, or the end of `data`).
    #[inline]
    pub(super) fn line_end(&self, data: &[u8], pos: usize) -> usize {
        let rest = &data[pos..];
        #[cfg(target_arch = "x86_64")]
        let found = match &self.sse2 {
            Some(one) => one.find(rest),
            None => memchr::memchr(b'\n', rest),
        };
        #[cfg(not(target_arch = "x86_64"))]
        let found = memchr::memchr(b'\n', rest);
        found.map_or(data.len(), |i| pos + i)
    }
}

#[inline]
pub(super) fn is_space(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

fn tokens(line: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < line.len() && is_space(line[i]) {
            i += 1;
        }
        if i >= line.len() {
            return None;
        }
        let s = i;
        while i < line.len() && !is_space(line[i]) {
            i += 1;
        }
        Some((s, &line[s..i]))
    })
}

fn is_time_token(t: &[u8]) -> bool {
    let Some(t) = t.strip_suffix(b":") else {
        return false;
    };
    let Some(dot) = memchr::memchr(b'.', t) else {
        return false;
    };
    dot > 0
        && dot + 1 < t.len()
        && t[..dot].iter().all(u8::is_ascii_digit)
        && t[dot + 1..].iter().all(u8::is_ascii_digit)
}

fn parse_time(t: &[u8]) -> u64 {
    let t = &t[..t.len() - 1];
    let dot = memchr::memchr(b'.', t).unwrap_or(t.len());
    let mut secs: u64 = 0;
    for &c in &t[..dot] {
        secs = secs.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
    }
    let mut frac: u64 = 0;
    let mut digits = 0;
    for &c in t[dot + 1..].iter().take(9) {
        frac = frac * 10 + u64::from(c - b'0');
        digits += 1;
    }
    while digits < 9 {
        frac *= 10;
        digits += 1;
    }
    secs.saturating_mul(1_000_000_000).saturating_add(frac)
}

fn parse_id(t: &[u8]) -> Option<Option<u32>> {
    if t == b"-1" {
        return Some(None);
    }
    parse_u64(t).and_then(|v| u32::try_from(v).ok()).map(Some)
}

/// Process and thread ids as parsed, and as printed.
type Ids<'a> = (Option<u32>, Option<u32>, &'a [u8], &'a [u8]);

/// `pid/tid`, `tid`, `-1/-1` → (pid, tid, pid text, tid text).
fn parse_ids(t: &[u8]) -> Option<Ids<'_>> {
    match memchr::memchr(b'/', t) {
        Some(s) => {
            let (p, tt) = (&t[..s], &t[s + 1..]);
            Some((parse_id(p)?, parse_id(tt)?, p, tt))
        }
        None => Some((None, parse_id(t)?, b"?", t)),
    }
}

fn is_cpu_token(t: &[u8]) -> bool {
    t.len() > 2
        && t[0] == b'['
        && t[t.len() - 1] == b']'
        && t[1..t.len() - 1].iter().all(u8::is_ascii_digit)
}

/// Parses a sample header line; `None` if `line` is not one.
pub fn parse_header(line: &[u8]) -> Option<Header<'_>> {
    // perf right-aligns the comm in 16 columns when there is no call chain: skip padding.
    let pad = line.iter().take_while(|&&c| c == b' ').count();
    let l = &line[pad..];
    if l.first().is_none_or(|&c| is_space(c)) {
        return None;
    }
    // Fast path: the timestamp is the first token that ends in `:` and reads
    // `secs.frac:`; find it from the colons instead of cutting the line into tokens.
    // Within the first 120 bytes fewer than 64 tokens precede it, so the general path
    // (which reads 64 tokens) would find the same one; beyond, take the general path.
    let mut from = 0;
    while let Some(q) = memchr::memchr(b':', &l[from..]).map(|q| q + from) {
        if q >= 120 {
            break;
        }
        if q + 1 == l.len() || is_space(l[q + 1]) {
            let mut s = q;
            while s > 0 && !is_space(l[s - 1]) {
                s -= 1;
            }
            if is_time_token(&l[s..=q]) {
                return header_around_time(l, s, q + 1);
            }
        }
        from = q + 1;
    }
    parse_header_tokens(line)
}

/// The token of `l` that ends where blanks before `end` begin: (start, token).
fn token_before(l: &[u8], end: usize) -> (usize, &[u8]) {
    let mut e = end;
    while e > 0 && is_space(l[e - 1]) {
        e -= 1;
    }
    let mut s = e;
    while s > 0 && !is_space(l[s - 1]) {
        s -= 1;
    }
    (s, &l[s..e])
}

/// The token of `l` after the blanks at `start`: (start, token).
fn token_after(l: &[u8], start: usize) -> (usize, &[u8]) {
    let mut s = start;
    while s < l.len() && is_space(l[s]) {
        s += 1;
    }
    let mut e = s;
    while e < l.len() && !is_space(l[e]) {
        e += 1;
    }
    (s, &l[s..e])
}

/// The header whose timestamp token is `l[ts..te]`: ids (and cpu) before it, then the comm;
/// period and event after it.
fn header_around_time(l: &[u8], ts: usize, te: usize) -> Option<Header<'_>> {
    let (s1, t1) = token_before(l, ts);
    if t1.is_empty() {
        return None;
    }
    let (ids_start, ids) = if is_cpu_token(t1) {
        token_before(l, s1)
    } else {
        (s1, t1)
    };
    // The ids need a comm before them.
    if ids.is_empty() || ids_start == 0 {
        return None;
    }
    let (pid, tid, pid_text, tid_text) = parse_ids(ids)?;
    let mut ce = ids_start;
    while ce > 0 && is_space(l[ce - 1]) {
        ce -= 1;
    }
    let comm = &l[..ce];
    let (mut s, mut t) = token_after(l, te);
    let mut period = None;
    let mut period_too_large = false;
    if !t.is_empty() && t.iter().all(u8::is_ascii_digit) {
        period = parse_u64(t);
        period_too_large = period.is_none();
        (s, t) = token_after(l, s + t.len());
    }
    let (event, trailing): (&[u8], &[u8]) = if t.ends_with(b":") {
        (&t[..t.len() - 1], trim(&l[s + t.len()..]))
    } else if t.is_empty() {
        (b"", b"")
    } else {
        (b"", trim(&l[s..]))
    };
    Some(Header {
        comm,
        pid,
        tid,
        pid_text,
        tid_text,
        time: parse_time(&l[ts..te]),
        period,
        period_too_large,
        event,
        trailing,
    })
}

/// [`parse_header`] the general way: every token (the first 64) at hand; used for
/// headers without a timestamp.
fn parse_header_tokens(line: &[u8]) -> Option<Header<'_>> {
    // perf right-aligns the comm in 16 columns when there is no call chain: skip padding.
    let pad = line.iter().take_while(|&&c| c == b' ').count();
    let line = &line[pad..];
    if line.first().is_none_or(|&c| is_space(c)) {
        return None;
    }
    // Anchor on the timestamp: everything before the pid token is the comm.
    // Header lines have a dozen tokens at most (tracepoint arguments aside): keep the
    // first 64 on the stack, no allocation per sample.
    let mut buf: [(usize, &[u8]); 64] = [(0, &[]); 64];
    let mut n = 0;
    for t in tokens(line).take(64) {
        buf[n] = t;
        n += 1;
    }
    let toks = &buf[..n];
    let (k, after) = match toks.iter().position(|(_, t)| is_time_token(t)) {
        Some(k) => (k, k + 1),
        None => {
            // No timestamp printed: the first all-digit token after the first word.
            let k = toks
                .iter()
                .skip(1)
                .position(|(_, t)| parse_ids(t).is_some())?
                + 1;
            let mut after = k + 1;
            if after < toks.len() && is_cpu_token(toks[after].1) {
                after += 1;
            }
            (after, after)
        }
    };
    let time = if after == k + 1 {
        parse_time(toks[k].1)
    } else {
        NO_TIME
    };
    let mut j = k.checked_sub(1)?;
    if is_cpu_token(toks[j].1) {
        j = j.checked_sub(1)?;
    }
    if j == 0 {
        return None; // no comm
    }
    let (pid, tid, pid_text, tid_text) = parse_ids(toks[j].1)?;
    let comm_end = toks[j].0;
    let mut ce = comm_end;
    while ce > 0 && is_space(line[ce - 1]) {
        ce -= 1;
    }
    let comm = &line[..ce];
    // After the time: [period] event: [trailing]
    let mut i = after;
    let mut period = None;
    let mut period_too_large = false;
    if i < toks.len() && toks[i].1.iter().all(u8::is_ascii_digit) {
        period = parse_u64(toks[i].1);
        period_too_large = period.is_none();
        i += 1;
    }
    let (event, trailing): (&[u8], &[u8]) = if i < toks.len() && toks[i].1.ends_with(b":") {
        let (s, t) = toks[i];
        let rest_start = s + t.len();
        (&t[..t.len() - 1], trim(&line[rest_start..]))
    } else {
        let rest = toks.get(i).map_or(line.len(), |(s, _)| *s);
        (b"", trim(&line[rest..]))
    };
    Some(Header {
        comm,
        pid,
        tid,
        pid_text,
        tid_text,
        time,
        period,
        period_too_large,
        event,
        trailing,
    })
}

/// A decimal number of ASCII digits, `None` if empty or above `u64::MAX`.
fn parse_u64(t: &[u8]) -> Option<u64> {
    if t.is_empty() || !t.iter().all(u8::is_ascii_digit) {
        return None;
    }
    t.iter().try_fold(0u64, |v, &c| {
        v.checked_mul(10)?.checked_add(u64::from(c - b'0'))
    })
}

/// Space, tab or carriage return: what [`trim`] removes.
#[inline]
fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t' || c == b'\r'
}

fn trim(s: &[u8]) -> &[u8] {
    let mut a = 0;
    while a < s.len() && is_blank(s[a]) {
        a += 1;
    }
    let mut b = s.len();
    while b > a && is_blank(s[b - 1]) {
        b -= 1;
    }
    &s[a..b]
}

/// Hexadecimal digits.
static HEX: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = (c as u8).is_ascii_hexdigit();
        c += 1;
    }
    t
};

/// A parsed stack line: (address, raw symbol, module).
pub fn parse_frame(line: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let line = trim(line);
    // The address: hex digits up to the first blank.
    let mut sp = 0;
    while sp < line.len() && HEX[usize::from(line[sp])] {
        sp += 1;
    }
    let (pc, rest) = match line.get(sp) {
        _ if sp == 0 => return None,
        None => (line, &b""[..]),
        Some(&c) if is_space(c) => (&line[..sp], trim(&line[sp..])),
        Some(_) => return None,
    };
    if rest.last() == Some(&b')') {
        // Fast path: the last `(` opens the module when it follows a space and nothing
        // but the final `)` closes inside it (module paths rarely hold parentheses).
        if let Some(i) = memchr::memrchr(b'(', rest) {
            let inner = &rest[i + 1..rest.len() - 1];
            if i > 0 && is_space(rest[i - 1]) && memchr::memchr(b')', inner).is_none() {
                return Some((pc, trim(&rest[..i]), inner));
            }
        }
        // The module is the last balanced parenthesised group.
        let mut depth = 0i32;
        for i in (0..rest.len()).rev() {
            match rest[i] {
                b')' => depth += 1,
                b'(' => {
                    depth -= 1;
                    if depth == 0 {
                        if i == 0 || is_space(rest[i - 1]) {
                            let module = &rest[i + 1..rest.len() - 1];
                            let sym = trim(&rest[..i]);
                            return Some((pc, sym, module));
                        }
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    // No module printed (`perf script -F ip,sym`).
    Some((pc, rest, b""))
}

pub(super) fn event_matches(event: &[u8], filter: &[u8]) -> bool {
    if event == filter {
        return true;
    }
    // `cycles:ppp` matches `cycles`.
    if let Some(c) = memchr::memrchr(b':', event) {
        let m = &event[c + 1..];
        if !m.is_empty() && m.len() <= 6 && m.iter().all(|c| b"ukhpPGHISDWe".contains(c)) {
            return &event[..c] == filter;
        }
    }
    false
}

/// The event of the first sample header in `data`.
pub(crate) fn first_event(data: &[u8]) -> Option<&[u8]> {
    let mut pos = 0;
    let mut in_sample = false;
    while pos < data.len() {
        let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
        let line = &data[pos..end];
        pos = end + 1;
        if line.is_empty() || line == b"\r" {
            in_sample = false;
            continue;
        }
        if in_sample || line[0] == b'#' {
            continue;
        }
        in_sample = true;
        if let Some(h) = parse_header(line) {
            if !h.event.is_empty() {
                return Some(h.event);
            }
        }
    }
    None
}
