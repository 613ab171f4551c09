//! Browser tests: writes viewer files from real `kiln_model` profiles, then drives Debian's
//! headless Chromium over them with `web/tests/browser.mjs` (playwright-core): search,
//! zoom, reset, sandwich, a transform, the diff view, a time-range selection, hostile
//! names, with screenshots checked pixel by pixel.
//!
//! Needs `npm ci` in `web/` (playwright-core) and `/usr/bin/chromium`.
use kiln_model::{io::AtomicFile, FrameKind, Profile, ThreadId};
use kiln_viewer::{write_diff_html, write_html, HtmlOptions};
use std::path::{Path, PathBuf};
use std::process::Command;

fn add(p: &mut Profile, names: &[&[u8]], weight: u64, time: u64, thread: ThreadId) {
    let frames: Vec<_> = names.iter().map(|n| p.frame(n, FrameKind::User)).collect();
    p.add_sample_path(&frames, weight, time, thread);
}

/// 200 samples over 10 s on two numbered scheduler threads: the first 5 s run `alpha`,
/// the last 5 s `beta`; names include markup, `</script>`, control bytes and bad UTF-8.
fn timed_profile() -> Profile {
    let mut p = Profile::default();
    let t1 = p.thread(Some(10), Some(11), b"1_scheduler");
    let t2 = p.thread(Some(10), Some(12), b"2_scheduler");
    let first: Vec<(Vec<&[u8]>, usize)> = vec![
        (vec![b"main", b"alpha", b"alpha_leaf"], 40),
        (vec![b"main", b"alpha", b"lock_wait"], 20),
        (vec![b"main", b"fib", b"fib", b"fib"], 20),
        (vec![b"main", b"<img src=x onerror=window.__pwned=1>"], 20),
    ];
    let second: Vec<(Vec<&[u8]>, usize)> = vec![
        (vec![b"main", b"beta", b"beta_child"], 40),
        (vec![b"main", b"Lock_acquire"], 20),
        (
            vec![b"main", b"</script><script>window.__pwned=2</script>"],
            10,
        ),
        (vec![b"main", b"ctl\x07\x1b[31m\xff\xfeend"], 10),
        (vec![b"main", b"fib", b"fib"], 20),
    ];
    let base = 1_700_000_000_000_000_000u64;
    for (half, list) in [first, second].into_iter().enumerate() {
        let mut i = 0u64;
        for (stack, n) in list {
            for k in 0..n {
                let t = base + half as u64 * 5_000_000_000 + i * 50_000_000;
                let th = if k % 2 == 0 { t1 } else { t2 };
                add(&mut p, &stack, 1, t, th);
                i += 1;
            }
        }
    }
    p
}

fn diff_profiles() -> (Profile, Profile) {
    let none = ThreadId::NONE;
    let t = kiln_model::NO_TIME;
    let mut before = Profile::default();
    add(&mut before, &[b"main", b"same"], 50, t, none);
    add(&mut before, &[b"main", b"shrinks"], 40, t, none);
    add(&mut before, &[b"main", b"grows"], 10, t, none);
    add(&mut before, &[b"main", b"gone"], 10, t, none);
    let mut after = Profile::default();
    add(&mut after, &[b"main", b"same"], 50, t, none);
    add(&mut after, &[b"main", b"shrinks"], 10, t, none);
    add(&mut after, &[b"main", b"grows"], 40, t, none);
    add(&mut after, &[b"main", b"new"], 10, t, none);
    (before, after)
}

fn write(path: &Path, f: impl FnOnce(&mut AtomicFile)) {
    let mut file = AtomicFile::create(path).unwrap();
    f(&mut file);
    file.commit().unwrap();
}

fn web_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web")
}

#[test]
fn viewer_in_headless_chromium() {
    let web = web_dir();
    assert!(
        web.join("node_modules/playwright-core").is_dir(),
        "playwright-core is missing: run `npm ci` in {}",
        web.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let opts = HtmlOptions {
        title: "kiln test </title><script>window.__pwned=3</script>".into(),
        // Force the compressed path (DecompressionStream) even for this small profile.
        compress_above: 0,
        ..Default::default()
    };
    let p = timed_profile();
    write(&dir.path().join("timed.html"), |f| {
        write_html(&p, &opts, f).unwrap()
    });
    let (before, after) = diff_profiles();
    write(&dir.path().join("diff.html"), |f| {
        write_diff_html(&before, &after, &HtmlOptions::default(), f).unwrap()
    });
    write(&dir.path().join("empty.html"), |f| {
        write_html(&Profile::default(), &HtmlOptions::default(), f).unwrap()
    });
    // A page whose data was damaged after writing: the viewer must say so, not go blank.
    let mut page = Vec::new();
    write_html(&p, &HtmlOptions::default(), &mut page).unwrap();
    let page = String::from_utf8(page).unwrap();
    let start = page.find("id=\"kiln-data-0\"").unwrap();
    let body = start + page[start..].find('>').unwrap() + 1;
    let broken = format!("{}S05WMQ{}", &page[..body], &page[body + 200..]);
    std::fs::write(dir.path().join("broken.html"), broken).unwrap();
    let shots = std::env::var_os("KILN_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.path().to_path_buf());
    let out = Command::new("node")
        .arg(web.join("tests/browser.mjs"))
        .arg(dir.path())
        .arg(&shots)
        .output()
        .expect("node runs (install Node.js 20)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        out.status.success(),
        "browser checks failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("all browser checks passed"), "{stdout}");
}
