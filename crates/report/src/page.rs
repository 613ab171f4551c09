//! The HTML around the report: head (charset, a Content-Security-Policy that allows no
//! request), the data (base64 of JSON, deflated when large), the embedded viewers, and
//! the two scripts (the report's, then the viewer's).
use crate::{ReportError, ReportOptions, REPORT_JS};
use kiln_model::Profile;
use kiln_viewer::HtmlOptions;
use serde::Serialize;
use std::io::Write;

/// No request of any kind: inline scripts and styles, images from data and blob URLs
/// (the viewer's PNG export), nothing else.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; base-uri 'none'; form-action 'none'";

/// One flame graph viewer of the page.
pub(crate) struct Viewer<'a> {
    /// Its key (URL prefix, mount name).
    pub key: String,
    /// One profile, or two for a diff.
    pub profiles: Vec<&'a Profile>,
    pub opts: HtmlOptions,
}

impl<'a> Viewer<'a> {
    /// A differential flame graph of `before` → `after` under a section heading (h2):
    /// `labels` name the sides, `sources` their runs, and only the `marked` functions are
    /// coloured (`None`: every frame). The comparison's and the trend's pages both use it.
    pub fn diff(
        key: String,
        (before, after): (&'a Profile, &'a Profile),
        title: String,
        labels: (String, String),
        sources: Vec<String>,
        marked: Option<Vec<String>>,
        opts: &ReportOptions,
    ) -> Viewer<'a> {
        Viewer {
            key,
            profiles: vec![before, after],
            opts: HtmlOptions {
                title,
                diff_labels: labels,
                compress_above: opts.compress_above,
                sources,
                heading_level: Some(3),
                diff_marked: marked,
                ..Default::default()
            },
        }
    }
}

/// The page's data as the report's script reads it: `{kind, version, title, origin,
/// <kind>: the model}`, one wrapper for every kind of page (`run`, `compare`, `trend`).
struct Data<'a, T> {
    kind: &'static str,
    title: &'a str,
    origin: u64,
    model: &'a T,
}

impl<T: Serialize> Serialize for Data<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("kind", self.kind)?;
        m.serialize_entry("version", &1)?;
        m.serialize_entry("title", self.title)?;
        m.serialize_entry("origin", &self.origin)?;
        m.serialize_entry(self.kind, self.model)?;
        m.end()
    }
}

/// Writes the page of `kind` (`run`, `compare`, `trend`): `model` is the report's model,
/// `origin` the page's time origin on the profiles' clock (ns), shared with every viewer.
pub(crate) fn write<T: Serialize + Sync>(
    title: &str,
    kind: &'static str,
    model: &T,
    viewers: &[Viewer<'_>],
    origin: Option<u64>,
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let data = &Data {
        kind,
        title,
        origin: origin.unwrap_or(0),
        model,
    };
    // The page's parts are encoded and compressed side by side (most of the time of a long
    // run's report is deflating its samples), then written in order.
    let (data, embedded) = std::thread::scope(|s| {
        let data = s.spawn(|| -> Result<(Vec<u8>, bool), ReportError> {
            let json = serde_json::to_vec(data)?;
            let compressed = json.len() > opts.compress_above;
            Ok(if compressed {
                (kiln_viewer::deflate(&json)?, true)
            } else {
                (json, false)
            })
        });
        let embedded: Vec<_> = viewers
            .iter()
            .map(|v| s.spawn(|| kiln_viewer::Embedded::new(&v.profiles, &v.opts, &v.key, origin)))
            .collect();
        (
            joined(data.join()),
            embedded
                .into_iter()
                .map(|h| joined(h.join()))
                .collect::<Vec<_>>(),
        )
    });
    let (bytes, compressed) = data?;
    out.write_all(b"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n")?;
    writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"
    )?;
    out.write_all(b"<meta name=\"referrer\" content=\"no-referrer\">\n")?;
    out.write_all(b"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")?;
    out.write_all(b"<title>")?;
    out.write_all(kiln_viewer::escape_html(title).as_bytes())?;
    out.write_all(b"</title></head>\n<body>\n<noscript>This kiln report needs JavaScript (it runs offline, from this file only).</noscript>\n")?;
    out.write_all(b"<div id=\"kiln-report-root\"></div>\n")?;
    writeln!(
        out,
        "<script id=\"kiln-report-data\" type=\"application/octet-stream\" data-compressed=\"{}\">",
        u8::from(compressed)
    )?;
    kiln_viewer::base64_into(&bytes, out)?;
    out.write_all(b"</script>\n")?;
    for e in embedded {
        e?.write(out)?;
    }
    out.write_all(b"<script>\n")?;
    out.write_all(REPORT_JS.as_bytes())?;
    out.write_all(b"</script>\n")?;
    if !viewers.is_empty() {
        kiln_viewer::write_viewer_script(out)?;
    }
    out.write_all(b"</body></html>\n")?;
    out.flush()?;
    Ok(())
}

/// A scoped thread's result (its panic carried on).
fn joined<T>(r: std::thread::Result<T>) -> T {
    r.unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// A viewer key from an event name: letters, digits, `-` and `_`, unique on the page.
pub(crate) fn key_for(event: &str, taken: &[String]) -> String {
    let mut k: String = event
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    if k.is_empty() {
        k.push_str("profile");
    }
    let base = k.clone();
    let mut n = 2;
    while taken.contains(&k) {
        k = format!("{base}-{n}");
        n += 1;
    }
    k
}

/// The viewer palette of an event (flamegraph.pl's habits: `io` for off-CPU time, `mem`
/// for memory events).
pub(crate) fn palette_for(event: &str) -> &'static str {
    let e = event.to_ascii_lowercase();
    if e.contains("offcpu")
        || e.contains("off-cpu")
        || e.contains("sched_switch")
        || e == "runnable"
    {
        "io"
    } else if e.contains("fault") || e.contains("mmap") || e.contains("brk") || e.contains("alloc")
    {
        "mem"
    } else {
        "hot"
    }
}

/// UTC date and time of a Unix time in ms (`2026-11-23 16:18:00 UTC`).
pub(crate) fn date(ms: i64) -> String {
    format!("{} UTC", kiln_os::clock::utc_date_time(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_dates_palettes() {
        assert_eq!(key_for("cpu-clock", &[]), "cpu-clock");
        assert_eq!(key_for("sched:sched_switch", &[]), "sched_sched_switch");
        assert_eq!(key_for("x", &["x".into()]), "x-2");
        assert_eq!(key_for("", &[]), "profile");
        assert_eq!(date(1_795_449_600_000), "2026-11-23 16:00:00 UTC");
        assert_eq!(palette_for("offcpu"), "io");
        assert_eq!(palette_for("page-faults"), "mem");
        assert_eq!(palette_for("cpu-clock"), "hot");
    }
}
