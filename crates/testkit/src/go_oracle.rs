//! Helpers for the pprof tests (crates/formats and crates/cli): Go's own tools as the
//! oracle.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `go`, run without fetching anything (standard library only, local toolchain).
pub fn go() -> Command {
    let mut c = Command::new("go");
    c.env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "-mod=mod")
        .env("GOPROXY", "off")
        .env("GOTELEMETRY", "off");
    c
}

/// Whether Go is installed. Tests that need it say so on stderr and pass when it is not,
/// unless `KILN_REQUIRE_GO` or `KILN_REQUIRE_ANCHORS` (set by the test suite's script) is
/// set: then they fail.
pub fn have_go() -> bool {
    let ok = go()
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("KILN_REQUIRE_GO").is_none(),
            "Go is required (KILN_REQUIRE_GO is set) but `go version` failed"
        );
        crate::skip("Go is not installed (`go version` failed); the pprof oracle tests need `go`");
    }
    ok
}

/// Builds the Go program in crates/formats/tests/`name` into `dir/name`; its path.
pub fn go_build(name: &str, dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../formats/tests")
        .join(name);
    let bin = dir.join(name);
    let out = go()
        .current_dir(&src)
        .args(["build", "-o"])
        .arg(&bin)
        .arg(".")
        .output()
        .expect("go build");
    assert!(
        out.status.success(),
        "go build of {name} failed (its modules come from scripts/install-deps.sh): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    bin
}

/// Builds tests/goprof into `dir` and runs it there; returns the profiles' directory.
pub fn go_profiles(dir: &Path) -> PathBuf {
    let bin = go_build("goprof", dir);
    let out = Command::new(&bin)
        .arg("-dir")
        .arg(dir)
        .args(["-cpu", "1s"])
        .output()
        .expect("run goprof");
    assert!(
        out.status.success(),
        "goprof failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.to_path_buf()
}

/// What `go tool pprof -raw` prints of a profile.
#[derive(Debug, Default)]
pub struct Raw {
    /// `type/unit` of each value.
    pub types: Vec<String>,
    /// Values, location ids (leaf first), labels (`key:[value]`).
    pub samples: Vec<(Vec<i64>, Vec<u64>, Vec<String>)>,
    /// Function names of each location, innermost first (empty when unsymbolised).
    pub locations: BTreeMap<u64, Vec<String>>,
}

/// Runs `go tool pprof -raw` on `file` and parses what it prints.
pub fn raw(file: &Path) -> Raw {
    let out = go()
        .args(["tool", "pprof", "-raw"])
        .arg(file)
        .output()
        .expect("go tool pprof");
    assert!(
        out.status.success(),
        "go tool pprof -raw {} failed: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let mut r = Raw::default();
    let mut section = "";
    let mut last_loc = 0u64;
    for line in text.lines() {
        match line {
            "Samples:" | "Locations" | "Mappings" => {
                section = line;
                continue;
            }
            _ => {}
        }
        match section {
            "Samples:" if r.types.is_empty() => {
                // The default type is marked `[dflt]`.
                r.types = line
                    .split_whitespace()
                    .map(|t| t.trim_end_matches("[dflt]").to_string())
                    .collect();
            }
            "Samples:" => {
                if let Some((vals, locs)) = line.split_once(':').filter(|(v, _)| {
                    !v.trim().is_empty() && v.split_whitespace().all(|x| x.parse::<i64>().is_ok())
                }) {
                    r.samples.push((
                        vals.split_whitespace()
                            .map(|v| v.parse().unwrap())
                            .collect(),
                        locs.split_whitespace()
                            .map(|v| v.parse().unwrap())
                            .collect(),
                        Vec::new(),
                    ));
                } else if let Some(s) = r.samples.last_mut() {
                    // Label lines: `key:[value]` (several per line).
                    s.2.extend(line.split_whitespace().map(str::to_string));
                }
            }
            "Locations" => {
                let t = line.trim_start();
                let first = t.split_whitespace().next().unwrap_or("");
                if let Some(id) = first.strip_suffix(':').and_then(|x| x.parse::<u64>().ok()) {
                    last_loc = id;
                    let mut toks = t.split_whitespace().skip(2).peekable();
                    while toks
                        .peek()
                        .is_some_and(|x| x.starts_with("M=") || *x == "[F]")
                    {
                        toks.next();
                    }
                    let names = r.locations.entry(id).or_default();
                    match toks.next() {
                        Some("??") | None => {}
                        // A function without a name: `  :0:0 s=0`.
                        Some(f) if f.starts_with(':') => names.push("<unknown>".into()),
                        Some(f) => names.push(f.to_string()),
                    }
                } else if let Some(f) = first.split_whitespace().next() {
                    r.locations.entry(last_loc).or_default().push(f.to_string());
                }
            }
            _ => {}
        }
    }
    r
}

impl Raw {
    /// The index of sample type `name` (`alloc_space`).
    pub fn index(&self, name: &str) -> usize {
        self.types
            .iter()
            .position(|t| t.split('/').next() == Some(name))
            .unwrap_or_else(|| panic!("no sample type {name} in {:?}", self.types))
    }

    /// The total of value `i` over samples whose labels include all of `labels`.
    pub fn total(&self, i: usize, labels: &[&str]) -> i64 {
        self.samples
            .iter()
            .filter(|s| labels.iter().all(|l| s.2.iter().any(|x| x == l)))
            .map(|s| s.0[i])
            .sum()
    }

    /// Whether every location is symbolised.
    pub fn symbolised(&self) -> bool {
        self.locations.values().all(|n| !n.is_empty())
    }

    /// Value `i` as folded stacks (root first, inlined functions after their caller),
    /// zero values left out.
    pub fn folded(&self, i: usize) -> BTreeMap<String, i64> {
        let mut m = BTreeMap::new();
        for (vals, locs, _) in &self.samples {
            if vals[i] == 0 {
                continue;
            }
            let mut frames = Vec::new();
            for l in locs.iter().rev() {
                for f in self.locations[l].iter().rev() {
                    frames.push(f.as_str());
                }
            }
            *m.entry(frames.join(";")).or_insert(0) += vals[i];
        }
        m
    }
}

/// Folded text as a map.
pub fn folded_map(text: &str) -> BTreeMap<String, i64> {
    let mut m = BTreeMap::new();
    for l in text.lines().filter(|l| !l.is_empty()) {
        let (s, n) = l.rsplit_once(' ').expect("folded line");
        *m.entry(s.to_string()).or_insert(0) += n.parse::<i64>().expect("count");
    }
    m
}

/// A profile as a folded map.
pub fn profile_folded(p: &kiln_model::Profile) -> BTreeMap<String, i64> {
    let mut out = Vec::new();
    kiln_model::FoldedWriter::new(kiln_model::FoldedOptions::default())
        .write(p, &mut out)
        .unwrap();
    folded_map(&String::from_utf8(out).unwrap())
}

/// The profile's stacks, root first, with each function name cut at its first space, as
/// the oracle's reading of `go tool pprof -raw` cuts them
/// (`HashTrieMap[go.shape.interface {},…]`). Read from the stack table, not from folded
/// text: a Go generic's name can hold `;` (`go.shape.struct { key string; values []string }`),
/// which folded text cannot tell from a frame boundary.
pub fn raw_names(p: &kiln_model::Profile) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    let mut path = Vec::new();
    for (i, &w) in p.self_weights().iter().enumerate() {
        if w == 0 {
            continue;
        }
        path.clear();
        p.stacks.path_into(kiln_model::StackId(i as u32), &mut path);
        let k: Vec<String> = path
            .iter()
            .map(|&f| {
                let name = String::from_utf8_lossy(p.frame_name(f));
                name.split(' ').next().unwrap_or_default().to_string()
            })
            .collect();
        *out.entry(k.join(";")).or_insert(0) += w as i64;
    }
    out
}
