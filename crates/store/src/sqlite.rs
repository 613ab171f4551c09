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
use crate::codec;
use crate::model::{RunData, RunId, RunMeta};
use crate::{Result, Store, StoreError, SCHEMA_VERSION};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `PRAGMA application_id` of kiln stores: "kiln" in ASCII.
const APPLICATION_ID: i64 = 0x6b69_6c6e;

/// Migrations, one per version step: `MIGRATIONS[i]` brings version `i` to `i + 1`.
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = ["
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

    /// Checks the file is kiln's and its schema one this build reads; creates or migrates.
    fn prepare_schema(&mut self) -> Result<()> {
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
        crate::export(self, ids, dest)
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

impl Store for SqliteStore {
    fn save(&mut self, run: &RunData) -> Result<RunId> {
        let enc = codec::encode_run(run).map_err(|source| StoreError::Io {
            path: self.path.clone(),
            source,
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
                enc.meta_json
            ],
        )
        .map_err(sql)?;
        let id = tx.last_insert_rowid();
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO blobs (run_id, kind, name, codec, size, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(sql)?;
            for b in &enc.blobs {
                insert
                    .execute(params![id, b.kind, b.name, b.codec, b.size, b.data])
                    .map_err(sql)?;
            }
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
            out.push(codec::decode_meta(id, &json).map_err(|what| self.corrupt(id, what))?);
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
        codec::decode_meta(id, &json).map_err(|what| self.corrupt(id, what))
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
            let raw = codec::decode_blob(kind, &name, &codec, size, data)
                .map_err(|what| self.corrupt(id, what))?;
            out.push((name, raw));
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

    fn local_file(&self) -> Option<&Path> {
        Some(&self.path)
    }
}
