//! # kiln-viewer: flame graphs as one self-contained HTML file
//!
//! SVG flame graphs do not scale in a browser: every frame is a DOM element, so a 12 MB
//! SVG (55k frames) takes seconds to show and a 384 MB one (1.8M frames) never renders.
//! This crate writes an HTML file that carries the profile as compact typed arrays
//! (deflate-compressed, base64) and a canvas viewer (the TypeScript in `web/`, built into
//! `web/dist/viewer.js` and embedded here with `include_str!`). The file works offline
//! from `file://`, draws only what is on screen and wider than a pixel, and offers zoom,
//! search, a function table, sandwich, transforms, a time-range strip, a time-ordered
//! flame chart of recordings, a differential view, and export of the view (SVG, PNG,
//! folded). Numbers carry the profile's unit ([`kiln_model::Quantity`]): CPU time,
//! off-CPU time, bytes, events, or what `--countname` names.
//!
//! A page may hold several viewers (the run report's CPU, off-CPU and memory graphs):
//! each owns the URL keys under its prefix and they share the page's time window; see
//! `web/src/main.ts` and `web/README.md`.
//!
//! ```text
//! kiln flamegraph stacks.folded -o flame.html
//! kiln diff before.folded after.folded -o diff.html
//! ```
//!
//! ## Design constraints
//!
//! * **Nothing from the profile is ever markup.** Names reach the page only as canvas
//!   `fillText` or DOM `textContent`. The data sits base64-encoded in a
//!   `<script type="application/octet-stream">`, whose alphabet cannot contain `<`, and the
//!   metadata is JSON with `<`, `>` and `&` escaped, so no name can close the script element.
//! * **Invalid UTF-8 is shown, not rejected.** Names are decoded lossily (U+FFFD).
//! * **The viewer is built by `web/build.mjs`, not by cargo**, so `cargo build` needs no
//!   npm; CI checks that the committed bundle matches its sources (`npm run check-dist`).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod encode;
mod error;

pub use encode::{base64_into, MAGIC, VERSION};
pub use error::ViewerError;

use flate2::write::ZlibEncoder;
use flate2::Compression;
use kiln_model::{Profile, Quantity};
use std::io::Write;

/// The built viewer (from `web/`); see the crate docs.
pub const VIEWER_JS: &str = include_str!("../../../web/dist/viewer.js");

/// Options of the HTML viewer.
#[derive(Clone, Debug)]
pub struct HtmlOptions {
    /// Title shown in the page header and the browser tab. Default: `Flame Graph`.
    pub title: String,
    /// A second header line (command, host, date). Default: none.
    pub subtitle: Option<String>,
    /// Initial palette, one of flamegraph.pl's: `hot`, `mem`, `io`, `wakeup`, `chain`,
    /// `java`, `js`, `perl`, `red`, `green`, `blue`, `aqua`, `yellow`, `purple`, `orange`.
    /// Default: `hot`.
    pub palette: String,
    /// Start as an icicle graph (roots at the top). Default: false.
    pub inverted: bool,
    /// Start in left-heavy order (widest first) instead of alphabetical. Default: false.
    pub left_heavy: bool,
    /// Profiles whose encoding exceeds this many bytes are deflate-compressed (the browser
    /// inflates them with `DecompressionStream`). Default: 64 KiB.
    pub compress_above: usize,
    /// Names of the two sides of a differential view. Default: `before`, `after`.
    pub diff_labels: (String, String),
    /// What the counts are (`--countname`), overriding the unit the profile carries:
    /// a time or size unit (`ns`, `us`, `ms`, `s`, `bytes`, `KiB`) makes the viewer scale
    /// numbers to µs/ms/s or KiB/MiB, any other word (`calls`) is shown after plain counts.
    /// Default: none (the profile's own unit).
    pub count_name: Option<String>,
    /// Where each profile came from (file names), shown in the header and the diff
    /// legend; one per profile, or empty. Default: empty.
    pub sources: Vec<String>,
    /// Open on the time-ordered flame chart (`--flamechart`) when the profile has
    /// timestamps. Default: false (the merged flame graph).
    pub flamechart: bool,
    /// In a differential view, colour only the frames of these functions (those whose
    /// change is beyond noise, as `kiln compare` judges them) and draw the others as
    /// unchanged. Default: `None` (every frame coloured).
    pub diff_marked: Option<Vec<String>>,
    /// Embedded in a page: the level of the viewer's title heading (`h1`–`h6`), so that it
    /// sits under the page's own headings. Written on the element the viewer draws in,
    /// so it holds whichever of the page's scripts runs first. Default: `None` (1).
    pub heading_level: Option<u8>,
    /// What kind of work each frame is (the run report's categories,
    /// `kiln_report::categories::frame_categories`): the viewer then offers "by category"
    /// colouring with a legend, and starts with it. Default: `None` (palettes only).
    pub categories: Option<serde_json::Value>,
    /// The machine's CPU count (a run's): the thread tracks' CPU scale stops there (a
    /// process cannot use more). Default: `None` (unknown: the tracks' threads bound it).
    pub cpus: Option<u32>,
    /// The samples' times are instants, whatever their weights: a time window holds the
    /// samples stamped in it, wholly (as `kiln collapse RUN@START-END` cuts a profile),
    /// rather than the part of each sample's span inside it. Default: false (a sample
    /// weighing time covers [t, t + weight]).
    pub instants: bool,
}

impl Default for HtmlOptions {
    fn default() -> Self {
        HtmlOptions {
            title: "Flame Graph".to_string(),
            subtitle: None,
            palette: "hot".to_string(),
            inverted: false,
            left_heavy: false,
            compress_above: 64 * 1024,
            diff_labels: ("before".to_string(), "after".to_string()),
            count_name: None,
            sources: Vec::new(),
            flamechart: false,
            diff_marked: None,
            heading_level: None,
            categories: None,
            cpus: None,
            instants: false,
        }
    }
}

/// The palettes [`HtmlOptions::palette`] accepts.
pub const PALETTES: &[&str] = &[
    "hot", "mem", "io", "wakeup", "chain", "java", "js", "perl", "red", "green", "blue", "aqua",
    "yellow", "purple", "orange",
];

/// Writes a viewer of `profile` as one HTML file to `out`.
///
/// Write through [`kiln_os::io::AtomicFile`] so a failure leaves no half file.
pub fn write_html(
    profile: &Profile,
    opts: &HtmlOptions,
    out: &mut dyn Write,
) -> Result<(), ViewerError> {
    write_page(&[profile], opts, out)
}

/// Writes a differential viewer: `after`'s flame graph coloured by the change from
/// `before` (red grew, blue shrank, distinct colours for stacks that are new or gone).
pub fn write_diff_html(
    before: &Profile,
    after: &Profile,
    opts: &HtmlOptions,
    out: &mut dyn Write,
) -> Result<(), ViewerError> {
    write_page(&[before, after], opts, out)
}

/// Writes one viewer of a page that holds several (the run report: CPU, off-CPU and memory
/// flame graphs beside charts of the load): the element it draws in, its metadata and
/// its data. `key` (letters, digits, `-`, `_`) names its keys in the page's URL
/// (`cpu.q=…`); `origin_ns` is the page's time origin on the profiles' clock, the zero of
/// the time window `t` that every viewer (and whatever else on the page) shares.
///
/// The page writes its own `<head>` (with a `<meta charset="utf-8">`) and body, calls this
/// for each viewer (one profile, or two for a diff), then [`write_viewer_script`] once.
/// `window.__kiln.setWindow([t0, t1])` then shows one window of time everywhere.
pub fn write_embedded(
    profiles: &[&Profile],
    opts: &HtmlOptions,
    key: &str,
    origin_ns: Option<u64>,
    out: &mut dyn Write,
) -> Result<(), ViewerError> {
    Embedded::new(profiles, opts, key, origin_ns)?.write(out)
}

/// One viewer of a page, encoded and compressed, ready to write ([`write_embedded`] in
/// two steps): a page with several viewers prepares them on several threads, then writes
/// them in order.
pub struct Embedded {
    key: String,
    heading_level: Option<u8>,
    meta: serde_json::Value,
    blobs: Blobs,
    ids: Vec<String>,
}

impl Embedded {
    /// Encodes and compresses a viewer of one profile (or two, a diff); see
    /// [`write_embedded`] for `key` and `origin_ns`.
    pub fn new(
        profiles: &[&Profile],
        opts: &HtmlOptions,
        key: &str,
        origin_ns: Option<u64>,
    ) -> Result<Embedded, ViewerError> {
        let key_ok = !key.is_empty()
            && key.len() <= 64
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !key_ok {
            return Err(ViewerError::BadOption {
                option: "key",
                reason: format!("'{key}' must be 1 to 64 letters, digits, '-' or '_'"),
            });
        }
        if profiles.is_empty() || profiles.len() > 2 {
            return Err(ViewerError::BadOption {
                option: "profiles",
                reason: format!(
                    "a viewer shows one profile or a diff of two, not {}",
                    profiles.len()
                ),
            });
        }
        let (blobs, mut meta) = encode_page(profiles, opts)?;
        let ids: Vec<String> = (0..blobs.len())
            .map(|i| format!("kiln-data-{key}-{i}"))
            .collect();
        meta["key"] = key.into();
        meta["data"] = ids.clone().into();
        if let Some(o) = origin_ns {
            meta["origin"] = (o as f64).into();
        }
        Ok(Embedded {
            key: key.to_string(),
            heading_level: opts.heading_level.map(|l| l.clamp(1, 6)),
            meta,
            blobs,
            ids,
        })
    }

    /// Writes the element the viewer draws in, its metadata and its data.
    pub fn write(&self, out: &mut dyn Write) -> Result<(), ViewerError> {
        match self.heading_level {
            Some(level) => writeln!(
                out,
                "<div class=\"kiln-mount\" data-kiln-mount=\"{}\" data-heading-level=\"{level}\"></div>",
                self.key
            )?,
            None => writeln!(
                out,
                "<div class=\"kiln-mount\" data-kiln-mount=\"{}\"></div>",
                self.key
            )?,
        }
        out.write_all(b"<script class=\"kiln-meta\" type=\"application/json\">")?;
        out.write_all(script_safe_json(&self.meta.to_string()).as_bytes())?;
        out.write_all(b"</script>\n")?;
        for (id, (bytes, _)) in self.ids.iter().zip(&self.blobs) {
            write!(
                out,
                "<script id=\"{id}\" type=\"application/octet-stream\">"
            )?;
            encode::base64_into(bytes, out)?;
            out.write_all(b"</script>\n")?;
        }
        Ok(())
    }
}

/// Writes the viewer's code, once per page, after every [`write_embedded`] viewer.
pub fn write_viewer_script(out: &mut dyn Write) -> Result<(), ViewerError> {
    out.write_all(b"<script>\n")?;
    out.write_all(VIEWER_JS.as_bytes())?;
    out.write_all(b"</script>\n")?;
    Ok(())
}

/// Each profile's encoded bytes and whether they are compressed.
type Blobs = Vec<(Vec<u8>, bool)>;

/// The profiles' encoded data (compressed where large) and the viewer's metadata.
/// Data past this size is deflated at the fastest level: see [`deflate`].
pub(crate) const FAST_DEFLATE_ABOVE: usize = 32 << 20;

/// zlib-deflates `raw` for the page (the browser inflates it with
/// `DecompressionStream('deflate')`). Level 6 below [`FAST_DEFLATE_ABOVE`]; above it level
/// 1, measured on a 10-minute off-CPU recording's 68 MB of samples: 0.23 s of CPU instead
/// of 3.75 s, for 7% more bytes (20.3 MB instead of 18.9 MB).
pub fn deflate(raw: &[u8]) -> std::io::Result<Vec<u8>> {
    let level = if raw.len() > FAST_DEFLATE_ABOVE { 1 } else { 6 };
    let mut z = ZlibEncoder::new(Vec::with_capacity(raw.len() / 3), Compression::new(level));
    z.write_all(raw)?;
    z.finish()
}

fn encode_page(
    profiles: &[&Profile],
    opts: &HtmlOptions,
) -> Result<(Blobs, serde_json::Value), ViewerError> {
    if !PALETTES.contains(&opts.palette.as_str()) {
        return Err(ViewerError::BadOption {
            option: "palette",
            reason: format!(
                "unknown palette '{}'; use one of {}",
                opts.palette,
                PALETTES.join(", ")
            ),
        });
    }
    let mut blobs = Vec::with_capacity(profiles.len());
    for p in profiles {
        let raw = encode::encode(p)?;
        let compressed = raw.len() > opts.compress_above;
        let bytes = if compressed { deflate(&raw)? } else { raw };
        blobs.push((bytes, compressed));
    }
    let meta = serde_json::json!({
        "title": opts.title,
        "subtitle": opts.subtitle,
        "palette": opts.palette,
        "inverted": opts.inverted,
        "leftHeavy": opts.left_heavy,
        "mode": if profiles.len() == 2 { "diff" } else { "single" },
        "labels": [opts.diff_labels.0, opts.diff_labels.1],
        "view": if opts.flamechart { "chart" } else { "flame" },
        "marked": opts.diff_marked,
        "categories": opts.categories,
        "cpus": opts.cpus,
        "instants": opts.instants,
        "profiles": profiles.iter().zip(&blobs).enumerate().map(|(i, (p, (_, c)))| {
            let mut m = unit_meta(p.event.quantity());
            m.insert("unit".into(), p.event.unit.name().into());
            m.insert("event".into(), p.event.name.clone().into());
            m.insert("compressed".into(), (*c).into());
            m.insert("countName".into(), opts.count_name.clone().into());
            m.insert("source".into(), opts.sources.get(i).filter(|s| !s.is_empty()).cloned().into());
            serde_json::Value::Object(m)
        }).collect::<Vec<_>>(),
    });
    Ok((blobs, meta))
}

fn write_page(
    profiles: &[&Profile],
    opts: &HtmlOptions,
    out: &mut dyn Write,
) -> Result<(), ViewerError> {
    let (blobs, meta) = encode_page(profiles, opts)?;
    out.write_all(b"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n")?;
    out.write_all(b"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")?;
    out.write_all(b"<title>")?;
    out.write_all(escape_html(&opts.title).as_bytes())?;
    out.write_all(b"</title></head>\n<body>\n<noscript>This flame graph viewer needs JavaScript.</noscript>\n")?;
    out.write_all(b"<script id=\"kiln-meta\" type=\"application/json\">")?;
    out.write_all(script_safe_json(&meta.to_string()).as_bytes())?;
    out.write_all(b"</script>\n")?;
    for (i, (bytes, _)) in blobs.iter().enumerate() {
        write!(
            out,
            "<script id=\"kiln-data-{i}\" type=\"application/octet-stream\">"
        )?;
        encode::base64_into(bytes, out)?;
        out.write_all(b"</script>\n")?;
    }
    out.write_all(b"<script>\n")?;
    out.write_all(VIEWER_JS.as_bytes())?;
    out.write_all(b"</script>\n</body></html>\n")?;
    out.flush()?;
    Ok(())
}

/// How the viewer labels a profile's numbers (`web/src/lib/units.ts` reads these keys).
fn unit_meta(q: Quantity) -> serde_json::Map<String, serde_json::Value> {
    let (quantity, ns_per_unit, period) = match q {
        Quantity::Samples { period_ns } => ("samples", None, period_ns),
        Quantity::Time { ns_per_unit } => ("time", Some(ns_per_unit), None),
        Quantity::Bytes => ("bytes", None, None),
        _ => ("events", None, None),
    };
    let mut m = serde_json::Map::new();
    m.insert("quantity".into(), quantity.into());
    m.insert("nsPerUnit".into(), ns_per_unit.into());
    m.insert("samplePeriodNs".into(), period.into());
    m
}

/// Escapes text for HTML element content and attribute values (pages that embed viewers
/// write their own text through it).
pub fn escape_html(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c.is_control() => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// JSON that cannot end a `<script>` element or open a comment: `<`, `>` and `&` become
/// `\u` escapes, which `JSON.parse` reads back unchanged.
pub(crate) fn script_safe_json(json: &str) -> String {
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(
            escape_html("<a href='x'>&\u{7}"),
            "&lt;a href=&#39;x&#39;&gt;&amp;\u{fffd}"
        );
        assert_eq!(
            script_safe_json("\"</script>\""),
            "\"\\u003c/script\\u003e\""
        );
    }

    #[test]
    fn viewer_bundle_cannot_close_its_script() {
        assert!(!VIEWER_JS.to_ascii_lowercase().contains("</script"));
        assert!(!VIEWER_JS.contains("<!--"));
    }

    #[test]
    fn hostile_names_and_title_cannot_add_elements() {
        let mut p = Profile::default();
        let evil = p.frame(
            b"</script><script>alert(1)</script><!--\xff",
            kiln_model::FrameKind::User,
        );
        p.add_sample_path(&[evil], 1, kiln_model::NO_TIME, kiln_model::ThreadId::NONE);
        for compress_above in [0, usize::MAX] {
            let opts = HtmlOptions {
                title: "</title><script>alert(2)</script>".into(),
                subtitle: Some("</script>&".into()),
                compress_above,
                ..Default::default()
            };
            let mut out = Vec::new();
            write_html(&p, &opts, &mut out).unwrap();
            let html = String::from_utf8(out).unwrap();
            // The page around the viewer's code (which writes SVG markup into strings).
            let html = html.replace(VIEWER_JS, "").to_ascii_lowercase();
            // meta, data, viewer: three elements open and close, nothing else.
            assert_eq!(html.matches("<script").count(), 3);
            assert_eq!(html.matches("</script").count(), 3);
            assert_eq!(html.matches("</title").count(), 1);
            assert!(!html.contains("<!--"));
            assert!(html.contains("<title>&lt;/title&gt;&lt;script&gt;"));
        }
    }

    #[test]
    fn several_viewers_on_a_page() {
        let mut p = Profile::default();
        let f = p.frame(b"main", kiln_model::FrameKind::User);
        p.add_sample_path(&[f], 1, kiln_model::NO_TIME, kiln_model::ThreadId::NONE);
        let mut out = Vec::new();
        let opts = HtmlOptions::default();
        write_embedded(&[&p], &opts, "cpu", Some(5), &mut out).unwrap();
        write_embedded(&[&p, &p], &opts, "off-cpu_2", None, &mut out).unwrap();
        let under_h3 = HtmlOptions {
            heading_level: Some(4),
            ..HtmlOptions::default()
        };
        write_embedded(&[&p], &under_h3, "mem", None, &mut out).unwrap();
        write_viewer_script(&mut out).unwrap();
        let html = String::from_utf8(out).unwrap();
        assert!(html.contains("<div class=\"kiln-mount\" data-kiln-mount=\"cpu\"></div>"));
        // The title's level is on the element itself, before any script runs.
        assert!(html.contains(
            "<div class=\"kiln-mount\" data-kiln-mount=\"mem\" data-heading-level=\"4\"></div>"
        ));
        assert!(html.contains("id=\"kiln-data-off-cpu_2-1\""));
        assert!(html.contains("\"data\":[\"kiln-data-cpu-0\"]"));
        assert!(html.contains("\"origin\":5.0"));
        assert_eq!(html.matches("class=\"kiln-meta\"").count(), 3);
        for bad in ["", "a b", "x\"y", "<s>", &"k".repeat(65)] {
            let err = write_embedded(&[&p], &opts, bad, None, &mut Vec::new()).unwrap_err();
            assert!(
                err.to_string().contains("invalid viewer option key"),
                "{err}"
            );
        }
        assert!(write_embedded(&[], &opts, "k", None, &mut Vec::new()).is_err());
    }

    #[test]
    fn unknown_palette_is_an_error() {
        let opts = HtmlOptions {
            palette: "neon".into(),
            ..Default::default()
        };
        let err = write_html(&Profile::default(), &opts, &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("unknown palette 'neon'"), "{err}");
    }
}
