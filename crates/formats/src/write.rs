//! Writing profiles in an output format of the table.
use crate::{gecko, names, otlp, pprof, speedscope, Format, FormatError, Writer, PROFILE_OUTPUTS};
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

/// Writes profiles in a data format, with the writer its entry in [`crate::FORMATS`]
/// names (folded, kiln, pprof and the exports; pictures and tables are the commands'
/// own). Formats that hold one profile take the first.
pub fn write(
    profiles: &[Profile],
    format: Format,
    opts: &WriteOptions,
    out: &mut dyn std::io::Write,
) -> Result<(), FormatError> {
    match format.info().writer {
        Some(Writer::Profiles(write)) => write(profiles, opts, out),
        _ => Err(FormatError::NotHere {
            what: "a profile output".into(),
            format: format.name(),
            formats: names(PROFILE_OUTPUTS),
        }),
    }
}

fn io(source: std::io::Error) -> FormatError {
    FormatError::Io {
        name: "output".into(),
        source,
    }
}

/// The first profile (formats that hold one).
fn first(profiles: &[Profile]) -> Profile {
    profiles.first().cloned().unwrap_or_default()
}

pub(crate) fn write_folded(
    profiles: &[Profile],
    _: &WriteOptions,
    out: &mut dyn std::io::Write,
) -> Result<(), FormatError> {
    kiln_model::FoldedWriter::new(kiln_model::FoldedOptions::default())
        .write(&first(profiles), out)
        .map_err(FormatError::Model)
}

pub(crate) fn write_native(
    profiles: &[Profile],
    _: &WriteOptions,
    out: &mut dyn std::io::Write,
) -> Result<(), FormatError> {
    kiln_model::native::write(profiles, out).map_err(io)
}

pub(crate) fn write_pprof(
    profiles: &[Profile],
    opts: &WriteOptions,
    out: &mut dyn std::io::Write,
) -> Result<(), FormatError> {
    let o = pprof::WriteOptions {
        time_nanos: opts.time_nanos,
        comments: opts.title.iter().cloned().collect(),
    };
    pprof::write(&first(profiles), &o, !opts.uncompressed, out).map_err(io)
}

pub(crate) fn write_speedscope(
    profiles: &[Profile],
    opts: &WriteOptions,
    out: &mut dyn std::io::Write,
) -> Result<(), FormatError> {
    speedscope::write(profiles, opts.title.as_deref().unwrap_or("kiln"), out).map_err(io)
}

pub(crate) fn write_gecko(
    profiles: &[Profile],
    opts: &WriteOptions,
    out: &mut dyn std::io::Write,
) -> Result<(), FormatError> {
    gecko::write(profiles, opts.title.as_deref().unwrap_or("kiln"), out).map_err(io)
}

pub(crate) fn write_otlp(
    profiles: &[Profile],
    opts: &WriteOptions,
    out: &mut dyn std::io::Write,
) -> Result<(), FormatError> {
    let o = otlp::WriteOptions {
        time_nanos: opts.time_nanos,
        comment: opts.title.clone(),
        resource: Vec::new(),
    };
    otlp::write(profiles, &o, out).map_err(io)
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
