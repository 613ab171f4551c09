//! A private nginx: one worker, keep-alive, a static file, an access log kiln can count.
use crate::proc::{self, Reaper};
use crate::Error;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NGINX: &str = "/usr/sbin/nginx";

/// Settings of a private nginx.
#[derive(Debug, Clone)]
pub struct NginxOptions {
    /// Size of the static file served at `/index.html` (and `/`). Default: 612 bytes, the
    /// size of nginx's own welcome page.
    pub body_bytes: usize,
    /// Worker processes. Default: 1.
    pub workers: u32,
    /// `worker_connections`, also the worker's open-file limit. Default: 16384.
    pub worker_connections: u32,
    /// Whether requests are written to the access log. Default: true.
    pub access_log: bool,
    /// Lines added inside `server { … }`, e.g. `location /slow { return 204; }`.
    /// Default: none.
    pub server_lines: Vec<String>,
    /// Lines added inside `http { … }`, e.g. an `upstream` block. Default: none.
    pub http_lines: Vec<String>,
}

impl Default for NginxOptions {
    fn default() -> Self {
        NginxOptions {
            body_bytes: 612,
            workers: 1,
            worker_connections: 16384,
            access_log: true,
            server_lines: Vec::new(),
            http_lines: Vec::new(),
        }
    }
}

/// One line of the access log.
#[derive(Debug, Clone, PartialEq)]
pub struct AccessEntry {
    /// `$msec`: seconds since the epoch, with milliseconds.
    pub time_s: f64,
    /// `$status`.
    pub status: u16,
    /// `$request_method`.
    pub method: String,
    /// `$request_uri`.
    pub uri: String,
    /// `$body_bytes_sent`.
    pub body_bytes: u64,
    /// `$connection`: the connection's serial number.
    pub connection: u64,
    /// `$connection_requests`: requests served on that connection so far.
    pub connection_requests: u64,
    /// `$remote_addr`: the client's address (its source address).
    pub remote: std::net::IpAddr,
}

/// A running private nginx bound to 127.0.0.1 on a free port. Dropping it stops it.
#[derive(Debug)]
pub struct Nginx {
    dir: tempfile::TempDir,
    port: u16,
    master: Option<Child>,
    workers: Vec<u32>,
    reaper: Option<Reaper>,
}

impl Nginx {
    /// Starts nginx with default settings and waits until it accepts connections.
    pub fn start() -> Result<Self, Error> {
        Self::start_with(&NginxOptions::default())
    }

    /// Starts nginx with `opts` and waits until it accepts connections.
    pub fn start_with(opts: &NginxOptions) -> Result<Self, Error> {
        if !Path::new(NGINX).exists() {
            return Err(Error::NotInstalled {
                program: NGINX.into(),
                advice: "install Debian's nginx package (scripts/install-deps.sh)",
            });
        }
        let dir = tempfile::Builder::new()
            .prefix("kiln-nginx-")
            .tempdir()
            .map_err(|e| io("creating nginx's directory", e))?;
        let html = dir.path().join("html");
        std::fs::create_dir_all(&html).map_err(|e| io("creating html/", e))?;
        std::fs::write(html.join("index.html"), static_body(opts.body_bytes))
            .map_err(|e| io("writing index.html", e))?;
        let mut me = Nginx {
            dir,
            port: 0,
            master: None,
            workers: Vec::new(),
            reaper: None,
        };
        // The port is free when chosen but another process may take it before nginx binds:
        // try a few.
        let mut attempt = 0;
        loop {
            attempt += 1;
            me.port = crate::free_port()?;
            let d = me.dir.path();
            std::fs::write(d.join("nginx.conf"), config(d, me.port, opts))
                .map_err(|e| io("writing nginx.conf", e))?;
            let _ = std::fs::remove_file(d.join("error.log"));
            let master = Command::new(NGINX)
                .arg("-p")
                .arg(d)
                .arg("-c")
                .arg(d.join("nginx.conf"))
                .arg("-e")
                .arg(d.join("error.log"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| io("starting nginx", e))?;
            me.master = Some(master);
            match me.await_ready(opts.workers.max(1) as usize) {
                Ok(()) => {
                    let mut pids = vec![me.pid()];
                    pids.extend(&me.workers);
                    me.reaper = Some(Reaper::spawn(&pids, Some(me.dir.path()))?);
                    return Ok(me);
                }
                Err(e) => {
                    let bind_failed = me.error_log().contains("bind()");
                    me.stop();
                    if !bind_failed || attempt >= 5 {
                        return Err(e);
                    }
                }
            }
        }
    }

    fn await_ready(&mut self, workers: usize) -> Result<(), Error> {
        let start = Instant::now();
        let timeout = Duration::from_secs(10);
        loop {
            if let Some(m) = self.master.as_mut() {
                if let Ok(Some(status)) = m.try_wait() {
                    return Err(Error::StartTimeout {
                        server: format!("nginx (exited with {status})"),
                        seconds: start.elapsed().as_secs(),
                        log: self.error_log(),
                    });
                }
            }
            self.workers = crate::proc::children(self.pid());
            if self.workers.len() >= workers
                && crate::listening(std::net::Ipv4Addr::LOCALHOST, self.port)
            {
                return Ok(());
            }
            if start.elapsed() > timeout {
                return Err(Error::StartTimeout {
                    server: "nginx".into(),
                    seconds: timeout.as_secs(),
                    log: self.error_log(),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The master process's PID.
    pub fn pid(&self) -> u32 {
        self.master.as_ref().map_or(0, |m| m.id())
    }

    /// The worker processes' PIDs (they serve the requests and use the CPU).
    pub fn worker_pids(&self) -> &[u32] {
        &self.workers
    }

    /// nginx's private directory (config, html, logs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The access log.
    pub fn access_log_path(&self) -> PathBuf {
        self.dir.path().join("access.log")
    }

    /// The access log's entries so far (nginx writes each request's line when the request
    /// ends, unbuffered). A line that does not parse is an error naming it.
    pub fn access_entries(&self) -> Result<Vec<AccessEntry>, Error> {
        let path = self.access_log_path();
        let f = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io("opening access.log", e)),
        };
        let mut out = Vec::new();
        for (i, line) in BufReader::new(f).lines().enumerate() {
            let line = line.map_err(|e| io("reading access.log", e))?;
            out.push(parse_access(&line).ok_or_else(|| Error::BadLog {
                path: path.display().to_string(),
                line: i + 1,
                text: line.clone(),
            })?);
        }
        Ok(out)
    }

    /// The access log's entries once it stopped growing for 200 ms (nginx may write a line
    /// just after the client saw the response and the connection's end), waiting at most
    /// `timeout`.
    pub fn access_entries_settled(&self, timeout: Duration) -> Result<Vec<AccessEntry>, Error> {
        let start = Instant::now();
        let mut last = self.access_entries()?;
        let mut since = Instant::now();
        while start.elapsed() < timeout {
            std::thread::sleep(Duration::from_millis(20));
            let now = self.access_entries()?;
            if now.len() != last.len() {
                last = now;
                since = Instant::now();
            } else if since.elapsed() >= Duration::from_millis(200) {
                break;
            }
        }
        Ok(last)
    }

    /// The last lines of the error log.
    pub fn error_log(&self) -> String {
        crate::log_tail(&self.dir.path().join("error.log"))
    }

    /// Stops nginx (SIGTERM to the master, then SIGKILL to master and workers by PID if it
    /// lingers).
    pub fn stop(&mut self) {
        if let Some(mut m) = self.master.take() {
            proc::terminate(&mut m, libc::SIGTERM, Duration::from_secs(5), &self.workers);
        }
        if let Some(mut r) = self.reaper.take() {
            r.disarm();
        }
    }
}

impl Drop for Nginx {
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

fn static_body(n: usize) -> Vec<u8> {
    let line = b"kiln test page: the quick brown fox jumps over the lazy dog 0123456789\n";
    line.iter().copied().cycle().take(n).collect()
}

fn config(dir: &Path, port: u16, o: &NginxOptions) -> String {
    let d = dir.display();
    let mut c = String::new();
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        // Workers would otherwise run as nobody and could not read the private directory.
        c.push_str("user root;\n");
    }
    let _ = write!(
        c,
        "daemon off;
master_process on;
worker_processes {workers};
worker_rlimit_nofile {files};
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections {conns}; multi_accept on; }}
http {{
    log_format kiln '$msec $status $request_method \"$request_uri\" $body_bytes_sent $connection $connection_requests $remote_addr';
    access_log {access};
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    keepalive_timeout 65;
    keepalive_requests 100000000;
    sendfile on;
    tcp_nopush on;
    default_type text/html;
{http_extra}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {d}/html;
        location = /echo-status {{ return 204; }}
{extra}
    }}
}}
",
        workers = o.workers.max(1),
        files = o.worker_connections as u64 * 2 + 64,
        conns = o.worker_connections.max(64),
        access = if o.access_log {
            format!("{d}/access.log kiln")
        } else {
            "off".into()
        },
        http_extra = o
            .http_lines
            .iter()
            .map(|l| format!("    {l}\n"))
            .collect::<String>(),
        extra = o
            .server_lines
            .iter()
            .map(|l| format!("        {l}\n"))
            .collect::<String>(),
    );
    let _ = std::fs::create_dir_all(dir.join("tmp"));
    c
}

fn parse_access(line: &str) -> Option<AccessEntry> {
    let (time, rest) = line.split_once(' ')?;
    let (status, rest) = rest.split_once(' ')?;
    let (method, rest) = rest.split_once(' ')?;
    let rest = rest.strip_prefix('"')?;
    let (uri, rest) = rest.rsplit_once("\" ")?;
    let mut f = rest.split(' ');
    let e = AccessEntry {
        time_s: time.parse().ok()?,
        status: status.parse().ok()?,
        method: method.to_string(),
        uri: uri.to_string(),
        body_bytes: f.next()?.parse().ok()?,
        connection: f.next()?.parse().ok()?,
        connection_requests: f.next()?.parse().ok()?,
        remote: f.next()?.parse().ok()?,
    };
    f.next().is_none().then_some(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_lines() {
        let e = parse_access("1700000000.123 200 GET \"/a?b=\\x22c\" 612 7 3 127.0.0.2").unwrap();
        assert_eq!(e.status, 200);
        assert_eq!(e.uri, "/a?b=\\x22c");
        assert_eq!(
            (e.body_bytes, e.connection, e.connection_requests),
            (612, 7, 3)
        );
        assert_eq!(e.remote, std::net::IpAddr::from([127, 0, 0, 2]));
        assert!(parse_access("1700000000.123 200 GET /a 612 7 3 127.0.0.1").is_none());
        assert!(parse_access("x 200 GET \"/\" 1 1 1 127.0.0.1").is_none());
        assert!(parse_access("1.0 200 GET \"/\" 1 1 1 127.0.0.1 extra").is_none());
        assert!(parse_access("1.0 200 GET \"/\" 1 1 1 nowhere").is_none());
    }
}
