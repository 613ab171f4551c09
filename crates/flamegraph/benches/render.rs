//! Render-only timing: parses a folded file once with kiln's parser, then times `render`
//! alone (default options, and `--minwidth 0`), writing to a file as the CLI does.
//!
//! `cargo bench -p kiln-flamegraph --bench render -- FILE.folded [OUT_DIR]`
//! (bench/flamegraph/run.sh runs it with RENDER_ONLY=1).
use std::io::Write;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let Some(path) = args.first() else {
        eprintln!("usage: cargo bench -p kiln-flamegraph --bench render -- FILE.folded [OUT_DIR]");
        return;
    };
    let out_dir = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| std::env::temp_dir().display().to_string());
    let data = std::fs::read(path).expect("read input");
    let t = Instant::now();
    let c = kiln_collapse::folded::collapse(
        kiln_collapse::Input {
            name: path,
            data: &data,
        },
        &kiln_collapse::Options::default(),
    )
    .expect("parse");
    println!(
        "parse (kiln-collapse): {:.2} s, {} stack nodes",
        t.elapsed().as_secs_f64(),
        c.profile.stacks.len()
    );
    drop(data);
    for (label, min) in [("default", None), ("minwidth0", Some(0.0))] {
        let mut o = kiln_flamegraph::Options::default();
        if let Some(m) = min {
            o.min_width = kiln_flamegraph::MinWidth::Pixels(m);
        }
        let file = std::fs::File::create(format!("{out_dir}/render-{label}.svg")).expect("create");
        let mut w = std::io::BufWriter::with_capacity(128 * 1024, file);
        let t = Instant::now();
        let s = kiln_flamegraph::render(&c.profile, &o, &mut w).expect("render");
        w.flush().expect("flush");
        println!(
            "render {label}: {:.2} s, {} frames drawn, {} pruned",
            t.elapsed().as_secs_f64(),
            s.frames,
            s.pruned
        );
    }
}
