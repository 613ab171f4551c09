//! The web pages' checks in a real headless Chromium: `web/tests/*.mjs` driven by Node
//! with playwright-core.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's `web/` directory (the viewer's and report's sources, tests and
/// `node_modules`).
pub fn web_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web")
}

/// Runs `web/tests/<script>` over the pages written in `dir`, screenshots to
/// `$KILN_SCREENSHOTS` (default `dir`); panics with the script's output unless it exits
/// successfully and says that all its browser checks passed.
pub fn run_browser_checks(script: &str, dir: &Path) {
    let web = web_dir();
    for module in ["playwright-core", "axe-core"] {
        assert!(
            web.join("node_modules").join(module).is_dir(),
            "{module} is missing: run `npm ci` in {}",
            web.display()
        );
    }
    let shots = std::env::var_os("KILN_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.to_path_buf());
    std::fs::create_dir_all(&shots).expect("screenshot directory");
    let out = Command::new("node")
        .arg(web.join("tests").join(script))
        .arg(dir)
        .arg(&shots)
        .output()
        .expect("node runs (install Node.js 20)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        out.status.success() && stdout.contains("all browser checks passed"),
        "browser checks of {script} failed:\n{stdout}\n{stderr}"
    );
}
