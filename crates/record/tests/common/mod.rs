//! Helpers shared by the recording tests: build the test programs, run recordings, read
//! profiles as folded lines.
#![allow(dead_code)]
use kiln_model::{FoldedOptions, FoldedWriter, Profile};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory of the test programs' sources.
pub fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs")
}

/// Compiles `src` (in tests/programs) with `cc` and `flags` into `dir/out`.
pub fn build_c(dir: &Path, src: &str, out: &str, flags: &[&str]) -> PathBuf {
    let exe = dir.join(out);
    let st = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(programs().join(src))
        .status()
        .expect("cc runs");
    assert!(st.success(), "compiling {src} failed");
    exe
}

/// Folded lines `(frames, weight)` of a profile.
pub fn folded(p: &Profile) -> Vec<(Vec<String>, u64)> {
    let mut v = Vec::new();
    FoldedWriter::new(FoldedOptions::default())
        .write(p, &mut v)
        .unwrap();
    String::from_utf8_lossy(&v)
        .lines()
        .map(|l| {
            let (stack, w) = l.rsplit_once(' ').unwrap();
            (
                stack.split(';').map(str::to_string).collect(),
                w.parse().unwrap(),
            )
        })
        .collect()
}

/// Total weight of stacks whose deepest user frame is `leaf` (kernel frames above it,
/// from an interrupt or a preemption, do not count: the kernel works on its behalf), and of those, the weight whose stack also
/// satisfies `pred`.
pub fn leaf_weight(
    lines: &[(Vec<String>, u64)],
    leaf: &str,
    pred: impl Fn(&[String]) -> bool,
) -> (u64, u64) {
    let mut all = 0;
    let mut ok = 0;
    for (frames, w) in lines {
        // Kernel frames (interrupt entry and what follows) sit above the user leaf.
        let user_end = frames
            .iter()
            .position(|f| f.starts_with("asm_") || f.starts_with("entry_SYSCALL"))
            .unwrap_or(frames.len());
        if user_end > 0 && frames[user_end - 1] == leaf {
            all += w;
            if pred(&frames[..user_end]) {
                ok += w;
            }
        }
    }
    (all, ok)
}

/// Prints a profile's heaviest stacks (on failure, to see what was recorded).
pub fn dump(lines: &[(Vec<String>, u64)]) -> String {
    let mut v: Vec<_> = lines.iter().collect();
    v.sort_by_key(|l| std::cmp::Reverse(l.1));
    v.iter()
        .take(25)
        .map(|(f, w)| format!("{w:6} {}\n", f.join(";")))
        .collect()
}
