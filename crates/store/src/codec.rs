//! What every store writes, whatever keeps it: a run as one row of JSON metadata and named
//! blobs of zstd-compressed bulk data (profiles in kiln's native format, series as columnar
//! JSON, latency histograms in HdrHistogram's own serialisation, attachments as they are).
//! The SQLite and the PostgreSQL stores share these functions, so a run reads back the
//! same from either and moves between them byte for byte.
use crate::model::{
    Attachment, CommandRecord, RunData, RunId, RunMeta, SeriesTable, StoredHistogram,
};
use std::path::PathBuf;

/// zstd level for bulk data: fast to write (a run is saved within a second of its end),
/// and profiles' varint columns compress several-fold.
const ZSTD_LEVEL: i32 = 3;

/// One blob row of a run: `kind` is `profile`, `series`, `histogram` or `attachment`.
pub(crate) struct Blob {
    pub kind: &'static str,
    pub name: String,
    /// Uncompressed size.
    pub size: i64,
    /// `zstd` (compressed, with a checksum) or `none`.
    pub codec: &'static str,
    pub data: Vec<u8>,
}

/// A run ready to be written: its metadata as JSON and its blobs, compressed.
pub(crate) struct EncodedRun {
    pub meta_json: String,
    pub blobs: Vec<Blob>,
    /// The listing columns, from the metadata as it will read back.
    pub listed: crate::Listed,
}

/// Compresses with a checksum: damage inside a blob is an error, never wrong data.
fn compress(raw: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut c = zstd::bulk::Compressor::new(ZSTD_LEVEL)?;
    c.include_checksum(true)?;
    c.compress(raw)
}

/// Profiles are named by position and event, so that they read back in the order they
/// were recorded (blobs are read in name order).
fn profile_blob_name(index: usize, event: &str) -> String {
    format!("{index:03}:{event}")
}

fn histogram_blob_name(h: &StoredHistogram) -> String {
    format!("{}\t{}\t{}", h.window, h.name, h.unit)
}

/// Encodes and compresses a whole run (before any transaction starts: the store's lock
/// is held only while rows are written).
pub(crate) fn encode_run(run: &RunData) -> std::io::Result<EncodedRun> {
    let (meta_json, listed) = encode_meta(run.meta.clone())?;
    let mut blobs = Vec::new();
    let mut put = |kind: &'static str, name: String, raw: &[u8]| -> std::io::Result<()> {
        blobs.push(blob(kind, name, raw)?);
        Ok(())
    };
    for (i, p) in run.profiles.iter().enumerate() {
        let raw = kiln_model::native::encode(std::slice::from_ref(p));
        put("profile", profile_blob_name(i, &p.event.name), &raw)?;
    }
    for s in &run.series {
        let raw = serde_json::to_vec(s).map_err(std::io::Error::other)?;
        put("series", s.name.clone(), &raw)?;
    }
    for h in &run.histograms {
        put("histogram", histogram_blob_name(h), &h.data)?;
    }
    for a in &run.attachments {
        put("attachment", a.name.clone(), &a.data)?;
    }
    Ok(EncodedRun {
        meta_json,
        blobs,
        listed,
    })
}

/// A blob of `raw`, compressed.
fn blob(kind: &'static str, name: String, raw: &[u8]) -> std::io::Result<Blob> {
    Ok(Blob {
        kind,
        name,
        size: raw.len() as i64,
        codec: "zstd",
        data: compress(raw)?,
    })
}

/// Metadata as it is stored, and the listing columns of it.
fn encode_meta(mut meta: RunMeta) -> std::io::Result<(String, crate::Listed)> {
    // Impossible figures are left out (the run's warnings say which), never stored.
    crate::check::clear_impossible(&mut meta);
    let meta_json = serde_json::to_string(&meta).map_err(std::io::Error::other)?;
    // The listing columns say what a read of the stored metadata would (a damaged run
    // is listed as damaged), by the same rule.
    let stored = crate::Stored {
        id: 0,
        name: meta.name.clone(),
        group: meta.group.clone(),
        started_unix_ms: meta.started_unix_ms,
        meta: decode_meta(0, &meta_json),
    };
    let listed = crate::Listed::of(&stored, meta.status.complete);
    Ok((meta_json, listed))
}

/// Stored run `id`'s metadata (`meta_json`) with `commands` added, and the blobs of
/// `attachments`: what [`crate::Store::add_commands`] writes. `Err` says why it cannot be
/// (the stored metadata is damaged, an attachment of that name is there already).
pub(crate) fn encode_addition(
    id: RunId,
    meta_json: &str,
    commands: &[CommandRecord],
    attachments: &[Attachment],
    existing: &[String],
) -> Result<EncodedRun, String> {
    let mut meta = decode_meta(id, meta_json)?;
    meta.commands.extend_from_slice(commands);
    let (meta_json, listed) = encode_meta(meta).map_err(|e| e.to_string())?;
    let mut blobs = Vec::new();
    for a in attachments {
        if existing.contains(&a.name) {
            return Err(format!(
                "the run already has an attachment '{}'",
                kiln_model::text::clean_cut(&a.name, 80)
            ));
        }
        blobs.push(blob("attachment", a.name.clone(), &a.data).map_err(|e| e.to_string())?);
    }
    Ok(EncodedRun {
        meta_json,
        blobs,
        listed,
    })
}

/// Why a blob of `size` bytes cannot be read back under the input limit `limit`; `None`
/// when it can. A run holding one is damaged for every reader.
pub(crate) fn size_problem(kind: &str, name: &str, size: i64, limit: u64) -> Option<String> {
    let what = || format!("{kind} '{}'", kiln_model::text::clean_cut(name, 80));
    match u64::try_from(size) {
        Err(_) => Some(format!("{}: negative size {size}", what())),
        Ok(declared) if declared > limit => Some(format!(
            "{}: its size, {declared} bytes, exceeds the input limit of {} (--max-input raises it; a damaged or tampered file?)",
            what(),
            kiln_model::input::format_size(limit)
        )),
        Ok(_) => None,
    }
}

/// A blob's bytes as they were saved; `Err` says what is wrong with it.
///
/// Blobs come from files people share (`kiln runs import`, `run:` inputs of an exported
/// run), so nothing in the row is trusted: the declared `size` must agree with the zstd
/// frame's own content size, stay within the store's input limit (`limit`, from
/// `--max-input`), and be what the data really inflates to; memory grows with the data
/// actually inflated, never with a number read from the file.
pub(crate) fn decode_blob(
    kind: &str,
    name: &str,
    codec: &str,
    size: i64,
    data: Vec<u8>,
    limit: u64,
) -> Result<Vec<u8>, String> {
    use kiln_model::input;
    let what = || format!("{kind} '{}'", kiln_model::text::clean_cut(name, 80));
    let Ok(declared) = u64::try_from(size) else {
        return Err(format!("{}: negative size {size}", what()));
    };
    match codec {
        "zstd" => {
            if let Some(why) = size_problem(kind, name, size, limit) {
                return Err(why);
            }
            match zstd::zstd_safe::get_frame_content_size(&data) {
                Ok(Some(n)) if n != declared => {
                    return Err(format!(
                        "{}: its size says {declared} bytes but its data holds {n}",
                        what()
                    ))
                }
                Err(_) => return Err(format!("{}: not zstd data", what())),
                _ => {}
            }
            let dec = zstd::stream::read::Decoder::new(&data[..])
                .map_err(|e| format!("{}: {e}", what()))?;
            let mut r = input::Bounded::new(dec, declared, what(), "the inflated data");
            let mut out = Vec::new();
            match input::read_to_end(&mut r, &mut out, &what()) {
                Ok(_) if out.len() as u64 == declared => Ok(out),
                Ok(n) => Err(format!(
                    "{}: its size says {declared} bytes but its data inflates to {n}",
                    what()
                )),
                Err(e) if input::too_large(&e).is_some() => Err(format!(
                    "{}: its data inflates to more than its size, {declared} bytes",
                    what()
                )),
                Err(e) => Err(format!("{}: {e}", what())),
            }
        }
        "none" if data.len() as u64 == declared => Ok(data),
        "none" => Err(format!(
            "{}: its size says {declared} bytes but it holds {}",
            what(),
            data.len()
        )),
        other => Err(format!(
            "{}: unknown codec '{}'",
            what(),
            kiln_model::text::clean_cut(other, 40)
        )),
    }
}

/// A run's metadata from its JSON, with its id in the store; `Err` says what is wrong with
/// it, naming the field: it does not parse (`metadata does not parse at
/// headline.throughput: expected value at line 1 column 312`, a NaN or `1e999` written by
/// hand or by another tool), or holds impossible values ([`crate::check_meta`]).
pub(crate) fn decode_meta(id: RunId, json: &str) -> Result<RunMeta, String> {
    let mut m: RunMeta = serde_json::from_str(json).map_err(|e| {
        let at = crate::check::offset_of(json, e.line(), e.column());
        match crate::check::path_at(json, at) {
            path if path.is_empty() => format!("metadata does not parse: {e}"),
            path => format!("metadata does not parse at {path}: {e}"),
        }
    })?;
    let problems = crate::check::check_meta(&m);
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    m.id = Some(id);
    Ok(m)
}

/// Profiles from their blobs (in name order); `store` names the store in messages.
pub(crate) fn decode_profiles(
    store: &std::path::Path,
    id: RunId,
    blobs: Vec<(String, Vec<u8>)>,
) -> Result<Vec<kiln_model::Profile>, String> {
    let mut out = Vec::new();
    for (name, raw) in blobs {
        let shown = PathBuf::from(format!("{}#{id}/{name}", store.display()));
        let ps = kiln_model::native::decode(&raw, &shown)
            .map_err(|e| format!("profile '{name}': {e}"))?;
        out.extend(ps);
    }
    Ok(out)
}

/// The series from their blobs.
pub(crate) fn decode_series(blobs: Vec<(String, Vec<u8>)>) -> Result<Vec<SeriesTable>, String> {
    blobs
        .into_iter()
        .map(|(name, raw)| {
            serde_json::from_slice(&raw).map_err(|e| format!("series '{name}': {e}"))
        })
        .collect()
}

/// The histograms from their blobs.
pub(crate) fn decode_histograms(blobs: Vec<(String, Vec<u8>)>) -> Vec<StoredHistogram> {
    blobs
        .into_iter()
        .map(|(name, data)| {
            let mut parts = name.splitn(3, '\t');
            let (window, hname, unit) = (
                parts.next().unwrap_or_default().to_string(),
                parts.next().unwrap_or_default().to_string(),
                parts.next().unwrap_or_default().to_string(),
            );
            StoredHistogram {
                name: hname,
                window,
                unit,
                data,
            }
        })
        .collect()
}

/// The attachments from their blobs.
pub(crate) fn decode_attachments(blobs: Vec<(String, Vec<u8>)>) -> Vec<Attachment> {
    blobs
        .into_iter()
        .map(|(name, data)| Attachment { name, data })
        .collect()
}
