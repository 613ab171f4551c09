//! The example query server `examples/go-blockcache`, built with the installed Go and
//! started on a free port.
use crate::proc::{self, Reaper};
use crate::Error;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// Where `go` may be: the PATH, go.dev's tarball, Debian's golang-go.
const GO_CANDIDATES: &[&str] = &["go", "/usr/local/go/bin/go", "/usr/lib/go/bin/go"];

/// The example's source directory in this repository.
pub fn go_blockcache_source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/go-blockcache")
}

/// Finds a `go` command that runs.
pub fn go_command() -> Result<PathBuf, Error> {
    for c in GO_CANDIDATES {
        let ok = Command::new(c)
            .arg("version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Ok(PathBuf::from(c));
        }
    }
    Err(Error::NotInstalled {
        program: "go".into(),
        advice: "install Go (Debian's golang-go, scripts/install-deps.sh)",
    })
}

/// Builds the example (once per process) into the workspace's `target/kiln-testkit/` and
/// returns the binary's path. Go's build cache makes a rebuild of unchanged sources quick.
pub fn build_go_blockcache() -> Result<PathBuf, Error> {
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(p) = built.as_ref() {
        return Ok(p.clone());
    }
    let go = go_command()?;
    let src = go_blockcache_source();
    let out_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/kiln-testkit");
    std::fs::create_dir_all(&out_dir).map_err(|e| io("creating target/kiln-testkit", e))?;
    let out = out_dir.join("go-blockcache");
    // Build under a private name, then rename: test binaries running at once never see a
    // half-written executable.
    let tmp = out_dir.join(format!("go-blockcache.{}.tmp", std::process::id()));
    let o = Command::new(&go)
        .args(["build", "-o"])
        .arg(&tmp)
        .arg(".")
        .current_dir(&src)
        .env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "-mod=mod")
        .env("GOPROXY", "off")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| io("running go build", e))?;
    if !o.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::Build {
            what: format!("go build in {}", src.display()),
            output: String::from_utf8_lossy(&o.stderr).into_owned(),
        });
    }
    std::fs::rename(&tmp, &out).map_err(|e| io("moving the built example", e))?;
    *built = Some(out.clone());
    Ok(out)
}

/// A running `go-blockcache` on 127.0.0.1 (a free port it chose itself). Dropping it stops it.
#[derive(Debug)]
pub struct GoBlockCache {
    child: Option<Child>,
    addr: String,
    reaper: Option<Reaper>,
}

impl GoBlockCache {
    /// Builds (if needed) and starts the server with a block cache of `cache_mb` MiB and any
    /// further flags (`-data-mb 64`, `-direct=false`…), and waits until it listens.
    pub fn start(cache_mb: f64, extra_args: &[&str]) -> Result<Self, Error> {
        let bin = build_go_blockcache()?;
        let mut child = Command::new(&bin)
            .args(["-addr", "127.0.0.1:0", "-cache-mb", &cache_mb.to_string()])
            .args(extra_args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| io("starting go-blockcache", e))?;
        // The first stdout line names the address: "listening on http://127.0.0.1:PORT (…)".
        let stdout = child.stdout.take();
        let mut line = String::new();
        if let Some(s) = stdout {
            let mut r = BufReader::new(s);
            let _ = r.read_line(&mut line);
            // Keep draining so the server never blocks on a full pipe.
            std::thread::spawn(move || std::io::copy(&mut r, &mut std::io::sink()));
        }
        let addr = line
            .strip_prefix("listening on http://")
            .and_then(|r| r.split_whitespace().next())
            .map(str::to_string);
        let Some(addr) = addr else {
            let _ = child.kill();
            let _ = child.wait();
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            return Err(Error::StartTimeout {
                server: "go-blockcache".into(),
                seconds: 0,
                log: format!("{line}{err}"),
            });
        };
        if let Some(mut e) = child.stderr.take() {
            std::thread::spawn(move || std::io::copy(&mut e, &mut std::io::sink()));
        }
        let reaper = Reaper::spawn(&[child.id()], None)?;
        Ok(GoBlockCache {
            child: Some(child),
            addr,
            reaper: Some(reaper),
        })
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The server's PID.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    /// Stops the server (SIGTERM, then SIGKILL after 5 s), by PID.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            proc::terminate(&mut c, libc::SIGTERM, Duration::from_secs(5), &[]);
        }
        if let Some(mut r) = self.reaper.take() {
            r.disarm();
        }
    }
}

impl Drop for GoBlockCache {
    fn drop(&mut self) {
        self.stop();
    }
}

fn io(what: &str, source: std::io::Error) -> Error {
    Error::Io {
        what: what.to_string(),
        source,
    }
}
