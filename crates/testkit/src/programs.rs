//! Small C programs the tests profile, built by the tests, and a guard that stops the one
//! a test started.
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Builds the C source `src` into `dir/name` with `cc` and the given flags; panics if it
/// does not build.
pub fn build_c(dir: &Path, src: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let exe = dir.join(name);
    let st = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(src)
        .status()
        .expect("cc runs");
    assert!(st.success(), "cc failed to build {}", src.display());
    exe
}

/// Builds the recorder tests' `hot.c` (two hot functions under `work()` under `main()`)
/// into `dir/hot` with `cc` and the given flags; panics if it does not build.
pub fn build_hot(dir: &Path, flags: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../record/tests/programs/hot.c");
    build_c(dir, &src, "hot", flags)
}

/// Builds the run tests' `ticker.c` (100 ticks a second of `fixed_work()` plus as many
/// units of `variable_work()` as its argument says) into `dir/ticker`, once per `dir`.
pub fn build_ticker(dir: &Path) -> PathBuf {
    let exe = dir.join("ticker");
    if exe.exists() {
        return exe;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/tests/programs/ticker.c");
    build_c(
        dir,
        &src,
        "ticker",
        &["-O2", "-fno-omit-frame-pointer", "-fno-inline"],
    )
}

/// A program a test started (standard output discarded), killed and reaped when dropped.
pub struct Started(Child);

impl Started {
    /// Starts `exe` with `args`; panics if it cannot be started.
    pub fn new<S: AsRef<std::ffi::OsStr>>(exe: &Path, args: &[S]) -> Self {
        Started(
            Command::new(exe)
                .args(args)
                .stdout(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("{} does not start: {e}", exe.display())),
        )
    }

    /// Its process id, as `-p` takes it.
    pub fn pid(&self) -> String {
        self.0.id().to_string()
    }

    /// Waits for it to end (killed by the test, say).
    pub fn wait(&mut self) {
        let _ = self.0.wait();
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
