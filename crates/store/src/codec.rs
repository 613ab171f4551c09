//! What every store writes, whatever keeps it: a run as one row of JSON metadata and named
//! blobs of zstd-compressed bulk data (profiles in kiln's native format, series as columnar
//! JSON, latency histograms in HdrHistogram's own serialisation, attachments as they are).
//! The SQLite and the PostgreSQL stores share these functions, so a run reads back the
//! same from either and moves between them byte for byte.
use crate::model::{Attachment, Histogram, RunData, RunId, RunMeta, SeriesTable};
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

fn histogram_blob_name(h: &Histogram) -> String {
    format!("{}\t{}\t{}", h.window, h.name, h.unit)
}

/// Encodes and compresses a whole run (before any transaction starts: the store's lock
/// is held only while rows are written).
pub(crate) fn encode_run(run: &RunData) -> std::io::Result<EncodedRun> {
    let meta_json = serde_json::to_string(&run.meta).map_err(std::io::Error::other)?;
    let mut blobs = Vec::new();
    let mut put = |kind: &'static str, name: String, raw: &[u8]| -> std::io::Result<()> {
        blobs.push(Blob {
            kind,
            name,
            size: raw.len() as i64,
            codec: "zstd",
            data: compress(raw)?,
        });
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
    Ok(EncodedRun { meta_json, blobs })
}

/// A blob's bytes as they were saved; `Err` says what is wrong with it.
pub(crate) fn decode_blob(
    kind: &str,
    name: &str,
    codec: &str,
    size: i64,
    data: Vec<u8>,
) -> Result<Vec<u8>, String> {
    match codec {
        "zstd" => zstd::bulk::decompress(&data, size.max(0) as usize)
            .map_err(|e| format!("{kind} '{name}': {e}")),
        "none" => Ok(data),
        other => Err(format!("{kind} '{name}': unknown codec '{other}'")),
    }
}

/// A run's metadata from its JSON, with its id in the store.
pub(crate) fn decode_meta(id: RunId, json: &str) -> Result<RunMeta, String> {
    let mut m: RunMeta = serde_json::from_str(json).map_err(|e| format!("metadata: {e}"))?;
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
pub(crate) fn decode_histograms(blobs: Vec<(String, Vec<u8>)>) -> Vec<Histogram> {
    blobs
        .into_iter()
        .map(|(name, data)| {
            let mut parts = name.splitn(3, '\t');
            let (window, hname, unit) = (
                parts.next().unwrap_or_default().to_string(),
                parts.next().unwrap_or_default().to_string(),
                parts.next().unwrap_or_default().to_string(),
            );
            Histogram {
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
