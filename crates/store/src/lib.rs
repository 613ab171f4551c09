//! # kiln-store: every run kept
//!
//! `kiln run` saves each run — what was run, the load's and the target's per-second
//! series, the latency histograms, the profiles of every recorded event, an external load
//! command's output — into a store, so that `kiln runs`, `kiln compare` and every command
//! that reads a profile can come back to it:
//!
//! ```text
//! kiln run --name before -p "$(pgrep -o beam.smp)" -d 30 load amqp -x 1 -y 1 -r 20000
//! kiln runs                                   # list
//! kiln flamegraph run:before -o before.html   # a stored run is a profile input
//! kiln runs export before -o before.kiln      # one self-contained file to share
//! ```
//!
//! ## Design constraints
//!
//! * **One embedded file by default.** [`SqliteStore`] keeps runs in one SQLite database
//!   (WAL, so readers never wait for a writer). Each run is written in one transaction:
//!   `kill -9` during a save loses at most that run. Two `kiln run`s saving at once both
//!   land (the second waits for the first's transaction).
//! * **A shared store for teams.** Commands talk to the [`Store`] trait, opened by
//!   [`open`] from a location: a file is a [`SqliteStore`], a `postgres://` URL a
//!   [`PgStore`] that several machines record into. Both share the schema's shape (a
//!   `runs` table of metadata and headline figures, a `blobs` table of compressed bulk
//!   data), its version numbers and the same bytes ([`codec`]'s encoding): a run moves
//!   between them unchanged (`kiln runs export` writes an SQLite file from either).
//! * **A server that goes away loses no run.** A PostgreSQL store retries a server it
//!   lost for a bounded time; [`save_or_keep`] then keeps the run in a local SQLite file
//!   and says how to push it later (`kiln runs import FILE`).
//! * **Listing is cheap.** Metadata and headline figures are a few hundred bytes of JSON
//!   per run, apart from the bulk data, so `kiln runs` reads 1,000 runs in milliseconds.
//! * **Bulk data compressed.** Profiles are kiln's native format ([`kiln_model::native`]),
//!   series are columnar JSON, both zstd-compressed; latency histograms are HdrHistogram's
//!   own compressed serialisation, mergeable across repeats and windows.
//! * **Never damage what is not ours.** A file that is not a kiln store, is damaged, or was
//!   written by a newer kiln is refused with a clear error and left as it is.
#![deny(missing_docs)]

mod codec;
mod model;
mod postgres;
mod sqlite;

pub use model::{
    Attachment, Column, Headline, Histogram, LoadInfo, RunData, RunId, RunMeta, RunStatus,
    SeriesTable, TargetInfo, Window, PER_SECOND,
};
pub use postgres::{redact, PgStore, DEFAULT_RETRY, READ_RETRY};
pub use sqlite::SqliteStore;

/// The schema version this build writes and reads, in every kind of store (each has one
/// migration step per version).
pub const SCHEMA_VERSION: i64 = 1;

use std::path::{Path, PathBuf};

/// Where runs are kept when neither `--store` nor `KILN_STORE` says: this file in the
/// working directory.
pub const DEFAULT_STORE: &str = "kiln-runs.db";

/// Where `kiln run` keeps a run it could not save in a shared store whose server cannot be
/// reached: this SQLite file in the working directory ([`save_or_keep`]).
pub const FALLBACK_STORE: &str = "kiln-unsaved-runs.db";

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The file exists but is not a kiln store.
    #[error("'{0}' is not a kiln run store (it is not an SQLite database written by kiln); give another --store, or move the file away")]
    NotAStore(PathBuf),
    /// There is no store there yet (reading commands create none).
    #[error(
        "no run store at '{location}' (kiln run creates it; choose one with --store or KILN_STORE)"
    )]
    Missing {
        /// The store's location (a URL without its password).
        location: String,
    },
    /// PostgreSQL reported an error, or its server could not be reached.
    #[error("run store '{location}': {}", postgres::describe(error))]
    Postgres {
        /// The store's URL, without its password.
        location: String,
        /// The error (its causes are part of this variant's message).
        error: ::postgres::Error,
    },
    /// The store was written by a newer kiln.
    #[error("'{path}' holds schema version {found}, newer than this kiln reads ({supported}); use a newer kiln")]
    Newer {
        /// The store.
        path: PathBuf,
        /// Its schema version.
        found: i64,
        /// The newest this build reads.
        supported: i64,
    },
    /// SQLite reported an error (a damaged file, a full disk...).
    #[error("run store '{path}': {source}")]
    Sqlite {
        /// The store.
        path: PathBuf,
        /// The error.
        source: rusqlite::Error,
    },
    /// A stored value could not be read back.
    #[error("run store '{path}': run {run}: {what}")]
    Corrupt {
        /// The store.
        path: PathBuf,
        /// The run.
        run: RunId,
        /// What was wrong.
        what: String,
    },
    /// No run matches a reference.
    #[error("no run '{reference}' in '{path}'{hint}")]
    NoSuchRun {
        /// The reference as given.
        reference: String,
        /// The store.
        path: PathBuf,
        /// A hint (the names there are).
        hint: String,
    },
    /// An I/O error around the store file.
    #[error("run store '{path}': {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl StoreError {
    /// Whether the store's server could not be reached (or went away) even after
    /// retrying: the run is worth keeping elsewhere.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, StoreError::Postgres { error, .. } if postgres::transient(error))
    }
}

/// The result type of this crate.
pub type Result<T> = std::result::Result<T, StoreError>;

/// One line of `kiln runs`: metadata with headline figures, no bulk data.
pub type RunSummary = RunMeta;

/// A place runs are kept.
pub trait Store {
    /// Saves a whole run in one transaction; returns its id.
    fn save(&mut self, run: &RunData) -> Result<RunId>;
    /// Every run, oldest first (metadata and headline figures only).
    fn list(&self) -> Result<Vec<RunSummary>>;
    /// A run's metadata.
    fn meta(&self, id: RunId) -> Result<RunMeta>;
    /// A run's stored blobs of one kind (`profile`, `series`, `histogram`,
    /// `attachment`), decompressed, by name in byte order.
    fn blobs(&self, id: RunId, kind: &str) -> Result<Vec<(String, Vec<u8>)>>;
    /// A whole run.
    fn load(&self, id: RunId) -> Result<RunData> {
        let meta = self.meta(id)?;
        let profiles = self.profiles(id)?;
        let corrupt = |what| self.corrupt(id, what);
        Ok(RunData {
            meta,
            series: codec::decode_series(self.blobs(id, "series")?).map_err(corrupt)?,
            histograms: codec::decode_histograms(self.blobs(id, "histogram")?),
            profiles,
            attachments: codec::decode_attachments(self.blobs(id, "attachment")?),
        })
    }
    /// A run's profiles only (what profile readers need).
    fn profiles(&self, id: RunId) -> Result<Vec<kiln_model::Profile>> {
        // Make sure the run exists (a run without profiles is not an error).
        self.meta(id)?;
        let blobs = self.blobs(id, "profile")?;
        codec::decode_profiles(self.location(), id, blobs).map_err(|what| self.corrupt(id, what))
    }
    /// The error for a stored value of run `id` that cannot be read back.
    fn corrupt(&self, id: RunId, what: String) -> StoreError {
        StoreError::Corrupt {
            path: self.location().to_path_buf(),
            run: id,
            what,
        }
    }
    /// Removes a run.
    fn remove(&mut self, id: RunId) -> Result<()>;
    /// The store's location, for messages: a file's path, or a URL without its password.
    fn location(&self) -> &Path;
    /// The file the store is, when it is one on this machine.
    fn local_file(&self) -> Option<&Path>;

    /// The runs a reference names, oldest first: a run id (`12` or `#12`), or a name — the
    /// latest group of runs with that name (all its `--repeat`s).
    fn resolve(&self, reference: &str) -> Result<Vec<RunMeta>> {
        let all = self.list()?;
        let id = reference.strip_prefix('#').unwrap_or(reference);
        if let Ok(id) = id.parse::<RunId>() {
            if let Some(m) = all.iter().find(|m| m.id == Some(id)) {
                return Ok(vec![m.clone()]);
            }
        }
        let latest_group = all
            .iter()
            .rev()
            .find(|m| m.name == reference)
            .map(|m| m.group.clone());
        match latest_group {
            Some(g) => Ok(all.into_iter().filter(|m| m.group == g).collect()),
            None => {
                let mut names: Vec<&str> = all.iter().map(|m| m.name.as_str()).collect();
                names.dedup();
                let hint = if names.is_empty() {
                    " (the store is empty)".to_string()
                } else {
                    let shown: Vec<&str> = names.iter().rev().take(10).copied().collect();
                    format!(" (latest names: {})", shown.join(", "))
                };
                Err(StoreError::NoSuchRun {
                    reference: reference.to_string(),
                    path: self.location().to_path_buf(),
                    hint,
                })
            }
        }
    }
}

/// Whether `location` names a PostgreSQL database (`postgres://…` or `postgresql://…`)
/// rather than an SQLite file.
pub fn is_url(location: &Path) -> bool {
    location
        .to_str()
        .is_some_and(|s| s.starts_with("postgres://") || s.starts_with("postgresql://"))
}

/// Opens the store at `location`, creating it if needed: a PostgreSQL database for a
/// `postgres://` URL ([`PgStore`]), else an SQLite file ([`SqliteStore`]). Every command
/// that keeps runs opens its store here.
pub fn open(location: &Path) -> Result<Box<dyn Store>> {
    match location.to_str().filter(|_| is_url(location)) {
        Some(url) => Ok(Box::new(PgStore::open(url)?)),
        None => Ok(Box::new(SqliteStore::open(location)?)),
    }
}

/// Opens an existing store to read it: where there is none yet, [`StoreError::Missing`]
/// (nothing is created).
pub fn open_existing(location: &Path) -> Result<Box<dyn Store>> {
    match location.to_str().filter(|_| is_url(location)) {
        Some(url) => Ok(Box::new(PgStore::open_existing(url)?)),
        None => {
            if !location.exists() {
                return Err(StoreError::Missing {
                    location: location.display().to_string(),
                });
            }
            Ok(Box::new(SqliteStore::open_existing(location)?))
        }
    }
}

/// What became of a run given to [`save_or_keep`].
#[derive(Debug)]
pub enum Saved {
    /// In the store, with this id.
    Stored(RunId),
    /// The store could not be reached: kept in a local SQLite file instead.
    Kept {
        /// Its id in that file.
        id: RunId,
        /// The file.
        file: PathBuf,
        /// Why the store could not take it.
        error: StoreError,
    },
}

/// Saves `run` in `store`; when the store's server cannot be reached even after its
/// retries, keeps the run in the SQLite file `fallback` (created if missing) instead, so
/// that no run is lost. `kiln runs import FALLBACK --store …` pushes it later.
pub fn save_or_keep(store: &mut dyn Store, run: &RunData, fallback: &Path) -> Result<Saved> {
    match store.save(run) {
        Ok(id) => Ok(Saved::Stored(id)),
        Err(error) if error.is_unreachable() => {
            let mut local = SqliteStore::open(fallback)?;
            let id = local.save(run)?;
            Ok(Saved::Kept {
                id,
                file: fallback.to_path_buf(),
                error,
            })
        }
        Err(e) => Err(e),
    }
}

/// Writes the runs `ids` of `store` into a new single-file SQLite store at `dest` (an
/// exported run: `kiln runs export`, from any kind of store), replacing `dest` only once
/// it is complete.
pub fn export(store: &dyn Store, ids: &[RunId], dest: &Path) -> Result<()> {
    let io = |source| StoreError::Io {
        path: dest.to_path_buf(),
        source,
    };
    let dir = tempfile::tempdir().map_err(io)?;
    let tmp = dir.path().join("export.db");
    {
        let mut out = SqliteStore::open(&tmp)?;
        out.single_file()?;
        for &id in ids {
            let run = store.load(id)?;
            out.save(&run)?;
        }
    }
    let mut file = kiln_model::io::AtomicFile::create(dest).map_err(io)?;
    let mut src = std::fs::File::open(&tmp).map_err(io)?;
    std::io::copy(&mut src, &mut file).map_err(io)?;
    file.commit().map_err(io)
}

/// The store `--store`/`KILN_STORE` name, or [`DEFAULT_STORE`].
pub fn default_location(flag: Option<&Path>) -> PathBuf {
    if let Some(p) = flag {
        return p.to_path_buf();
    }
    match std::env::var_os("KILN_STORE") {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => PathBuf::from(DEFAULT_STORE),
    }
}

/// Whether `head` (a file's first bytes) is an SQLite database: a kiln store or an
/// exported run.
pub fn is_store_file(head: &[u8]) -> bool {
    head.starts_with(b"SQLite format 3\0")
}
