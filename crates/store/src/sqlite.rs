//! The embedded store: one SQLite file.
//!
//! ```text
//! runs  (id, name, grp, started_ms, complete, meta JSON,
//!        target_comm, load_text, throughput, p50_us, p99_us, cpu_per_op_us, config, damaged)
//! blobs (run_id, kind, name, codec, size, data)   kind: profile, series, histogram, attachment
//! ```
//!
//! `PRAGMA application_id` marks the file as kiln's and `PRAGMA user_version` is the
//! schema version: a newer version is refused (never rewritten), an older one is migrated
//! in one transaction. An older store opened to read is read as it is: its runs are
//! listed from their metadata (slower), until a writing kiln migrates it.
use crate::codec;
use crate::model::{Attachment, CommandRecord, RunData, RunId, RunMeta};
use crate::{Listed, Result, Select, Store, StoreError, Stored, SCHEMA_VERSION};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `PRAGMA application_id` of kiln stores: "kiln" in ASCII.
const APPLICATION_ID: i64 = 0x6b69_6c6e;

/// Migrations, one per version step: `MIGRATIONS[i]` brings version `i` to `i + 1`.
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [
    "
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        grp TEXT NOT NULL,
        started_ms INTEGER NOT NULL,
        complete INTEGER NOT NULL,
        meta TEXT NOT NULL
    );
    CREATE INDEX runs_by_name ON runs(name, id);
    CREATE TABLE blobs (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        codec TEXT NOT NULL,
        size INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (run_id, kind, name)
    ) WITHOUT ROWID;
",
    "
    ALTER TABLE runs ADD COLUMN target_comm TEXT;
    ALTER TABLE runs ADD COLUMN load_text TEXT;
    ALTER TABLE runs ADD COLUMN throughput REAL;
    ALTER TABLE runs ADD COLUMN p50_us REAL;
    ALTER TABLE runs ADD COLUMN p99_us REAL;
    ALTER TABLE runs ADD COLUMN cpu_per_op_us REAL;
    ALTER TABLE runs ADD COLUMN config TEXT;
    ALTER TABLE runs ADD COLUMN damaged TEXT;
    CREATE INDEX runs_by_config ON runs(config, id);
    -- Metadata changed in place (by hand, by another tool): its columns no longer say
    -- what it holds, and are emptied (the run is then listed from its metadata).
    CREATE TRIGGER runs_meta_changed AFTER UPDATE OF meta ON runs
        WHEN OLD.meta IS NOT NEW.meta
    BEGIN
        UPDATE runs SET target_comm = NULL, load_text = NULL, throughput = NULL,
            p50_us = NULL, p99_us = NULL, cpu_per_op_us = NULL, config = NULL, damaged = NULL
        WHERE id = NEW.id;
    END;
",
];

/// The trigger of the listing columns (the migration's, watching the columns a run is
/// found by too): a row whose metadata, name, group, start or completeness is changed
/// around kiln is listed from its metadata.
const ROW_TRIGGER: &str = "
    DROP TRIGGER IF EXISTS runs_meta_changed;
    CREATE TRIGGER runs_meta_changed AFTER UPDATE OF meta, name, grp, started_ms, complete ON runs
        WHEN OLD.meta IS NOT NEW.meta OR OLD.name IS NOT NEW.name OR OLD.grp IS NOT NEW.grp
            OR OLD.started_ms IS NOT NEW.started_ms OR OLD.complete IS NOT NEW.complete
    BEGIN
        UPDATE runs SET target_comm = NULL, load_text = NULL, throughput = NULL,
            p50_us = NULL, p99_us = NULL, cpu_per_op_us = NULL, config = NULL, damaged = NULL
        WHERE id = NEW.id;
    END;
";

/// The version that added the listing columns (filled for older runs by the migration).
const LISTED_SINCE: i64 = 2;

/// How long a writer waits for another's lock on the store.
const LOCK_WAIT: Duration = Duration::from_secs(60);

thread_local! {
    /// When the current wait for the store's lock began.
    static WAITING_SINCE: std::cell::Cell<Option<std::time::Instant>> =
        const { std::cell::Cell::new(None) };
}

/// SQLite's busy handler: waits for another process's lock up to [`LOCK_WAIT`], in short
/// naps, and gives up at once when a signal asked kiln to stop (the caller then keeps a
/// run elsewhere instead of holding the person's Ctrl-C for a minute). `attempt` counts
/// the calls of one wait from 0.
fn wait_for_lock(attempt: i32) -> bool {
    let now = std::time::Instant::now();
    let since = WAITING_SINCE.with(|w| {
        if attempt == 0 || w.get().is_none() {
            w.set(Some(now));
        }
        w.get().unwrap_or(now)
    });
    if kiln_os::stop::signalled() || now.duration_since(since) >= LOCK_WAIT {
        return false;
    }
    let nap = Duration::from_millis(if attempt < 10 {
        1 << attempt.min(5)
    } else {
        50
    });
    std::thread::sleep(nap);
    !kiln_os::stop::signalled()
}

/// A run store in one SQLite file.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
    /// Its schema version (older than [`SCHEMA_VERSION`] only when opened to read).
    version: i64,
    /// The most bytes a blob may inflate to ([`Store::set_max_input`]).
    max_input: u64,
}

/// How a store file is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// To write; created if missing.
    Create,
    /// To write; it must exist.
    Write,
    /// To read only.
    Read,
}

impl SqliteStore {
    /// Opens the store at `path` to write, creating it if there is no file there. A file
    /// that is not a kiln store, was written by a newer kiln, or is damaged (`PRAGMA
    /// quick_check`, a size that is not a whole number of pages) is refused untouched.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with(path, Access::Create)
    }

    /// Opens an existing store (or exported run) to read it, read-only: nothing is ever
    /// written to it, and a store in a directory this user cannot write (another user's)
    /// is read as an immutable file. A missing file is an error.
    pub fn open_existing(path: &Path) -> Result<Self> {
        Self::open_with(path, Access::Read)
    }

    /// Opens an existing store to change it (`kiln runs rm`); refused when damaged, as
    /// [`SqliteStore::open`].
    pub fn open_existing_to_write(path: &Path) -> Result<Self> {
        Self::open_with(path, Access::Write)
    }

    fn open_with(path: &Path, access: Access) -> Result<Self> {
        let io = |error| StoreError::Io {
            path: path.to_path_buf(),
            error,
        };
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => return Err(StoreError::NotAStore(path.to_path_buf())),
            Ok(m) if m.len() > 0 => {
                use std::io::Read;
                let mut head = [0u8; 16];
                let mut f = std::fs::File::open(path).map_err(io)?;
                let n = f.read(&mut head).map_err(io)?;
                if !crate::is_store_file(&head[..n]) {
                    return Err(StoreError::NotAStore(path.to_path_buf()));
                }
            }
            Ok(_) if access == Access::Read => {
                // An empty file holds no store (and a reader creates none).
                return Err(StoreError::NotAStore(path.to_path_buf()));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && access == Access::Create => {}
            Err(e) => return Err(io(e)),
        }
        let sql = |error| StoreError::Sqlite {
            path: path.to_path_buf(),
            error,
        };
        if access != Access::Read && path.exists() && !writable(path) {
            return Err(StoreError::ReadOnly(path.to_path_buf()));
        }
        let conn = match access {
            Access::Create => Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_WRITE
                    | OpenFlags::SQLITE_OPEN_CREATE
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            ),
            Access::Write => Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            ),
            Access::Read => Connection::open_with_flags(
                read_only_uri(path),
                OpenFlags::SQLITE_OPEN_READ_ONLY
                    | OpenFlags::SQLITE_OPEN_URI
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            ),
        }
        .map_err(sql)?;
        conn.busy_handler(Some(wait_for_lock)).map_err(sql)?;
        let mut store = SqliteStore {
            conn,
            path: path.to_path_buf(),
            version: SCHEMA_VERSION,
            max_input: kiln_model::input::DEFAULT_LIMIT,
        };
        if access == Access::Read {
            // A reader says what is damaged rather than failing on it later.
            if let Some(why) = truncated(path) {
                return Err(store.damaged(vec![why]));
            }
            store.check_schema(false)?;
        } else {
            // Never write into a damaged file: whatever SQLite would do to it, the file
            // is left as it is for its owner to look at.
            let problems = store.damage();
            if !problems.is_empty() {
                return Err(store.damaged(problems));
            }
            store.check_schema(true)?;
            store.watch_row_columns()?;
        }
        Ok(store)
    }

    /// Makes the trigger that empties a run's listing columns when its row is changed
    /// around kiln watch the columns a run is found by (name, group, start, complete) as
    /// well as its metadata, so that `kiln runs` lists such a row from its metadata (and
    /// as damaged when they disagree, as `kiln runs show` and `runs check` say). Stores
    /// made before it watched only the metadata get the new trigger from their first
    /// writer; nothing else changes.
    fn watch_row_columns(&mut self) -> Result<()> {
        let sql = |error| StoreError::Sqlite {
            path: self.path.clone(),
            error,
        };
        let current: Option<String> = self
            .conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'runs_meta_changed'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql)?;
        if current.is_some_and(|s| s.contains("started_ms")) {
            return Ok(());
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        tx.execute_batch(ROW_TRIGGER).map_err(sql)?;
        tx.commit().map_err(sql)
    }

    /// What is wrong with the file: its size (a file cut short) and `PRAGMA
    /// quick_check`'s findings (at most ten); empty when nothing is.
    fn damage(&self) -> Vec<String> {
        let mut out: Vec<String> = truncated(&self.path).into_iter().collect();
        let found: rusqlite::Result<Vec<String>> = self
            .conn
            .prepare("PRAGMA quick_check(10)")
            .and_then(|mut st| {
                st.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()
            });
        match found {
            Ok(rows) => out.extend(rows.into_iter().filter(|r| r != "ok")),
            Err(e) => out.push(e.to_string()),
        }
        out
    }

    fn damaged(&self, problems: Vec<String>) -> StoreError {
        StoreError::Damaged {
            path: self.path.clone(),
            problems: problems
                .iter()
                .map(|p| kiln_model::text::clean_cut(&p.replace('\n', " "), 200).into_owned())
                .collect::<Vec<_>>()
                .join("; "),
        }
    }

    /// A failed write, with the system's reason where SQLite has one ("disk I/O error"
    /// says nothing of a full disk or of `ulimit -f`).
    fn write_err(&self, error: rusqlite::Error) -> StoreError {
        if let rusqlite::Error::SqliteFailure(e, msg) = &error {
            if e.code == rusqlite::ErrorCode::DatabaseBusy && kiln_os::stop::signalled() {
                let text = msg.clone().unwrap_or_else(|| e.to_string());
                return StoreError::Sqlite {
                    path: self.path.clone(),
                    error: rusqlite::Error::SqliteFailure(
                        *e,
                        Some(format!(
                            "{text}: another process holds its lock, and kiln was asked to stop rather than wait for it"
                        )),
                    ),
                };
            }
            if matches!(
                e.code,
                rusqlite::ErrorCode::SystemIoFailure | rusqlite::ErrorCode::DiskFull
            ) {
                // SAFETY: the connection's handle is valid while `self` is; the call
                // only reads the errno SQLite saved.
                let errno = unsafe { rusqlite::ffi::sqlite3_system_errno(self.conn.handle()) };
                if errno != 0 {
                    let why = std::io::Error::from_raw_os_error(errno);
                    let text = msg.clone().unwrap_or_else(|| e.to_string());
                    return StoreError::Sqlite {
                        path: self.path.clone(),
                        error: rusqlite::Error::SqliteFailure(*e, Some(format!("{text} ({why})"))),
                    };
                }
            }
        }
        self.err(error)
    }

    fn err(&self, error: rusqlite::Error) -> StoreError {
        // A damaged file found while reading: say what is damaged.
        if let rusqlite::Error::SqliteFailure(e, _) = &error {
            if matches!(
                e.code,
                rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase
            ) {
                let mut problems = self.damage();
                if problems.is_empty() {
                    problems.push(error.to_string());
                }
                return self.damaged(problems);
            }
        }
        StoreError::Sqlite {
            path: self.path.clone(),
            error,
        }
    }

    /// Checks the file is kiln's and its schema one this build reads; when `write`,
    /// creates or migrates it.
    fn check_schema(&mut self, write: bool) -> Result<()> {
        // One statement, so one snapshot: read one by one, a store another process
        // creates meanwhile could show its tables but not yet its id, and be refused.
        let (app, version, tables): (i64, i64, i64) = self
            .conn
            .query_row(
                "SELECT (SELECT application_id FROM pragma_application_id), \
                        (SELECT user_version FROM pragma_user_version), \
                        (SELECT count(*) FROM sqlite_master WHERE type = 'table')",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(|e| self.err(e))?;
        if app != APPLICATION_ID && (tables > 0 || app != 0) {
            return Err(StoreError::NotAStore(self.path.clone()));
        }
        if version > SCHEMA_VERSION {
            return Err(StoreError::Newer {
                path: self.path.clone(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        if version == SCHEMA_VERSION {
            return Ok(());
        }
        if !write {
            // Nothing to read in a file without kiln's tables, and a reader changes
            // nothing: an older store is read as it is.
            if version < 1 {
                return Err(StoreError::NotAStore(self.path.clone()));
            }
            self.version = version;
            return Ok(());
        }
        // WAL: readers (kiln runs, a report) never wait for a saving kiln run.
        let _ = self
            .conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0));
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|error| StoreError::Sqlite {
                path: path.clone(),
                error,
            })?;
        // Another process may have migrated while we waited for the lock.
        let now: i64 = tx
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|error| StoreError::Sqlite {
                path: path.clone(),
                error,
            })?;
        for step in MIGRATIONS.iter().skip(now.max(0) as usize) {
            tx.execute_batch(step).map_err(|error| StoreError::Sqlite {
                path: path.clone(),
                error,
            })?;
        }
        if now < LISTED_SINCE {
            fill_listing(&tx).map_err(|error| StoreError::Sqlite {
                path: path.clone(),
                error,
            })?;
        }
        tx.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION};"
        ))
        .map_err(|error| StoreError::Sqlite {
            path: path.clone(),
            error,
        })?;
        tx.commit()
            .map_err(|error| StoreError::Sqlite { path, error })
    }

    /// Writes the runs `ids` of this store into a new single-file store at `dest` (an
    /// exported run: `kiln runs export`), replacing `dest` only once it is complete.
    pub fn export(&self, ids: &[RunId], dest: &Path) -> Result<()> {
        crate::export(self, ids, dest)
    }

    /// Whether its runs' listing columns are there (not in an older store opened to read).
    fn listed(&self) -> bool {
        self.version >= LISTED_SINCE
    }

    /// Makes this (new) file self-contained: no `-wal` beside it.
    pub(crate) fn single_file(&self) -> Result<()> {
        self.conn
            .query_row("PRAGMA journal_mode = DELETE", [], |r| {
                r.get::<_, String>(0)
            })
            .map_err(|e| self.err(e))?;
        Ok(())
    }
}

impl SqliteStore {
    /// Fails when the store's shared-memory file (`-shm`, which SQLite maps to coordinate
    /// readers and writers) can no longer be written — made immutable, or read-only,
    /// since the store was opened: a write through its mapping would then end kiln with
    /// SIGBUS and lose the run, where an error lets the caller keep it elsewhere.
    ///
    /// Asked with access(2), never by opening the file: closing any descriptor of a file
    /// drops every POSIX lock this process holds on it, SQLite's among them — a reader
    /// that opened the store next found no one else on it, reset the shared memory, and
    /// this process died of SIGBUS at its next write (a run lost while `kiln runs`
    /// polled the store).
    fn check_shm(&self) -> Result<()> {
        let mut shm = self.path.as_os_str().to_owned();
        shm.push("-shm");
        let shm = PathBuf::from(shm);
        if !shm.exists() || writable(&shm) {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        Err(StoreError::Io {
            path: shm,
            error: std::io::Error::new(
                e.kind(),
                format!("the store's shared-memory file cannot be written ({e}); a write through SQLite's mapping of it would crash"),
            ),
        })
    }
}

impl Store for SqliteStore {
    fn save(&mut self, run: &RunData) -> Result<RunId> {
        let enc = codec::encode_run(run).map_err(|error| StoreError::Io {
            path: self.path.clone(),
            error,
        })?;
        self.check_shm()?;
        let saved = (|| -> rusqlite::Result<RunId> {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute(
                "INSERT INTO runs (name, grp, started_ms, complete, meta) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    run.meta.name,
                    run.meta.group,
                    run.meta.started_unix_ms,
                    run.meta.status.complete,
                    enc.meta_json
                ],
            )?;
            let id = tx.last_insert_rowid();
            write_listing(&tx, id, &enc.listed)?;
            {
                let mut insert = tx.prepare_cached(
                    "INSERT INTO blobs (run_id, kind, name, codec, size, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?;
                for b in &enc.blobs {
                    insert.execute(params![id, b.kind, b.name, b.codec, b.size, b.data])?;
                }
            }
            tx.commit()?;
            Ok(id)
        })();
        saved.map_err(|e| self.write_err(e))
    }

    fn scan(&self, select: Select<'_>, f: &mut dyn FnMut(Stored)) -> Result<()> {
        if let (Select::Config(key), false) = (select, self.listed()) {
            // An older store read as it is: no column to find a configuration by.
            return self.scan(Select::All, &mut |s| {
                if s.meta
                    .as_ref()
                    .is_ok_and(|m| crate::configuration(m) == key)
                {
                    f(s)
                }
            });
        }
        let (filter, params) = filter(&select);
        let sql = format!(
            "SELECT id, name, grp, started_ms, complete, meta FROM runs {filter} ORDER BY id"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.err(e))?;
        let mut rows = stmt.query(&params[..]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            f(stored_row(r).map_err(|e| self.err(e))?.0);
        }
        Ok(())
    }

    fn listing(&self, select: Select<'_>, f: &mut dyn FnMut(Listed)) -> Result<()> {
        // A run's metadata is read only where its columns are empty: a row changed or
        // written around kiln, or every row of an older store read as it is.
        let columns = if self.listed() {
            format!(
                "{}, {}",
                crate::listing::COLUMNS,
                crate::listing::META_WHEN_NEEDED
            )
        } else {
            "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, meta".to_string()
        };
        let config = match select {
            Select::Config(key) if !self.listed() => Some(key),
            _ => None,
        };
        let select = if config.is_some() {
            Select::All
        } else {
            select
        };
        let (filter, params) = filter(&select);
        let sql = format!(
            "SELECT id, name, grp, started_ms, complete, {columns} FROM runs {filter} ORDER BY id"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.err(e))?;
        let mut rows = stmt.query(&params[..]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let l = listed_row(r).map_err(|e| self.err(e))?;
            if config.is_none_or(|key| key == l.config) {
                f(l);
            }
        }
        Ok(())
    }

    fn latest_group(&self, name: &str) -> Result<Option<String>> {
        self.conn
            .query_row(
                "SELECT grp FROM runs WHERE name = ?1 ORDER BY id DESC LIMIT 1",
                [name],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    fn latest_names(&self, n: usize) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT name FROM runs GROUP BY name ORDER BY max(id) DESC LIMIT ?1")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([n as i64], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<Vec<String>>>()
            .map_err(|e| self.err(e))
    }

    fn blobs(&self, id: RunId, kind: &str) -> Result<Vec<(String, Vec<u8>)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT name, codec, size, data FROM blobs WHERE run_id = ?1 AND kind = ?2 ORDER BY name",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![id, kind], |r| {
                Ok((
                    blob_name(kind, r.get_ref(0)?),
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Vec<u8>>(3)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (name, codec, size, data) = row.map_err(|e| self.err(e))?;
            let name = name.map_err(|what| self.corrupt(id, what))?;
            let raw = codec::decode_blob(kind, &name, &codec, size, data, self.max_input)
                .map_err(|what| self.corrupt(id, what))?;
            out.push((name, raw));
        }
        Ok(out)
    }

    fn remove(&mut self, id: RunId) -> Result<()> {
        let path = self.path.clone();
        let sql = |error| StoreError::Sqlite {
            path: path.clone(),
            error,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        tx.execute("DELETE FROM blobs WHERE run_id = ?1", [id])
            .map_err(sql)?;
        let n = tx
            .execute("DELETE FROM runs WHERE id = ?1", [id])
            .map_err(sql)?;
        tx.commit().map_err(sql)?;
        if n == 0 {
            return Err(StoreError::NoSuchRun {
                reference: format!("#{id}"),
                path: self.path.clone(),
                hint: String::new(),
            });
        }
        Ok(())
    }

    fn add_commands(
        &mut self,
        id: RunId,
        commands: &[CommandRecord],
        attachments: &[Attachment],
    ) -> Result<()> {
        enum Failed {
            Sql(rusqlite::Error),
            Missing,
            Refused(String),
        }
        self.check_shm()?;
        impl From<rusqlite::Error> for Failed {
            fn from(e: rusqlite::Error) -> Failed {
                Failed::Sql(e)
            }
        }
        let added = (|| -> std::result::Result<(), Failed> {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            let meta: String = tx
                .query_row("SELECT meta FROM runs WHERE id = ?1", [id], |r| r.get(0))
                .optional()?
                .ok_or(Failed::Missing)?;
            let names: Vec<String> = {
                let mut st = tx.prepare_cached(
                    "SELECT name FROM blobs WHERE run_id = ?1 AND kind = 'attachment'",
                )?;
                let rows = st.query_map([id], |r| r.get(0))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            let enc = codec::encode_addition(id, &meta, commands, attachments, &names)
                .map_err(Failed::Refused)?;
            // The trigger empties the listing columns when the metadata changes; they are
            // written again from the new metadata.
            tx.execute(
                "UPDATE runs SET meta = ?2 WHERE id = ?1",
                params![id, enc.meta_json],
            )?;
            write_listing(&tx, id, &enc.listed)?;
            {
                let mut insert = tx.prepare_cached(
                    "INSERT INTO blobs (run_id, kind, name, codec, size, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?;
                for b in &enc.blobs {
                    insert.execute(params![id, b.kind, b.name, b.codec, b.size, b.data])?;
                }
            }
            tx.commit()?;
            Ok(())
        })();
        match added {
            Ok(()) => Ok(()),
            Err(Failed::Sql(e)) => Err(self.write_err(e)),
            Err(Failed::Missing) => Err(StoreError::NoSuchRun {
                reference: format!("#{id}"),
                path: self.path.clone(),
                hint: String::new(),
            }),
            Err(Failed::Refused(what)) => Err(self.corrupt(id, what)),
        }
    }

    fn unreadable_blobs(&self, f: &mut dyn FnMut(RunId, String)) -> Result<()> {
        // Every blob's name and size (never its data): a name that is not UTF-8 text is
        // found here too, which no reader could read back.
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT run_id, kind, name, size FROM blobs ORDER BY run_id, kind, name",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let row = (|| -> rusqlite::Result<_> {
                let kind: String = r.get(1)?;
                let name = blob_name(&kind, r.get_ref(2)?);
                Ok((r.get::<_, RunId>(0)?, kind, name, r.get::<_, i64>(3)?))
            })()
            .map_err(|e| self.err(e))?;
            let (id, kind, name, size) = row;
            match name {
                Err(why) => f(id, why),
                Ok(name) => {
                    if let Some(why) = codec::size_problem(&kind, &name, size, self.max_input) {
                        f(id, why);
                    }
                }
            }
        }
        Ok(())
    }

    fn location(&self) -> &Path {
        &self.path
    }

    fn set_max_input(&mut self, bytes: u64) {
        self.max_input = bytes;
    }

    fn local_file(&self) -> Option<&Path> {
        Some(&self.path)
    }
}

/// The `WHERE` clause of a [`Select`] and its parameters (`Select::Config` needs the
/// listing columns).
fn filter<'a>(select: &'a Select<'a>) -> (&'static str, Vec<&'a dyn rusqlite::ToSql>) {
    match select {
        Select::All => ("", vec![]),
        Select::Id(id) => ("WHERE id = ?1", vec![id]),
        Select::Name(n) => ("WHERE name = ?1", vec![n]),
        Select::Group { name, group } => ("WHERE name = ?1 AND grp = ?2", vec![name, group]),
        Select::Config(key) => ("WHERE config = ?1", vec![key]),
    }
}

/// A run read whole from a row of `id, name, grp, started_ms, complete, meta`, and
/// whether it is complete (its column).
fn stored_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(Stored, bool)> {
    let id: RunId = r.get(0)?;
    let s = Stored {
        id,
        name: r.get(1)?,
        group: r.get(2)?,
        started_unix_ms: r.get(3)?,
        meta: meta_of(id, r.get_ref(5)?),
    }
    .checked();
    Ok((s, r.get::<_, Option<bool>>(4)?.unwrap_or(false)))
}

/// A blob's name from its column; `Err` says what is wrong with one that is not UTF-8 text
/// (a damaged or tampered file: damage of its run, not a store error).
fn blob_name(kind: &str, v: rusqlite::types::ValueRef<'_>) -> std::result::Result<String, String> {
    let bytes = match v {
        rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => t,
        other => {
            return Err(format!(
                "a {kind}'s name is {:?}, not text",
                other.data_type()
            ))
        }
    };
    match std::str::from_utf8(bytes) {
        Ok(s) if matches!(v, rusqlite::types::ValueRef::Text(_)) => Ok(s.to_string()),
        _ => Err(format!(
            "{kind} '{}': its name is not UTF-8 text (a damaged or tampered file?)",
            kiln_model::text::clean_bytes(bytes, 80)
        )),
    }
}

/// A run's metadata from its column. Metadata that is not text (a hand-edited row) is
/// damage, not a store error.
fn meta_of(id: RunId, v: rusqlite::types::ValueRef<'_>) -> std::result::Result<RunMeta, String> {
    match v {
        rusqlite::types::ValueRef::Text(t) => match std::str::from_utf8(t) {
            Ok(json) => codec::decode_meta(id, json),
            Err(e) => Err(format!("metadata is not UTF-8 text: {e}")),
        },
        other => Err(format!("metadata is {:?}, not text", other.data_type())),
    }
}

/// A run's listing from a row of `id, name, grp, started_ms, complete`,
/// [`crate::listing::COLUMNS`] and its metadata where the columns are empty (then read
/// from the metadata).
fn listed_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Listed> {
    let config: Option<String> = r.get(11)?;
    let damaged: Option<String> = r.get(12)?;
    let complete = r.get::<_, Option<bool>>(4)?.unwrap_or(false);
    if r.get_ref(13)? != rusqlite::types::ValueRef::Null {
        let id: RunId = r.get(0)?;
        let s = Stored {
            id,
            name: r.get(1)?,
            group: r.get(2)?,
            started_unix_ms: r.get(3)?,
            meta: meta_of(id, r.get_ref(13)?),
        }
        .checked();
        return Ok(Listed::of(&s, complete));
    }
    Ok(Listed {
        id: r.get(0)?,
        name: r.get(1)?,
        group: r.get(2)?,
        started_unix_ms: r.get(3)?,
        complete,
        target: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
        load: r.get::<_, Option<String>>(6)?.unwrap_or_default(),
        throughput: r.get(7)?,
        p50_us: r.get(8)?,
        p99_us: r.get(9)?,
        cpu_per_op_us: r.get(10)?,
        config: config.unwrap_or_default(),
        damaged,
    })
}

/// Writes run `id`'s listing columns.
fn write_listing(conn: &Connection, id: RunId, l: &Listed) -> rusqlite::Result<()> {
    let mut st = conn.prepare_cached(
        "UPDATE runs SET target_comm = ?2, load_text = ?3, throughput = ?4, p50_us = ?5, \
         p99_us = ?6, cpu_per_op_us = ?7, config = ?8, damaged = ?9 WHERE id = ?1",
    )?;
    let config = (l.damaged.is_none()).then_some(&l.config);
    st.execute(params![
        id,
        l.target,
        l.load,
        l.throughput,
        l.p50_us,
        l.p99_us,
        l.cpu_per_op_us,
        config,
        l.damaged
    ])?;
    Ok(())
}

/// Fills the listing columns of every run of a store being migrated (within its
/// transaction): each run's metadata read and checked once, a thousand runs at a time.
fn fill_listing(tx: &Connection) -> rusqlite::Result<()> {
    let mut after = RunId::MIN;
    loop {
        let batch: Vec<Listed> = {
            let mut st = tx.prepare_cached(
                "SELECT id, name, grp, started_ms, complete, meta FROM runs \
                 WHERE id > ?1 ORDER BY id LIMIT 1000",
            )?;
            let mut rows = st.query([after])?;
            let mut out = Vec::new();
            while let Some(r) = rows.next()? {
                let (s, complete) = stored_row(r)?;
                out.push(Listed::of(&s, complete));
            }
            out
        };
        let Some(last) = batch.last() else {
            return Ok(());
        };
        after = last.id;
        for l in &batch {
            write_listing(tx, l.id, l)?;
        }
    }
}

/// The SQLite URI that opens `path` read-only: `mode=ro`, and `immutable=1` when this user
/// cannot write the directory (another user's store): a WAL reader could not create the
/// shared-memory file it needs there, so the file is read as it is (a run its owner is
/// saving at that moment is not seen).
fn read_only_uri(path: &Path) -> String {
    use std::fmt::Write as _;
    use std::os::unix::ffi::OsStrExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            uri.push(b as char);
        } else {
            let _ = write!(uri, "%{b:02X}");
        }
    }
    uri.push_str("?mode=ro");
    if !writable(dir) {
        uri.push_str("&immutable=1");
    }
    uri
}

/// Whether this user may write `path` (access(2), as the kernel would decide).
fn writable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(path.as_os_str().as_bytes())
        // SAFETY: access(2) on a NUL-terminated path only reads it.
        .is_ok_and(|c| unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0)
}

/// Why the file at `path` is surely cut short: an SQLite file is a whole number of pages.
fn truncated(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 100];
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.read_exact(&mut head).ok()?;
    let page = match u16::from_be_bytes([head[16], head[17]]) {
        1 => 65536,
        p => u64::from(p),
    };
    if page < 512 || !page.is_power_of_two() {
        return Some(format!("its header gives a page size of {page} bytes"));
    }
    (!len.is_multiple_of(page)).then(|| {
        format!(
            "its size, {len} bytes, is not a whole number of its {page}-byte pages (cut short?)"
        )
    })
}
