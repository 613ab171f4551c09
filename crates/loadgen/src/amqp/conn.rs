//! Connections: URI, handshake, synchronous setup calls, then a split reader/writer.
use super::wire::{self, m, Dec, Enc, FieldValue, Frame};
use crate::Error;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long connecting and the handshake may take before the broker counts as unreachable.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(4);
const FRAME_MAX: u32 = 131_072;
/// The `durable` bit of `exchange.declare`.
const DURABLE: u8 = 1 << 1;

/// A parsed `amqp://user:pass@host:port/vhost` URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uri {
    /// Host name or address.
    pub host: String,
    /// TCP port (default 5672).
    pub port: u16,
    /// User (default guest).
    pub user: String,
    /// Password (default guest).
    pub password: String,
    /// Virtual host (default `/`).
    pub vhost: String,
}

impl Uri {
    /// Parses an AMQP URI the way PerfTest's client does (percent-decoding user, password
    /// and vhost; an empty path means vhost `/`).
    pub fn parse(s: &str) -> Result<Self, Error> {
        let bad = |reason: &str| Error::Uri {
            uri: redact(s),
            reason: reason.to_string(),
        };
        let rest = if let Some(r) = s.strip_prefix("amqp://") {
            r
        } else if s.starts_with("amqps://") {
            return Err(bad("TLS (amqps://) is not supported; use amqp://"));
        } else {
            return Err(bad("expected amqp://[user:password@]host[:port][/vhost]"));
        };
        let (auth_host, path) = match rest.find('/') {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        let (auth, hostport) = match auth_host.rfind('@') {
            Some(i) => (Some(&auth_host[..i]), &auth_host[i + 1..]),
            None => (None, auth_host),
        };
        let (user, password) = match auth {
            Some(a) => match a.find(':') {
                Some(i) => (
                    pct(&a[..i]).map_err(|e| bad(&e))?,
                    pct(&a[i + 1..]).map_err(|e| bad(&e))?,
                ),
                None => (pct(a).map_err(|e| bad(&e))?, String::new()),
            },
            None => ("guest".into(), "guest".into()),
        };
        let (host, port) = if let Some(h) = hostport.strip_prefix('[') {
            let end = h.find(']').ok_or_else(|| bad("unterminated [IPv6] host"))?;
            let port = match h[end + 1..].strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| bad("port is not a number 0-65535"))?,
                None => 5672,
            };
            (h[..end].to_string(), port)
        } else {
            match hostport.rfind(':') {
                Some(i) => (
                    hostport[..i].to_string(),
                    hostport[i + 1..]
                        .parse()
                        .map_err(|_| bad("port is not a number 0-65535"))?,
                ),
                None => (hostport.to_string(), 5672),
            }
        };
        let host = if host.is_empty() {
            "localhost".to_string()
        } else {
            host
        };
        let vhost = match path {
            None | Some("") => "/".to_string(),
            Some(p) => pct(p).map_err(|e| bad(&e))?,
        };
        Ok(Uri {
            host,
            port,
            user,
            password,
            vhost,
        })
    }

    /// The URI without its password, for messages.
    pub fn display(&self) -> String {
        let vhost = if self.vhost == "/" {
            String::new()
        } else {
            format!("/{}", self.vhost)
        };
        format!("amqp://{}@{}:{}{}", self.user, self.host, self.port, vhost)
    }
}

fn redact(s: &str) -> String {
    match (s.find("://"), s.rfind('@')) {
        (Some(a), Some(b)) if b > a => {
            let auth = &s[a + 3..b];
            let user = auth.split(':').next().unwrap_or("");
            format!("{}{}@{}", &s[..a + 3], user, &s[b + 1..])
        }
        _ => s.to_string(),
    }
}

fn pct(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let h = s.get(i + 1..i + 3).ok_or("truncated %-escape")?;
            out.push(u8::from_str_radix(h, 16).map_err(|_| format!("bad %-escape %{h}"))?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "%-escapes do not form UTF-8".to_string())
}

/// The write half, shared by the thread that publishes (or acks) and the reader (heartbeats).
#[derive(Debug)]
pub struct Writer {
    /// The socket and when we last wrote to it.
    stream: Mutex<(TcpStream, Instant)>,
    /// A clone used only to shut the socket down while a writer may hold the lock.
    ctl: TcpStream,
    uri: String,
}

const HEARTBEAT_FRAME: [u8; 8] = [wire::FRAME_HEARTBEAT, 0, 0, 0, 0, 0, 0, wire::FRAME_END];

impl Writer {
    /// Writes all of `bytes` as one unit (frames from two threads never interleave).
    pub fn write(&self, bytes: &[u8]) -> Result<(), Error> {
        let mut s = self.stream.lock().unwrap_or_else(|p| p.into_inner());
        s.1 = Instant::now();
        s.0.write_all(bytes).map_err(|e| Error::Io {
            uri: self.uri.clone(),
            source: e,
        })
    }

    /// Writes all of `bytes` as one unit; on failure also says how many bytes were written
    /// before it (so whole messages among them can be counted as sent).
    pub(crate) fn write_counted(&self, bytes: &[u8]) -> Result<(), (usize, Error)> {
        let mut s = self.stream.lock().unwrap_or_else(|p| p.into_inner());
        s.1 = Instant::now();
        let mut done = 0;
        while done < bytes.len() {
            match s.0.write(&bytes[done..]) {
                Ok(0) => {
                    return Err((
                        done,
                        Error::Io {
                            uri: self.uri.clone(),
                            source: std::io::ErrorKind::WriteZero.into(),
                        },
                    ))
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err((
                        done,
                        Error::Io {
                            uri: self.uri.clone(),
                            source: e,
                        },
                    ))
                }
            }
        }
        Ok(())
    }

    /// Sends a heartbeat if nothing was written for `idle`. Skipped while another thread
    /// is writing: that write is traffic the broker counts, and waiting for it could stall
    /// the reader behind TCP backpressure.
    fn heartbeat_if_idle(&self, idle: Duration) -> Result<(), Error> {
        if let Ok(mut s) = self.stream.try_lock() {
            if s.1.elapsed() >= idle {
                s.1 = Instant::now();
                s.0.write_all(&HEARTBEAT_FRAME).map_err(|e| Error::Io {
                    uri: self.uri.clone(),
                    source: e,
                })?;
            }
        }
        Ok(())
    }

    /// Closes both directions so a blocked reader or writer returns at once.
    pub fn shutdown(&self) {
        let _ = self.ctl.shutdown(Shutdown::Both);
    }
}

/// The read half: frames parsed in place from a 128 KiB buffer.
#[derive(Debug)]
pub struct FrameReader {
    stream: TcpStream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    frame_max: usize,
    uri: String,
    heartbeat: Option<Duration>,
    /// True until the handshake is done: a read timeout then is an error.
    handshaking: bool,
    last_read: Instant,
    writer: Arc<Writer>,
}

impl FrameReader {
    /// The next frame. Heartbeats are answered and skipped; a timeout of two heartbeat
    /// intervals without any byte from the broker is an error.
    pub fn next(&mut self) -> Result<Frame<'_>, Error> {
        loop {
            if self.end > self.start {
                let parsed = wire::parse_frame(&self.buf[self.start..self.end], self.frame_max)
                    .map_err(|reason| Error::Protocol {
                        uri: self.uri.clone(),
                        reason,
                    })?;
                if let Some((f, n)) = parsed {
                    let kind = f.kind;
                    self.start += n;
                    if kind == wire::FRAME_HEARTBEAT {
                        continue;
                    }
                    let s = self.start - n;
                    let size = n - 8;
                    return Ok(Frame {
                        kind,
                        channel: u16::from_be_bytes([self.buf[s + 1], self.buf[s + 2]]),
                        payload: &self.buf[s + 7..s + 7 + size],
                    });
                }
            }
            self.fill()?;
        }
    }

    /// True when a whole frame is already buffered: the caller can batch work (acks,
    /// counters) until it is not, without delaying anything the broker waits for.
    pub(crate) fn has_frame(&self) -> bool {
        matches!(
            wire::parse_frame(&self.buf[self.start..self.end], self.frame_max),
            Ok(Some(_))
        )
    }

    fn fill(&mut self) -> Result<(), Error> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.buf.len() - self.end < self.frame_max + 8 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        loop {
            match self.stream.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    return Err(Error::Io {
                        uri: self.uri.clone(),
                        source: std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            "the broker closed the connection",
                        ),
                    })
                }
                Ok(n) => {
                    self.end += n;
                    self.last_read = Instant::now();
                    if let Some(hb) = self.heartbeat {
                        self.writer.heartbeat_if_idle(hb / 2)?;
                    }
                    return Ok(());
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    match self.heartbeat {
                        // During the handshake silence means this is not a working broker.
                        None if self.handshaking => {
                            return Err(Error::Io {
                                uri: self.uri.clone(),
                                source: e,
                            })
                        }
                        // No heartbeats negotiated: an idle connection is fine.
                        None => {}
                        Some(hb) => {
                            if self.last_read.elapsed() > hb * 2 {
                                return Err(Error::Io {
                                    uri: self.uri.clone(),
                                    source: std::io::Error::new(
                                        std::io::ErrorKind::TimedOut,
                                        format!(
                                            "no heartbeat from the broker for {} s",
                                            (hb * 2).as_secs()
                                        ),
                                    ),
                                });
                            }
                            self.writer.heartbeat_if_idle(hb / 2)?;
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(Error::Io {
                        uri: self.uri.clone(),
                        source: e,
                    })
                }
            }
        }
    }
}

/// An open connection with channel 1 open: setup calls are synchronous; then
/// [`Connection::split`] gives the reader and the shared writer.
#[derive(Debug)]
pub struct Connection {
    reader: FrameReader,
    writer: Arc<Writer>,
    out: Vec<u8>,
}

fn proto(uri: &str, reason: impl Into<String>) -> Error {
    Error::Protocol {
        uri: uri.to_string(),
        reason: reason.into(),
    }
}

impl Connection {
    /// Connects, authenticates (PLAIN), opens the vhost and channel 1.
    ///
    /// Fails within [`CONNECT_TIMEOUT`] (plus name resolution) with the URI in the message
    /// when nothing listens there.
    pub fn open(uri: &Uri, name: &str) -> Result<Self, Error> {
        let shown = uri.display();
        let conn_err = |e: std::io::Error| Error::Connect {
            uri: shown.clone(),
            source: e,
        };
        let addrs: Vec<_> = (uri.host.as_str(), uri.port)
            .to_socket_addrs()
            .map_err(conn_err)?
            .collect();
        let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, "host has no address");
        let mut stream = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, CONNECT_TIMEOUT) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = e,
            }
        }
        let stream = stream.ok_or_else(|| conn_err(last))?;
        let _ = stream.set_nodelay(true);
        stream
            .set_read_timeout(Some(CONNECT_TIMEOUT))
            .map_err(conn_err)?;
        let wstream = stream.try_clone().map_err(conn_err)?;
        let ctl = stream.try_clone().map_err(conn_err)?;
        let writer = Arc::new(Writer {
            stream: Mutex::new((wstream, Instant::now())),
            ctl,
            uri: shown.clone(),
        });
        let mut c = Connection {
            reader: FrameReader {
                stream,
                buf: vec![0; 256 * 1024],
                start: 0,
                end: 0,
                frame_max: FRAME_MAX as usize,
                uri: shown.clone(),
                heartbeat: None,
                handshaking: true,
                last_read: Instant::now(),
                writer: writer.clone(),
            },
            writer,
            out: Vec::with_capacity(4096),
        };
        c.writer.write(b"AMQP\x00\x00\x09\x01")?;
        c.check_protocol()?;
        c.handshake(uri, name).map_err(|e| match e {
            Error::Io { uri, source } if source.kind() == std::io::ErrorKind::UnexpectedEof => {
                Error::Handshake {
                    uri,
                    reason: "the broker closed the connection during the handshake (wrong user or password, or no access to the vhost?)".into(),
                }
            }
            // With the authentication_failure_close capability the broker says why.
            Error::Closed { uri: u, code, text } if code == 403 || code == 530 => Error::Handshake {
                uri: u,
                reason: format!("the broker refused user '{}': {code} {text}", uri.user),
            },
            Error::Io { uri, source }
                if matches!(source.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
            {
                Error::Handshake { uri, reason: format!("no AMQP handshake within {} s (is this an AMQP 0.9.1 port?)", CONNECT_TIMEOUT.as_secs()) }
            }
            other => other,
        })?;
        Ok(c)
    }

    /// Looks at the server's first bytes before parsing them as frames: a server of another
    /// AMQP version answers with its own protocol header and closes; a server of another
    /// protocol answers with something else. Either is named as such.
    fn check_protocol(&mut self) -> Result<(), Error> {
        let r = &mut self.reader;
        while r.end - r.start < 8 {
            match r.fill() {
                Ok(()) => {}
                // A close before 8 bytes: let the handshake report what it has.
                Err(_) if r.end > r.start => break,
                Err(Error::Io { uri, source })
                    if matches!(
                        source.kind(),
                        std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
                    ) =>
                {
                    return Err(Error::Handshake {
                        uri,
                        reason: "the server closed the connection without answering the AMQP header (is this an AMQP 0-9-1 port?)".into(),
                    })
                }
                Err(e) => return Err(e),
            }
        }
        let b = &r.buf[r.start..r.end];
        if b.starts_with(b"AMQP") {
            let v = b.get(4..8).unwrap_or(&[]);
            return Err(Error::Handshake {
                uri: r.uri.clone(),
                reason: format!(
                    "the server speaks another AMQP version ({}), not 0-9-1",
                    match v {
                        [0, 0, 9, 1] => "0-9-1, yet refused the header".to_string(),
                        [0, 1, 0, 0] | [3, 1, 0, 0] | [2, 1, 0, 0] => "AMQP 1.0".to_string(),
                        [a, b, c, d] => format!("{a}-{b}-{c}-{d}"),
                        _ => "a truncated header".to_string(),
                    }
                ),
            });
        }
        if b.first() != Some(&wire::FRAME_METHOD) || b.get(1..3) != Some(&[0, 0]) {
            let shown = crate::answer_shown(b);
            return Err(Error::Handshake {
                uri: r.uri.clone(),
                reason: format!(
                    "this is not an AMQP 0-9-1 server: it answered '{shown}' (is the port another service's?)"
                ),
            });
        }
        Ok(())
    }

    fn handshake(&mut self, uri: &Uri, name: &str) -> Result<(), Error> {
        let shown = uri.display();
        // connection.start
        let p = self.expect(0, m::CONN_START)?;
        let mut d = Dec::new(&p[4..]);
        let parsed = (|| {
            d.u8()?;
            d.u8()?;
            d.skip_table()?;
            let mechs = d.longstr()?.to_vec();
            Ok::<_, wire::Short>(mechs)
        })();
        let mechs = parsed.map_err(|_| proto(&shown, "short connection.start"))?;
        if !String::from_utf8_lossy(&mechs)
            .split(' ')
            .any(|x| x == "PLAIN")
        {
            return Err(Error::Handshake {
                uri: shown,
                reason: "the broker does not offer PLAIN authentication".into(),
            });
        }
        let mut resp = vec![0u8];
        resp.extend_from_slice(uri.user.as_bytes());
        resp.push(0);
        resp.extend_from_slice(uri.password.as_bytes());
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        wire::method_frame(&mut out, 0, m::CONN_START_OK, |e| {
            let at = e.buf.len();
            e.u32(0);
            e.shortstr("product").u8(b'S').longstr(b"kiln");
            e.shortstr("version")
                .u8(b'S')
                .longstr(env!("CARGO_PKG_VERSION").as_bytes());
            e.shortstr("connection_name")
                .u8(b'S')
                .longstr(name.as_bytes());
            e.shortstr("capabilities").u8(b'F').raw_table(&[
                ("publisher_confirms", true),
                ("basic.nack", true),
                ("connection.blocked", true),
                ("consumer_cancel_notify", true),
                ("exchange_exchange_bindings", true),
                // Refused credentials then come as connection.close 403 with the broker's
                // reason instead of a bare closed socket.
                ("authentication_failure_close", true),
            ]);
            let len = (e.buf.len() - at - 4) as u32;
            e.buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
            e.shortstr("PLAIN").longstr(&resp).shortstr("en_US");
        });
        self.writer.write(&out)?;
        // connection.tune
        let p = self.expect(0, m::CONN_TUNE)?;
        let mut d = Dec::new(&p[4..]);
        let (chmax, fmax, hb) = (|| Ok::<_, wire::Short>((d.u16()?, d.u32()?, d.u16()?)))()
            .map_err(|_| proto(&shown, "short connection.tune"))?;
        let frame_max = if fmax == 0 {
            FRAME_MAX
        } else {
            fmax.min(FRAME_MAX)
        };
        let heartbeat = if hb == 0 { 0 } else { hb.min(30) };
        out.clear();
        wire::method_frame(&mut out, 0, m::CONN_TUNE_OK, |e| {
            e.u16(chmax.clamp(1, 64)).u32(frame_max).u16(heartbeat);
        });
        wire::method_frame(&mut out, 0, m::CONN_OPEN, |e| {
            e.shortstr(&uri.vhost).shortstr("").u8(0);
        });
        self.writer.write(&out)?;
        self.out = out;
        self.reader.frame_max = frame_max as usize;
        self.expect(0, m::CONN_OPEN_OK)?;
        self.rpc(
            m::CHAN_OPEN,
            |e| {
                e.shortstr("");
            },
            m::CHAN_OPEN_OK,
        )?;
        if heartbeat > 0 {
            let hb = Duration::from_secs(heartbeat as u64);
            self.reader.heartbeat = Some(hb);
            // Wake often enough to send our heartbeat within half an interval of silence.
            let _ = self.reader.stream.set_read_timeout(Some(hb / 4));
        } else {
            let _ = self
                .reader
                .stream
                .set_read_timeout(Some(Duration::from_secs(15)));
        }
        self.reader.handshaking = false;
        Ok(())
    }

    /// Reads frames until method `want` arrives on `channel`; a close from the broker
    /// becomes [`Error::Closed`] carrying its reply code and text.
    fn expect(&mut self, channel: u16, want: (u16, u16)) -> Result<Vec<u8>, Error> {
        loop {
            let f = self.reader.next()?;
            if f.kind != wire::FRAME_METHOD {
                continue;
            }
            let id = wire::method_id(f.payload);
            if id == Some(want) && f.channel == channel {
                return Ok(f.payload.to_vec());
            }
            if id == Some(m::CONN_CLOSE) || id == Some(m::CHAN_CLOSE) {
                let mut d = Dec::new(&f.payload[4..]);
                let code = d.u16().unwrap_or(0);
                let text = d.shortstr().unwrap_or("").to_string();
                let close_ok = if id == Some(m::CONN_CLOSE) {
                    m::CONN_CLOSE_OK
                } else {
                    m::CHAN_CLOSE_OK
                };
                let ch = f.channel;
                let mut out = Vec::new();
                wire::method_frame(&mut out, ch, close_ok, |_| {});
                let _ = self.writer.write(&out);
                return Err(Error::Closed {
                    uri: self.reader.uri.clone(),
                    code,
                    text,
                });
            }
        }
    }

    /// Sends a method on channel 1 and waits for its reply.
    pub fn rpc(
        &mut self,
        id: (u16, u16),
        f: impl FnOnce(&mut Enc),
        reply: (u16, u16),
    ) -> Result<Vec<u8>, Error> {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        wire::method_frame(&mut out, 1, id, f);
        let r = self.writer.write(&out);
        self.out = out;
        r?;
        self.expect(if reply.0 == 10 { 0 } else { 1 }, reply)
    }

    /// `exchange.declare`, durable as PerfTest declares it, so kiln and PerfTest runs can share
    /// a broker (skipped for the default exchange and `amq.*`).
    pub(crate) fn declare_exchange(&mut self, name: &str, kind: &str) -> Result<(), Error> {
        if name.is_empty() || name.starts_with("amq.") {
            return Ok(());
        }
        self.rpc(
            m::EXCHANGE_DECLARE,
            |e| {
                e.u16(0)
                    .shortstr(name)
                    .shortstr(kind)
                    .u8(DURABLE)
                    .table(&[]);
            },
            m::EXCHANGE_DECLARE_OK,
        )
        .map(|_| ())
    }

    /// `queue.declare`; returns the queue's name (the server's for an empty name).
    pub(crate) fn declare_queue(
        &mut self,
        name: &str,
        durable: bool,
        exclusive: bool,
        auto_delete: bool,
        args: &[(String, FieldValue)],
    ) -> Result<String, Error> {
        let bits = (durable as u8) << 1 | (exclusive as u8) << 2 | (auto_delete as u8) << 3;
        let p = self.rpc(
            m::QUEUE_DECLARE,
            |e| {
                e.u16(0).shortstr(name).u8(bits).table(args);
            },
            m::QUEUE_DECLARE_OK,
        )?;
        let mut d = Dec::new(&p[4..]);
        Ok(d.shortstr()
            .map_err(|_| proto(&self.reader.uri, "short queue.declare-ok"))?
            .to_string())
    }

    /// A passive `queue.declare` of `name`: the messages ready in it and its consumers, as
    /// the broker counts them. A queue that does not exist closes the channel (404); the
    /// connection is then of no further use for this.
    pub(crate) fn queue_depth(&mut self, name: &str) -> Result<(u32, u32), Error> {
        const PASSIVE: u8 = 1;
        let p = self.rpc(
            m::QUEUE_DECLARE,
            |e| {
                e.u16(0).shortstr(name).u8(PASSIVE).table(&[]);
            },
            m::QUEUE_DECLARE_OK,
        )?;
        let mut d = Dec::new(&p[4..]);
        (|| {
            d.shortstr()?;
            Ok((d.u32()?, d.u32()?))
        })()
        .map_err(|_: wire::Short| proto(&self.reader.uri, "short queue.declare-ok"))
    }

    /// `queue.bind` (skipped for the default exchange, which routes by queue name).
    pub fn bind(&mut self, queue: &str, exchange: &str, key: &str) -> Result<(), Error> {
        if exchange.is_empty() {
            return Ok(());
        }
        self.rpc(
            m::QUEUE_BIND,
            |e| {
                e.u16(0)
                    .shortstr(queue)
                    .shortstr(exchange)
                    .shortstr(key)
                    .u8(0)
                    .table(&[]);
            },
            m::QUEUE_BIND_OK,
        )
        .map(|_| ())
    }

    /// `basic.qos` with a per-consumer prefetch count (0 = unlimited).
    pub fn qos(&mut self, prefetch: u16) -> Result<(), Error> {
        self.rpc(
            m::BASIC_QOS,
            |e| {
                e.u32(0).u16(prefetch).u8(0);
            },
            m::BASIC_QOS_OK,
        )
        .map(|_| ())
    }

    /// `confirm.select`.
    pub(crate) fn confirm_select(&mut self) -> Result<(), Error> {
        self.rpc(
            m::CONFIRM_SELECT,
            |e| {
                e.u8(0);
            },
            m::CONFIRM_SELECT_OK,
        )
        .map(|_| ())
    }

    /// `basic.consume`.
    pub fn consume(
        &mut self,
        queue: &str,
        tag: &str,
        no_ack: bool,
        args: &[(String, FieldValue)],
    ) -> Result<(), Error> {
        self.rpc(
            m::BASIC_CONSUME,
            |e| {
                e.u16(0)
                    .shortstr(queue)
                    .shortstr(tag)
                    .u8((no_ack as u8) << 1)
                    .table(args);
            },
            m::BASIC_CONSUME_OK,
        )
        .map(|_| ())
    }

    /// The negotiated maximum frame size.
    pub(crate) fn frame_max(&self) -> usize {
        self.reader.frame_max
    }

    /// Gives up the synchronous API for the run: the reader for one thread, the writer shared.
    pub fn split(self) -> (FrameReader, Arc<Writer>) {
        (self.reader, self.writer)
    }

    /// Closes politely (connection.close, without waiting long for close-ok).
    pub fn close(mut self) {
        let mut out = Vec::new();
        wire::method_frame(&mut out, 0, m::CONN_CLOSE, |e| {
            e.u16(200).shortstr("kiln done").u16(0).u16(0);
        });
        if self.writer.write(&out).is_ok() {
            // A timeout waiting for close-ok ends the wait (as during the handshake).
            self.reader.handshaking = true;
            let _ = self
                .reader
                .stream
                .set_read_timeout(Some(Duration::from_millis(500)));
            let _ = self.expect(0, m::CONN_CLOSE_OK);
        }
        self.writer.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_defaults_and_parts() {
        let u = Uri::parse("amqp://localhost").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.user.as_str(), u.vhost.as_str()),
            ("localhost", 5672, "guest", "/")
        );
        let u = Uri::parse("amqp://bob:s%40cret@10.0.0.1:5673/%2Fprod").unwrap();
        assert_eq!(
            (
                u.user.as_str(),
                u.password.as_str(),
                u.port,
                u.vhost.as_str()
            ),
            ("bob", "s@cret", 5673, "/prod")
        );
        assert!(!u.display().contains("s@cret"));
        let e = Uri::parse("http://x").unwrap_err().to_string();
        assert!(e.contains("http://x"), "{e}");
        let e = Uri::parse("amqp://u:pw@h:99999").unwrap_err().to_string();
        assert!(e.contains("port") && !e.contains("pw"), "{e}");
    }
}
