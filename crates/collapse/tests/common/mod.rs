//! Helpers shared by the collapse tests: run a collapse, compare with a golden file.
#![allow(dead_code)]
use kiln_collapse::{Collapsed, Collapser, Input, Options};
use kiln_model::{FoldedOptions, FoldedWriter, Profile};
use std::path::{Path, PathBuf};

pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

pub fn folded(p: &Profile) -> String {
    let mut v = Vec::new();
    FoldedWriter::new(FoldedOptions::default())
        .write(p, &mut v)
        .unwrap();
    String::from_utf8(v).expect("fixtures are UTF-8")
}

pub fn run(path: &Path, collapse: Collapser, opts: &Options) -> Collapsed {
    let data = std::fs::read(path).unwrap();
    collapse(
        Input {
            name: &path.display().to_string(),
            data: &data,
        },
        opts,
    )
    .unwrap()
}

/// Compares `actual` with the golden file, or rewrites it when KILN_BLESS=1.
pub fn check_golden(actual: &str, expected_path: &Path) {
    if std::env::var_os("KILN_BLESS").is_some() {
        std::fs::create_dir_all(expected_path.parent().unwrap()).unwrap();
        std::fs::write(expected_path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(expected_path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with KILN_BLESS=1 to create it",
            expected_path.display()
        )
    });
    if actual != expected {
        for (i, (a, e)) in actual.lines().zip(expected.lines()).enumerate() {
            if a != e {
                pretty_assertions::assert_eq!(e, a, "{} line {}", expected_path.display(), i + 1);
            }
        }
        pretty_assertions::assert_eq!(
            expected.lines().count(),
            actual.lines().count(),
            "{}",
            expected_path.display()
        );
    }
}
