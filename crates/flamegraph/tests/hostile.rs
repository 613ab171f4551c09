//! Hostile names, titles, notes and attributes: the SVG must stay well-formed XML, carry no
//! markup or script but kiln's own, and show the text (sanitized) back.
mod common;

use common::frames;
use kiln_flamegraph::{FrameAttrs, NameAttrs, Options};
use kiln_model::{FrameKind, Profile, ThreadId, NO_TIME};

const HOSTILE: &[&[u8]] = &[
    b"<script>alert(1)</script>",
    b"]]><x/>",
    b"a--b-->",
    b"\x00\x01\x08\x0b\x0c\x1b[31mred",
    b"\xff\xfe\xc3(invalid utf-8",
    b"&amp;&lt;\"quoted\" 'single'",
    b"tab\there\r\nnewline",
    "\u{FFFE}\u{FFFF} nonchar é ü 日本".as_bytes(),
    b"--",
    b"x_[k]",
    b"javascript:alert(1)",
];

/// What kiln shows for a name: invalid UTF-8 and XML-forbidden characters become U+FFFD,
/// annotations are stripped.
fn shown(name: &[u8]) -> String {
    let s = String::from_utf8_lossy(name);
    let s: String = s
        .chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => c,
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => '\u{FFFD}',
            c => c,
        })
        .collect();
    s.strip_suffix("_[k]").map(str::to_string).unwrap_or(s)
}

fn hostile_profile() -> Profile {
    let mut p = Profile::default();
    for (i, name) in HOSTILE.iter().enumerate() {
        let root = p.frame(b"root", FrameKind::Unknown);
        let f = p.frame(name, FrameKind::Unknown);
        let g = p.frame(HOSTILE[(i + 1) % HOSTILE.len()], FrameKind::Unknown);
        p.add_sample_path(&[root, f, g], 10 + i as u64, NO_TIME, ThreadId::NONE);
    }
    p
}

fn hostile_options() -> Options {
    let mut o = Options::default();
    o.title = Some("<script>alert('t')</script> ]]> --".into());
    o.subtitle = Some("sub\u{0007}title & <b>".into());
    o.notes = "notes -- with --> and <script> and \u{0000}".into();
    o.name_type = "Fn\"'</script>]]>:".into();
    o.count_name = "sam<ples>\"".into();
    o.font_type = "Verdana; } text { fill:url(http://evil/) ".into();
    let mut attrs = NameAttrs::new();
    attrs.insert(
        b"root",
        FrameAttrs {
            title: Some("</title><script>x</script>".into()),
            href: Some("javascript:\"><script>".into()),
            target: Some("_blank\"".into()),
            attrs: vec![("class".into(), "a\"b<c".into())],
        },
    );
    o.name_attrs = attrs;
    o
}

fn parse(svg: &str) -> roxmltree::Document<'_> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(svg, opts).expect("well-formed XML")
}

#[test]
fn hostile_input_stays_well_formed_and_inert() {
    let p = hostile_profile();
    let opts = hostile_options();
    let mut out = Vec::new();
    kiln_flamegraph::render(&p, &opts, &mut out).unwrap();
    let svg = String::from_utf8(out).expect("UTF-8 output");
    let doc = parse(&svg);

    // Only kiln's own script, byte for byte.
    let scripts: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("script"))
        .collect();
    assert_eq!(scripts.len(), 1);
    assert_eq!(
        scripts[0].text(),
        Some(concat!("\n", include_str!("../src/flamegraph.js")))
    );
    // No element but the ones kiln writes.
    for n in doc.descendants().filter(|n| n.is_element()) {
        let tag = n.tag_name().name();
        assert!(
            [
                "svg",
                "defs",
                "linearGradient",
                "stop",
                "style",
                "script",
                "rect",
                "text",
                "g",
                "a",
                "title"
            ]
            .contains(&tag),
            "unexpected element <{tag}>"
        );
        for a in n.attributes() {
            assert!(
                !a.name().to_ascii_lowercase().starts_with("on") || a.name() == "onload",
                "event handler {}",
                a.name()
            );
        }
    }
    // The notes comment holds no "--".
    let notes = svg.lines().find(|l| l.starts_with("<!-- NOTES:")).unwrap();
    assert!(
        !notes["<!--".len()..notes.len() - "-->".len()].contains("--"),
        "{notes}"
    );
    // Titles come back as text.
    let title = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("title"))
        .unwrap();
    assert_eq!(title.text(), Some("<script>alert('t')</script> ]]> --"));
    let sub = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("subtitle"))
        .unwrap();
    assert_eq!(sub.text(), Some("sub\u{FFFD}title & <b>"));
    let frames_el = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("frames"))
        .unwrap();
    let nametype = frames_el
        .attributes()
        .find(|a| a.name() == "nametype")
        .unwrap();
    assert_eq!(nametype.value(), "Fn\"'</script>]]>:");
    // The font name cannot leave its CSS string.
    let style = doc
        .descendants()
        .find(|n| n.has_tag_name("style"))
        .unwrap()
        .text()
        .unwrap();
    let font_line = style.lines().find(|l| l.contains("font-family")).unwrap();
    assert!(font_line.matches('}').count() == 1, "{font_line}");
    assert!(!style.contains("url(http"), "{style}");

    // Every name is shown, sanitized.
    let drawn = frames(&svg);
    for name in HOSTILE {
        let want = format!("{} (", shown(name));
        assert!(
            drawn.iter().any(|d| d.title.starts_with(&want)),
            "no frame titled {want:?}"
        );
    }
    // The nameattr link and title are escaped attribute values and text.
    let link = doc.descendants().find(|n| n.has_tag_name("a")).unwrap();
    assert_eq!(
        link.attribute(("http://www.w3.org/1999/xlink", "href")),
        Some("javascript:\"><script>")
    );
    assert_eq!(link.attribute("class"), Some("a\"b<c"));
    assert_eq!(
        link.children()
            .find(|c| c.has_tag_name("title"))
            .and_then(|t| t.text()),
        Some("</title><script>x</script>")
    );
}

#[test]
fn hostile_differential_and_reversed() {
    let p = hostile_profile();
    let mut q = hostile_profile();
    let extra = q.frame(b"\x00<new>", FrameKind::Unknown);
    q.add_sample_path(&[extra], 5, NO_TIME, ThreadId::NONE);
    let mut opts = hostile_options();
    opts.reverse = true;
    opts.inverted = true;
    let mut out = Vec::new();
    kiln_flamegraph::render_diff(&p, &q, &opts, &mut out).unwrap();
    let svg = String::from_utf8(out).unwrap();
    let drawn = frames(&svg);
    assert!(drawn
        .iter()
        .any(|d| d.title.starts_with("\u{FFFD}<new> (5 sam<ples>\", ")));
}

/// Weights adding up beyond 64 bits (a profile from any reader: the model's sums
/// saturate) are an error, not a graph where every frame is 100% wide.
#[test]
fn weights_beyond_64_bits_are_refused() {
    let mut p = Profile::default();
    let main = p.frame(b"main", FrameKind::Unknown);
    for name in [&b"a"[..], b"b"] {
        let f = p.frame(name, FrameKind::Unknown);
        p.add_sample_path(&[main, f], u64::MAX, NO_TIME, ThreadId::NONE);
    }
    let mut out = Vec::new();
    let e = kiln_flamegraph::render(&p, &Options::default(), &mut out).unwrap_err();
    assert!(
        matches!(e, kiln_flamegraph::FlamegraphError::WeightOverflow),
        "{e}"
    );
    assert!(out.is_empty());
    let e = kiln_flamegraph::render_diff(&p, &p, &Options::default(), &mut out).unwrap_err();
    assert!(matches!(
        e,
        kiln_flamegraph::FlamegraphError::WeightOverflow
    ));
    // Exactly 2^64-1 in total draws.
    let mut q = Profile::default();
    let f = q.frame(b"a", FrameKind::Unknown);
    q.add_sample_path(&[f], u64::MAX, NO_TIME, ThreadId::NONE);
    kiln_flamegraph::render(&q, &Options::default(), &mut out).unwrap();
}

/// `diff_marked`: only the marked functions are coloured by their change; the others are
/// drawn as unchanged, however much they moved (kiln compare marks those beyond noise).
#[test]
fn a_differential_graph_colours_only_marked_functions() {
    let profile = |noisy: u64, real: u64| {
        let mut p = Profile::default();
        let main = p.frame(b"main", FrameKind::Unknown);
        for (name, w) in [(&b"noisy"[..], noisy), (b"real", real)] {
            let f = p.frame(name, FrameKind::Unknown);
            p.add_sample_path(&[main, f], w, NO_TIME, ThreadId::NONE);
        }
        p
    };
    let (before, after) = (profile(10, 10), profile(100, 20));
    let fill = |opts: &Options| {
        let mut out = Vec::new();
        kiln_flamegraph::render_diff(&before, &after, opts, &mut out).unwrap();
        let drawn = frames(&String::from_utf8(out).unwrap());
        let of = |n: &str| {
            drawn
                .iter()
                .find(|d| d.title.starts_with(n))
                .map(|d| d.fill.clone())
                .unwrap()
        };
        (of("noisy"), of("real"))
    };
    let (noisy, real) = fill(&Options::default());
    assert_ne!(noisy, real, "both grew, by different amounts");
    let mut opts = Options::default();
    opts.diff_marked = Some([b"real".to_vec()].into_iter().collect());
    let (noisy_m, real_m) = fill(&opts);
    let (unchanged, _) = fill(&{
        let mut o = Options::default();
        o.diff_marked = Some(Default::default());
        o
    });
    assert_eq!(noisy_m, unchanged, "unmarked: drawn as unchanged");
    assert_ne!(real_m, unchanged, "marked: coloured");
    assert_ne!(
        real_m, real,
        "the colour scale is the marked functions' own"
    );
}
