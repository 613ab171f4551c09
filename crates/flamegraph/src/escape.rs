//! Making arbitrary bytes safe for XML, and hand-written number formatting for the hot
//! path.
//!
//! Names come from symbol tables and may hold any byte. The SVG must be well-formed XML
//! whatever they hold, so every string goes through [`sanitize`] (invalid UTF-8 and the
//! characters XML 1.0 forbids even as references become U+FFFD) and then [`push_text`]
//! (markup characters become entities; tab, newline and carriage return become character
//! references so they survive attribute normalisation).
use std::borrow::Cow;

/// Whether `b` can be copied to XML text or an attribute value as is.
#[inline]
fn plain_byte(b: u8) -> bool {
    (0x20..0x7f).contains(&b) && !matches!(b, b'&' | b'<' | b'>' | b'"' | b'\'')
}

/// Whether every byte of `s` is plain printable ASCII without markup characters.
#[inline]
pub(crate) fn is_plain(s: &[u8]) -> bool {
    s.iter().all(|&b| plain_byte(b))
}

/// Whether XML 1.0 allows `c` in a document at all.
#[inline]
fn xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// Valid UTF-8 with every character XML 1.0 forbids replaced by U+FFFD.
pub(crate) fn sanitize(s: &[u8]) -> Cow<'_, str> {
    let text = String::from_utf8_lossy(s);
    if text.chars().all(xml_char) {
        return text;
    }
    Cow::Owned(
        text.chars()
            .map(|c| if xml_char(c) { c } else { '\u{FFFD}' })
            .collect(),
    )
}

/// Appends `s` (already sanitized) escaped for XML text and attribute values.
pub(crate) fn push_text(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let rep: &[u8] = match b {
            b'&' => b"&amp;",
            b'<' => b"&lt;",
            b'>' => b"&gt;",
            b'"' => b"&quot;",
            b'\'' => b"&#39;",
            b'\t' => b"&#9;",
            b'\n' => b"&#10;",
            b'\r' => b"&#13;",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(rep);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// Appends arbitrary bytes escaped for XML (sanitizing first).
pub(crate) fn push_bytes(out: &mut Vec<u8>, s: &[u8]) {
    if is_plain(s) {
        out.extend_from_slice(s);
    } else {
        push_text(out, &sanitize(s));
    }
}

/// Text for an XML comment: sanitized, with no `--` inside and no `-` at the end (XML
/// forbids both in comments, and there is no escape). Every dash that would form `--`
/// with the next one is followed by a space instead.
pub(crate) fn comment_text(s: &str) -> String {
    let s = sanitize(s.as_bytes());
    let mut out = String::with_capacity(s.len());
    let mut prev_dash = false;
    for c in s.chars() {
        if c == '-' && prev_dash {
            out.push(' ');
        }
        out.push(c);
        prev_dash = c == '-';
    }
    if prev_dash {
        out.push(' ');
    }
    out
}

/// A CSS string literal for a font family: quoted, with quotes, backslashes and anything
/// outside printable ASCII escaped, so a font name cannot end the declaration.
pub(crate) fn css_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in sanitize(s.as_bytes()).chars() {
        if c.is_ascii_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.' | ',') {
            out.push(c);
        } else {
            out.push_str(&format!("\\{:x} ", c as u32));
        }
    }
    out.push('"');
    out
}

/// Appends `v` with thousands separators (`1,234,567`), as flamegraph.pl prints counts.
pub(crate) fn push_thousands(out: &mut Vec<u8>, v: u64) {
    let mut buf = itoa::Buffer::new();
    let digits = buf.format(v).as_bytes();
    let n = digits.len();
    for (i, &d) in digits.iter().enumerate() {
        if i > 0 && (n - i).is_multiple_of(3) {
            out.push(b',');
        }
        out.push(d);
    }
}

/// Appends a non-negative value with exactly `decimals` decimals (rounded half away from
/// zero). Used for percentages; negative, infinite or NaN values print as 0.
pub(crate) fn push_fixed(out: &mut Vec<u8>, v: f64, decimals: u32) {
    let scale = 10u64.pow(decimals);
    let scaled = (v * scale as f64).round();
    let scaled = if scaled.is_finite() && scaled > 0.0 {
        scaled as u64
    } else {
        0
    };
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(scaled / scale).as_bytes());
    if decimals > 0 {
        out.push(b'.');
        let frac = scaled % scale;
        let s = buf.format(frac).as_bytes();
        for _ in s.len()..decimals as usize {
            out.push(b'0');
        }
        out.extend_from_slice(s);
    }
}

/// Formats a coordinate: as an integer when it is one, else with two decimals.
pub(crate) fn coord(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &[u8]) -> String {
        let mut v = Vec::new();
        push_bytes(&mut v, s);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn escapes_markup_and_control_characters() {
        assert_eq!(text(b"a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
        assert_eq!(text(b"x\x00y\x1bz\tq"), "x\u{FFFD}y\u{FFFD}z&#9;q");
        assert_eq!(text(b"\xff\xfe(anon)"), "\u{FFFD}\u{FFFD}(anon)");
        assert_eq!(text("\u{FFFF}é".as_bytes()), "\u{FFFD}é");
        assert_eq!(text(b"]]>"), "]]&gt;");
    }

    #[test]
    fn comments_never_hold_double_dashes() {
        assert_eq!(comment_text("a--b"), "a- -b");
        assert_eq!(comment_text("--->"), "- - ->");
        assert_eq!(comment_text("end-"), "end- ");
        assert!(!comment_text("------").contains("--"));
    }

    #[test]
    fn numbers() {
        let mut v = Vec::new();
        push_thousands(&mut v, 1234567);
        v.push(b' ');
        push_thousands(&mut v, 999);
        v.push(b' ');
        push_fixed(&mut v, 12.345678, 4);
        v.push(b' ');
        push_fixed(&mut v, 0.005, 2);
        v.push(b' ');
        push_fixed(&mut v, 100.0, 2);
        assert_eq!(
            String::from_utf8(v).unwrap(),
            "1,234,567 999 12.3457 0.01 100.00"
        );
        assert_eq!(css_string("Ver\"da};na"), "\"Ver\\22 da\\7d \\3b na\"");
        assert_eq!(coord(12.0), "12");
        assert_eq!(coord(12.5), "12.50");
    }
}
