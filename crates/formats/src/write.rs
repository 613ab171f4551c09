//! Writing profiles in an output format of the table.
use crate::{gecko, names, otlp, pprof, speedscope, Format, FormatError, PROFILE_OUTPUTS};
use kiln_model::Profile;
use std::path::Path;
/// How to write a profile.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// pprof: when the profile was taken (ns since the Unix epoch; 0: unknown).
    pub time_nanos: i64,
    /// A name for what is written (the input or the run), where a format has a place for
    /// one.
    pub title: Option<String>,
    /// pprof: write the protobuf as it is (`.pb`) instead of gzipped.
    pub uncompressed: bool,
}

/// Writes profiles in a data format (folded, kiln, pprof and the exports; pictures and
/// tables are the commands' own). Formats that hold one profile take the first.
pub fn write(
    profiles: &[Profile],
    format: Format,
    opts: &WriteOptions,
    out: &mut dyn std::io::Write,
) -> Result<(), FormatError> {
    let io = |source| FormatError::Io {
        name: "output".into(),
        source,
    };
    let first = || profiles.first().cloned().unwrap_or_default();
    match format {
        Format::Folded => kiln_model::FoldedWriter::new(kiln_model::FoldedOptions::default())
            .write(&first(), out)
            .map_err(FormatError::Model),
        Format::Native => kiln_model::native::write(profiles, out).map_err(io),
        Format::Pprof => {
            let o = pprof::WriteOptions {
                time_nanos: opts.time_nanos,
                comments: opts.title.iter().cloned().collect(),
            };
            pprof::write(&first(), &o, !opts.uncompressed, out).map_err(io)
        }
        Format::Speedscope => {
            speedscope::write(profiles, opts.title.as_deref().unwrap_or("kiln"), out).map_err(io)
        }
        Format::Gecko => {
            gecko::write(profiles, opts.title.as_deref().unwrap_or("kiln"), out).map_err(io)
        }
        Format::Otlp => {
            let o = otlp::WriteOptions {
                time_nanos: opts.time_nanos,
                comment: opts.title.clone(),
                resource: Vec::new(),
            };
            otlp::write(profiles, &o, out).map_err(io)
        }
        other => Err(FormatError::NotHere {
            what: "a profile output".into(),
            format: other.name(),
            formats: names(PROFILE_OUTPUTS),
        }),
    }
}

/// The file for one event of several written in a format that holds one profile:
/// `out.svg` → `out.EVENT.svg`, `cpu.pb.gz` → `cpu.EVENT.pb.gz` (the format's extension
/// kept whole; characters other than letters, digits and `-` in the event become `_`).
pub fn per_event_path(base: &Path, format: Format, event: &str) -> std::path::PathBuf {
    let name = base
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lower = name.to_ascii_lowercase();
    let ext_len = format
        .info()
        .extensions
        .iter()
        .filter(|e| lower.ends_with(*e) && lower.len() > e.len())
        .map(|e| e.len())
        .max()
        .or_else(|| lower.rfind('.').filter(|&i| i > 0).map(|i| lower.len() - i))
        .unwrap_or(0);
    let (stem, ext) = name.split_at(name.len() - ext_len);
    let ev: String = event
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    base.with_file_name(format!("{stem}.{ev}{ext}"))
}

/// Whether `path` asks for an uncompressed pprof (`.pb`) rather than gzip.
pub fn pprof_uncompressed(path: &Path) -> bool {
    path.to_string_lossy().to_ascii_lowercase().ends_with(".pb")
}
