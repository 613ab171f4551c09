//! Helpers for the integration tests: build the programs in tests/programs,
//! run them under control of stdin/stdout, and symbolise just enough
//! (/proc/kallsyms, /proc/PID/maps, nm) to check where time went.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use kiln_bpf::offcpu::OffCpuBlock;

/// The tests load eBPF programs: they need root (CI runs them as root).
pub fn require_root() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().nth(1))
        .unwrap();
    assert_eq!(
        euid, "0",
        "the kiln-bpf integration tests load eBPF programs and must run as root"
    );
}

fn programs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs")
}

/// Where built test programs go (persists between runs, per test binary).
fn out_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kiln-bpf-programs");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compiles tests/programs/NAME.c with gcc and the given flags.
pub fn build_c(name: &str, flags: &[&str]) -> PathBuf {
    let out = out_dir().join(format!("{name}{}", flags.join("").replace(['-', '='], "_")));
    let status = Command::new("gcc")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(programs_dir().join(format!("{name}.c")))
        .arg("-pthread")
        .status()
        .expect("running gcc (apt-get install gcc)");
    assert!(status.success(), "gcc failed for {name}.c");
    out
}

/// Finds a Go toolchain: `go` on PATH, /usr/local/go, or Debian's golang-go.
pub fn go_binary() -> PathBuf {
    for cand in ["go", "/usr/local/go/bin/go", "/usr/lib/go/bin/go"] {
        if Command::new(cand)
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return PathBuf::from(cand);
        }
    }
    panic!("no Go toolchain found (looked for go on PATH, /usr/local/go, /usr/lib/go): apt-get install golang-go");
}

/// Builds tests/programs/NAME.go.
pub fn build_go(name: &str) -> PathBuf {
    let out = out_dir().join(format!("{name}_go"));
    let cache = out_dir().join("gocache");
    let status = Command::new(go_binary())
        .args(["build", "-o"])
        .arg(&out)
        .arg(programs_dir().join(format!("{name}.go")))
        .env("GOCACHE", &cache)
        .env("GOFLAGS", "-mod=mod")
        .env("GO111MODULE", "off")
        .env("GOTOOLCHAIN", "local")
        .status()
        .expect("running go build");
    assert!(status.success(), "go build failed for {name}.go");
    out
}

/// A test program waiting for lines on stdin between its phases.
pub struct Prog {
    pub child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Prog {
    pub fn spawn(path: &Path, args: &[&str]) -> Prog {
        let mut child = Command::new(path)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", path.display()));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut p = Prog {
            child,
            stdin,
            stdout,
        };
        assert_eq!(p.line(), "ready");
        p
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn line(&mut self) -> String {
        let mut l = String::new();
        self.stdout.read_line(&mut l).unwrap();
        assert!(!l.is_empty(), "test program ended early");
        l.trim_end().to_string()
    }

    /// Lets the program go on to its next phase.
    pub fn go_on(&mut self) {
        self.stdin.write_all(b"go\n").unwrap();
        self.stdin.flush().unwrap();
    }
}

impl Drop for Prog {
    fn drop(&mut self) {
        let _ = self.stdin.write_all(b"end\n");
        let _ = self.stdin.flush();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Kernel symbols from /proc/kallsyms (real addresses need root).
pub struct Kallsyms(Vec<(u64, String)>);

impl Kallsyms {
    pub fn load() -> Kallsyms {
        let text = std::fs::read_to_string("/proc/kallsyms").unwrap();
        let mut v: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let addr = u64::from_str_radix(f.next()?, 16).ok()?;
                let kind = f.next()?;
                let name = f.next()?;
                (addr != 0 && matches!(kind, "t" | "T")).then(|| (addr, name.to_string()))
            })
            .collect();
        v.sort_unstable();
        assert!(!v.is_empty(), "/proc/kallsyms shows no addresses");
        Kallsyms(v)
    }

    pub fn name(&self, ip: u64) -> &str {
        match self.0.partition_point(|(a, _)| *a <= ip) {
            0 => "?",
            i => &self.0[i - 1].1,
        }
    }

    /// Does any frame of the block's kernel stack contain `needle`?
    pub fn has(&self, e: &OffCpuBlock, needle: &str) -> bool {
        e.blocked
            .kernel_ips
            .iter()
            .any(|&ip| self.name(ip).contains(needle))
    }
}

/// Executable mappings of `pid` whose path contains `needle`.
pub fn exec_mappings(pid: u32, needle: &str) -> Vec<(u64, u64)> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    maps.lines()
        .filter(|l| l.contains(needle))
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (lo, hi) = f.next()?.split_once('-')?;
            let perms = f.next()?;
            perms.contains('x').then(|| {
                (
                    u64::from_str_radix(lo, 16).unwrap(),
                    u64::from_str_radix(hi, 16).unwrap(),
                )
            })
        })
        .collect()
}

pub fn in_any(ranges: &[(u64, u64)], a: u64) -> bool {
    ranges.iter().any(|&(lo, hi)| lo <= a && a < hi)
}

/// `[start, end)` of a function of a non-PIE binary, from `nm -S`.
pub fn symbol_range(binary: &Path, name: &str) -> (u64, u64) {
    let out = Command::new("nm")
        .arg("-S")
        .arg(binary)
        .output()
        .expect("running nm (binutils)");
    let text = String::from_utf8_lossy(&out.stdout);
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() == 4 && f[3] == name {
            let lo = u64::from_str_radix(f[0], 16).unwrap();
            let size = u64::from_str_radix(f[1], 16).unwrap();
            return (lo, lo + size);
        }
    }
    panic!("{name} not found by nm in {}", binary.display());
}

/// 8-byte words of a stack copy.
pub fn words(stack: &[u8]) -> impl Iterator<Item = u64> + '_ {
    stack
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
}

pub fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}
