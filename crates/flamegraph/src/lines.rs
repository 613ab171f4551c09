//! Reading the small line-oriented files flamegraph.pl takes (`palette.map`,
//! `--nameattr`), with errors naming the file, the line and what is wrong.
use crate::FlamegraphError;
use std::io::BufRead;
use std::path::Path;

/// Calls `f` with each non-empty line (without its line ending) and a constructor of the
/// error for that line.
pub(crate) fn for_each_line(
    reader: impl BufRead,
    path: &Path,
    mut f: impl FnMut(&[u8], &dyn Fn(&'static str) -> FlamegraphError) -> Result<(), FlamegraphError>,
) -> Result<(), FlamegraphError> {
    for (i, line) in reader.split(b'\n').enumerate() {
        let line = line.map_err(|source| FlamegraphError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        if line.is_empty() {
            continue;
        }
        let bad = |reason| FlamegraphError::BadFileLine {
            path: path.to_path_buf(),
            line: i as u64 + 1,
            reason,
            text: String::from_utf8_lossy(line).into_owned(),
        };
        f(line, &bad)?;
    }
    Ok(())
}
