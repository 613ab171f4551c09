//! The embedded store: one SQLite file.
//!
//! ```text
//! runs  (id, name, grp, started_ms, complete, meta JSON)
//! blobs (run_id, kind, name, codec, size, data)   kind: profile, series, histogram, attachment
//! ```
//!
//! `PRAGMA application_id` marks the file as kiln's and `PRAGMA user_version` is the
//! schema version: a newer version is refused (never rewritten), an older one is migrated
//! in one transaction.
use crate::model::{Attachment, Histogram, RunData, RunId, RunMeta, SeriesTable};
use crate::{Result, Store, StoreError};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = 1;

/// `PRAGMA application_id` of kiln stores: "kiln" in ASCII.
const APPLICATION_ID: i64 = 0x6b69_6c6e;

/// Migrations, one per version step: `MIGRATIONS[i]` brings version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &["
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
"];

/// zstd level for bulk data: fast to write (a run is saved within a second of its end),
/// and profiles' varint columns compress several-fold.
const ZSTD_LEVEL: i32 = 3;

/// A run store in one SQLite file.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
}

impl SqliteStore {
    /// Opens the store at `path`, creating it if there is no file there.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with(path, true)
    }

    /// Opens an existing store (or exported run) to read it; a missing file is an error.
    pub fn open_existing(path: &Path) -> Result<Self> {
        Self::open_with(path, false)
    }

    fn open_with(path: &Path, create: bool) -> Result<Self> {
        let io = |source| StoreError::Io {
            path: path.to_path_buf(),
            source,
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
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {}
            Err(e) => return Err(io(e)),
        }
        let sql = |source| StoreError::Sqlite {
            path: path.to_path_buf(),
            source,
        };
        let flags = if create {
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
        } else {
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX
        };
        let conn = match Connection::open_with_flags(path, flags) {
            Ok(c) => c,
            Err(_) if !create => Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(sql)?,
            Err(e) => return Err(sql(e)),
        };
        conn.busy_timeout(Duration::from_secs(60)).map_err(sql)?;
        let mut store = SqliteStore {
            conn,
            path: path.to_path_buf(),
        };
        store.prepare_schema()?;
        Ok(store)
    }

    fn err(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    fn corrupt(&self, run: RunId, what: impl Into<String>) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            run,
            what: what.into(),
        }
    }

    /// Checks the file is kiln's and its schema one this build reads; creates or migrates.
    fn prepare_schema(&mut self) -> Result<()> {
        let pragma = |c: &Connection, name: &str| -> rusqlite::Result<i64> {
            c.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
        };
        let app = pragma(&self.conn, "application_id").map_err(|e| self.err(e))?;
        let version = pragma(&self.conn, "user_version").map_err(|e| self.err(e))?;
        let tables: i64 = self
            .conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                [],
                |r| r.get(0),
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
        // WAL: readers (kiln runs, a report) never wait for a saving kiln run.
        let _ = self
            .conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0));
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|source| StoreError::Sqlite {
                path: path.clone(),
                source,
            })?;
        // Another process may have migrated while we waited for the lock.
        let now: i64 = tx
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|source| StoreError::Sqlite {
                path: path.clone(),
                source,
            })?;
        for step in MIGRATIONS.iter().skip(now.max(0) as usize) {
            tx.execute_batch(step)
                .map_err(|source| StoreError::Sqlite {
                    path: path.clone(),
                    source,
                })?;
        }
        tx.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION};"
        ))
        .map_err(|source| StoreError::Sqlite {
            path: path.clone(),
            source,
        })?;
        tx.commit()
            .map_err(|source| StoreError::Sqlite { path, source })
    }

    /// Writes the runs `ids` of this store into a new single-file store at `dest` (an
    /// exported run: `kiln runs export`), replacing `dest` only once it is complete.
    pub fn export(&self, ids: &[RunId], dest: &Path) -> Result<()> {
        let io = |source| StoreError::Io {
            path: dest.to_path_buf(),
            source,
        };
        let dir = tempfile::tempdir().map_err(io)?;
        let tmp = dir.path().join("export.db");
        {
            let mut out = SqliteStore::open(&tmp)?;
            // One self-contained file: no -wal beside it.
            out.conn
                .query_row("PRAGMA journal_mode = DELETE", [], |r| {
                    r.get::<_, String>(0)
                })
                .map_err(|e| out.err(e))?;
            for &id in ids {
                let run = self.load(id)?;
                out.save(&run)?;
            }
        }
        let mut file = kiln_model::io::AtomicFile::create(dest).map_err(io)?;
        let mut src = std::fs::File::open(&tmp).map_err(io)?;
        std::io::copy(&mut src, &mut file).map_err(io)?;
        file.commit().map_err(io)
    }

    fn put_blob(
        tx: &rusqlite::Transaction<'_>,
        id: RunId,
        kind: &str,
        name: &str,
        raw: &[u8],
    ) -> rusqlite::Result<()> {
        // With a checksum: damage inside a blob is an error, never wrong data.
        let data = zstd::bulk::Compressor::new(ZSTD_LEVEL)
            .and_then(|mut c| {
                c.include_checksum(true)?;
                c.compress(raw)
            })
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        tx.execute(
            "INSERT INTO blobs (run_id, kind, name, codec, size, data) VALUES (?1, ?2, ?3, 'zstd', ?4, ?5)",
            params![id, kind, name, raw.len() as i64, data],
        )?;
        Ok(())
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
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Vec<u8>>(3)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (name, codec, size, data) = row.map_err(|e| self.err(e))?;
            let raw = match codec.as_str() {
                "zstd" => zstd::bulk::decompress(&data, size.max(0) as usize)
                    .map_err(|e| self.corrupt(id, format!("{kind} '{name}': {e}")))?,
                "none" => data,
                other => {
                    return Err(
                        self.corrupt(id, format!("{kind} '{name}': unknown codec '{other}'"))
                    )
                }
            };
            out.push((name, raw));
        }
        Ok(out)
    }
}

/// Profiles are named by position and event, so that they read back in the order they
/// were recorded (blobs are read in name order).
fn profile_blob_name(index: usize, event: &str) -> String {
    format!("{index:03}:{event}")
}

fn histogram_blob_name(h: &Histogram) -> String {
    format!("{}\t{}\t{}", h.window, h.name, h.unit)
}

impl Store for SqliteStore {
    fn save(&mut self, run: &RunData) -> Result<RunId> {
        let meta_json = serde_json::to_string(&run.meta).map_err(|e| StoreError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        let path = self.path.clone();
        let sql = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        tx.execute(
            "INSERT INTO runs (name, grp, started_ms, complete, meta) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                run.meta.name,
                run.meta.group,
                run.meta.started_unix_ms,
                run.meta.status.complete,
                meta_json
            ],
        )
        .map_err(sql)?;
        let id = tx.last_insert_rowid();
        for (i, p) in run.profiles.iter().enumerate() {
            let raw = kiln_model::native::encode(std::slice::from_ref(p));
            Self::put_blob(
                &tx,
                id,
                "profile",
                &profile_blob_name(i, &p.event.name),
                &raw,
            )
            .map_err(sql)?;
        }
        for s in &run.series {
            let raw = serde_json::to_vec(s)
                .map_err(|e| sql(rusqlite::Error::ToSqlConversionFailure(Box::new(e))))?;
            Self::put_blob(&tx, id, "series", &s.name, &raw).map_err(sql)?;
        }
        for h in &run.histograms {
            Self::put_blob(&tx, id, "histogram", &histogram_blob_name(h), &h.data).map_err(sql)?;
        }
        for a in &run.attachments {
            Self::put_blob(&tx, id, "attachment", &a.name, &a.data).map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        Ok(id)
    }

    fn list(&self) -> Result<Vec<RunMeta>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id, meta FROM runs ORDER BY id")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, RunId>(0)?, r.get::<_, String>(1)?)))
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (id, json) = row.map_err(|e| self.err(e))?;
            let mut m: RunMeta = serde_json::from_str(&json)
                .map_err(|e| self.corrupt(id, format!("metadata: {e}")))?;
            m.id = Some(id);
            out.push(m);
        }
        Ok(out)
    }

    fn meta(&self, id: RunId) -> Result<RunMeta> {
        let json: Option<String> = self
            .conn
            .query_row("SELECT meta FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))?;
        let Some(json) = json else {
            return Err(StoreError::NoSuchRun {
                reference: format!("#{id}"),
                path: self.path.clone(),
                hint: String::new(),
            });
        };
        let mut m: RunMeta =
            serde_json::from_str(&json).map_err(|e| self.corrupt(id, format!("metadata: {e}")))?;
        m.id = Some(id);
        Ok(m)
    }

    fn load(&self, id: RunId) -> Result<RunData> {
        let meta = self.meta(id)?;
        let profiles = self.profiles(id)?;
        let mut series = Vec::new();
        for (name, raw) in self.blobs(id, "series")? {
            let s: SeriesTable = serde_json::from_slice(&raw)
                .map_err(|e| self.corrupt(id, format!("series '{name}': {e}")))?;
            series.push(s);
        }
        let mut histograms = Vec::new();
        for (name, data) in self.blobs(id, "histogram")? {
            let mut parts = name.splitn(3, '\t');
            let (window, hname, unit) = (
                parts.next().unwrap_or_default().to_string(),
                parts.next().unwrap_or_default().to_string(),
                parts.next().unwrap_or_default().to_string(),
            );
            histograms.push(Histogram {
                name: hname,
                window,
                unit,
                data,
            });
        }
        let attachments = self
            .blobs(id, "attachment")?
            .into_iter()
            .map(|(name, data)| Attachment { name, data })
            .collect();
        Ok(RunData {
            meta,
            series,
            histograms,
            profiles,
            attachments,
        })
    }

    fn profiles(&self, id: RunId) -> Result<Vec<kiln_model::Profile>> {
        // Make sure the run exists (a run without profiles is not an error).
        self.meta(id)?;
        let blobs = self.blobs(id, "profile")?;
        let mut out = Vec::new();
        for (name, raw) in blobs {
            let shown = PathBuf::from(format!("{}#{id}/{name}", self.path.display()));
            let ps = kiln_model::native::decode(&raw, &shown)
                .map_err(|e| self.corrupt(id, format!("profile '{name}': {e}")))?;
            out.extend(ps);
        }
        Ok(out)
    }

    fn remove(&mut self, id: RunId) -> Result<()> {
        let path = self.path.clone();
        let sql = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
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

    fn location(&self) -> &Path {
        &self.path
    }
}
