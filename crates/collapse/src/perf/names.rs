//! Naming frames the way `stackcollapse-perf.pl` and inferno do: symbol offsets cut,
//! argument lists removed, `[module]` for unknown symbols, inline chains split.

pub(super) fn split_arrow(s: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    for p in memchr::memmem::find_iter(s, b"->") {
        if p >= start {
            out.push(&s[start..p]);
            start = p + 2;
        }
    }
    out.push(&s[start..]);
    out
}

/// Removes a trailing `+0x<hex>` symbol offset.
pub(super) fn strip_offset(sym: &[u8]) -> &[u8] {
    // The hex digits at the end, then `+0x` before them (`+`, `0`, `x`: only the `0` is
    // a hex digit, so the run of digits cannot swallow the marker).
    let mut p = sym.len();
    while p > 0 && sym[p - 1].is_ascii_hexdigit() {
        p -= 1;
    }
    if p >= 3 && &sym[p - 3..p] == b"+0x" {
        return &sym[..p - 3];
    }
    sym
}

/// The name of a frame: its symbol, tidied; or, for `[unknown]`, `[module]` (the module's
/// file name, without perf's ` (deleted)` mark).
pub(super) fn frame_name(module: &[u8], func: &[u8], pc: &[u8], include_addrs: bool) -> Vec<u8> {
    if func != b"[unknown]" && !func.is_empty() {
        let mut name = func.to_vec();
        tidy_generic(&mut name);
        return name;
    }
    let module = module.strip_suffix(b" (deleted)").unwrap_or(module);
    if func.is_empty() {
        // `7f1e2215d058  (/lib/libc.so)`: no symbol at all.
        if module.is_empty() {
            return b"[unknown]".to_vec();
        }
    }
    let base: &[u8] = match (module, include_addrs) {
        (b"[unknown]", true) | (b"", true) => b"unknown",
        (b"[unknown]", false) | (b"", false) => return b"[unknown]".to_vec(),
        (m, _) => &m[memchr::memrchr(b'/', m).map_or(0, |i| i + 1)..],
    };
    let mut res = Vec::with_capacity(base.len() + pc.len() + 6);
    res.push(b'[');
    res.extend_from_slice(base);
    if include_addrs {
        res.extend_from_slice(b" <");
        res.extend_from_slice(pc);
        res.push(b'>');
    }
    res.push(b']');
    res
}

/// Tidies a symbol the way stackcollapse-perf.pl and inferno do: `;` becomes `:` (it would
/// split the folded stack), and the argument list — the first parenthesis outside any
/// `<>`, `{}` or `[]` — is removed, except in Go method names (`net/http.(*Client).Do`)
/// and C++ `(anonymous namespace)`.
fn tidy_generic(name: &mut Vec<u8>) {
    for c in name.iter_mut() {
        if *c == b';' {
            *c = b':';
        }
    }
    let mut depth: i32 = 0;
    let mut after_dot = false;
    let mut cut = None;
    for (i, &c) in name.iter().enumerate() {
        match c {
            b'<' | b'{' | b'[' => depth += 1,
            b'>' | b'}' | b']' | b')' => depth -= 1,
            b'(' => {
                if depth == 0 && !after_dot && !name[i..].starts_with(b"(anonymous namespace)") {
                    cut = Some(i);
                    break;
                }
                depth += 1;
            }
            _ => {}
        }
        after_dot = c == b'.';
    }
    if let Some(i) = cut {
        name.truncate(i);
    }
}
