//! Helpers shared by the flame graph tests.
#![allow(dead_code)]
use kiln_flamegraph::{Options, RenderStats};
use kiln_model::Profile;
use std::path::{Path, PathBuf};

/// The test data directory.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("data")
}

/// Reads folded stacks through kiln's folded parser: the profile, and the "after" profile
/// for two-count input.
pub fn folded(bytes: &[u8]) -> (Profile, Option<Profile>) {
    let c = kiln_collapse::folded::collapse(
        kiln_collapse::Input {
            name: "test",
            data: bytes,
        }, // Input order, as flamegraph.pl reads it (flame charts depend on it).
        &kiln_collapse::Options {
            keep_order: true,
            ..Default::default()
        },
    )
    .expect("folded input parses");
    (c.profile, c.after)
}

/// Renders folded input (differential when it has two counts) to a string.
pub fn render_folded(bytes: &[u8], opts: &Options) -> (String, RenderStats) {
    let (p, after) = folded(bytes);
    let mut out = Vec::new();
    let stats = match after {
        None => kiln_flamegraph::render(&p, opts, &mut out),
        Some(a) => kiln_flamegraph::render_diff(&p, &a, opts, &mut out),
    }
    .expect("renders");
    (String::from_utf8(out).expect("SVG is UTF-8"), stats)
}

/// One drawn frame, read back from an SVG.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawn {
    pub title: String,
    pub label: Option<String>,
    /// `fg:x` and `fg:w`: position and width in weight units.
    pub x: u64,
    pub w: u64,
    /// `y` of the rectangle.
    pub y: f64,
    pub x_pct: f64,
    pub w_pct: f64,
    pub fill: String,
}

/// Parses an SVG with an XML parser (failing the test if it is not well-formed) and
/// returns its frames.
pub fn frames(svg: &str) -> Vec<Drawn> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(svg, opts)
        .unwrap_or_else(|e| panic!("SVG is not well-formed XML: {e}"));
    let container = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("frames"))
        .expect("a #frames element");
    let mut out = Vec::new();
    for g in container.children().filter(|n| n.is_element()) {
        let title = g
            .children()
            .find(|n| n.has_tag_name("title"))
            .and_then(|t| t.text())
            .unwrap_or("")
            .to_string();
        let rect = g
            .children()
            .find(|n| n.has_tag_name("rect"))
            .expect("a rect per frame");
        let label = g
            .children()
            .find(|n| n.has_tag_name("text"))
            .map(|t| t.text().unwrap_or("").to_string());
        let pct = |a: &str| -> f64 {
            rect.attribute(a)
                .and_then(|v| v.strip_suffix('%'))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{a} is a percentage"))
        };
        out.push(Drawn {
            title,
            label,
            x: fg_attr(rect, "x").expect("fg:x"),
            w: fg_attr(rect, "w").expect("fg:w"),
            y: rect.attribute("y").and_then(|v| v.parse().ok()).expect("y"),
            x_pct: pct("x"),
            w_pct: pct("width"),
            fill: rect.attribute("fill").unwrap_or("").to_string(),
        });
    }
    out
}

/// `fg:NAME` in kiln's namespace or inferno's (both prefix it `fg:`).
fn fg_attr(node: roxmltree::Node, name: &str) -> Option<u64> {
    node.attributes()
        .find(|a| {
            a.name() == name
                && matches!(
                    a.namespace(),
                    Some("urn:kiln:flamegraph") | Some("http://github.com/jonhoo/inferno")
                )
        })
        .and_then(|a| a.value().parse().ok())
}

/// The function name of a tooltip `NAME (N samples, P%)`.
pub fn name_of(title: &str) -> &str {
    match title.rfind(" (") {
        Some(i) => &title[..i],
        None => title,
    }
}

/// Compares `actual` with `tests/data/results/<name>`, or rewrites it with KILN_BLESS=1.
pub fn check_golden(name: &str, actual: &str) {
    let path = data_dir().join("results").join(name);
    if std::env::var_os("KILN_BLESS").is_some() {
        std::fs::write(&path, actual).expect("write golden file");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with KILN_BLESS=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        // Line diff, readable in the test output.
        pretty_assertions::assert_eq!(
            expected.lines().collect::<Vec<_>>(),
            actual.lines().collect::<Vec<_>>(),
            "{name} differs from the golden file; run with KILN_BLESS=1 if the change is intended"
        );
    }
}

/// A stack path, root first ("all" is the empty path).
pub type StackPath = Vec<String>;

/// Rectangles keyed by their stack path, found by containment in the level below.
pub fn by_path(drawn: &[Drawn]) -> Vec<(StackPath, Drawn)> {
    // Level from y: the root has the largest y (flame graphs grow upwards).
    let mut ys: Vec<i64> = drawn.iter().map(|d| (d.y * 100.0) as i64).collect();
    ys.sort_unstable();
    ys.dedup();
    ys.reverse();
    let level = |d: &Drawn| ys.iter().position(|&y| y == (d.y * 100.0) as i64).unwrap();
    let mut sorted: Vec<&Drawn> = drawn.iter().collect();
    sorted.sort_by_key(|d| (level(d), d.x));
    let mut out: Vec<(StackPath, Drawn, usize)> = Vec::new();
    for d in sorted {
        let lv = level(d);
        let path = if lv == 0 {
            Vec::new()
        } else {
            let parent = out
                .iter()
                .rev()
                .find(|(_, p, plv)| *plv == lv - 1 && p.x <= d.x && d.x + d.w <= p.x + p.w)
                .unwrap_or_else(|| panic!("no parent for {d:?}"));
            let mut path = parent.0.clone();
            path.push(name_of(&d.title).to_string());
            path
        };
        out.push((path, d.clone(), lv));
    }
    out.into_iter().map(|(p, d, _)| (p, d)).collect()
}
