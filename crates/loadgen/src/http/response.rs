//! An incremental HTTP/1.1 response reader: bytes in, complete responses out.
//!
//! It performs no I/O (the client loop hands it whatever a read returned, split anywhere)
//! and keeps nothing but the bytes of a response head still incomplete: bodies are counted,
//! not stored, so a connection waiting for a large body costs no memory. Heads are parsed
//! with `httparse`; bodies are framed by `Content-Length`, `Transfer-Encoding: chunked`
//! (sizes read with `httparse::parse_chunk_size`, trailers skipped) or the end of the
//! connection; `HEAD` answers and 1xx/204/304 responses have none. Interim 1xx responses
//! (`100 Continue`) are skipped.

/// Largest response head accepted, in bytes.
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// Most header fields accepted in one head.
pub(crate) const MAX_HEADERS: usize = 128;
/// Longest chunk-size or trailer line accepted.
const MAX_LINE: usize = 4096;

/// A complete response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Bytes of the head (status line and headers), including interim 1xx heads.
    pub head_bytes: u64,
    /// Bytes of the body as sent (for chunked bodies: with the chunk framing).
    pub body_bytes: u64,
    /// Whether the connection may carry another request after this one.
    pub keep_alive: bool,
}

/// Why a response could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// The head is not HTTP/1.x (the reason from httparse or ours).
    BadHead(String),
    /// The head exceeds [`MAX_HEAD`] bytes or [`MAX_HEADERS`] fields.
    HeadTooLarge,
    /// `Content-Length` is missing a number, repeated with different values, or combined
    /// with chunked encoding.
    BadLength(String),
    /// A chunk size line or trailer is malformed.
    BadChunk(String),
    /// The connection ended before the response did.
    Truncated,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::BadHead(r) => write!(f, "malformed response head: {r}"),
            ParseError::HeadTooLarge => write!(
                f,
                "response head larger than {MAX_HEAD} bytes or {MAX_HEADERS} fields"
            ),
            ParseError::BadLength(r) => write!(f, "bad Content-Length: {r}"),
            ParseError::BadChunk(r) => write!(f, "bad chunked body: {r}"),
            ParseError::Truncated => write!(f, "connection closed in the middle of a response"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading a chunk-size line (kept in `line`).
    Size,
    /// Inside a chunk's data.
    Data(u64),
    /// The CRLF after a chunk's data (bytes of it still expected).
    DataEnd(u8),
    /// Trailer lines after the last chunk, until an empty line.
    Trailer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Length(u64),
    Chunked(Chunk),
    UntilClose,
}

/// Reads the responses of one connection, one after another.
#[derive(Debug)]
pub struct ResponseReader {
    state: State,
    /// Incomplete head, or chunk-size/trailer line, carried over between reads.
    buf: Vec<u8>,
    /// The response in progress.
    cur: Response,
}

impl Default for ResponseReader {
    fn default() -> Self {
        Self::new()
    }
}

fn empty() -> Response {
    Response {
        status: 0,
        head_bytes: 0,
        body_bytes: 0,
        keep_alive: true,
    }
}

/// How a response's body is framed and whether its connection stays open.
struct Framing {
    length: Option<u64>,
    chunked: bool,
    close: bool,
}

/// The framing a head's headers say (HTTP/1.`version`); a Content-Length that is no
/// number, or two that differ, is an error.
fn framing(headers: &[httparse::Header], version: u8) -> Result<Framing, ParseError> {
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let mut close = version == 0;
    for h in headers {
        if h.name.eq_ignore_ascii_case("content-length") {
            let v = std::str::from_utf8(h.value)
                .ok()
                .map(str::trim)
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| {
                    ParseError::BadLength(format!(
                        "'{}' is not a number",
                        String::from_utf8_lossy(h.value)
                    ))
                })?;
            if length.is_some_and(|l| l != v) {
                return Err(ParseError::BadLength("two different values".into()));
            }
            length = Some(v);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            let v = String::from_utf8_lossy(h.value).to_ascii_lowercase();
            chunked = v.split(',').next_back().map(str::trim) == Some("chunked");
        } else if h.name.eq_ignore_ascii_case("connection") {
            let v = String::from_utf8_lossy(h.value).to_ascii_lowercase();
            for t in v.split(',').map(str::trim) {
                if t == "close" {
                    close = true;
                } else if t == "keep-alive" && version == 0 {
                    close = false;
                }
            }
        }
    }
    Ok(Framing {
        length,
        chunked,
        close,
    })
}

impl ResponseReader {
    /// A reader waiting for a response head.
    pub fn new() -> Self {
        ResponseReader {
            state: State::Head,
            buf: Vec::new(),
            cur: empty(),
        }
    }

    /// Whether the reader is between responses (nothing of the next one read yet).
    pub fn idle(&self) -> bool {
        self.state == State::Head && self.buf.is_empty()
    }

    /// Bytes this reader holds for an incomplete head or line.
    pub fn buffered(&self) -> usize {
        self.buf.capacity()
    }

    /// Feeds bytes read from the connection. `head_request` says whether the response being
    /// read answers a `HEAD` (no body). Returns how many bytes were used and, if a response
    /// ended within them, that response; the caller feeds the rest again (the next
    /// response). When no response ended, every byte was used.
    pub fn feed(
        &mut self,
        data: &[u8],
        head_request: bool,
    ) -> Result<(usize, Option<Response>), ParseError> {
        let mut used = 0;
        loop {
            let rest = &data[used..];
            match self.state {
                State::Head => {
                    if rest.is_empty() {
                        return Ok((used, None));
                    }
                    match self.head(rest, head_request)? {
                        (n, Some(done)) => return Ok((used + n, Some(done))),
                        (n, None) => {
                            used += n;
                            if self.state == State::Head {
                                // Needs more bytes (all were buffered) or an interim 1xx
                                // response ended and the next head follows.
                                if used == data.len() {
                                    return Ok((used, None));
                                }
                            }
                        }
                    }
                }
                State::Length(left) => {
                    let n = (rest.len() as u64).min(left);
                    self.cur.body_bytes += n;
                    used += n as usize;
                    if n == left {
                        return Ok((used, Some(self.finish())));
                    }
                    self.state = State::Length(left - n);
                    return Ok((used, None));
                }
                State::UntilClose => {
                    self.cur.body_bytes += rest.len() as u64;
                    return Ok((data.len(), None));
                }
                State::Chunked(c) => {
                    if rest.is_empty() {
                        return Ok((used, None));
                    }
                    let (n, done) = self.chunked(c, rest)?;
                    used += n;
                    self.cur.body_bytes += n as u64;
                    if done {
                        return Ok((used, Some(self.finish())));
                    }
                }
            }
        }
    }

    /// The connection ended (EOF). A body delimited by the end of the connection ends
    /// here; anything else in progress is [`ParseError::Truncated`]. `Ok(None)`: nothing
    /// was in progress.
    pub fn eof(&mut self) -> Result<Option<Response>, ParseError> {
        match self.state {
            State::UntilClose => {
                let mut r = self.finish();
                r.keep_alive = false;
                Ok(Some(r))
            }
            State::Head if self.buf.is_empty() && self.cur.head_bytes == 0 => Ok(None),
            _ => Err(ParseError::Truncated),
        }
    }

    fn finish(&mut self) -> Response {
        let r = self.cur;
        self.cur = empty();
        self.state = State::Head;
        self.buf.clear();
        if self.buf.capacity() > 8 * 1024 {
            self.buf = Vec::new();
        }
        r
    }

    /// Parses a head from the buffered bytes plus `rest`. Returns bytes of `rest` used.
    fn head(
        &mut self,
        rest: &[u8],
        head_request: bool,
    ) -> Result<(usize, Option<Response>), ParseError> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        let carried = self.buf.len();
        let parsed = if carried == 0 {
            resp.parse(rest)
        } else {
            // Only the bytes that can belong to the head are appended.
            let take = rest.len().min(MAX_HEAD + 1 - carried.min(MAX_HEAD));
            self.buf.extend_from_slice(&rest[..take]);
            resp.parse(&self.buf)
        };
        let head_len = match parsed {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                if carried == 0 {
                    if rest.len() > MAX_HEAD {
                        return Err(ParseError::HeadTooLarge);
                    }
                    self.buf.extend_from_slice(rest);
                } else if self.buf.len() > MAX_HEAD {
                    return Err(ParseError::HeadTooLarge);
                }
                return Ok((rest.len(), None));
            }
            Err(httparse::Error::TooManyHeaders) => return Err(ParseError::HeadTooLarge),
            Err(e) => return Err(ParseError::BadHead(e.to_string())),
        };
        if head_len > MAX_HEAD {
            return Err(ParseError::HeadTooLarge);
        }
        let status = resp.code.unwrap_or(0);
        let version = resp.version.unwrap_or(1);
        let Framing {
            length,
            chunked,
            close,
        } = framing(resp.headers, version)?;
        // Bytes of `rest` that belonged to the head.
        let used = head_len - carried;
        self.buf.clear();
        self.cur.head_bytes += head_len as u64;
        if (100..200).contains(&status) {
            if status == 101 {
                return Err(ParseError::BadHead(
                    "101 Switching Protocols: the server left HTTP".into(),
                ));
            }
            // Interim response: the final one follows.
            return Ok((used, None));
        }
        self.cur.status = status;
        self.cur.keep_alive = !close;
        if chunked && length.is_some() {
            return Err(ParseError::BadLength(
                "Content-Length together with chunked encoding".into(),
            ));
        }
        let no_body = head_request || status == 204 || status == 304;
        self.state = if no_body {
            State::Length(0)
        } else if chunked {
            State::Chunked(Chunk::Size)
        } else if let Some(l) = length {
            State::Length(l)
        } else {
            self.cur.keep_alive = false;
            State::UntilClose
        };
        if self.state == State::Length(0) {
            return Ok((used, Some(self.finish())));
        }
        Ok((used, None))
    }

    /// Advances through a chunked body; returns bytes used and whether the body ended.
    fn chunked(&mut self, mut c: Chunk, data: &[u8]) -> Result<(usize, bool), ParseError> {
        let mut at = 0;
        while at < data.len() {
            match c {
                Chunk::Data(left) => {
                    let n = ((data.len() - at) as u64).min(left);
                    at += n as usize;
                    c = if n == left {
                        Chunk::DataEnd(2)
                    } else {
                        Chunk::Data(left - n)
                    };
                }
                Chunk::DataEnd(k) => {
                    let want = if k == 2 { b'\r' } else { b'\n' };
                    if data[at] != want {
                        return Err(ParseError::BadChunk(
                            "chunk data not followed by CRLF".into(),
                        ));
                    }
                    at += 1;
                    c = if k == 2 {
                        Chunk::DataEnd(1)
                    } else {
                        Chunk::Size
                    };
                }
                Chunk::Size | Chunk::Trailer => {
                    let Some(nl) = data[at..].iter().position(|&b| b == b'\n') else {
                        self.buf.extend_from_slice(&data[at..]);
                        if self.buf.len() > MAX_LINE {
                            return Err(ParseError::BadChunk("line too long".into()));
                        }
                        at = data.len();
                        break;
                    };
                    self.buf.extend_from_slice(&data[at..at + nl + 1]);
                    at += nl + 1;
                    if self.buf.len() > MAX_LINE {
                        return Err(ParseError::BadChunk("line too long".into()));
                    }
                    let line = std::mem::take(&mut self.buf);
                    if c == Chunk::Trailer {
                        if line == b"\r\n" || line == b"\n" {
                            self.buf = line;
                            self.state = State::Chunked(Chunk::Size);
                            return Ok((at, true));
                        }
                        self.buf = line;
                        self.buf.clear();
                        continue;
                    }
                    let size = match httparse::parse_chunk_size(&line) {
                        Ok(httparse::Status::Complete((_, s))) => s,
                        _ => {
                            return Err(ParseError::BadChunk(format!(
                                "bad chunk size line '{}'",
                                String::from_utf8_lossy(&line).trim_end()
                            )))
                        }
                    };
                    self.buf = line;
                    self.buf.clear();
                    c = if size == 0 {
                        Chunk::Trailer
                    } else {
                        Chunk::Data(size)
                    };
                }
            }
        }
        self.state = State::Chunked(c);
        Ok((at, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `data` split at every point in `cuts`, collecting responses.
    fn read_all(data: &[u8], cuts: &[usize], head: bool) -> Result<Vec<Response>, ParseError> {
        let mut r = ResponseReader::new();
        let mut out = Vec::new();
        let mut pieces = Vec::new();
        let mut last = 0;
        for &c in cuts {
            let c = c.min(data.len()).max(last);
            pieces.push(&data[last..c]);
            last = c;
        }
        pieces.push(&data[last..]);
        for p in pieces {
            let mut p = p;
            loop {
                let (n, done) = r.feed(p, head)?;
                p = &p[n..];
                match done {
                    Some(resp) => out.push(resp),
                    None => {
                        assert!(p.is_empty(), "unused bytes without a response");
                        break;
                    }
                }
            }
        }
        if let Some(resp) = r.eof()? {
            out.push(resp);
        }
        Ok(out)
    }

    fn every_split(data: &[u8], head: bool) -> Vec<Response> {
        let whole = read_all(data, &[], head).unwrap();
        for i in 0..=data.len() {
            assert_eq!(read_all(data, &[i], head).unwrap(), whole, "split at {i}");
        }
        let ones: Vec<usize> = (1..data.len()).collect();
        assert_eq!(read_all(data, &ones, head).unwrap(), whole, "byte by byte");
        whole
    }

    #[test]
    fn content_length_and_pipelined() {
        let d = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
        let r = every_split(d, false);
        assert_eq!(r.len(), 2);
        assert_eq!(
            (r[0].status, r[0].body_bytes, r[0].keep_alive),
            (200, 5, true)
        );
        assert_eq!(r[0].head_bytes, 38);
        assert_eq!((r[1].status, r[1].body_bytes), (404, 0));
    }

    #[test]
    fn chunked_with_extensions_and_trailers() {
        let d = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
        let r = every_split(d, false);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].status, 200);
        assert_eq!(r[0].body_bytes, (d.len() - 47 - 27) as u64);
        assert_eq!(r[1].status, 204);
    }

    #[test]
    fn until_close_interim_and_head() {
        let d = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\n\r\nabc";
        let r = every_split(d, false);
        assert_eq!(r.len(), 1);
        assert_eq!(
            (r[0].status, r[0].body_bytes, r[0].keep_alive),
            (200, 3, false)
        );
        assert_eq!(r[0].head_bytes, 25 + 19);
        let d = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n";
        let r = every_split(d, true);
        assert_eq!((r[0].status, r[0].body_bytes), (200, 0));
        let d = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx";
        assert!(!every_split(d, false)[0].keep_alive);
    }

    #[test]
    fn errors() {
        let e = |d: &[u8]| read_all(d, &[], false).unwrap_err();
        assert!(matches!(
            e(b"SSH-2.0-OpenSSH\r\n\r\n"),
            ParseError::BadHead(_)
        ));
        assert!(matches!(
            e(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"),
            ParseError::BadLength(_)
        ));
        assert!(matches!(
            e(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            ParseError::BadLength(_)
        ));
        assert!(matches!(
            e(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
            ParseError::BadChunk(_)
        ));
        assert!(matches!(
            e(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"),
            ParseError::Truncated
        ));
        assert!(matches!(e(b"HTTP/1.1 200 O"), ParseError::Truncated));
        let big = [
            b"HTTP/1.1 200 OK\r\nX: ".as_slice(),
            &vec![b'a'; MAX_HEAD + 10],
        ]
        .concat();
        assert_eq!(e(&big), ParseError::HeadTooLarge);
        assert!(read_all(b"", &[], false).unwrap().is_empty());
    }
}
