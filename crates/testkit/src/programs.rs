//! Small C programs the tests profile, built by the tests.
use std::path::{Path, PathBuf};

/// Builds the recorder tests' `hot.c` (two hot functions under `work()` under `main()`)
/// into `dir/hot` with `cc` and the given flags; panics if it does not build.
pub fn build_hot(dir: &Path, flags: &[&str]) -> PathBuf {
    let exe = dir.join("hot");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../record/tests/programs/hot.c");
    let st = std::process::Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(src)
        .status()
        .expect("cc runs");
    assert!(st.success(), "cc failed to build hot.c");
    exe
}
