//! What the export tests share: a recording of two processes at once (so the file holds
//! several threads), exported by `kiln collapse -o` to the format its name says.
use std::path::{Path, PathBuf};

/// Records two `hot` processes run at once into `dir/r.kiln` (CPU) and exports it to
/// `dir/export` with `kiln collapse`; returns the two paths.
pub fn record_and_export(dir: &Path, export: &str) -> (PathBuf, PathBuf) {
    let exe = kiln_testkit::build_hot(dir, &["-O2", "-fno-inline"]);
    let rec = dir.join("r.kiln");
    let script = format!("'{0}' 0.3 & '{0}' 0.2; wait", exe.display());
    kiln_testkit::kiln()
        .args(["record", "-e", "cpu", "-o"])
        .arg(&rec)
        .args(["--", "sh", "-c"])
        .arg(&script)
        .assert()
        .success();
    let out = dir.join(export);
    kiln_testkit::kiln()
        .args(["collapse", "-q"])
        .arg(&rec)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    (rec, out)
}
