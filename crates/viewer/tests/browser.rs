//! Browser tests: writes viewer files from real `kiln_model` profiles (and, for the
//! export checks, kiln's own SVG and folded output of the same views), then drives
//! Debian's headless Chromium over them with `web/tests/browser.mjs` (playwright-core):
//! units and totals, search, zoom, the keyboard, sandwich, transforms, the diff table,
//! time windows, the flame chart, export, dark mode, hostile names, an axe-core scan;
//! screenshots are checked pixel by pixel.
//!
//! Needs `npm ci` in `web/` (playwright-core, axe-core) and `/usr/bin/chromium`.
//! `KILN_SCREENSHOTS=DIR` keeps the screenshots; `KILN_FIXTURES=DIR` writes the pages
//! there (and keeps them) instead of a temporary directory.
use kiln_model::{
    transform::Transforms, EventInfo, FoldedOptions, FoldedWriter, FrameKind, Profile, ThreadId,
    WeightUnit, NO_TIME,
};
use kiln_os::io::AtomicFile;
use kiln_viewer::{write_diff_html, write_embedded, write_html, write_viewer_script, HtmlOptions};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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

/// A thread's name, tid, when it runs (ms, from and to) and its leaf function.
type Busy = (&'static [u8], u32, u64, u64, &'static [u8]);

/// Six threads in three groups over 10 s, one sample every 10 ms per busy thread:
/// `N_scheduler` threads all along, `worker-N` only in the last 5 s, `logger` only in
/// the first 2 s; what each group runs differs, so a group's flame graph names its own.
fn tracks_profile() -> Profile {
    let mut p = Profile::default();
    let base = 1_700_000_000_000_000_000u64;
    // (name, tid, first ms, end ms, leaf)
    let threads: [Busy; 6] = [
        (b"1_scheduler", 21, 0, 10_000, b"schedule"),
        (b"2_scheduler", 22, 0, 10_000, b"schedule"),
        (b"10_scheduler", 23, 3_000, 10_000, b"schedule"),
        (b"worker-1", 31, 5_000, 10_000, b"work"),
        (b"worker-2", 32, 5_000, 9_000, b"work"),
        (b"logger", 40, 0, 2_000, b"write_log"),
    ];
    for (name, tid, from_ms, to_ms, leaf) in threads {
        let th = p.thread(Some(20), Some(tid), name);
        let mut ms = from_ms;
        while ms < to_ms {
            add(&mut p, &[b"main", leaf], 1, base + ms * 1_000_000, th);
            ms += 10;
        }
    }
    p
}

/// Per thread group (kiln's default merge rules, as the run summary groups threads): its
/// samples, its first and last sample's time and every sample's, ns after the profile's
/// first sample.
fn groups_json(p: &Profile) -> String {
    use kiln_model::transform::{default_merge_rules, merge_name};
    let rules = default_merge_rules();
    let origin = p.samples.time_range().map_or(0, |r| r.0);
    let mut groups: std::collections::BTreeMap<String, (u64, u64, u64, Vec<u64>)> =
        Default::default();
    for i in 0..p.samples.len() {
        let th = p.threads.get(p.samples.thread[i]).expect("a thread");
        let name =
            String::from_utf8_lossy(&merge_name(&rules, p.strings.get(th.name))).into_owned();
        let t = p.samples.time[i] - origin;
        let g = groups.entry(name).or_insert((0, u64::MAX, 0, Vec::new()));
        g.0 += 1;
        g.1 = g.1.min(t);
        g.2 = g.2.max(t);
        g.3.push(t);
    }
    let rows: Vec<String> = groups
        .iter()
        .map(|(name, (n, first, last, times))| {
            format!(
                "{{\"name\":{},\"samples\":{n},\"first\":{first},\"last\":{last},\"times\":{}}}",
                serde_json::to_string(name).unwrap(),
                serde_json::to_string(times).unwrap()
            )
        })
        .collect();
    format!("[{}]", rows.join(","))
}

/// Frames named in their libraries as DTrace and bpftrace write them (`lib\`symbol`), for
/// the viewer's "collapse library".
fn library_profile() -> Profile {
    let mut p = Profile::default();
    let stacks: [(&[&[u8]], u64); 3] = [
        (
            &[
                b"main",
                b"server`handle",
                b"libc.so.6`malloc",
                b"libc.so.6`_int_malloc",
            ],
            30,
        ),
        (&[b"main", b"server`handle", b"libc.so.6`free"], 10),
        (&[b"main", b"server`parse", b"libc.so.6`memcpy"], 20),
    ];
    for (stack, n) in stacks {
        add(&mut p, stack, n, NO_TIME, ThreadId::NONE);
    }
    p
}

fn diff_profiles() -> (Profile, Profile) {
    let none = ThreadId::NONE;
    let t = NO_TIME;
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

/// A perf-style diff (cpu-clock periods in ns) with realistic names under 40 characters
/// and large weights, as the diff table must show them uncut.
fn wide_diff_profiles() -> (Profile, Profile) {
    let ev = || EventInfo::new("cpu-clock", WeightUnit::Period);
    let names: [&[u8]; 6] = [
        b"py_encode_basestring_ascii",
        b"rabbit_exchange:route/2",
        b"rabbit_amqqueue_process:handle_cast/2",
        b"ets:lookup/2",
        b"__memmove_avx_unaligned_erms",
        b"erts_schedule",
    ];
    let mut before = Profile::new(ev());
    let mut after = Profile::new(ev());
    for (i, n) in names.iter().enumerate() {
        let w = 8_888_688_000 / (i as u64 + 1);
        add(
            &mut before,
            &[b"beam.smp", b"process_main", n],
            w,
            NO_TIME,
            ThreadId::NONE,
        );
        add(
            &mut before,
            &[b"beam.smp", n],
            w / 3,
            NO_TIME,
            ThreadId::NONE,
        );
        let w2 = if i % 2 == 0 { w * 3 } else { w / 7 };
        add(
            &mut after,
            &[b"beam.smp", b"process_main", n],
            w2,
            NO_TIME,
            ThreadId::NONE,
        );
        add(
            &mut after,
            &[b"beam.smp", n],
            w2 / 5,
            NO_TIME,
            ThreadId::NONE,
        );
    }
    (before, after)
}

/// `n` samples 1,001,001 ns apart on one thread, each weighing `weight`.
fn clock_profile(event: EventInfo, n: u64, weight: u64) -> Profile {
    let mut p = Profile::new(event);
    let th = p.thread(Some(7), Some(7), b"worker");
    for i in 0..n {
        let leaf: &[u8] = if i % 3 == 0 { b"parse" } else { b"compute" };
        add(
            &mut p,
            &[b"main", b"run", leaf],
            weight,
            1_000_000_000 + i * 1_001_001,
            th,
        );
    }
    p
}

/// Off-CPU blocks: weights are ns blocked, stamped when each block began.
fn offcpu_profile() -> Profile {
    let mut p = Profile::new(EventInfo::new("offcpu", WeightUnit::Nanoseconds));
    let a = p.thread(Some(9), Some(9), b"server");
    let b = p.thread(Some(9), Some(10), b"logger");
    let mut t = 5_000_000_000u64;
    for i in 0..40u64 {
        let blocked = 50_000_000 + i * 1_000_000;
        add(
            &mut p,
            &[b"main", b"accept", b"__x64_sys_epoll_wait"],
            blocked,
            t,
            a,
        );
        add(
            &mut p,
            &[b"log_loop", b"futex_wait"],
            blocked / 2,
            t + 10_000_000,
            b,
        );
        t += blocked + 20_000_000;
    }
    p
}

fn bytes_profile() -> Profile {
    let mut p = Profile::new(EventInfo::new("mmap", WeightUnit::Bytes));
    add(
        &mut p,
        &[b"main", b"alloc_arena"],
        3 << 20,
        NO_TIME,
        ThreadId::NONE,
    );
    add(
        &mut p,
        &[b"main", b"grow_buffer"],
        512 << 10,
        NO_TIME,
        ThreadId::NONE,
    );
    p
}

/// A stack 60 frames deep, for the breadcrumbs.
fn deep_profile() -> Profile {
    let mut p = Profile::default();
    let names: Vec<Vec<u8>> = (0..60)
        .map(|i| format!("level_{i:02}_some_function_name").into_bytes())
        .collect();
    let refs: Vec<&[u8]> = names.iter().map(|n| n.as_slice()).collect();
    add(&mut p, &refs, 10, NO_TIME, ThreadId::NONE);
    add(&mut p, &refs[..30], 5, NO_TIME, ThreadId::NONE);
    p
}

/// 13 threads of one process, each sampled every 10 ms for 2 s, in stacks 45 frames deep
/// (`worker`, 43 levels of `rec`, `leaf`) and a few 3 deep.
fn many_threads_profile() -> Profile {
    let mut p = Profile::default();
    let mut deep: Vec<&[u8]> = vec![b"worker"];
    deep.extend(std::iter::repeat_n(&b"rec"[..], 43));
    deep.push(b"leaf");
    let base = 1_700_000_000_000_000_000u64;
    for k in 0..13u32 {
        let t = p.thread(Some(100), Some(100 + k), b"server");
        for i in 0..200u64 {
            let time = base + i * 10_000_000 + u64::from(k) * 100_000;
            if i % 10 == 0 {
                add(&mut p, &[b"worker", b"poll", b"epoll_wait"], 1, time, t);
            } else {
                add(&mut p, &deep, 1, time, t);
            }
        }
    }
    p
}

/// Plain names, for comparing the page's exports with kiln's own output.
fn export_profile() -> Profile {
    let mut p = Profile::default();
    let none = ThreadId::NONE;
    for (stack, w) in [
        (vec![&b"main"[..], b"serve", b"parse", b"lex"], 120),
        (vec![b"main", b"serve", b"parse"], 30),
        (vec![b"main", b"serve", b"respond", b"write"], 200),
        (vec![b"main", b"serve", b"respond", b"gzip", b"deflate"], 90),
        (vec![b"main", b"gc", b"mark"], 60),
        (vec![b"main", b"gc", b"sweep"], 25),
        (vec![b"main", b"idle"], 3),
        (vec![b"main", b"serve", b"gc", b"mark"], 40),
        (vec![b"main", b"tiny"], 1),
    ] {
        add(&mut p, &stack, w, NO_TIME, none);
    }
    p
}

fn write(path: &Path, f: impl FnOnce(&mut AtomicFile)) {
    let mut file = AtomicFile::create(path).unwrap();
    f(&mut file);
    file.commit().unwrap();
}

fn page(dir: &Path, name: &str, p: &Profile, opts: &HtmlOptions) {
    write(&dir.join(name), |f| write_html(p, opts, f).unwrap());
}

/// The samples of a profile as JSON lines `{"t":ns,"thread":"name [tid]","stack":[...]}`
/// (time relative to the first sample), for checking the flame chart's order.
fn samples_json(p: &Profile) -> String {
    let origin = p.samples.time_range().map_or(0, |r| r.0);
    let mut out = String::from("[");
    for i in 0..p.samples.len() {
        let th = p
            .threads
            .get(p.samples.thread[i])
            .expect("every sample has a thread");
        let name = format!(
            "{} [{}]",
            String::from_utf8_lossy(p.strings.get(th.name)),
            th.tid.unwrap_or(0)
        );
        let mut stack = Vec::new();
        let mut s = Some(p.samples.stack[i]);
        while let Some(id) = s {
            stack.push(String::from_utf8_lossy(p.node_name(id)).into_owned());
            s = p.stacks.parent(id);
        }
        stack.reverse();
        let _ = write!(
            out,
            "{}{{\"t\":{},\"thread\":{},\"stack\":{}}}",
            if i > 0 { "," } else { "" },
            p.samples.time[i] - origin,
            serde_json::to_string(&name).unwrap(),
            serde_json::to_string(&stack).unwrap()
        );
    }
    out.push(']');
    out
}

/// Writes every page and reference file the browser checks read.
fn write_fixtures(dir: &Path) {
    let opts = HtmlOptions {
        title: "kiln test </title><script>window.__pwned=3</script>".into(),
        // Force the compressed path (DecompressionStream) even for this small profile.
        compress_above: 0,
        ..Default::default()
    };
    let p = timed_profile();
    page(dir, "timed.html", &p, &opts);
    page(
        dir,
        "libs.html",
        &library_profile(),
        &HtmlOptions::default(),
    );
    std::fs::write(dir.join("timed.json"), samples_json(&p)).unwrap();
    let tracks = tracks_profile();
    page(dir, "tracks.html", &tracks, &HtmlOptions::default());
    std::fs::write(dir.join("tracks.json"), groups_json(&tracks)).unwrap();
    page(
        dir,
        "timed-chart.html",
        &p,
        &HtmlOptions {
            title: "Flame Chart".into(),
            flamechart: true,
            ..Default::default()
        },
    );
    let (before, after) = diff_profiles();
    let diff_opts = HtmlOptions {
        sources: vec!["base.folded".into(), "new.folded".into()],
        ..Default::default()
    };
    write(&dir.join("diff.html"), |f| {
        write_diff_html(&before, &after, &diff_opts, f).unwrap()
    });
    let (before, after) = wide_diff_profiles();
    write(&dir.join("diff-wide.html"), |f| {
        write_diff_html(&before, &after, &diff_opts, f).unwrap()
    });
    let plain = HtmlOptions::default();
    // perf script input: cpu-clock periods (ns), 1,198 samples at 999 Hz.
    page(
        dir,
        "period.html",
        &clock_profile(
            EventInfo::new("cpu-clock", WeightUnit::Period),
            1198,
            1_001_001,
        ),
        &HtmlOptions {
            sources: vec!["perf.txt".into()],
            ..Default::default()
        },
    );
    // kiln record's CPU profile: counted samples of a 999 Hz timer.
    let mut ev = EventInfo::new("cpu-clock", WeightUnit::Samples);
    ev.sample_period_ns = Some(1_001_001);
    page(dir, "record-cpu.html", &clock_profile(ev, 1198, 1), &plain);
    page(dir, "offcpu.html", &offcpu_profile(), &plain);
    page(dir, "bytes.html", &bytes_profile(), &plain);
    let folded_counts = clock_profile(EventInfo::default(), 1234, 1).aggregated();
    page(
        dir,
        "countname.html",
        &folded_counts,
        &HtmlOptions {
            count_name: Some("calls".into()),
            ..Default::default()
        },
    );
    page(
        dir,
        "countname-us.html",
        &clock_profile(EventInfo::default(), 100, 2_500).aggregated(),
        &HtmlOptions {
            count_name: Some("us".into()),
            ..Default::default()
        },
    );
    page(dir, "deep.html", &deep_profile(), &plain);
    page(dir, "empty.html", &Profile::default(), &plain);
    // A page holding two viewers of the same run (CPU and a second event on one clock),
    // as the run report does; the page's origin is the run's start.
    let mut other = p.clone();
    other.event = EventInfo::new("page-faults", WeightUnit::Events);
    // The page is the viewers' main landmark, as the report's is.
    let mut two = b"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>two viewers</title></head><body><main>\n".to_vec();
    let run_start = p.samples.time_range().map(|r| r.0 - 1_000_000_000);
    write_embedded(&[&p], &plain, "cpu", run_start, &mut two).unwrap();
    write_embedded(&[&other], &plain, "faults", run_start, &mut two).unwrap();
    two.extend_from_slice(b"</main>\n");
    write_viewer_script(&mut two).unwrap();
    two.extend_from_slice(b"</body></html>\n");
    std::fs::write(dir.join("two.html"), two).unwrap();
    // An embedded viewer with room to find: 13 threads of one process (a track each when
    // opened), stacks 45 frames deep, categories with a legend, and a page that goes on
    // below it (the wheel must reach it).
    let many = many_threads_profile();
    let mut room = b"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>room</title></head><body><main>\n<h1>A run</h1>\n".to_vec();
    let categorised = HtmlOptions {
        categories: Some(serde_json::json!({
            "names": ["spin", "other", "other (kernel)"],
            "frames": [["leaf", 0, 0]], "threads": [],
            "other": 1, "other_kernel": 2, "yield_category": null,
        })),
        heading_level: Some(2),
        ..plain.clone()
    };
    write_embedded(&[&many], &categorised, "cpu", None, &mut room).unwrap();
    room.extend_from_slice(
        b"<section style=\"height:1500px\"><h2>After the viewer</h2></section></main>\n",
    );
    write_viewer_script(&mut room).unwrap();
    room.extend_from_slice(b"</body></html>\n");
    std::fs::write(dir.join("room.html"), room).unwrap();
    // Exports: the page's must equal kiln's own output of the same view.
    let e = export_profile();
    page(dir, "export.html", &e, &plain);
    let drop_gc = Transforms {
        drop_samples: Some(kiln_model::transform::regex("^gc$", false).unwrap()),
        ..Default::default()
    };
    let mut svg = Vec::new();
    kiln_flamegraph::render(
        &drop_gc.apply(&e).0,
        &kiln_flamegraph::Options::default(),
        &mut svg,
    )
    .unwrap();
    std::fs::write(dir.join("ref-drop-gc.svg"), svg).unwrap();
    let merge_serve = Transforms {
        drop_frames: Some(kiln_model::transform::regex("^serve$", false).unwrap()),
        ..Default::default()
    };
    let mut folded = Vec::new();
    FoldedWriter::new(FoldedOptions::default())
        .write(&merge_serve.apply(&e).0, &mut folded)
        .unwrap();
    std::fs::write(dir.join("ref-merge-serve.folded"), folded).unwrap();
    // A page whose data was damaged after writing: the viewer must say so, not go blank.
    let mut html = Vec::new();
    write_html(&p, &HtmlOptions::default(), &mut html).unwrap();
    let html = String::from_utf8(html).unwrap();
    let start = html.find("id=\"kiln-data-0\"").unwrap();
    let body = start + html[start..].find('>').unwrap() + 1;
    let broken = format!("{}S05WMQ{}", &html[..body], &html[body + 200..]);
    std::fs::write(dir.join("broken.html"), broken).unwrap();
}

#[test]
fn viewer_in_headless_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::env::var_os("KILN_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).unwrap();
    write_fixtures(&dir);
    kiln_testkit::run_browser_checks("browser.mjs", &dir);
}
