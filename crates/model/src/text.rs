//! Untrusted text on a terminal: one sanitiser for everything kiln prints that came from
//! outside — a server's answer, an HTTP or OTLP error body, a file's contents, a stored
//! run's name, note or tags (a shared PostgreSQL store and an imported `.kiln` file are
//! other people's input).
//!
//! Why: a terminal obeys the bytes it is sent. `ESC ] 2 ; … BEL` retitles the window,
//! `ESC [ 2 J` clears it, a carriage return or a U+202E RIGHT-TO-LEFT OVERRIDE makes a
//! line read as something else, and a newline inside a name breaks a table. So nothing
//! from outside is printed raw:
//!
//! * control characters (C0, DEL, C1) become visible escapes: `\n`, `\r`, `\t`, `\x1b`,
//!   `\x7f`, `\u{9b}`;
//! * invisible formatting characters that reorder or hide text (bidirectional controls
//!   U+202A–U+202E and U+2066–U+2069, U+200B–U+200F, U+2028/U+2029, U+061C, U+FEFF)
//!   become `\u{202e}`…;
//! * bytes that are not UTF-8 ([`clean_bytes`]) become `\xff`;
//! * a long text is cut, and says how long it was: `aaaa… [100000 chars]` (`[… bytes]`
//!   for bytes).
//!
//! ```
//! use kiln_model::text::{clean, clean_cut};
//! assert_eq!(clean("esc\x1b]2;PWNED\x07"), "esc\\x1b]2;PWNED\\x07");
//! assert_eq!(clean("a\u{202e}b"), "a\\u{202e}b");
//! assert_eq!(clean_cut(&"x".repeat(20), 8), "xxxxxxx… [20 chars]");
//! ```
//!
//! Data written to a file or piped (folded stacks, a pprof file) is never touched: the
//! model keeps names as bytes; this is for what a person reads.
use std::borrow::Cow;
use std::fmt::Write as _;

/// How many characters of an outside text a message shows by default: a server's
/// error body, a stored note.
pub const MAX_SHOWN: usize = 300;

/// Whether `c` is shown escaped: a control character or an invisible character that
/// reorders or hides text.
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
}

fn escape(c: char, out: &mut String) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// `s` with every control or invisible formatting character shown as a visible escape;
/// borrowed when there is none.
pub fn clean(s: &str) -> Cow<'_, str> {
    clean_with(s, usize::MAX, false)
}

/// [`clean`], cut to `max` characters (escapes included) with the text's whole length
/// added: `aaaa… [100000 chars]`.
pub fn clean_cut(s: &str, max: usize) -> Cow<'_, str> {
    clean_with(s, max, false)
}

/// [`clean`] for text of several lines (an error and its causes): newlines are kept,
/// everything else is escaped as [`clean`] does.
pub fn clean_lines(s: &str) -> Cow<'_, str> {
    clean_with(s, usize::MAX, true)
}

/// Bytes from outside (a name as a binary stored it, a server's body): UTF-8 shown as
/// [`clean_cut`] shows it, other bytes as `\xNN`; a cut text gives its length in bytes.
pub fn clean_bytes(b: &[u8], max: usize) -> String {
    let mut out = String::with_capacity(b.len().min(max.saturating_add(16)));
    push_clean(units(b), max, false, &mut out, || {
        format!("{} bytes", b.len())
    });
    out
}

/// A name that came as bytes (a process's `comm`, a thread's name) as text to keep: its
/// UTF-8 as it is and every byte that is not UTF-8 as `\xNN`, so that no byte is lost and
/// the name can be stored, compared and matched as text. Control characters stay: what
/// shows the name escapes them ([`clean`]).
///
/// ```
/// use kiln_model::text::from_bytes;
/// assert_eq!(from_bytes(b"spin\xff"), "spin\\xff");
/// assert_eq!(from_bytes("a\u{441}".as_bytes()), "a\u{441}");
/// ```
pub fn from_bytes(b: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(b) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(b.len() + 8);
    for chunk in b.utf8_chunks() {
        out.push_str(chunk.valid());
        for x in chunk.invalid() {
            let _ = write!(out, "\\x{x:02x}");
        }
    }
    Cow::Owned(out)
}

/// `s` as one word of a command kiln suggests (`kiln compare NAME …`): as it is when a
/// shell reads it back unchanged, else single-quoted (a `'` inside as `'\''`), so that a
/// name holding spaces, `;`, `$(…)` or quotes is pasted as the name, never run; then
/// shown as [`clean`] shows it.
///
/// ```
/// use kiln_model::text::shell_word;
/// assert_eq!(shell_word("before"), "before");
/// assert_eq!(shell_word("a b; rm -rf ~"), "'a b; rm -rf ~'");
/// assert_eq!(shell_word("it's"), r"'it'\''s'");
/// ```
pub fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-.,/:@%+=".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        return clean(s).into_owned();
    }
    shell_quoted(s)
}

/// [`shell_word`], always single-quoted (`'postgres://…'`).
pub fn shell_quoted(s: &str) -> String {
    clean(&format!("'{}'", s.replace('\'', r"'\''"))).into_owned()
}

/// What a text is made of: characters, and bytes that are not UTF-8.
#[derive(Clone, Copy)]
enum Unit {
    Char(char),
    Byte(u8),
}

fn units(b: &[u8]) -> impl Iterator<Item = Unit> + '_ {
    b.utf8_chunks().flat_map(|chunk| {
        chunk
            .valid()
            .chars()
            .map(Unit::Char)
            .chain(chunk.invalid().iter().map(|&x| Unit::Byte(x)))
    })
}

fn clean_with(s: &str, max: usize, keep_newlines: bool) -> Cow<'_, str> {
    let needs = s
        .chars()
        .any(|c| is_hidden(c) && !(keep_newlines && c == '\n'));
    if !needs && (s.len() <= max || s.chars().count() <= max) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len().min(max.saturating_mul(4)) + 16);
    push_clean(
        s.chars().map(Unit::Char),
        max,
        keep_newlines,
        &mut out,
        || format!("{} chars", s.chars().count()),
    );
    Cow::Owned(out)
}

fn push_clean(
    text: impl Iterator<Item = Unit>,
    max: usize,
    keep_newlines: bool,
    out: &mut String,
    length: impl FnOnce() -> String,
) {
    let start = out.len();
    let mut shown = 0usize;
    // Where the text would end if cut here, leaving room for the ellipsis.
    let mut cut_at = start;
    let mut piece = String::new();
    for u in text {
        piece.clear();
        match u {
            Unit::Byte(x) => {
                let _ = write!(piece, "\\x{x:02x}");
            }
            Unit::Char('\n') if keep_newlines => piece.push('\n'),
            Unit::Char(c) if is_hidden(c) => escape(c, &mut piece),
            Unit::Char(c) => piece.push(c),
        }
        let n = piece.chars().count();
        if shown.saturating_add(n) > max {
            out.truncate(cut_at);
            let _ = write!(out, "… [{}]", length());
            return;
        }
        shown += n;
        out.push_str(&piece);
        if shown < max {
            cut_at = out.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_a_terminal_would_obey() {
        assert_eq!(
            clean("esc\x1b]2;PWNED\x07\x1b[31mred"),
            "esc\\x1b]2;PWNED\\x07\\x1b[31mred"
        );
        assert_eq!(clean("a\nb\r\tc\x7f"), "a\\nb\\r\\tc\\x7f");
        assert_eq!(clean("csi\u{9b}2J"), "csi\\u{9b}2J");
        assert_eq!(
            clean("note \u{202e}txt.exe\u{2066}"),
            "note \\u{202e}txt.exe\\u{2066}"
        );
        assert_eq!(
            clean("zero\u{200b}width\u{feff}"),
            "zero\\u{200b}width\\u{feff}"
        );
        assert!(matches!(clean("plain name: é, 名前"), Cow::Borrowed(_)));
        assert_eq!(clean_lines("one\ntwo\x1b"), "one\ntwo\\x1b");
    }

    #[test]
    fn cuts_long_texts_and_says_how_long() {
        let long = "n".repeat(100_000);
        let c = clean_cut(&long, 40);
        assert_eq!(c, format!("{}… [100000 chars]", "n".repeat(39)));
        assert!(c.starts_with("nnnn"));
        assert_eq!(clean_cut("short", 40), "short");
        assert_eq!(clean_cut("exactly8", 8), "exactly8");
        // Escapes count towards the limit and are never split.
        let c = clean_cut("\x1b\x1b\x1b\x1b", 9);
        assert_eq!(c, "\\x1b\\x1b… [4 chars]");
    }

    #[test]
    fn bytes_that_are_not_utf8() {
        assert_eq!(clean_bytes(b"ok\xff\xfe\x1b", 100), "ok\\xff\\xfe\\x1b");
        assert_eq!(clean_bytes("é".as_bytes(), 100), "é");
        assert_eq!(clean_bytes(&[b'a'; 50], 10), "aaaaaaaaa… [50 bytes]");
        // Kept as text: the cut character's bytes escaped, the controls left for `clean`.
        let mut comm = "aсервер-".as_bytes().to_vec();
        comm.push(0xd0);
        assert_eq!(from_bytes(&comm), "aсервер-\\xd0");
        assert_eq!(from_bytes(b"t\x1b\xff"), "t\x1b\\xff");
        assert_eq!(clean(&from_bytes(b"t\x1b\xff")), "t\\x1b\\xff");
        assert!(matches!(from_bytes(b"plain"), Cow::Borrowed(_)));
    }
}
