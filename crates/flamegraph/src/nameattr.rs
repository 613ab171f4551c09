//! `--nameattr`: extra attributes, a link or a custom tooltip for named functions.
use crate::FlamegraphError;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

/// Attributes for the frames of one function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameAttrs {
    /// Replaces the tooltip text (`title=`).
    pub title: Option<String>,
    /// Makes the frame a link (`href=`); the frame is wrapped in `<a>` instead of `<g>`.
    pub href: Option<String>,
    /// Link target (`target=`, default `_top` as flamegraph.pl).
    pub target: Option<String>,
    /// Other attributes of the frame's group (`id=`, `class=`, `style=`, …).
    pub attrs: Vec<(String, String)>,
}

/// The `--nameattr` file: one function name per line, a tab, then tab-separated
/// `name=value` pairs, as flamegraph.pl reads it.
///
/// Values are escaped on output. Unlike flamegraph.pl, the raw-markup keys `g_extra` and
/// `a_extra` and event-handler attributes (`on…`) are refused: they would let a file
/// inject markup or script into the SVG.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameAttrs {
    map: HashMap<Vec<u8>, FrameAttrs>,
}

fn valid_attr_name(n: &str) -> bool {
    let mut chars = n.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'))
        && !n.to_ascii_lowercase().starts_with("on")
        && !matches!(n, "x" | "y" | "width" | "height" | "fill" | "xmlns")
        && !n.starts_with("xmlns:")
        && !n.starts_with("fg:")
}

impl NameAttrs {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the file format; `path` names the source in errors.
    pub fn read(reader: impl BufRead, path: &Path) -> Result<NameAttrs, FlamegraphError> {
        let mut map: HashMap<Vec<u8>, FrameAttrs> = HashMap::new();
        crate::lines::for_each_line(reader, path, |line, bad| {
            let tab = memchr::memchr(b'\t', line)
                .ok_or_else(|| bad("expected FUNCTION<TAB>name=value"))?;
            let (func, rest) = (&line[..tab], &line[tab + 1..]);
            let rest =
                std::str::from_utf8(rest).map_err(|_| bad("attributes are not valid UTF-8"))?;
            let entry = map.entry(func.to_vec()).or_default();
            for pair in rest.split('\t').filter(|p| !p.is_empty()) {
                let (name, value) = pair
                    .split_once('=')
                    .ok_or_else(|| bad("expected name=value"))?;
                let value = value
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .unwrap_or(value)
                    .to_string();
                match name {
                    "title" => entry.title = Some(value),
                    "href" => entry.href = Some(value),
                    "target" => entry.target = Some(value),
                    "g_extra" | "a_extra" => {
                        return Err(bad("g_extra/a_extra (raw markup) are not supported; give each attribute as name=value"))
                    }
                    n if valid_attr_name(n) => {
                        entry.attrs.retain(|(k, _)| k != n);
                        entry.attrs.push((n.to_string(), value));
                    }
                    _ => return Err(bad("invalid attribute name (event handlers and drawing attributes are not allowed)")),
                }
            }
            Ok(())
        })?;
        Ok(NameAttrs { map })
    }

    /// Reads `path`.
    pub fn from_file(path: &Path) -> Result<NameAttrs, FlamegraphError> {
        let f = std::fs::File::open(path).map_err(|source| FlamegraphError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        NameAttrs::read(std::io::BufReader::new(f), path)
    }

    /// The attributes of `func`.
    pub fn get(&self, func: &[u8]) -> Option<&FrameAttrs> {
        self.map.get(func)
    }

    /// Sets the attributes of `func`.
    pub fn insert(&mut self, func: &[u8], attrs: FrameAttrs) {
        self.map.insert(func.to_vec(), attrs);
    }

    /// Whether no function has attributes.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_refuses() {
        let p = Path::new("attrs.txt");
        let a = NameAttrs::read(
            &b"main\ttitle=\"the main\"\thref=http://x/?a=1&b=2\tclass=hot\n"[..],
            p,
        )
        .unwrap();
        let m = a.get(b"main").unwrap();
        assert_eq!(m.title.as_deref(), Some("the main"));
        assert_eq!(m.href.as_deref(), Some("http://x/?a=1&b=2"));
        assert_eq!(m.attrs, vec![("class".to_string(), "hot".to_string())]);
        let e = NameAttrs::read(&b"main\tonclick=alert(1)\n"[..], p).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("attrs.txt:1: invalid attribute name"),
            "{e}"
        );
        let e = NameAttrs::read(&b"ok\tid=a\nnotab\n"[..], p).unwrap_err();
        assert!(
            e.to_string().starts_with("attrs.txt:2: expected FUNCTION"),
            "{e}"
        );
    }
}
