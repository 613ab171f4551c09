//! A private PostgreSQL server from Debian's packages.
//!
//! `initdb` into a temporary directory, then `postgres` listening on 127.0.0.1 only, on a
//! free port, with its socket inside that directory and trust authentication. PostgreSQL
//! refuses to run as root, so as root both run as the `postgres` system user (or `nobody`
//! where the package made none), which is given the directory; the server is this test's
//! child process all the same (no `pg_ctl`, no `su`), stopped by its PID.
use crate::proc::{self, Reaper};
use crate::Error;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where Debian's PostgreSQL 15 puts its programs.
pub const POSTGRES_BIN: &str = "/usr/lib/postgresql/15/bin";

/// The role the tests connect as.
const USER: &str = "kiln";

/// Whether PostgreSQL's programs are installed.
pub fn postgres_installed() -> bool {
    Path::new(POSTGRES_BIN).join("postgres").exists()
        && Path::new(POSTGRES_BIN).join("initdb").exists()
}

/// Whether the PostgreSQL tests can run: they skip (saying so) only where PostgreSQL is
/// not installed and `KILN_REQUIRE_ANCHORS` is not set; where it is set, a missing
/// PostgreSQL fails the test.
pub fn have_postgres() -> bool {
    if postgres_installed() {
        return true;
    }
    crate::skip(&format!(
        "PostgreSQL is not installed ({POSTGRES_BIN}/postgres: Debian's postgresql package)"
    ));
    false
}

/// A running private PostgreSQL server. Dropping it stops it.
#[derive(Debug)]
pub struct Postgres {
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
    reaper: Option<Reaper>,
    /// The unprivileged user and group to run as when we are root.
    ids: Option<(u32, u32)>,
    /// Whether it syncs its writes to the disk (PostgreSQL's default; off for the tests
    /// that only need a database).
    durable: bool,
}

fn io(what: &str) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        what: what.to_string(),
        source,
    }
}

/// The uid and gid of `name`, from the password database.
fn user_ids(name: &str) -> Option<(u32, u32)> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: getpwnam returns a pointer to static storage or null; read at once.
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        return None;
    }
    // SAFETY: non-null, points to a valid passwd record.
    let pw = unsafe { &*pw };
    Some((pw.pw_uid, pw.pw_gid))
}

impl Postgres {
    /// Initialises a database cluster and starts the server (`fsync` off: nothing a test
    /// writes needs to survive a crash); waits until it accepts connections.
    pub fn start() -> Result<Self, Error> {
        Self::start_as(false)
    }

    /// [`Postgres::start`], syncing its writes as PostgreSQL does by default (`fsync`,
    /// `synchronous_commit` on): each commit waits for the WAL to reach the disk.
    pub fn start_durable() -> Result<Self, Error> {
        Self::start_as(true)
    }

    fn start_as(durable: bool) -> Result<Self, Error> {
        if !postgres_installed() {
            return Err(Error::NotInstalled {
                program: format!("{POSTGRES_BIN}/postgres"),
                advice: "install Debian's postgresql package (scripts/install-deps.sh)",
            });
        }
        let dir = tempfile::Builder::new()
            .prefix("kiln-pg-")
            .tempdir()
            .map_err(io("creating PostgreSQL's directory"))?;
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let ids = if root {
            Some(
                user_ids("postgres")
                    .or_else(|| user_ids("nobody"))
                    .ok_or_else(|| Error::Io {
                        what: "finding an unprivileged user to run PostgreSQL as".into(),
                        source: std::io::Error::other("neither postgres nor nobody exists"),
                    })?,
            )
        } else {
            None
        };
        if let Some((uid, gid)) = ids {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))
                .map_err(io("giving PostgreSQL its directory"))?;
        }
        let mut me = Postgres {
            dir,
            port: 0,
            child: None,
            reaper: None,
            ids,
            durable,
        };
        let out = me
            .command("initdb")
            .arg("-D")
            .arg(me.data_dir())
            .args([
                "-U",
                USER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "-N",
            ])
            .stdin(Stdio::null())
            .output()
            .map_err(io("running initdb"))?;
        if !out.status.success() {
            return Err(Error::Build {
                what: "initdb".into(),
                output: format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
            });
        }
        // The port is free when chosen but another process may take it first: try a few.
        let mut attempt = 0;
        loop {
            attempt += 1;
            me.port = crate::free_port()?;
            match me.launch() {
                Ok(()) => return Ok(me),
                Err(e) => {
                    let bind_failed = me.log_tail().contains("could not bind");
                    me.stop();
                    if !bind_failed || attempt >= 5 {
                        return Err(e);
                    }
                }
            }
        }
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(Path::new(POSTGRES_BIN).join(program));
        if let Some((uid, gid)) = self.ids {
            c.uid(uid).gid(gid);
        }
        c.current_dir(self.dir.path())
            .env_remove("PGDATA")
            .env("LC_ALL", "C.UTF-8");
        c
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("postgres.log")
    }

    /// Starts the server on `self.port` and waits until it answers.
    fn launch(&mut self) -> Result<(), Error> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(io("opening PostgreSQL's log"))?;
        let log2 = log.try_clone().map_err(io("opening PostgreSQL's log"))?;
        let child = self
            .command("postgres")
            .arg("-D")
            .arg(self.data_dir())
            .args(["-p", &self.port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1"])
            .arg("-c")
            .arg(format!(
                "unix_socket_directories={}",
                self.dir.path().display()
            ))
            .arg("-c")
            .arg(if self.durable {
                "fsync=on"
            } else {
                "fsync=off"
            })
            .args(["-c", "max_connections=50"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(io("starting postgres"))?;
        let pid = child.id();
        self.child = Some(child);
        self.reaper = Some(Reaper::spawn(&[pid], None)?);
        self.await_ready()
    }

    fn await_ready(&mut self) -> Result<(), Error> {
        let t = Instant::now();
        let timeout = Duration::from_secs(30);
        loop {
            if let Some(Ok(Some(st))) = self.child.as_mut().map(|c| c.try_wait()) {
                return Err(Error::StartTimeout {
                    server: format!("postgres (exited with {st})"),
                    seconds: t.elapsed().as_secs(),
                    log: self.log_tail(),
                });
            }
            let ready = Command::new(Path::new(POSTGRES_BIN).join("pg_isready"))
                .args([
                    "-q",
                    "-h",
                    "127.0.0.1",
                    "-t",
                    "1",
                    "-p",
                    &self.port.to_string(),
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return Ok(());
            }
            if t.elapsed() > timeout {
                return Err(Error::StartTimeout {
                    server: "postgres".into(),
                    seconds: timeout.as_secs(),
                    log: self.log_tail(),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The last lines of the server's log.
    pub fn log_tail(&self) -> String {
        crate::log_tail(&self.log_path())
    }

    /// The port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's (postmaster's) PID; `None` while stopped.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// `postgres://kiln@127.0.0.1:PORT/DB`.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates the database `db` (each test its own); returns its URL.
    pub fn create_database(&self, db: &str) -> Result<String, Error> {
        let out = Command::new(Path::new(POSTGRES_BIN).join("createdb"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                USER,
                db,
            ])
            .stdin(Stdio::null())
            .output()
            .map_err(io("running createdb"))?;
        if !out.status.success() {
            return Err(Error::Build {
                what: format!("createdb {db}"),
                output: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        Ok(self.url(db))
    }

    /// Stops the server by its PID (SIGINT: PostgreSQL's fast shutdown, which ends every
    /// session), waiting up to 30 s before SIGKILL.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            proc::terminate(&mut c, libc::SIGINT, Duration::from_secs(30), &[]);
        }
        if let Some(mut r) = self.reaper.take() {
            r.disarm();
        }
    }

    /// Starts the stopped server again on the same port, with the same data: a restart as
    /// clients see it.
    pub fn start_again(&mut self) -> Result<(), Error> {
        if self.child.is_some() {
            return Ok(());
        }
        self.launch()
    }

    /// Stops the server and starts it again.
    pub fn restart(&mut self) -> Result<(), Error> {
        self.stop();
        self.start_again()
    }

    /// The server's private directory (data, socket, log).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}
