//! What one worker thread counted: requests, responses by status, errors by kind, bytes,
//! and latency histograms. Each thread has its own, behind a mutex the reader takes once a
//! second.
use hdrhistogram::Histogram;

/// Why a request failed (or, for `Connect`, a connection attempt).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    /// A connection could not be opened (refused, unreachable…). Counted per attempt.
    Connect,
    /// No complete response within `--timeout`.
    Timeout,
    /// The connection was reset (RST, broken pipe).
    Reset,
    /// The server closed the connection before or while answering.
    Closed,
    /// The response was not valid HTTP/1.1.
    Protocol,
    /// Anything else (epoll or socket errors).
    Other,
}

impl ErrorKind {
    /// Every kind, in report order.
    pub const ALL: [ErrorKind; 6] = [
        ErrorKind::Connect,
        ErrorKind::Timeout,
        ErrorKind::Reset,
        ErrorKind::Closed,
        ErrorKind::Protocol,
        ErrorKind::Other,
    ];

    /// Lower-case name used in reports (`connect`, `timeout`…).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::Closed => "closed",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Other => "other",
        }
    }
}

pub(crate) fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static histogram bounds are valid")
}

/// Counters of one thread since the last drain.
#[derive(Debug)]
pub struct ThreadStats {
    /// Requests written (or queued to be written).
    pub sent: u64,
    /// Complete responses.
    pub responses: u64,
    /// Responses by status code (index = code, 0..=999).
    pub status: Vec<u64>,
    /// Failed requests by kind (connect: failed attempts).
    pub errors: [u64; 6],
    /// The first message seen of each error kind.
    pub error_detail: [Option<String>; 6],
    /// Bytes written and read.
    pub bytes_written: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Connection attempts.
    pub connects: u64,
    /// Requests still unanswered when the run ended (after the drain).
    pub unanswered: u64,
    /// Rate schedule tickets that found no free connection before the end.
    pub not_sent: u64,
    /// Service time (sent → response complete), µs.
    pub service: Histogram<u64>,
    /// Latency from the intended send time (rate-limited runs), µs.
    pub intended: Histogram<u64>,
    /// The worker ended.
    pub finished: bool,
}

impl Default for ThreadStats {
    fn default() -> Self {
        ThreadStats {
            sent: 0,
            responses: 0,
            status: vec![0; 1000],
            errors: [0; 6],
            error_detail: Default::default(),
            bytes_written: 0,
            bytes_read: 0,
            connects: 0,
            unanswered: 0,
            not_sent: 0,
            service: new_hist(),
            intended: new_hist(),
            finished: false,
        }
    }
}

impl ThreadStats {
    pub(crate) fn response(&mut self, status: u16, service_ns: u64, intended_ns: Option<u64>) {
        self.responses += 1;
        self.status[(status as usize).min(999)] += 1;
        self.service.saturating_record((service_ns / 1000).max(1));
        if let Some(t) = intended_ns {
            self.intended.saturating_record((t / 1000).max(1));
        }
    }

    pub(crate) fn error(&mut self, kind: ErrorKind, requests: u64, detail: &str) {
        let k = kind as usize;
        self.errors[k] += if kind == ErrorKind::Connect {
            1
        } else {
            requests
        };
        if self.error_detail[k].is_none() {
            self.error_detail[k] = Some(detail.to_string());
        }
    }

    /// Adds `other` into self (histograms merged) without emptying `other`.
    pub fn add(&mut self, o: &ThreadStats) {
        self.sent += o.sent;
        self.responses += o.responses;
        for (a, b) in self.status.iter_mut().zip(&o.status) {
            *a += b;
        }
        for k in 0..6 {
            self.errors[k] += o.errors[k];
            if self.error_detail[k].is_none() {
                self.error_detail[k] = o.error_detail[k].clone();
            }
        }
        self.bytes_written += o.bytes_written;
        self.bytes_read += o.bytes_read;
        self.connects += o.connects;
        self.unanswered += o.unanswered;
        self.not_sent += o.not_sent;
        let _ = self.service.add(&o.service);
        let _ = self.intended.add(&o.intended);
    }

    /// Moves everything counted into a new value and resets self (the detail messages and
    /// `finished` stay).
    pub fn take(&mut self) -> ThreadStats {
        let mut out = ThreadStats::default();
        std::mem::swap(&mut out.status, &mut self.status);
        self.status = vec![0; 1000];
        out.sent = std::mem::take(&mut self.sent);
        out.responses = std::mem::take(&mut self.responses);
        out.errors = std::mem::take(&mut self.errors);
        out.error_detail = self.error_detail.clone();
        out.bytes_written = std::mem::take(&mut self.bytes_written);
        out.bytes_read = std::mem::take(&mut self.bytes_read);
        out.connects = std::mem::take(&mut self.connects);
        out.unanswered = std::mem::take(&mut self.unanswered);
        out.not_sent = std::mem::take(&mut self.not_sent);
        let _ = out.service.add(&self.service);
        let _ = out.intended.add(&self.intended);
        self.service.reset();
        self.intended.reset();
        out.finished = self.finished;
        out
    }

    /// Failed requests (connect failures are attempts, not requests, and are left out).
    pub fn failed(&self) -> u64 {
        self.errors[1..].iter().sum()
    }
}
