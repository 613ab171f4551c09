//! `kiln flamegraph` end to end: flamegraph.pl's flags, outputs, errors.
use predicates::prelude::*;
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../flamegraph/tests/data")
        .join(name)
}

use kiln_testkit::kiln;

fn parse(svg: &str) -> roxmltree::Document<'_> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(svg, opts).expect("well-formed SVG")
}

fn titles(svg: &str) -> Vec<String> {
    parse(svg)
        .descendants()
        .filter(|n| n.has_tag_name("title"))
        .filter_map(|n| n.text().map(str::to_string))
        .collect()
}

#[test]
fn flamegraph_pl_command_lines_work_unchanged() {
    let out = kiln()
        .args([
            "flamegraph",
            "--title=Broker CPU",
            "--subtitle",
            "run 1",
            "--width",
            "900",
        ])
        .args([
            "--height",
            "18",
            "--minwidth",
            "0.5%",
            "--fonttype",
            "Helvetica",
            "--fontsize",
            "11",
        ])
        .args([
            "--fontwidth",
            "0.6",
            "--countname",
            "us",
            "--nametype",
            "Frame:",
            "--notes",
            "n",
        ])
        .args([
            "--colors",
            "java",
            "--bgcolors",
            "#ffffff",
            "--hash",
            "--reverse",
            "--inverted",
        ])
        .arg(data("simple.folded"))
        .output()
        .unwrap();
    kiln_testkit::succeeded(&out);
    assert!(
        out.stderr.is_empty(),
        "nothing on stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = String::from_utf8(out.stdout).unwrap();
    let doc = parse(&svg);
    let root = doc.root_element();
    assert_eq!(root.attribute("width"), Some("900"));
    let title = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("title"))
        .unwrap();
    assert_eq!(title.text(), Some("Broker CPU"));
    assert!(titles(&svg).iter().any(|t| t == "all (440 us, 100%)"));
    // --reverse: leaves are now at the root.
    assert!(titles(&svg)
        .iter()
        .any(|t| t.starts_with("memchr (120 us, ")));
}

#[test]
fn differential_input_and_color_alias() {
    kiln()
        .args(["flamegraph", "--color", "mem", "--negate"])
        .arg(data("diff.folded"))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "write_frame (90 samples, 33.46%; -22.30%)",
        ));
}

#[test]
fn output_file_is_atomic_and_html_goes_to_the_viewer() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("flame.svg");
    kiln()
        .args(["flamegraph", "-o"])
        .arg(&svg)
        .arg(data("real.folded"))
        .assert()
        .success()
        .stdout("");
    parse(&std::fs::read_to_string(&svg).unwrap());
    let html = dir.path().join("flame.html");
    kiln()
        .args(["flamegraph", "--title", "T<1>", "-o"])
        .arg(&html)
        .arg(data("real.folded"))
        .assert()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.starts_with("<!DOCTYPE html>") || page.starts_with("<!doctype html>"),
        "{}",
        &page[..60.min(page.len())]
    );
    // A failed run leaves no file and no temporary behind.
    let bad = dir.path().join("bad.svg");
    kiln()
        .args(["flamegraph", "--nameattr", "/nonexistent/attrs", "-o"])
        .arg(&bad)
        .arg(data("simple.folded"))
        .assert()
        .failure()
        .code(1)
        .stderr(predicate::str::contains(
            "Error: cannot read /nonexistent/attrs",
        ));
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn consistent_palette_file_is_read_and_written() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(data("palette.map"), dir.path().join("palette.map")).unwrap();
    kiln()
        .current_dir(dir.path())
        .args(["flamegraph", "--cp"])
        .arg(data("simple.folded"))
        .assert()
        .success()
        .stdout(predicate::str::contains("fill=\"#010203\""));
    let map = std::fs::read_to_string(dir.path().join("palette.map")).unwrap();
    assert!(
        map.starts_with("all->")
            || map.contains("\nmain->rgb(1,2,3)\n")
            || map.starts_with("main->rgb(1,2,3)"),
        "{map}"
    );
    assert!(map.contains("memchr->rgb("), "new names saved: {map}");
}

#[test]
fn bad_input_and_options_fail_clearly() {
    kiln()
        .args(["flamegraph", "--minwidth", "abc"])
        .arg(data("simple.folded"))
        .assert()
        .failure()
        .code(2)
        .stderr(predicate::str::contains(
            "expected a non-negative number of pixels",
        ));
    kiln()
        .args(["flamegraph", "--width", "5"])
        .arg(data("simple.folded"))
        .assert()
        .failure()
        .code(1)
        .stderr(predicate::str::contains("invalid --width \"5\""));
    kiln()
        .args(["flamegraph", "--format", "folded"])
        .write_stdin("")
        .assert()
        .failure()
        .code(1)
        .stderr(predicate::str::contains("no samples to draw"));
    kiln()
        .args(["flamegraph", "--total", "10"])
        .arg(data("simple.folded"))
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "warning: --total 10 is less than the profile's total 440",
        ));
}

#[test]
fn transforms_apply_before_rendering() {
    kiln()
        .args(["flamegraph", "--merge-threads", "--drop-frames", "^poll$"])
        .arg(data("simple.folded"))
        .assert()
        .success()
        .stdout(
            predicate::str::contains("<title>worker (116 samples")
                .and(predicate::str::contains("<title>poll (").not()),
        );
}
