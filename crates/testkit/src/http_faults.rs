//! Small HTTP/1.1 servers that misbehave on purpose, in the test process: one that stalls
//! every response for a while once a period (the coordinated-omission test), one that
//! resets connections in the middle of a response, one that sends its headers slowly, one
//! that never answers. Each binds 127.0.0.1 on a port the OS picks and serves each
//! connection on its own thread.
use crate::Error;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a [`FaultServer`] misbehaves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// Answers every request at once (`200`, body `ok`): a well-behaved baseline.
    None,
    /// Answers every request, except that no response leaves during the first `stall` of
    /// every `period` (counted from the server's start): requests that arrive then wait
    /// until the stall ends.
    StallEvery {
        /// Length of the cycle.
        period: Duration,
        /// How long responses are held at the start of each cycle.
        stall: Duration,
    },
    /// Every `every`-th response (1: all) announces a 1,000-byte body, sends 100 bytes of
    /// it and resets the connection (TCP RST).
    ResetMidResponse {
        /// Which responses are cut.
        every: u64,
    },
    /// Sends `HTTP/1.1 200 OK\r\n` at once and the rest of the headers after `delay`.
    SlowHeaders {
        /// The pause inside the headers.
        delay: Duration,
    },
    /// Accepts connections and reads requests but never writes a byte.
    NeverAnswers,
}

struct State {
    fault: Fault,
    start: Instant,
    stop: AtomicBool,
    requests: AtomicU64,
    responses: AtomicU64,
    connections: AtomicU64,
    /// Responses begun (complete or cut), to choose which are cut.
    begun: AtomicU64,
}

/// A running misbehaving server. Dropping it stops it and closes its connections.
pub struct FaultServer {
    port: u16,
    state: Arc<State>,
    accept: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for FaultServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultServer")
            .field("port", &self.port)
            .field("fault", &self.state.fault)
            .finish()
    }
}

impl FaultServer {
    /// Starts a server with `fault` on 127.0.0.1.
    pub fn start(fault: Fault) -> Result<Self, Error> {
        let l = TcpListener::bind("127.0.0.1:0").map_err(|e| io("binding 127.0.0.1:0", e))?;
        let port = l.local_addr().map_err(|e| io("local address", e))?.port();
        let state = Arc::new(State {
            fault,
            start: Instant::now(),
            stop: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            responses: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            begun: AtomicU64::new(0),
        });
        let st = state.clone();
        let accept = std::thread::Builder::new()
            .name("fault-accept".into())
            .spawn(move || {
                for s in l.incoming() {
                    if st.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(s) = s else { continue };
                    st.connections.fetch_add(1, Ordering::SeqCst);
                    let st = st.clone();
                    let _ = std::thread::Builder::new()
                        .name("fault-conn".into())
                        .stack_size(128 * 1024)
                        .spawn(move || serve(s, &st));
                }
            })
            .map_err(|e| io("starting the accept thread", e))?;
        Ok(FaultServer {
            port,
            state,
            accept: Some(accept),
        })
    }

    /// The port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Requests read completely so far.
    pub fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// Complete responses written (or being written) so far; cut ones are not included.
    pub fn responses(&self) -> u64 {
        self.state.responses.load(Ordering::SeqCst)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.state.connections.load(Ordering::SeqCst)
    }
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

fn io(what: &str, source: std::io::Error) -> Error {
    Error::Io {
        what: what.to_string(),
        source,
    }
}

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok";

/// Splits complete requests off the front of `buf`; returns how many and the bytes used.
fn complete_requests(buf: &[u8]) -> (usize, usize) {
    let mut n = 0;
    let mut at = 0;
    while let Some(end) = find(&buf[at..], b"\r\n\r\n") {
        let head = &buf[at..at + end];
        let body = content_length(head);
        let total = end + 4 + body;
        if at + total > buf.len() {
            break;
        }
        at += total;
        n += 1;
    }
    (n, at)
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

fn content_length(head: &[u8]) -> usize {
    let s = String::from_utf8_lossy(head);
    s.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0)
}

fn serve(mut s: TcpStream, st: &State) {
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(Duration::from_millis(50)));
    let mut buf = Vec::with_capacity(16 * 1024);
    let mut chunk = [0u8; 16 * 1024];
    let mut out = Vec::with_capacity(16 * 1024);
    loop {
        if st.stop.load(Ordering::SeqCst) {
            return;
        }
        match s.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => return,
        }
        let (n, used) = complete_requests(&buf);
        buf.drain(..used);
        if n == 0 {
            continue;
        }
        st.requests.fetch_add(n as u64, Ordering::SeqCst);
        out.clear();
        match st.fault {
            Fault::None => {
                for _ in 0..n {
                    out.extend_from_slice(OK);
                }
            }
            Fault::StallEvery { period, stall } => {
                let p = period.as_nanos().max(1);
                let into = st.start.elapsed().as_nanos() % p;
                if into < stall.as_nanos() {
                    let wait = Duration::from_nanos((stall.as_nanos() - into) as u64);
                    std::thread::sleep(wait);
                }
                for _ in 0..n {
                    out.extend_from_slice(OK);
                }
            }
            Fault::ResetMidResponse { every } => {
                for _ in 0..n {
                    let k = st.begun.fetch_add(1, Ordering::SeqCst) + 1;
                    if every <= 1 || k.is_multiple_of(every) {
                        out.extend_from_slice(
                            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n",
                        );
                        out.extend_from_slice(&[b'x'; 100]);
                        let _ = s.write_all(&out);
                        reset(&s);
                        return;
                    }
                    out.extend_from_slice(OK);
                    st.responses.fetch_add(1, Ordering::SeqCst);
                }
                // (counted above, before the write, for the same reason as below)
                if s.write_all(&out).is_err() {
                    return;
                }
                continue;
            }
            Fault::SlowHeaders { delay } => {
                for _ in 0..n {
                    if s.write_all(b"HTTP/1.1 200 OK\r\n").is_err() {
                        return;
                    }
                    let t = Instant::now();
                    while t.elapsed() < delay {
                        if st.stop.load(Ordering::SeqCst) {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    out.extend_from_slice(
                        b"Content-Type: text/plain\r\nContent-Length: 2\r\n\r\nok",
                    );
                }
            }
            Fault::NeverAnswers => continue,
        }
        // Counted before the write: a client may read the last response before this
        // thread runs again.
        st.responses.fetch_add(n as u64, Ordering::SeqCst);
        if s.write_all(&out).is_err() {
            return;
        }
    }
}

/// Closes with SO_LINGER 0: the peer sees a reset, not an orderly end.
fn reset(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt with a valid fd and a linger struct of the right size.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &l as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    let _ = s.shutdown(Shutdown::Read);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_pipelined_requests() {
        let b = b"GET / HTTP/1.1\r\nHost: a\r\n\r\nPOST / HTTP/1.1\r\ncontent-length: 3\r\n\r\nabcGET /";
        let (n, used) = complete_requests(b);
        assert_eq!(n, 2);
        assert_eq!(&b[used..], b"GET /");
        assert_eq!(
            complete_requests(b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab"),
            (0, 0)
        );
    }
}
