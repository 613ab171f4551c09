//! What to send: URLs, vegeta-format targets files, and request templates with
//! per-request variables, compiled once into byte segments so that rendering a request is
//! a few copies into the connection's write buffer.
//!
//! Variables, in the URL's path and query, header values and the body:
//! - `{i}`: the request's number in the run (0, 1, 2…; unique across threads);
//! - `{rand:A-B}`: a uniformly random integer from A to B inclusive;
//! - `{csv:NAME}` or `{csv:N}`: a column (by its header name, or 0-based position) of the
//!   `--csv` file, whose first line names the columns; request i uses data row i mod rows.
//!
//! Any other text in braces (a JSON body, say) is sent as it is.
use crate::Error;
use std::fmt::Write as _;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;

/// One request as given: method, URL, headers, body.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Target {
    /// Method, e.g. `GET`.
    pub method: String,
    /// `http://host[:port]/path?query`, possibly with variables.
    pub url: String,
    /// Extra headers `(name, value)`; values may hold variables.
    pub headers: Vec<(String, String)>,
    /// Body (empty: none); may hold variables.
    pub body: Vec<u8>,
}

/// The parts of an `http://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// Host as written (name or address).
    pub host: String,
    /// Port (80 by default).
    pub port: u16,
    /// `host[:port]` as the `Host` header carries it.
    pub authority: String,
    /// Path and query (`/` if none).
    pub path: String,
}

/// Parses `http://host[:port][/path][?query]`.
pub fn parse_url(s: &str) -> Result<Url, Error> {
    let bad = |reason: &str| Error::Url {
        url: s.to_string(),
        reason: reason.to_string(),
    };
    let rest = if let Some(r) = s.strip_prefix("http://") {
        r
    } else if s.starts_with("https://") {
        return Err(bad(
            "https is not supported: kiln load http speaks plain HTTP/1.1 (put a TLS-terminating proxy in front, or load the plain-HTTP port)",
        ));
    } else {
        return Err(bad("expected http://HOST[:PORT]/PATH"));
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    if authority.contains('@') {
        return Err(bad(
            "credentials in the URL are not supported; use -H 'Authorization: …'",
        ));
    }
    if let Some(f) = path.find('#') {
        return Err(bad(&format!("fragment '{}' is never sent", &path[f..])));
    }
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(bad(
            "spaces or control characters in the path (encode them as %20…)",
        ));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, rest) = v6
            .split_once(']')
            .ok_or_else(|| bad("unclosed '[' in the host"))?;
        let port = match rest.strip_prefix(':') {
            Some(p) => Some(p),
            None if rest.is_empty() => None,
            None => return Err(bad("unexpected text after ']'")),
        };
        (h.to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let port = match port {
        None => 80,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| bad(&format!("port '{p}' is not 1-65535")))?,
    };
    Ok(Url {
        host,
        port,
        authority: authority.to_string(),
        path,
    })
}

/// Reads a targets file in vegeta's HTTP format: blocks separated by blank lines, each a
/// `METHOD URL` line, then `Name: value` header lines, then optionally `@path` naming a
/// body file; `#` starts a comment line. Errors name the file and line.
pub fn parse_targets_file(path: &Path) -> Result<Vec<Target>, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Input {
        path: path.display().to_string(),
        source,
    })?;
    parse_targets(&text, &path.display().to_string())
}

/// [`parse_targets_file`] on text already read; `name` is used in errors.
pub fn parse_targets(text: &str, name: &str) -> Result<Vec<Target>, Error> {
    let bad = |line: usize, reason: String| Error::Targets {
        path: name.to_string(),
        line,
        reason,
    };
    let mut out: Vec<Target> = Vec::new();
    let mut in_block = false;
    let mut has_body = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.starts_with('#') {
            continue;
        }
        if line.is_empty() {
            in_block = false;
            continue;
        }
        if !in_block {
            let (method, url) = line
                .split_once(char::is_whitespace)
                .ok_or_else(|| bad(n, format!("expected 'METHOD URL', got '{line}'")))?;
            let url = url.trim();
            if !method.bytes().all(|b| b.is_ascii_uppercase()) {
                return Err(bad(n, format!("'{method}' is not an HTTP method")));
            }
            parse_url(url).map_err(|e| bad(n, e.to_string()))?;
            out.push(Target {
                method: method.to_string(),
                url: url.to_string(),
                headers: Vec::new(),
                body: Vec::new(),
            });
            in_block = true;
            has_body = false;
            continue;
        }
        let t = out.last_mut().ok_or_else(|| bad(n, "no target".into()))?;
        if let Some(file) = line.strip_prefix('@') {
            if has_body {
                return Err(bad(n, "a second body for one target".into()));
            }
            t.body = std::fs::read(file)
                .map_err(|e| bad(n, format!("cannot read body file '{file}': {e}")))?;
            has_body = true;
        } else if has_body {
            return Err(bad(n, "header after the body line".into()));
        } else {
            let h = parse_header(line).map_err(|r| bad(n, r))?;
            t.headers.push(h);
        }
    }
    if out.is_empty() {
        return Err(bad(0, "no targets".into()));
    }
    Ok(out)
}

/// Parses `Name: value` (as given to `-H`).
pub fn parse_header(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once(':')
        .ok_or_else(|| format!("expected 'Name: value', got '{s}'"))?;
    let k = k.trim();
    if k.is_empty() || !k.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
        return Err(format!("'{k}' is not a header name"));
    }
    let v = v.trim();
    if v.bytes().any(|b| b == b'\r' || b == b'\n') {
        return Err(format!("header '{k}' has a line break in its value"));
    }
    Ok((k.to_string(), v.to_string()))
}

/// A CSV file whose columns feed `{csv:…}` variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Csv {
    names: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Csv {
    /// Reads a CSV file (RFC 4180 quoting); the first line names the columns.
    pub fn read(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Input {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// [`Csv::read`] on text already read; `name` is used in errors.
    pub fn parse(text: &str, name: &str) -> Result<Self, Error> {
        let mut records = Vec::new();
        let mut field = String::new();
        let mut rec = Vec::new();
        let mut quoted = false;
        let mut line = 1;
        let mut start_line = 1;
        let mut chars = text.chars().peekable();
        let mut any = false;
        while let Some(c) = chars.next() {
            any = true;
            if quoted {
                match c {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    '"' => quoted = false,
                    '\n' => {
                        line += 1;
                        field.push(c);
                    }
                    _ => field.push(c),
                }
                continue;
            }
            match c {
                '"' if field.is_empty() => quoted = true,
                ',' => rec.push(std::mem::take(&mut field)),
                '\r' if chars.peek() == Some(&'\n') => {}
                '\n' => {
                    rec.push(std::mem::take(&mut field));
                    records.push((start_line, std::mem::take(&mut rec)));
                    line += 1;
                    start_line = line;
                    any = false;
                }
                _ => field.push(c),
            }
        }
        if quoted {
            return Err(Error::Csv {
                path: name.into(),
                line: start_line,
                reason: "unclosed quote".into(),
            });
        }
        if any {
            rec.push(field);
            records.push((start_line, rec));
        }
        records.retain(|(_, r)| !(r.len() == 1 && r[0].is_empty()));
        let mut it = records.into_iter();
        let (_, names) = it.next().ok_or_else(|| Error::Csv {
            path: name.into(),
            line: 1,
            reason: "empty file (the first line names the columns)".into(),
        })?;
        let mut rows = Vec::new();
        for (l, r) in it {
            if r.len() != names.len() {
                return Err(Error::Csv {
                    path: name.into(),
                    line: l,
                    reason: format!("{} fields, the header has {}", r.len(), names.len()),
                });
            }
            rows.push(r);
        }
        if rows.is_empty() {
            return Err(Error::Csv {
                path: name.into(),
                line: 1,
                reason: "no data rows after the header".into(),
            });
        }
        Ok(Csv { names, rows })
    }

    fn column(&self, key: &str) -> Option<usize> {
        self.names
            .iter()
            .position(|n| n == key)
            .or_else(|| key.parse::<usize>().ok().filter(|&i| i < self.names.len()))
    }

    /// Data rows.
    pub fn rows(&self) -> usize {
        self.rows.len()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Lit(Vec<u8>),
    Index,
    Rand(u64, u64),
    Csv(usize),
}

/// Text with variables, split into literal and variable parts.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Template(Vec<Part>);

impl Template {
    fn parse(s: &[u8], csv: Option<&Csv>, what: &str) -> Result<Self, Error> {
        let mut parts = Vec::new();
        let mut lit = Vec::new();
        let mut i = 0;
        while i < s.len() {
            if s[i] == b'{' {
                if let Some(len) = s[i..].iter().position(|&b| b == b'}') {
                    let inner = &s[i + 1..i + len];
                    if let Some(p) = variable(inner, csv, what)? {
                        if !lit.is_empty() {
                            parts.push(Part::Lit(std::mem::take(&mut lit)));
                        }
                        parts.push(p);
                        i += len + 1;
                        continue;
                    }
                }
            }
            lit.push(s[i]);
            i += 1;
        }
        if !lit.is_empty() {
            parts.push(Part::Lit(lit));
        }
        Ok(Template(parts))
    }

    fn constant(&self) -> Option<&[u8]> {
        match self.0.as_slice() {
            [] => Some(&[]),
            [Part::Lit(l)] => Some(l),
            _ => None,
        }
    }

    fn render(&self, i: u64, rng: &mut fastrand::Rng, csv: Option<&Csv>, out: &mut Vec<u8>) {
        for p in &self.0 {
            match p {
                Part::Lit(l) => out.extend_from_slice(l),
                Part::Index => {
                    out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes());
                }
                Part::Rand(a, b) => {
                    let v = rng.u64(*a..=*b);
                    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
                }
                Part::Csv(c) => {
                    if let Some(csv) = csv {
                        let row = &csv.rows[(i % csv.rows.len() as u64) as usize];
                        out.extend_from_slice(row[*c].as_bytes());
                    }
                }
            }
        }
    }
}

/// Recognises `i`, `rand:A-B`, `csv:COL`; `Ok(None)` for anything else (sent as text).
fn variable(inner: &[u8], csv: Option<&Csv>, what: &str) -> Result<Option<Part>, Error> {
    let Ok(s) = std::str::from_utf8(inner) else {
        return Ok(None);
    };
    let bad = |reason: String| Error::Option {
        flag: "template",
        value: format!("{{{s}}} in {what}"),
        reason,
    };
    if s == "i" {
        return Ok(Some(Part::Index));
    }
    if let Some(r) = s.strip_prefix("rand:") {
        let (a, b) = r
            .split_once('-')
            .and_then(|(a, b)| Some((a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?)))
            .ok_or_else(|| bad("expected {rand:A-B} with whole numbers A <= B".into()))?;
        if a > b {
            return Err(bad("expected {rand:A-B} with whole numbers A <= B".into()));
        }
        return Ok(Some(Part::Rand(a, b)));
    }
    if let Some(col) = s.strip_prefix("csv:") {
        let csv = csv.ok_or_else(|| bad("needs --csv FILE".into()))?;
        let c = csv.column(col).ok_or_else(|| {
            bad(format!(
                "no column '{col}' in the CSV file (its columns: {})",
                csv.names.join(", ")
            ))
        })?;
        return Ok(Some(Part::Csv(c)));
    }
    Ok(None)
}

/// One target, compiled.
#[derive(Debug, Clone)]
struct Compiled {
    /// Request line and headers up to (not including) `Content-Length`/the final CRLF.
    head: Template,
    body: Template,
    /// The whole request when nothing varies.
    constant: Option<Vec<u8>>,
    head_request: bool,
    send_length: bool,
}

/// Every target compiled, and where they all go.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The server's address (all targets share it).
    pub addr: SocketAddr,
    /// `host:port` as given.
    pub authority: String,
    targets: Vec<Compiled>,
    csv: Option<Csv>,
}

impl Plan {
    /// Compiles targets: resolves the one server they share, renders what is constant.
    /// `extra_headers` (from `-H`) are added to every target (a target's own header of the
    /// same name wins).
    pub fn new(
        targets: &[Target],
        extra_headers: &[(String, String)],
        csv: Option<Csv>,
    ) -> Result<Self, Error> {
        let first = targets.first().ok_or(Error::Option {
            flag: "URL",
            value: String::new(),
            reason: "give a URL or --targets FILE".into(),
        })?;
        let u0 = parse_url(&first.url)?;
        let mut compiled = Vec::new();
        for t in targets {
            let u = parse_url(&t.url)?;
            if (u.host.as_str(), u.port) != (u0.host.as_str(), u0.port) {
                return Err(Error::Option {
                    flag: "URL",
                    value: t.url.clone(),
                    reason: format!(
                        "every target must be on one server; {} and {} differ",
                        u0.authority, u.authority
                    ),
                });
            }
            if t.method.is_empty() || !t.method.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(Error::Option {
                    flag: "-m",
                    value: t.method.clone(),
                    reason: "not an HTTP method".into(),
                });
            }
            let mut headers: Vec<(String, String)> = t.headers.clone();
            for (k, v) in extra_headers {
                if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(k)) {
                    headers.push((k.clone(), v.clone()));
                }
            }
            let mut head = format!("{} {} HTTP/1.1\r\n", t.method, u.path);
            if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
                let _ = write!(head, "Host: {}\r\n", u.authority);
            }
            let mut send_length =
                !t.body.is_empty() || matches!(t.method.as_str(), "POST" | "PUT" | "PATCH");
            for (k, v) in &headers {
                if k.eq_ignore_ascii_case("content-length") {
                    return Err(Error::Option {
                        flag: "-H",
                        value: format!("{k}: {v}"),
                        reason: "Content-Length is computed from the body".into(),
                    });
                }
                if k.eq_ignore_ascii_case("transfer-encoding") {
                    send_length = false;
                }
                let _ = write!(head, "{k}: {v}\r\n");
            }
            let what = format!("{} {}", t.method, t.url);
            let head_t = Template::parse(head.as_bytes(), csv.as_ref(), &what)?;
            let body_t = Template::parse(&t.body, csv.as_ref(), &what)?;
            let constant = match (head_t.constant(), body_t.constant()) {
                (Some(h), Some(b)) => {
                    let mut r = h.to_vec();
                    finish_head(&mut r, send_length.then_some(b.len()));
                    r.extend_from_slice(b);
                    Some(r)
                }
                _ => None,
            };
            compiled.push(Compiled {
                head: head_t,
                body: body_t,
                constant,
                head_request: t.method == "HEAD",
                send_length,
            });
        }
        let addr = (u0.host.as_str(), u0.port)
            .to_socket_addrs()
            .map_err(|e| Error::Url {
                url: first.url.clone(),
                reason: format!("cannot resolve '{}': {e}", u0.host),
            })?
            .next()
            .ok_or_else(|| Error::Url {
                url: first.url.clone(),
                reason: format!("'{}' has no address", u0.host),
            })?;
        Ok(Plan {
            addr,
            authority: u0.authority,
            targets: compiled,
            csv,
        })
    }

    /// Appends request number `i` (target `i mod targets`) to `out`; returns whether it
    /// is a `HEAD` request (its response has no body).
    pub fn render(&self, i: u64, rng: &mut fastrand::Rng, out: &mut Vec<u8>) -> bool {
        let t = &self.targets[(i % self.targets.len() as u64) as usize];
        if let Some(c) = &t.constant {
            out.extend_from_slice(c);
            return t.head_request;
        }
        let csv = self.csv.as_ref();
        t.head.render(i, rng, csv, out);
        if t.send_length {
            let start = out.len();
            t.body.render(i, rng, csv, out);
            let body = out.split_off(start);
            finish_head(out, Some(body.len()));
            out.extend_from_slice(&body);
        } else {
            finish_head(out, None);
            t.body.render(i, rng, csv, out);
        }
        t.head_request
    }
}

fn finish_head(out: &mut Vec<u8>, length: Option<usize>) {
    if let Some(l) = length {
        out.extend_from_slice(b"Content-Length: ");
        out.extend_from_slice(itoa::Buffer::new().format(l).as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(method: &str, url: &str, body: &str) -> Target {
        Target {
            method: method.into(),
            url: url.into(),
            headers: vec![],
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn urls() {
        let u = parse_url("http://127.0.0.1:8080/q?city=1").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 8080, "/q?city=1")
        );
        let u = parse_url("http://localhost").unwrap();
        assert_eq!(
            (u.port, u.path.as_str(), u.authority.as_str()),
            (80, "/", "localhost")
        );
        assert_eq!(parse_url("http://h?x=1").unwrap().path, "/?x=1");
        assert_eq!(parse_url("http://[::1]:81/").unwrap().host, "::1");
        for bad in [
            "https://x/",
            "ftp://x",
            "http://:80/",
            "http://h:0/",
            "http://h:99999/",
            "http://h/a b",
            "http://u:p@h/",
            "http://h/#f",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
        assert!(parse_url("https://x/")
            .unwrap_err()
            .to_string()
            .contains("https is not supported"));
    }

    #[test]
    fn targets_file() {
        let dir = tempfile::tempdir().unwrap();
        let body = dir.path().join("b.json");
        std::fs::write(&body, "{\"k\": {i}}").unwrap();
        let text = format!(
            "# comment\nGET http://127.0.0.1:1/a\nX-A: 1\n\nPOST http://127.0.0.1:1/b\n@{}\n",
            body.display()
        );
        let ts = parse_targets(&text, "t.txt").unwrap();
        assert_eq!(ts.len(), 2);
        assert_eq!(ts[0].headers, vec![("X-A".into(), "1".into())]);
        assert_eq!(ts[1].body, b"{\"k\": {i}}");
        let e = parse_targets("GET http://h/\nnot a header\n", "t.txt").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.txt:2: expected 'Name: value', got 'not a header'"
        );
        let e = parse_targets("get http://h/\n", "t.txt").unwrap_err();
        assert!(e.to_string().starts_with("t.txt:1:"), "{e}");
        let e = parse_targets("GET https://h/\n", "t.txt").unwrap_err();
        assert!(e.to_string().contains("https"), "{e}");
        assert!(parse_targets("\n# x\n", "t.txt").is_err());
    }

    #[test]
    fn templates_render() {
        let csv = Csv::parse("city,name\n1,\"a,b\"\n2,c\n", "c.csv").unwrap();
        let p = Plan::new(
            &[t(
                "POST",
                "http://127.0.0.1:9/q?c={csv:city}&i={i}&r={rand:5-5}",
                "{\"n\":\"{csv:name}\"}",
            )],
            &[("X-Id".into(), "{i}".into())],
            Some(csv),
        )
        .unwrap();
        let mut rng = fastrand::Rng::with_seed(1);
        let mut out = Vec::new();
        p.render(1, &mut rng, &mut out);
        let s = String::from_utf8(out).unwrap();
        assert_eq!(
            s,
            "POST /q?c=2&i=1&r=5 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nX-Id: 1\r\nContent-Length: 10\r\n\r\n{\"n\":\"c\"}"
                .replace("Content-Length: 10", "Content-Length: 9")
        );
        let mut out = Vec::new();
        p.render(2, &mut rng, &mut out);
        assert!(String::from_utf8(out).unwrap().ends_with("{\"n\":\"a,b\"}"));
        // Constant requests are rendered once.
        let p = Plan::new(&[t("GET", "http://127.0.0.1:9/", "")], &[], None).unwrap();
        let mut out = Vec::new();
        assert!(!p.render(7, &mut rng, &mut out));
        assert_eq!(out, b"GET / HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n");
        // Errors.
        let e = Plan::new(&[t("GET", "http://127.0.0.1:9/{csv:x}", "")], &[], None).unwrap_err();
        assert!(e.to_string().contains("needs --csv"), "{e}");
        let e = Plan::new(&[t("GET", "http://127.0.0.1:9/{rand:9-1}", "")], &[], None).unwrap_err();
        assert!(e.to_string().contains("A <= B"), "{e}");
        let e = Plan::new(
            &[
                t("GET", "http://127.0.0.1:9/", ""),
                t("GET", "http://127.0.0.1:10/", ""),
            ],
            &[],
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("one server"), "{e}");
    }

    #[test]
    fn csv_errors() {
        let e = Csv::parse("a,b\n1\n", "c.csv").unwrap_err();
        assert_eq!(e.to_string(), "c.csv:2: 1 fields, the header has 2");
        assert!(Csv::parse("a\n", "c.csv").is_err());
        assert!(Csv::parse("a\n\"x\n", "c.csv")
            .unwrap_err()
            .to_string()
            .contains("unclosed"));
    }
}
