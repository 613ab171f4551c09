//! The shared store: a PostgreSQL database that several machines record into.
//!
//! ```text
//! kiln.schema_version (version)
//! kiln.runs  (id, name, grp, started_ms, complete, meta JSON,
//!             target_comm, load_text, throughput, p50_us, p99_us, cpu_per_op_us, config, damaged)
//! kiln.blobs (run_id, kind, name, codec, size, data)   kind: profile, series, histogram, attachment
//! ```
//!
//! The same shape and the same bytes as the SQLite store ([`crate::codec`]), in a schema of
//! its own (`kiln`) so that it never meets another program's tables. The first kiln to
//! use a database creates the tables, under an advisory lock so that two first users do
//! not race; a database written by a newer kiln is refused, never rewritten.
//!
//! A server that goes away (restarted while `kiln run` measures, say) is retried for a
//! bounded time: every operation reconnects and starts again until
//! [`PgStore::set_retry`]'s limit (10 s by default, 2 s for a store opened to read). A save is one transaction; a save
//! retried after its commit's answer was lost finds its run (same name and metadata)
//! instead of writing it twice.
use crate::codec;
use crate::model::{Attachment, CommandRecord, RunData, RunId};
use crate::{Listed, Result, Select, Store, StoreError, Stored, SCHEMA_VERSION};
use postgres::{Client, Config, NoTls};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

/// Migrations, one per version step: `MIGRATIONS[i]` brings version `i` to `i + 1` (the
/// SQLite store's steps, in PostgreSQL's words).
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [
    "
    CREATE TABLE kiln.runs (
        id BIGSERIAL PRIMARY KEY,
        name TEXT NOT NULL,
        grp TEXT NOT NULL,
        started_ms BIGINT NOT NULL,
        complete BOOLEAN NOT NULL,
        meta TEXT NOT NULL
    );
    CREATE INDEX runs_by_name ON kiln.runs (name, id);
    CREATE TABLE kiln.blobs (
        run_id BIGINT NOT NULL REFERENCES kiln.runs (id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        codec TEXT NOT NULL,
        size BIGINT NOT NULL,
        data BYTEA NOT NULL,
        PRIMARY KEY (run_id, kind, name)
    );
    -- Already zstd-compressed: stored out of line without compressing again.
    ALTER TABLE kiln.blobs ALTER COLUMN data SET STORAGE EXTERNAL;
",
    "
    ALTER TABLE kiln.runs
        ADD COLUMN target_comm TEXT,
        ADD COLUMN load_text TEXT,
        ADD COLUMN throughput DOUBLE PRECISION,
        ADD COLUMN p50_us DOUBLE PRECISION,
        ADD COLUMN p99_us DOUBLE PRECISION,
        ADD COLUMN cpu_per_op_us DOUBLE PRECISION,
        ADD COLUMN config TEXT,
        ADD COLUMN damaged TEXT;
    CREATE INDEX runs_by_config ON kiln.runs (config, id);
    -- Metadata changed in place (by hand, by another tool): its columns no longer say
    -- what it holds, and are emptied (the run is then listed from its metadata).
    CREATE FUNCTION kiln.runs_meta_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        NEW.target_comm := NULL; NEW.load_text := NULL; NEW.throughput := NULL;
        NEW.p50_us := NULL; NEW.p99_us := NULL; NEW.cpu_per_op_us := NULL;
        NEW.config := NULL; NEW.damaged := NULL;
        RETURN NEW;
    END $$;
    CREATE TRIGGER runs_meta_changed BEFORE UPDATE OF meta ON kiln.runs FOR EACH ROW
        WHEN (OLD.meta IS DISTINCT FROM NEW.meta) EXECUTE FUNCTION kiln.runs_meta_changed();
",
];

/// The version that added the listing columns (filled for older runs by the migration).
const LISTED_SINCE: i64 = 2;

/// The advisory lock key that serialises schema changes: \"kiln\" in ASCII.
const SCHEMA_LOCK: i64 = 0x6b69_6c6e;

/// How long an operation keeps retrying a server that went away, by default.
pub const DEFAULT_RETRY: Duration = Duration::from_secs(10);

/// The same for a store opened to read ([`PgStore::open_existing`]): a reader has nothing
/// to lose, so a server that is down is said after 2 s rather than 10.
pub const READ_RETRY: Duration = Duration::from_secs(2);

/// A run store in a PostgreSQL database.
pub struct PgStore {
    config: Config,
    /// The URL without its password.
    location: PathBuf,
    client: RefCell<Option<Client>>,
    retry: Duration,
    /// The most bytes a blob may inflate to ([`Store::set_max_input`]).
    max_input: u64,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

/// Whether a PostgreSQL error means the server could not be reached or went away (worth
/// retrying), rather than a refusal or a wrong statement.
pub(crate) fn transient(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(state) = e.code() {
        let c = state.code();
        // Connection exceptions; shut down by an administrator or a crash; starting up.
        return c.starts_with("08") || matches!(c, "57P01" | "57P02" | "57P03");
    }
    // No SQLSTATE: refused, reset, closed before an answer.
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        if s.is::<std::io::Error>() {
            return true;
        }
        src = s.source();
    }
    false
}

/// An error with its causes (`postgres::Error` shows only its kind, "db error").
pub(crate) fn describe(e: &postgres::Error) -> String {
    let mut out = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        out.push_str(": ");
        out.push_str(&s.to_string());
        src = s.source();
    }
    out
}

/// `url` with its password (in the user part or a `password=` parameter) removed: what
/// messages and [`Store::location`] show.
pub fn redact(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => (&url[..i + 3], &url[i + 3..]),
        None => ("", url),
    };
    let auth_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(auth_end);
    let authority = match authority.rfind('@') {
        Some(at) => {
            let user = &authority[..at];
            let user = user.split_once(':').map_or(user, |(u, _)| u);
            format!("{user}@{}", &authority[at + 1..])
        }
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => p.to_string(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}{authority}{tail}")
}

impl PgStore {
    /// Opens the store in the database `url` names (`postgres://user@host:port/db`),
    /// creating its tables on first use.
    pub fn open(url: &str) -> Result<Self> {
        Self::open_with(url, true, DEFAULT_RETRY)
    }

    /// Opens an existing store to read it: a database without kiln's tables is
    /// [`StoreError::Missing`], and nothing is created. A server that cannot be reached
    /// is retried for [`READ_RETRY`].
    pub fn open_existing(url: &str) -> Result<Self> {
        Self::open_with(url, false, READ_RETRY)
    }

    /// As [`PgStore::open`] (`create`) or [`PgStore::open_existing`], retrying a server that
    /// cannot be reached for up to `retry`.
    pub fn open_with(url: &str, create: bool, retry: Duration) -> Result<Self> {
        let location = redact(url);
        let mut config = Config::from_str(url).map_err(|error| StoreError::Postgres {
            location: location.clone(),
            error,
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(5));
        }
        if config.get_application_name().is_none() {
            config.application_name("kiln");
        }
        let store = PgStore {
            config,
            location: PathBuf::from(location),
            client: RefCell::new(None),
            retry,
            max_input: kiln_model::input::DEFAULT_LIMIT,
        };
        store.prepare_schema(create)?;
        if create {
            store.with_client(|c, _| watch_row_columns(c))?;
        }
        Ok(store)
    }

    /// Runs `sql` (its first parameter the id the rows start after, then `keys`), giving
    /// each row to `f` as it arrives (`f` returns the row's id); a server lost on the way
    /// is asked again for the rows after the last one given.
    fn rows(
        &self,
        sql: &str,
        keys: &[&(dyn postgres::types::ToSql + Sync)],
        f: &mut dyn FnMut(&postgres::Row) -> std::result::Result<i64, postgres::Error>,
    ) -> Result<()> {
        let mut after = i64::MIN;
        self.with_client(|c, _| {
            let mut params: Vec<&(dyn postgres::types::ToSql + Sync)> = vec![&after];
            params.extend(keys.iter().copied());
            let mut rows = c.query_raw(sql, params)?;
            while let Some(r) = postgres::fallible_iterator::FallibleIterator::next(&mut rows)? {
                after = f(&r)?;
            }
            Ok(())
        })
    }

    /// How long each operation retries a server that went away (default 10 s); zero:
    /// one attempt.
    pub fn set_retry(&mut self, retry: Duration) {
        self.retry = retry;
    }

    fn err(&self, error: postgres::Error) -> StoreError {
        StoreError::Postgres {
            location: self.location.display().to_string(),
            error,
        }
    }

    /// Runs `f` on a connection, reconnecting and starting `f` again (its second argument
    /// counts the attempts) while the server cannot be reached, up to the retry limit.
    fn with_client<T>(
        &self,
        mut f: impl FnMut(&mut Client, u32) -> std::result::Result<T, postgres::Error>,
    ) -> Result<T> {
        // Counted from the first failure: a long save that breaks still gets its retries.
        let mut failing_since: Option<Instant> = None;
        let mut attempt = 0u32;
        loop {
            let outcome = {
                let mut slot = self.client.borrow_mut();
                if slot.as_ref().is_some_and(|c| c.is_closed()) {
                    *slot = None;
                }
                let client = match slot.as_mut() {
                    Some(c) => Ok(c),
                    None => self.config.connect(NoTls).map(|c| slot.insert(c)),
                };
                client.and_then(|c| f(c, attempt))
            };
            match outcome {
                Ok(v) => return Ok(v),
                Err(e)
                    if transient(&e)
                        && failing_since.get_or_insert_with(Instant::now).elapsed()
                            < self.retry =>
                {
                    *self.client.borrow_mut() = None;
                    let left = failing_since
                        .map_or(self.retry, |t| self.retry.saturating_sub(t.elapsed()));
                    let pause = Duration::from_millis(100u64 << attempt.min(3));
                    std::thread::sleep(pause.min(left));
                    attempt += 1;
                }
                Err(e) => {
                    *self.client.borrow_mut() = None;
                    return Err(self.err(e));
                }
            }
        }
    }

    /// Checks the database's schema is one this build reads; creates or migrates it
    /// (`create`), or says the store is missing.
    fn prepare_schema(&self, create: bool) -> Result<()> {
        let found = self.with_client(|c, _| schema_version(c))?;
        let newer = |found| StoreError::Newer {
            path: self.location.clone(),
            found,
            supported: SCHEMA_VERSION,
        };
        match found {
            Some(v) if v > SCHEMA_VERSION => Err(newer(v)),
            Some(v) if v == SCHEMA_VERSION => Ok(()),
            None if !create => Err(StoreError::Missing {
                location: self.location.display().to_string(),
            }),
            _ => {
                let now = self.with_client(|c, _| migrate(c))?;
                if now > SCHEMA_VERSION {
                    return Err(newer(now));
                }
                Ok(())
            }
        }
    }
}

/// The store's schema version; `None` where kiln's tables are not there.
fn schema_version(c: &mut Client) -> std::result::Result<Option<i64>, postgres::Error> {
    let exists: bool = c
        .query_one("SELECT to_regclass('kiln.schema_version') IS NOT NULL", &[])?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let v: Option<i64> = c
        .query_one("SELECT max(version) FROM kiln.schema_version", &[])?
        .get(0);
    Ok(v.or(Some(0)))
}

/// Creates or migrates the schema in one transaction, under the schema lock; returns the
/// version found there (newer than this build's: untouched).
fn migrate(c: &mut Client) -> std::result::Result<i64, postgres::Error> {
    let mut tx = c.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])?;
    tx.batch_execute(
        "CREATE SCHEMA IF NOT EXISTS kiln;
         CREATE TABLE IF NOT EXISTS kiln.schema_version (version BIGINT NOT NULL);",
    )?;
    let now: Option<i64> = tx
        .query_one("SELECT max(version) FROM kiln.schema_version", &[])?
        .get(0);
    let now = now.unwrap_or(0);
    if now >= SCHEMA_VERSION {
        tx.rollback()?;
        return Ok(now);
    }
    for step in MIGRATIONS.iter().skip(now.max(0) as usize) {
        tx.batch_execute(step)?;
    }
    if now < LISTED_SINCE {
        fill_listing(&mut tx)?;
    }
    tx.execute("DELETE FROM kiln.schema_version", &[])?;
    tx.execute(
        "INSERT INTO kiln.schema_version (version) VALUES ($1)",
        &[&SCHEMA_VERSION],
    )?;
    tx.commit()?;
    Ok(SCHEMA_VERSION)
}

/// Makes the listing columns' trigger watch the columns a run is found by (name, group,
/// start, complete) as well as its metadata (the SQLite store's `watch_row_columns`):
/// done once, by the first writer, under the schema lock.
fn watch_row_columns(c: &mut Client) -> std::result::Result<(), postgres::Error> {
    const DEF: &str = "SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t \
        WHERE t.tgname = 'runs_meta_changed' AND t.tgrelid = 'kiln.runs'::regclass";
    let watched =
        |c: &mut postgres::Transaction<'_>| -> std::result::Result<bool, postgres::Error> {
            // (NULL for a trigger another writer is replacing at this moment: not yet
            // watched, and this writer waits for the schema lock below.)
            Ok(c.query_opt(DEF, &[])?
                .and_then(|r| r.get::<_, Option<String>>(0))
                .is_some_and(|d| d.contains("started_ms")))
        };
    let mut tx = c.transaction()?;
    if watched(&mut tx)? {
        return tx.rollback();
    }
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])?;
    if !watched(&mut tx)? {
        tx.batch_execute(
            "DROP TRIGGER IF EXISTS runs_meta_changed ON kiln.runs;
             CREATE TRIGGER runs_meta_changed
                 BEFORE UPDATE OF meta, name, grp, started_ms, complete ON kiln.runs FOR EACH ROW
                 WHEN (OLD.meta IS DISTINCT FROM NEW.meta OR OLD.name IS DISTINCT FROM NEW.name
                     OR OLD.grp IS DISTINCT FROM NEW.grp
                     OR OLD.started_ms IS DISTINCT FROM NEW.started_ms
                     OR OLD.complete IS DISTINCT FROM NEW.complete)
                 EXECUTE FUNCTION kiln.runs_meta_changed();",
        )?;
    }
    tx.commit()
}

/// The `AND` clause of a [`Select`] after `id > $1`, and its parameters.
fn filter<'a>(
    select: &'a Select<'a>,
) -> (&'static str, Vec<&'a (dyn postgres::types::ToSql + Sync)>) {
    match select {
        Select::All => ("", vec![]),
        Select::Id(id) => ("AND id = $2", vec![id]),
        Select::Name(n) => ("AND name = $2", vec![n]),
        Select::Group { name, group } => ("AND name = $2 AND grp = $3", vec![name, group]),
        Select::Config(key) => ("AND config = $2", vec![key]),
    }
}

/// A run's listing from a row of `id, name, grp, started_ms, complete`,
/// [`crate::listing::COLUMNS`] and its metadata where the columns are empty (then read
/// from the metadata).
fn listed_row(r: &postgres::Row) -> std::result::Result<Listed, postgres::Error> {
    let config: Option<String> = r.try_get(11)?;
    let damaged: Option<String> = r.try_get(12)?;
    let (id, complete) = (r.try_get(0)?, r.try_get(4)?);
    if let Some(meta) = r.try_get::<_, Option<&str>>(13)? {
        let s = Stored {
            id,
            name: r.try_get(1)?,
            group: r.try_get(2)?,
            started_unix_ms: r.try_get(3)?,
            meta: codec::decode_meta(id, meta),
        }
        .checked();
        return Ok(Listed::of(&s, complete));
    }
    Ok(Listed {
        id,
        name: r.try_get(1)?,
        group: r.try_get(2)?,
        started_unix_ms: r.try_get(3)?,
        complete,
        target: r.try_get::<_, Option<String>>(5)?.unwrap_or_default(),
        load: r.try_get::<_, Option<String>>(6)?.unwrap_or_default(),
        throughput: r.try_get(7)?,
        p50_us: r.try_get(8)?,
        p99_us: r.try_get(9)?,
        cpu_per_op_us: r.try_get(10)?,
        config: config.unwrap_or_default(),
        damaged,
    })
}

/// Writes run `id`'s listing columns.
fn write_listing(
    tx: &mut postgres::Transaction<'_>,
    id: RunId,
    l: &Listed,
) -> std::result::Result<(), postgres::Error> {
    let config = l.damaged.is_none().then_some(&l.config);
    tx.execute(
        "UPDATE kiln.runs SET target_comm = $2, load_text = $3, throughput = $4, p50_us = $5, \
         p99_us = $6, cpu_per_op_us = $7, config = $8, damaged = $9 WHERE id = $1",
        &[
            &id,
            &l.target,
            &l.load,
            &l.throughput,
            &l.p50_us,
            &l.p99_us,
            &l.cpu_per_op_us,
            &config,
            &l.damaged,
        ],
    )?;
    Ok(())
}

/// Fills the listing columns of every run of a store being migrated (within its
/// transaction): each run's metadata read and checked once, a thousand runs at a time.
fn fill_listing(tx: &mut postgres::Transaction<'_>) -> std::result::Result<(), postgres::Error> {
    let mut after = RunId::MIN;
    loop {
        let rows = tx.query(
            "SELECT id, name, grp, started_ms, complete, meta FROM kiln.runs \
             WHERE id > $1 ORDER BY id LIMIT 1000",
            &[&after],
        )?;
        let Some(last) = rows.last() else {
            return Ok(());
        };
        after = last.try_get(0)?;
        for r in &rows {
            let id: i64 = r.try_get(0)?;
            let s = Stored {
                id,
                name: r.try_get(1)?,
                group: r.try_get(2)?,
                started_unix_ms: r.try_get(3)?,
                meta: codec::decode_meta(id, r.try_get(5)?),
            }
            .checked();
            write_listing(tx, id, &Listed::of(&s, r.try_get(4)?))?;
        }
    }
}

impl Store for PgStore {
    fn save(&mut self, run: &RunData) -> Result<RunId> {
        let enc = codec::encode_run(run).map_err(|error| StoreError::Io {
            path: self.location.clone(),
            error,
        })?;
        self.with_client(|c, attempt| {
            if attempt > 0 {
                // The previous attempt's commit may have landed before the connection
                // broke: its run is there, whole (one transaction).
                if let Some(row) = c.query_opt(
                    "SELECT id FROM kiln.runs WHERE name = $1 AND meta = $2",
                    &[&run.meta.name, &enc.meta_json],
                )? {
                    return Ok(row.get(0));
                }
            }
            let mut tx = c.transaction()?;
            let id: i64 = tx
                .query_one(
                    "INSERT INTO kiln.runs (name, grp, started_ms, complete, meta) VALUES ($1, $2, $3, $4, $5) RETURNING id",
                    &[
                        &run.meta.name,
                        &run.meta.group,
                        &run.meta.started_unix_ms,
                        &run.meta.status.complete,
                        &enc.meta_json,
                    ],
                )?
                .get(0);
            write_listing(&mut tx, id, &enc.listed)?;
            let insert = tx.prepare(
                "INSERT INTO kiln.blobs (run_id, kind, name, codec, size, data) VALUES ($1, $2, $3, $4, $5, $6)",
            )?;
            for b in &enc.blobs {
                tx.execute(&insert, &[&id, &b.kind, &b.name, &b.codec, &b.size, &b.data])?;
            }
            tx.commit()?;
            Ok(id)
        })
    }

    fn scan(&self, select: Select<'_>, f: &mut dyn FnMut(Stored)) -> Result<()> {
        let (filter, keys) = filter(&select);
        let sql = format!(
            "SELECT id, name, grp, started_ms, meta FROM kiln.runs WHERE id > $1 {filter} ORDER BY id"
        );
        self.rows(&sql, &keys, &mut |r| {
            let id: i64 = r.try_get(0)?;
            let meta = codec::decode_meta(id, r.try_get(4)?);
            f(Stored {
                id,
                name: r.try_get(1)?,
                group: r.try_get(2)?,
                started_unix_ms: r.try_get(3)?,
                meta,
            }
            .checked());
            Ok(id)
        })
    }

    fn listing(&self, select: Select<'_>, f: &mut dyn FnMut(Listed)) -> Result<()> {
        let (filter, keys) = filter(&select);
        // A run's metadata is read only where its columns are empty or impossible (a row
        // changed or written around kiln).
        let sql = format!(
            "SELECT id, name, grp, started_ms, complete, {}, {} \
             FROM kiln.runs WHERE id > $1 {filter} ORDER BY id",
            crate::listing::COLUMNS,
            crate::listing::META_WHEN_NEEDED
        );
        self.rows(&sql, &keys, &mut |r| {
            let l = listed_row(r)?;
            let id = l.id;
            f(l);
            Ok(id)
        })
    }

    fn latest_group(&self, name: &str) -> Result<Option<String>> {
        let row = self.with_client(|c, _| {
            c.query_opt(
                "SELECT grp FROM kiln.runs WHERE name = $1 ORDER BY id DESC LIMIT 1",
                &[&name],
            )
        })?;
        Ok(row.map(|r| r.get(0)))
    }

    fn latest_names(&self, n: usize) -> Result<Vec<String>> {
        let rows = self.with_client(|c, _| {
            c.query(
                "SELECT name FROM kiln.runs GROUP BY name ORDER BY max(id) DESC LIMIT $1",
                &[&(n as i64)],
            )
        })?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn blobs(&self, id: RunId, kind: &str) -> Result<Vec<(String, Vec<u8>)>> {
        let rows = self.with_client(|c, _| {
            c.query(
                // Byte order, as SQLite reads them, whatever the database's collation.
                "SELECT name, codec, size, data FROM kiln.blobs WHERE run_id = $1 AND kind = $2 ORDER BY name COLLATE \"C\"",
                &[&id, &kind],
            )
        })?;
        let mut out = Vec::new();
        for row in rows {
            let name: String = row.get(0);
            let codec: String = row.get(1);
            let raw =
                codec::decode_blob(kind, &name, &codec, row.get(2), row.get(3), self.max_input)
                    .map_err(|what| self.corrupt(id, what))?;
            out.push((name, raw));
        }
        Ok(out)
    }

    fn remove(&mut self, id: RunId) -> Result<()> {
        // Its blobs go with it (ON DELETE CASCADE), in the same statement.
        let n =
            self.with_client(|c, _| c.execute("DELETE FROM kiln.runs WHERE id = $1", &[&id]))?;
        if n == 0 {
            return Err(StoreError::NoSuchRun {
                reference: format!("#{id}"),
                path: self.location.clone(),
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
        enum Outcome {
            Done,
            Missing,
            Refused(String),
        }
        let outcome = self.with_client(|c, attempt| {
            let mut tx = c.transaction()?;
            let Some(row) = tx.query_opt(
                "SELECT meta FROM kiln.runs WHERE id = $1 FOR UPDATE",
                &[&id],
            )?
            else {
                return Ok(Outcome::Missing);
            };
            let meta: String = row.get(0);
            if attempt > 0 {
                // The previous attempt's commit may have landed before the connection
                // broke: the commands are there then, whole (one transaction).
                if codec::decode_meta(id, &meta).is_ok_and(|m| m.commands.ends_with(commands)) {
                    return Ok(Outcome::Done);
                }
            }
            let names: Vec<String> = tx
                .query(
                    "SELECT name FROM kiln.blobs WHERE run_id = $1 AND kind = 'attachment'",
                    &[&id],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let enc = match codec::encode_addition(id, &meta, commands, attachments, &names) {
                Ok(e) => e,
                Err(why) => return Ok(Outcome::Refused(why)),
            };
            // The trigger empties the listing columns when the metadata changes; they are
            // written again from the new metadata.
            tx.execute(
                "UPDATE kiln.runs SET meta = $2 WHERE id = $1",
                &[&id, &enc.meta_json],
            )?;
            write_listing(&mut tx, id, &enc.listed)?;
            let insert = tx.prepare(
                "INSERT INTO kiln.blobs (run_id, kind, name, codec, size, data) VALUES ($1, $2, $3, $4, $5, $6)",
            )?;
            for b in &enc.blobs {
                tx.execute(&insert, &[&id, &b.kind, &b.name, &b.codec, &b.size, &b.data])?;
            }
            tx.commit()?;
            Ok(Outcome::Done)
        })?;
        match outcome {
            Outcome::Done => Ok(()),
            Outcome::Missing => Err(StoreError::NoSuchRun {
                reference: format!("#{id}"),
                path: self.location.clone(),
                hint: String::new(),
            }),
            Outcome::Refused(what) => Err(self.corrupt(id, what)),
        }
    }

    fn unreadable_blobs(&self, f: &mut dyn FnMut(RunId, String)) -> Result<()> {
        let limit = i64::try_from(self.max_input).unwrap_or(i64::MAX);
        let rows = self.with_client(|c, _| {
            c.query(
                "SELECT run_id, kind, name, size FROM kiln.blobs WHERE size > $1 OR size < 0 ORDER BY run_id, kind, name COLLATE \"C\"",
                &[&limit],
            )
        })?;
        for r in rows {
            let (id, kind, name, size): (RunId, String, String, i64) =
                (r.get(0), r.get(1), r.get(2), r.get(3));
            if let Some(why) = codec::size_problem(&kind, &name, size, self.max_input) {
                f(id, why);
            }
        }
        Ok(())
    }

    fn location(&self) -> &Path {
        &self.location
    }

    fn set_max_input(&mut self, bytes: u64) {
        self.max_input = bytes;
    }

    fn local_file(&self) -> Option<&Path> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact("postgres://kiln:s3cret@127.0.0.1:5432/runs"),
            "postgres://kiln@127.0.0.1:5432/runs"
        );
        assert_eq!(
            redact("postgresql://kiln:p@ss:word@db/x?sslmode=disable&password=abc"),
            "postgresql://kiln@db/x?sslmode=disable&password=***"
        );
        assert_eq!(redact("postgres://127.0.0.1/x"), "postgres://127.0.0.1/x");
        assert_eq!(redact("postgres://u@h"), "postgres://u@h");
    }
}
