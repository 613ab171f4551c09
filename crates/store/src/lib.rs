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
//! * **A save that cannot complete loses no run.** A PostgreSQL store retries a server it
//!   lost for a bounded time; when a store cannot take a run (the server stays away, a
//!   full disk, a file size limit, a read-only or damaged file) [`save_or_keep`] keeps the
//!   run in a local SQLite file and says how to push it later (`kiln runs import FILE`).
//! * **Untrusted files.** Exported runs are shared between people: every size read from
//!   one is checked against what is there and the input limit before anything is
//!   allocated, and a damaged store is refused for writing and described when read.
//! * **A command reads the runs it names.** Metadata and headline figures are a few KB of
//!   JSON per run, apart from the bulk data, beside the columns runs are found by (name,
//!   group, start): `kiln runs show 4` and `kiln compare a b` read those runs' rows only
//!   ([`Store::scan`] with a [`Select`]). `kiln runs` reads neither: each run's line
//!   (name, start, status, target, load, throughput, p50, p99, CPU per operation, whether
//!   it is damaged) and its configuration's key are columns of their own ([`Listed`]),
//!   written in the save's transaction ([`Store::listing`]), so listing costs what the
//!   lines do, not what the metadata does; the runs of one configuration are found
//!   through an index ([`Select::Config`]).
//! * **One damaged run damages only itself.** A run whose metadata does not parse or holds
//!   impossible values ([`check_meta`]) is given as damaged, with what is wrong; the others
//!   read as ever.
//! * **Bulk data compressed.** Profiles are kiln's native format ([`kiln_model::native`]),
//!   series are columnar JSON, both zstd-compressed; latency histograms are HdrHistogram's
//!   own compressed serialisation, mergeable across repeats and windows ([`kiln_hdr`],
//!   here as [`hdr`]: their one codec, for untrusted bytes, their one merge and the
//!   per-second interval logs, used by every crate that writes or reads them).
//! * **Never damage what is not ours.** A file that is not a kiln store, is damaged, or was
//!   written by a newer kiln is refused with a clear error and left as it is.
#![deny(missing_docs)]

/// The latency histograms' codec, as the store reads and writes them.
pub use kiln_hdr as hdr;

mod check;
mod codec;
pub mod columns;
mod listing;
mod model;
mod postgres;
pub mod seconds;
mod sqlite;
pub mod window;

pub use check::check_meta;
/// The load's column of the depth of its queues ([`columns::QUEUE_DEPTH`]).
pub use columns::QUEUE_DEPTH;
pub use listing::{configuration, configurations, Configurations, Listed, RunRef};
pub use model::{
    Attachment, ClockOffset, Column, CommandRecord, Headline, HostInfo, JvmDump, JvmDumps,
    LoadInfo, MonitorWait, Peer, RunData, RunId, RunMeta, RunStatus, SchedulerStates, SeriesTable,
    StateSources, StateSums, StoredHistogram, TargetInfo, Window, GOROUTINE_WAITS_EVENT,
    JVM_DUMPS_ATTACHMENT, PER_SECOND, PPROF_EVENT_PREFIX, RUNTIME_ENV,
};
pub use postgres::{redact, PgStore, DEFAULT_RETRY, READ_RETRY};
pub use sqlite::SqliteStore;

/// The schema version this build writes and reads, in every kind of store (each has one
/// migration step per version).
pub(crate) const SCHEMA_VERSION: i64 = 2;

use std::path::{Path, PathBuf};

/// Where runs are kept when neither `--store` nor `KILN_STORE` says: this file in the
/// working directory.
pub(crate) const DEFAULT_STORE: &str = "kiln-runs.db";

/// Where `kiln run` keeps a run its store could not take (a server away, a full disk, a
/// damaged file): this SQLite file in the working directory, else in the temporary
/// directory ([`save_or_keep`]).
pub(crate) const FALLBACK_STORE: &str = "kiln-unsaved-runs.db";

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
    /// SQLite reported an error (a full disk, a read-only file...).
    #[error("run store '{path}': {error}")]
    Sqlite {
        /// The store.
        path: PathBuf,
        /// The error (part of this variant's message, not a separate cause: it is
        /// printed once).
        error: rusqlite::Error,
    },
    /// The store file cannot be written by this user.
    #[error("run store '{0}' is read-only for this user: kiln can read its runs but not add or remove any; give another --store")]
    ReadOnly(PathBuf),
    /// The store file is damaged: kiln neither writes to it nor reads it.
    #[error("run store '{path}' is damaged: {problems}. It is left as it is; restore a copy, or move it away and let kiln run start a new one")]
    Damaged {
        /// The store.
        path: PathBuf,
        /// What is wrong (the file's size, `PRAGMA quick_check`'s findings).
        problems: String,
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
    /// A run whose metadata does not parse or holds impossible values: listed as damaged,
    /// skipped by the commands that do not name it.
    #[error("run store '{path}': run #{run} ('{name}') is damaged: {what} (kiln runs check lists the damaged runs; kiln runs rm {run} removes this one)")]
    DamagedRun {
        /// The store.
        path: PathBuf,
        /// The run.
        run: RunId,
        /// Its name (kept beside its metadata).
        name: String,
        /// What is wrong, naming the field.
        what: String,
    },
    /// A bare number that is both a run's id and another run's name (a store written by
    /// an older kiln, which allowed numeric names).
    #[error("'{reference}' in '{path}' is both the id of run #{reference} ('{name}') and the name of another run: say #{reference} for the id or name:{reference} for the name")]
    Ambiguous {
        /// The reference as given.
        reference: String,
        /// The store.
        path: PathBuf,
        /// The name of the run with that id.
        name: String,
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
    #[error("run store '{path}': {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error (part of this variant's message).
        error: std::io::Error,
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

/// One stored run as [`Store::scan`] reads it: what is kept beside its metadata (id, name,
/// group, start), and its metadata, or what is wrong with it (a *damaged* run: its
/// metadata does not parse, or holds impossible values, [`check_meta`]).
#[derive(Clone, Debug)]
pub struct Stored {
    /// Its id.
    pub id: RunId,
    /// Its name.
    pub name: String,
    /// Its group of `--repeat` runs.
    pub group: String,
    /// Start, ms since the Unix epoch.
    pub started_unix_ms: i64,
    /// Its metadata, or what is wrong with it, naming the field.
    pub meta: std::result::Result<RunMeta, String>,
}

impl Stored {
    /// The run as a row holds it, its name, group and start columns checked against its
    /// metadata: the columns are what a run is found by (`kiln runs show NAME`), the
    /// metadata what is shown, so a row whose columns were changed around kiln (by hand,
    /// by another tool) is damaged, said the same way by every command.
    pub(crate) fn checked(mut self) -> Stored {
        let Ok(m) = &self.meta else {
            return self;
        };
        let show = |s: &str| kiln_model::text::clean_cut(s, 60).into_owned();
        let mut wrong = Vec::new();
        if m.name != self.name {
            wrong.push(format!(
                "its name column says '{}' but its metadata '{}'",
                show(&self.name),
                show(&m.name)
            ));
        }
        if m.group != self.group {
            wrong.push(format!(
                "its group column says '{}' but its metadata '{}'",
                show(&self.group),
                show(&m.group)
            ));
        }
        if m.started_unix_ms != self.started_unix_ms {
            wrong.push(format!(
                "its start column says {} but its metadata {}",
                self.started_unix_ms, m.started_unix_ms
            ));
        }
        if !wrong.is_empty() {
            self.meta = Err(format!(
                "{} (the row was changed around kiln)",
                wrong.join("; ")
            ));
        }
        self
    }

    /// Its metadata; a damaged run is [`StoreError::DamagedRun`] (in the store at `path`).
    pub fn into_meta(self, path: &Path) -> Result<RunMeta> {
        self.meta.map_err(|what| StoreError::DamagedRun {
            path: path.to_path_buf(),
            run: self.id,
            name: kiln_model::text::clean_cut(&self.name, 40).into_owned(),
            what,
        })
    }
}

/// Which runs [`Store::scan`] reads: only their rows are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Select<'a> {
    /// Every run.
    All,
    /// The run with this id.
    Id(RunId),
    /// The runs with this name.
    Name(&'a str),
    /// The runs of a group (`group`), of the name its runs share (`name`: found through
    /// the index of names, whatever the store holds).
    Group {
        /// The runs' name.
        name: &'a str,
        /// Their group.
        group: &'a str,
    },
    /// The runs of one configuration: those whose [`configuration`] is this key (found
    /// through its index; damaged runs have none).
    Config(&'a str),
}

/// A place runs are kept.
pub trait Store {
    /// Saves a whole run in one transaction; returns its id. Impossible figures are left
    /// out, and the run's warnings say which ([`check_meta`]).
    fn save(&mut self, run: &RunData) -> Result<RunId>;
    /// The runs `select` names, oldest first, each given to `f` as it is read (only what
    /// one run takes is held at a time). A damaged run is given with what is wrong.
    fn scan(&self, select: Select<'_>, f: &mut dyn FnMut(Stored)) -> Result<()>;
    /// The runs `select` names as `kiln runs` lists them, oldest first: the columns kept
    /// beside their metadata ([`Listed`]), not the metadata (a store written before they
    /// were kept, opened to read, reads its runs' metadata instead).
    fn listing(&self, select: Select<'_>, f: &mut dyn FnMut(Listed)) -> Result<()>;
    /// The group of the latest run named `name`.
    fn latest_group(&self, name: &str) -> Result<Option<String>>;
    /// The `n` names used last, latest first (for hints).
    fn latest_names(&self, n: usize) -> Result<Vec<String>>;
    /// A run's stored blobs of one kind (`profile`, `series`, `histogram`,
    /// `attachment`), decompressed, by name in byte order.
    fn blobs(&self, id: RunId, kind: &str) -> Result<Vec<(String, Vec<u8>)>>;
    /// The runs `select` names, damaged ones included.
    fn stored(&self, select: Select<'_>) -> Result<Vec<Stored>> {
        let mut out = Vec::new();
        self.scan(select, &mut |s| out.push(s))?;
        Ok(out)
    }
    /// Every run that is not damaged, oldest first (metadata and headline figures only).
    fn list(&self) -> Result<Vec<RunMeta>> {
        let mut out = Vec::new();
        self.scan(Select::All, &mut |s| out.extend(s.meta.ok()))?;
        Ok(out)
    }
    /// A run's metadata; a damaged run is [`StoreError::DamagedRun`].
    fn meta(&self, id: RunId) -> Result<RunMeta> {
        match self.stored(Select::Id(id))?.pop() {
            Some(s) => s.into_meta(self.location()),
            None => Err(StoreError::NoSuchRun {
                reference: format!("#{id}"),
                path: self.location().to_path_buf(),
                hint: String::new(),
            }),
        }
    }
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
    /// Adds to stored run `id` what ran after it was saved (`--after-each`): the commands'
    /// records in its metadata and their output as attachments, in one transaction. A run
    /// is saved before such a command runs, so that no command (hung, killed, or kiln
    /// killed meanwhile) can lose it.
    fn add_commands(
        &mut self,
        id: RunId,
        commands: &[CommandRecord],
        attachments: &[Attachment],
    ) -> Result<()>;
    /// Gives `f` every stored blob that no reader could read back, by its declared size
    /// alone (past the input limit, [`Store::set_max_input`], or negative): its run and
    /// what is wrong. Only the sizes are read. `kiln runs check` counts such a run as
    /// damaged: every command that reads it would fail.
    fn unreadable_blobs(&self, f: &mut dyn FnMut(RunId, String)) -> Result<()>;
    /// The store's location, for messages: a file's path, or a URL without its password.
    fn location(&self) -> &Path;
    /// Sets the most bytes one stored blob may inflate to (`--max-input`;
    /// [`kiln_model::input::DEFAULT_LIMIT`] until set): a blob past it is an error naming
    /// it. Each store holds its own.
    fn set_max_input(&mut self, bytes: u64);
    /// The file the store is, when it is one on this machine.
    fn local_file(&self) -> Option<&Path>;

    /// The runs a reference names, oldest first (see [`Reference`] for the rule): one run
    /// for an id, the latest group of runs with a name (all its `--repeat`s). Only their
    /// rows are read. A damaged run among them is [`StoreError::DamagedRun`].
    fn resolve(&self, reference: &str) -> Result<Vec<RunMeta>> {
        self.resolve_stored(reference)?
            .into_iter()
            .map(|s| s.into_meta(self.location()))
            .collect()
    }

    /// As [`Store::resolve`], damaged runs given as they are (`kiln runs rm` removes them).
    fn resolve_stored(&self, reference: &str) -> Result<Vec<Stored>> {
        let by_id =
            |id: RunId| -> Result<Option<Stored>> { Ok(self.stored(Select::Id(id))?.pop()) };
        let group = |name: &str| -> Result<Option<Vec<Stored>>> {
            Ok(match self.latest_group(name)? {
                Some(group) => Some(self.stored(Select::Group {
                    name,
                    group: &group,
                })?),
                None => None,
            })
        };
        let found = match Reference::parse(reference) {
            Reference::Id(id) => by_id(id)?.map(|s| vec![s]),
            Reference::Name(name) => group(name)?,
            Reference::IdOrName(id, name) => match (by_id(id)?, self.latest_group(name)?) {
                (Some(s), None) => Some(vec![s]),
                (None, Some(_)) => group(name)?,
                (Some(s), Some(_)) => {
                    return Err(StoreError::Ambiguous {
                        reference: reference.to_string(),
                        path: self.location().to_path_buf(),
                        name: kiln_model::text::clean_cut(&s.name, 40).into_owned(),
                    })
                }
                (None, None) => None,
            },
        };
        if let Some(runs) = found.filter(|r| !r.is_empty()) {
            return Ok(runs);
        }
        let names = self.latest_names(10)?;
        let hint = if names.is_empty() {
            " (the store is empty)".to_string()
        } else {
            let shown: Vec<String> = names
                .iter()
                .map(|n| kiln_model::text::clean_cut(n, 40).into_owned())
                .collect();
            format!(" (latest names: {})", shown.join(", "))
        };
        Err(StoreError::NoSuchRun {
            reference: kiln_model::text::clean_cut(reference, 80).into_owned(),
            path: self.location().to_path_buf(),
            hint,
        })
    }
}

/// How a command names a stored run. One rule, the same everywhere (`kiln runs show`,
/// `rm`, `export`, `report`, `compare`, `run:REF` inputs):
///
/// * `#12` or `id:12` is always the run with id 12;
/// * `name:NAME` is always a name;
/// * a bare number, `12`, is the id 12 (a run name cannot be a number:
///   [`check_name`]); only in a store written by an older kiln, where a run may be
///   named `12`, is it that name when no run has the id, and ambiguous (an error asking
///   for `#12` or `name:12`) when both exist;
/// * anything else is a name: the latest run, or group of `--repeat` runs, of that name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reference<'a> {
    /// An id.
    Id(RunId),
    /// A name.
    Name(&'a str),
    /// A bare number: the id, or a name in an old store.
    IdOrName(RunId, &'a str),
}

impl<'a> Reference<'a> {
    /// Reads a reference as [`Reference`] says.
    pub fn parse(reference: &'a str) -> Reference<'a> {
        if let Some(id) = reference
            .strip_prefix('#')
            .or_else(|| reference.strip_prefix("id:"))
            .and_then(|n| n.parse::<RunId>().ok())
        {
            return Reference::Id(id);
        }
        if let Some(name) = reference.strip_prefix("name:") {
            return Reference::Name(name);
        }
        match reference.parse::<RunId>() {
            Ok(id) if reference.bytes().all(|b| b.is_ascii_digit()) => {
                Reference::IdOrName(id, reference)
            }
            _ => Reference::Name(reference),
        }
    }
}

/// The longest run name (and tag) kiln takes, in characters.
pub(crate) const MAX_NAME: usize = 128;

/// Checks a run name as `kiln run --name` takes it: not empty, at most [`MAX_NAME`]
/// characters, no control or invisible formatting characters (they would rewrite a
/// terminal or reorder a report), not a number and not starting with `#`, `id:` or
/// `name:` (which name ids: see [`Reference`]). `Err` says what is wrong.
pub fn check_name(name: &str) -> std::result::Result<(), String> {
    check_text("run name", name)?;
    if name.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "a run name cannot be a number: '{name}' would read as the run id {name} (kiln runs rm {name}); add a letter, such as 'r{name}'"
        ));
    }
    if name.starts_with('#') || name.starts_with("id:") || name.starts_with("name:") {
        return Err(format!(
            "a run name cannot start with '#', 'id:' or 'name:', which name runs by id: '{}'",
            kiln_model::text::clean_cut(name, 40)
        ));
    }
    Ok(())
}

/// Checks a text kept with a run and shown as one line (a name, a tag's key or value):
/// not empty, at most [`MAX_NAME`] characters, no control or invisible formatting
/// characters. `what` names it in the error.
pub fn check_text(what: &str, text: &str) -> std::result::Result<(), String> {
    if text.trim().is_empty() {
        return Err(format!("a {what} cannot be empty"));
    }
    if let Some((at, c)) = text
        .chars()
        .enumerate()
        .find(|&(_, c)| kiln_model::text::is_hidden(c))
    {
        return Err(format!(
            "a {what} cannot hold control or invisible formatting characters: '{}' has {} at character {}",
            kiln_model::text::clean_cut(text, 60),
            kiln_model::text::clean(&c.to_string()),
            at + 1
        ));
    }
    let n = text.chars().count();
    if n > MAX_NAME {
        return Err(format!(
            "a {what} is at most {MAX_NAME} characters; this one has {n} ('{}')",
            kiln_model::text::clean_cut(text, 40)
        ));
    }
    Ok(())
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
/// (nothing is created). An SQLite file is opened read-only ([`SqliteStore::open_existing`]).
pub fn open_existing(location: &Path) -> Result<Box<dyn Store>> {
    open_existing_with(location, false)
}

/// Opens an existing store to change it (`kiln runs rm`): as [`open_existing`], but
/// writable, and a damaged file is refused as [`open`] refuses it.
pub fn open_existing_to_write(location: &Path) -> Result<Box<dyn Store>> {
    open_existing_with(location, true)
}

fn open_existing_with(location: &Path, write: bool) -> Result<Box<dyn Store>> {
    match location.to_str().filter(|_| is_url(location)) {
        Some(url) => Ok(Box::new(PgStore::open_existing(url)?)),
        None => {
            if !location.exists() {
                return Err(StoreError::Missing {
                    location: location.display().to_string(),
                });
            }
            Ok(Box::new(if write {
                SqliteStore::open_existing_to_write(location)?
            } else {
                SqliteStore::open_existing(location)?
            }))
        }
    }
}

/// What became of a run given to [`save_or_keep`].
#[derive(Debug)]
pub enum Saved {
    /// In the store, with this id.
    Stored(RunId),
    /// The store could not take it: kept in a local SQLite file instead.
    Kept {
        /// Its id in that file.
        id: RunId,
        /// The file.
        file: PathBuf,
        /// Why the store could not take it.
        error: StoreError,
        /// What of the run could not be kept (its attachments, when the whole run fitted
        /// nowhere), and why.
        left_out: Option<String>,
    },
}

/// The run could be neither saved nor kept anywhere.
#[derive(Debug, thiserror::Error)]
#[error("{error}; the run could not be kept either: {}", .tried.join("; "))]
pub struct Lost {
    /// Why the store could not take it.
    pub error: StoreError,
    /// Each fallback file tried, and why it failed.
    pub tried: Vec<String>,
}

/// The files [`save_or_keep`] tries, in order: [`FALLBACK_STORE`] in the working
/// directory, then in the temporary directory (`$TMPDIR`, else `/tmp`): another file
/// system, when the working directory's is full.
pub fn fallback_files() -> Vec<PathBuf> {
    let mut v = vec![PathBuf::from(FALLBACK_STORE)];
    let tmp = std::env::temp_dir().join(FALLBACK_STORE);
    if !same_dir(Path::new("."), &std::env::temp_dir()) {
        v.push(tmp);
    }
    v
}

fn same_dir(a: &Path, b: &Path) -> bool {
    kiln_os::io::same_file(a, b)
}

/// Saves `run` in `store`; when the store cannot take it — a server that stays away
/// through its retries, a full disk, a file size limit, a read-only or damaged file —
/// keeps the run in the first of the SQLite files `fallbacks` that takes it (created if
/// missing; see [`fallback_files`]), so that no run is lost. When the whole run fits
/// nowhere (a disk or a size limit too small for it everywhere) it is kept without its
/// attachments (an external load's output, pprof files), and [`Saved::Kept`] says so.
/// `kiln runs import FALLBACK --store …` pushes it later.
pub fn save_or_keep(
    store: &mut dyn Store,
    run: &RunData,
    fallbacks: &[PathBuf],
) -> std::result::Result<Saved, Lost> {
    let error = match store.save(run) {
        Ok(id) => return Ok(Saved::Stored(id)),
        Err(e) => e,
    };
    let mut tried = Vec::new();
    let candidates: Vec<&PathBuf> = fallbacks
        .iter()
        .filter(|f| {
            !store
                .local_file()
                .is_some_and(|s| kiln_os::io::same_file(s, f))
        })
        .collect();
    for f in &candidates {
        match keep(f, run) {
            Ok(id) => {
                return Ok(Saved::Kept {
                    id,
                    file: f.to_path_buf(),
                    error,
                    left_out: None,
                })
            }
            Err(e) => tried.push(format!("{}: {e}", f.display())),
        }
    }
    // Too large for every place: the run without its attachments, which are the bulk of
    // a run whose load printed megabytes.
    if !run.attachments.is_empty() {
        let bytes: usize = run.attachments.iter().map(|a| a.data.len()).sum();
        let names: Vec<&str> = run.attachments.iter().map(|a| a.name.as_str()).collect();
        let left_out = format!(
            "its attachments ({}, {bytes} bytes) could not be kept",
            names.join(", ")
        );
        let mut slim = RunData {
            meta: run.meta.clone(),
            series: run.series.clone(),
            histograms: run.histograms.clone(),
            profiles: run.profiles.clone(),
            attachments: Vec::new(),
        };
        slim.meta.warnings.push(format!(
            "{left_out}: the store could not take the run ({error}) and neither could a fallback file"
        ));
        for f in &candidates {
            match keep(f, &slim) {
                Ok(id) => {
                    return Ok(Saved::Kept {
                        id,
                        file: f.to_path_buf(),
                        error,
                        left_out: Some(left_out),
                    })
                }
                Err(e) => tried.push(format!("{} (without attachments): {e}", f.display())),
            }
        }
    }
    Err(Lost { error, tried })
}

/// Saves `run` in the fallback file `file`; a file this call created is removed again
/// when the save fails (no empty store is left behind).
fn keep(file: &Path, run: &RunData) -> Result<RunId> {
    let existed = std::fs::symlink_metadata(file).is_ok();
    let saved = SqliteStore::open(file).and_then(|mut s| s.save(run));
    if saved.is_err() && !existed {
        remove_store_file(file);
    }
    saved
}

/// Removes an SQLite store file with its `-wal` and `-shm` companions (a store this
/// process created and could not fill).
pub fn remove_store_file(file: &Path) {
    let _ = std::fs::remove_file(file);
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut p = file.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
}

/// Writes the runs `ids` of `store` into a new single-file SQLite store at `dest` (an
/// exported run: `kiln runs export`, from any kind of store), replacing `dest` only once
/// it is complete.
pub fn export(store: &dyn Store, ids: &[RunId], dest: &Path) -> Result<()> {
    let io = |error| StoreError::Io {
        path: dest.to_path_buf(),
        error,
    };
    let mut file = kiln_os::io::AtomicFile::create(dest).map_err(io)?;
    export_to(store, ids, &mut file, dest)?;
    file.commit().map_err(io)
}

/// As [`export`], the file's bytes written to `out` (`kiln runs export -o -`); `shown`
/// names the output in errors.
pub fn export_to(
    store: &dyn Store,
    ids: &[RunId],
    out: &mut dyn std::io::Write,
    shown: &Path,
) -> Result<()> {
    let io = |error| StoreError::Io {
        path: shown.to_path_buf(),
        error,
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
    let mut src = std::fs::File::open(&tmp).map_err(io)?;
    std::io::copy(&mut src, out).map_err(io)?;
    Ok(())
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
pub(crate) fn is_store_file(head: &[u8]) -> bool {
    head.starts_with(b"SQLite format 3\0")
}
