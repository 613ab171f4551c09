//! The SVG's script in a real headless Chromium: the zoom and search state in the URL
//! (`?x=…&y=…&s=…&i=1`) is restored on load through the same `zoom` and `search` code a
//! click and the search prompt use; the DOM is dumped after load and checked.
//!
//! Needs `chromium` (Debian package) on PATH or at /usr/bin/chromium; without it, the test
//! prints why and passes without checking.
mod common;

use common::{data_dir, render_folded};
use kiln_flamegraph::Options;
use std::path::PathBuf;
use std::process::Command;

fn chromium() -> Option<PathBuf> {
    [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
}

/// Loads `svg` with `query` and returns the DOM after the load handlers ran.
fn dom_after_load(chromium: &PathBuf, svg: &str, query: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("flame.svg");
    std::fs::write(&file, svg).unwrap();
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ))
        .arg("--dump-dom")
        .arg(format!("file://{}?{query}", file.display()))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The `<g>` (or `<a>`) of the frame titled `name (…`, as serialized in `dom`.
fn group<'a>(dom: &'a str, name: &str) -> &'a str {
    let at = dom
        .find(&format!("<title>{name} ("))
        .unwrap_or_else(|| panic!("no frame {name}"));
    let start = dom[..at].rfind("<g").unwrap();
    let end = at + dom[at..].find("</g>").unwrap();
    &dom[start..end]
}

#[test]
fn zoom_and_search_state_from_the_url() {
    let Some(chromium) = chromium() else {
        kiln_testkit::skip("chromium not installed (apt-get install chromium)");
        return;
    };
    let (svg, _) = render_folded(
        &std::fs::read(data_dir().join("simple.folded")).unwrap(),
        &Options::default(),
    );
    // `render` is at fg:x=195, y=69 (see the golden file simple-default.svg).
    assert!(svg.contains("fg:x=\"195\" fg:w=\"128\""));
    let dom = dom_after_load(&chromium, &svg, "x=195&y=69&s=%5EWRITE&i=1");

    // Zoomed: ancestors become full-width "parent" frames, the zoomed frame fills the
    // width, frames outside it are hidden, the reset button shows.
    assert!(
        group(&dom, "main").starts_with("<g class=\"parent\">"),
        "{}",
        group(&dom, "main")
    );
    assert!(
        group(&dom, "render").contains("x=\"0.0000%\""),
        "{}",
        group(&dom, "render")
    );
    assert!(group(&dom, "render").contains("width=\"100.0000%\""));
    assert!(group(&dom, "parse_line").starts_with("<g class=\"hide\">"));
    assert!(
        dom.contains("<text id=\"unzoom\" class=\"\""),
        "reset zoom shown"
    );
    // Search, case-insensitive (i=1): write_frame is 105 of the zoomed 128 samples.
    assert!(
        dom.contains(">Matched: 82.0%</text>"),
        "{}",
        &dom[dom.find("id=\"matched\"").unwrap()..][..80]
    );
    assert!(group(&dom, "write_frame").contains("fill=\"#e600e6\""));
    assert!(dom.contains("id=\"ignorecase\"") && dom.contains("class=\"show\">ic</text>"));
    // Labels are refitted to the zoomed widths: escape is 18 of 128 samples of 1180 px.
    assert!(
        group(&dom, "escape").contains(">escape</text>"),
        "{}",
        group(&dom, "escape")
    );
}

#[test]
fn case_sensitive_search_and_bad_regex() {
    let Some(chromium) = chromium() else {
        kiln_testkit::skip("chromium not installed (apt-get install chromium)");
        return;
    };
    let (svg, _) = render_folded(
        &std::fs::read(data_dir().join("simple.folded")).unwrap(),
        &Options::default(),
    );
    let dom = dom_after_load(&chromium, &svg, "s=%5EWRITE");
    assert!(
        dom.contains(">Matched: 0.0%</text>"),
        "case-sensitive: no match"
    );
    let dom = dom_after_load(&chromium, &svg, "s=(unclosed");
    assert!(dom.contains(">Invalid regular expression</text>"));
}
