//! Golden files: every option of `render` and `render_diff` on small inputs, compared line
//! by line with `tests/data/results/` (rewrite them with `KILN_BLESS=1`). Every output is
//! also parsed with an XML parser.
mod common;

use common::{check_golden, data_dir, frames, name_of, render_folded};
use kiln_flamegraph::{
    Background, ColorMode, Layout, MinWidth, NameAttrs, Options, Palette, PaletteMap, Rgb,
};
use std::path::Path;

fn input(name: &str) -> Vec<u8> {
    std::fs::read(data_dir().join(name)).expect("fixture")
}

fn quiet() -> Options {
    let mut o = Options::default();
    o.interactive = false;
    o
}

/// Renders, checks the XML and the golden file, returns the frames.
fn golden(case: &str, fixture: &str, opts: &Options) -> Vec<common::Drawn> {
    let (svg, _) = render_folded(&input(fixture), opts);
    let drawn = frames(&svg);
    check_golden(&format!("{case}.svg"), &svg);
    drawn
}

#[test]
fn default_options_with_script() {
    let drawn = golden("simple-default", "simple.folded", &Options::default());
    // flamegraph.pl's tree: "all" first, then parents before children.
    assert_eq!(drawn[0].title, "all (440 samples, 100%)");
    assert_eq!(drawn[0].label.as_deref(), Some("all"));
    let main = drawn.iter().find(|d| name_of(&d.title) == "main").unwrap();
    assert_eq!(main.title, "main (324 samples, 73.64%)");
}

#[test]
fn text_and_size_options() {
    let mut o = quiet();
    o.title = Some("Broker CPU".into());
    o.subtitle = Some("10k msg/s, 2 cores".into());
    o.width = 800;
    o.frame_height = 20;
    o.font_type = "DejaVu Sans Mono".into();
    o.font_size = 10.0;
    o.font_width = 0.6;
    o.count_name = "ms".into();
    o.name_type = "Frame:".into();
    o.notes = "recorded with perf -F 99".into();
    let drawn = golden("simple-text-options", "simple.folded", &o);
    assert!(
        drawn[0].title.ends_with("(440 ms, 100%)"),
        "{}",
        drawn[0].title
    );
}

#[test]
fn minwidth_in_pixels_and_percent() {
    let mut o = quiet();
    o.min_width = MinWidth::Pixels(30.0);
    let px = golden("simple-minwidth-px", "simple.folded", &o);
    // 30 px of 1180 is 2.54% of 440 = 11.67 samples: 9, 7, 5, 4, 3, 2, 1 are gone.
    assert!(px.iter().all(|d| d.w as f64 >= 30.0 * 440.0 / 1180.0));
    o.min_width = MinWidth::Percent(10.0);
    let pct = golden("simple-minwidth-pct", "simple.folded", &o);
    assert!(pct.iter().all(|d| d.w as f64 >= 44.0), "{pct:?}");
    o.min_width = MinWidth::Pixels(0.0);
    let all = golden("simple-minwidth-0", "simple.folded", &o);
    assert!(all.len() > px.len() && px.len() > pct.len());
}

#[test]
fn every_palette() {
    for name in Palette::NAMES {
        let mut o = quiet();
        o.colors = Palette::from_name(name).unwrap();
        o.color_mode = ColorMode::Hash;
        golden(&format!("palette-{name}"), "simple.folded", &o);
    }
}

#[test]
fn chain_palette_colours_wakers() {
    let mut o = quiet();
    o.colors = Palette::Chain;
    let drawn = golden("chain", "chain.folded", &o);
    let fill = |n: &str| {
        drawn
            .iter()
            .find(|d| name_of(&d.title) == n)
            .unwrap()
            .fill
            .clone()
    };
    assert_eq!(fill("--"), "#a0a0a0");
    assert_eq!(fill("-"), "#c8c8c8");
    // Frames above the separator are the waker's: aqua; below: blue (off-CPU).
    assert!(
        fill("irq").starts_with("#3")
            || fill("irq").starts_with("#4")
            || fill("irq").starts_with("#5")
            || fill("irq").starts_with("#6"),
        "{}",
        fill("irq")
    );
    let schedule = fill("schedule");
    let b = u8::from_str_radix(&schedule[5..7], 16).unwrap();
    assert!(b >= 205, "off-CPU frames are blue: {schedule}");
}

#[test]
fn backgrounds_hash_random_and_consistent_palette() {
    let mut o = quiet();
    o.bgcolors = Some(Background::Flat(Rgb(0x12, 0x34, 0x56)));
    golden("simple-bg-flat", "simple.folded", &o);
    o.bgcolors = Some(Background::Grey);
    golden("simple-bg-grey", "simple.folded", &o);

    let mut o = quiet();
    o.color_mode = ColorMode::Random(42);
    let a = golden("simple-random-42", "simple.folded", &o);
    o.color_mode = ColorMode::Random(43);
    let (svg, _) = render_folded(&input("simple.folded"), &o);
    assert_ne!(a, frames(&svg), "another seed, other colours");

    let mut o = quiet();
    o.palette_map = Some(PaletteMap::load_or_empty(&data_dir().join("palette.map")).unwrap());
    let (svg, stats) = render_folded(&input("simple.folded"), &o);
    check_golden("simple-cp.svg", &svg);
    let drawn = frames(&svg);
    let main = drawn.iter().find(|d| name_of(&d.title) == "main").unwrap();
    assert_eq!(main.fill, "#010203", "colour from palette.map");
    let map = stats.palette_map.expect("updated map returned");
    assert_eq!(map.get(b"main"), Some(Rgb(1, 2, 3)));
    assert!(map.get(b"memchr").is_some(), "new names are added");
}

#[test]
fn nameattr_links_and_titles() {
    let mut o = quiet();
    o.name_attrs = NameAttrs::from_file(&data_dir().join("nameattr.txt")).unwrap();
    let (svg, _) = render_folded(&input("simple.folded"), &o);
    check_golden("simple-nameattr.svg", &svg);
    let drawn = frames(&svg);
    assert!(drawn.iter().any(|d| d.title == "The entry point"));
    assert!(svg.contains(
        "<a xlink:href=\"https://example.com/src?f=main&amp;l=1\" target=\"_top\" class=\"entry\">"
    ));
    assert!(svg.contains("<g id=\"render-node\" style=\"opacity:0.9\">"));
}

#[test]
fn reverse_inverted_leftheavy_flamechart() {
    let mut o = quiet();
    o.reverse = true;
    let rev = golden("simple-reverse", "simple.folded", &o);
    // Reversed: leaves become roots.
    assert!(rev
        .iter()
        .any(|d| d.title.starts_with("memchr (120 samples")));
    let mut o = quiet();
    o.inverted = true;
    let inv = golden("simple-inverted", "simple.folded", &o);
    assert!(inv[0].y < inv[1].y, "icicle: the root on top");
    let mut o = quiet();
    o.layout = Layout::LeftHeavy;
    let lh = golden("simple-left-heavy", "simple.folded", &o);
    let main = lh.iter().find(|d| name_of(&d.title) == "main").unwrap();
    assert_eq!(main.x, 0, "heaviest root first");
    let mut o = quiet();
    o.layout = Layout::FlameChart;
    let fc = golden("chart", "chart.folded", &o);
    let starts: Vec<_> = fc
        .iter()
        .filter(|d| name_of(&d.title) == "start")
        .map(|d| (d.x, d.w))
        .collect();
    assert_eq!(
        starts,
        vec![(0, 10), (20, 3)],
        "consecutive samples only are merged"
    );
}

#[test]
fn differential_and_negate() {
    let drawn = golden("diff", "diff.folded", &quiet());
    let w = |n: &str| {
        drawn
            .iter()
            .find(|d| name_of(&d.title) == n)
            .unwrap()
            .clone()
    };
    // Widths are the second count; the delta is the self change.
    assert_eq!(w("write_frame").w, 90);
    assert_eq!(
        w("write_frame").title,
        "write_frame (90 samples, 33.46%; +22.30%)"
    );
    assert_eq!(
        w("memchr").fill,
        "#ff0000".replace("ff0000", "0000ff"),
        "shrank most: full blue"
    );
    assert_eq!(w("write_frame").fill, "#ff0000", "grew most: full red");
    assert!(
        drawn.iter().all(|d| name_of(&d.title) != "load_config"),
        "gone after: zero width"
    );
    let mut o = quiet();
    o.negate = true;
    let neg = golden("diff-negate", "diff.folded", &o);
    let wf = neg
        .iter()
        .find(|d| name_of(&d.title) == "write_frame")
        .unwrap();
    assert_eq!(wf.fill, "#0000ff");
    assert!(wf.title.ends_with("; -22.30%)"));
}

#[test]
fn total_and_factor() {
    let mut o = quiet();
    o.total = Some(880);
    o.factor = 0.5;
    let (svg, stats) = render_folded(&input("simple.folded"), &o);
    check_golden("simple-total-factor.svg", &svg);
    assert_eq!(stats.total, 880);
    let drawn = frames(&svg);
    // Half the width of the image, counts scaled by 0.5 (rounded half to even).
    assert!((drawn[0].w_pct - 50.0).abs() < 1e-3);
    assert_eq!(drawn[0].title, "all (220 samples, 100%)");
    let main = drawn.iter().find(|d| name_of(&d.title) == "main").unwrap();
    assert_eq!(main.title, "main (162 samples, 36.82%)");
    o.total = Some(100);
    let (_, stats) = render_folded(&input("simple.folded"), &o);
    assert_eq!(stats.total, 440);
    assert_eq!(stats.warnings.len(), 1);
    assert_eq!(
        stats.warnings[0].to_string(),
        "--total 100 is less than the profile's total 440, so it was ignored"
    );
}

#[test]
fn real_perf_profile() {
    let drawn = golden("real", "real.folded", &quiet());
    assert!(drawn.len() > 100);
    let _ = Path::new("unused");
}
