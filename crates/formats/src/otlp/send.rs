//! Sending profiles to an OpenTelemetry collector over OTLP/HTTP (`--otlp-endpoint`): one
//! `POST` of the request's protobuf bytes, as a collector's `otlp` receiver takes them.
use super::proto::{ExportProfilesServiceResponse, Status};
use kiln_model::text::{clean_bytes, clean_cut, MAX_SHOWN};
use std::io::Read;
use std::time::Duration;

/// The profiles signal's path under an OTLP/HTTP endpoint (development status).
pub const PROFILES_PATH: &str = "/v1development/profiles";

/// The most of an answer kiln reads.
const MAX_ANSWER: u64 = 1 << 20;

/// What the collector said to an export it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    /// The URL the request went to.
    pub url: String,
    /// Profiles the receiver refused (`partial_success`), and why.
    pub rejected: i64,
    /// The receiver's message with a partial success (empty when none), escaped and cut
    /// to [`MAX_SHOWN`] characters for a terminal.
    pub message: String,
}

/// The URL to post profiles to for `endpoint`: as OpenTelemetry's exporters read
/// `OTEL_EXPORTER_OTLP_ENDPOINT`, a base URL (no path, or `/`) gets the signal's path
/// [`PROFILES_PATH`]; a URL with a path is used as it is
/// (`OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT`). Only `http://` and `https://` URLs.
pub fn profiles_url(endpoint: &str) -> Result<String, String> {
    let rest = endpoint
        .strip_prefix("http://")
        .or_else(|| endpoint.strip_prefix("https://"))
        .ok_or_else(|| {
            format!("'{endpoint}' is not an http:// or https:// URL (e.g. http://127.0.0.1:4318)")
        })?;
    match rest.find('/') {
        None if !rest.is_empty() => Ok(format!("{endpoint}{PROFILES_PATH}")),
        Some(i) if i > 0 && &rest[i..] == "/" => {
            Ok(format!("{}{PROFILES_PATH}", endpoint.trim_end_matches('/')))
        }
        Some(i) if i > 0 => Ok(endpoint.to_string()),
        _ => Err(format!("'{endpoint}' names no host")),
    }
}

/// Posts `request` (an `ExportProfilesServiceRequest`'s bytes) to `endpoint` (see
/// [`profiles_url`]), waiting at most `timeout`. An answer other than 200, or none, is an
/// error that says what the collector said.
pub fn send(request: &[u8], endpoint: &str, timeout: Duration) -> Result<Sent, String> {
    let url = profiles_url(endpoint)?;
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .new_agent();
    let resp = agent
        .post(&url)
        .header("Content-Type", "application/x-protobuf")
        .send(request)
        .map_err(|e| format!("{url}: {}", clean_cut(&e.to_string(), MAX_SHOWN)))?;
    let status = resp.status().as_u16();
    let protobuf = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-protobuf"));
    let mut body = Vec::new();
    resp.into_body()
        .into_reader()
        .take(MAX_ANSWER)
        .read_to_end(&mut body)
        .map_err(|e| {
            format!(
                "{url}: reading the answer: {}",
                clean_cut(&e.to_string(), MAX_SHOWN)
            )
        })?;
    if status != 200 {
        // The collector's words, shown safely: escaped and cut short.
        let said = match prost::Message::decode(body.as_slice()) {
            Ok(Status { message, .. }) if protobuf && !message.is_empty() => {
                clean_cut(&message, MAX_SHOWN).into_owned()
            }
            _ => clean_bytes(body.trim_ascii(), MAX_SHOWN),
        };
        let hint = if status == 404 {
            " (does the collector's otlp receiver take profiles? the Collector needs \
             --feature-gates=service.profilesSupport)"
        } else {
            ""
        };
        return Err(format!("{url}: HTTP {status}{hint}: {said}"));
    }
    let answer: ExportProfilesServiceResponse = if protobuf {
        prost::Message::decode(body.as_slice())
            .map_err(|e| format!("{url}: the answer is not an export response: {e}"))?
    } else {
        ExportProfilesServiceResponse::default()
    };
    let partial = answer.partial_success.unwrap_or_default();
    Ok(Sent {
        url,
        rejected: partial.rejected_profiles,
        message: clean_cut(&partial.error_message, MAX_SHOWN).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_and_urls() {
        let p = |e: &str| profiles_url(e);
        assert_eq!(
            p("http://127.0.0.1:4318").unwrap(),
            "http://127.0.0.1:4318/v1development/profiles"
        );
        assert_eq!(
            p("http://127.0.0.1:4318/").unwrap(),
            "http://127.0.0.1:4318/v1development/profiles"
        );
        assert_eq!(
            p("https://c.example/otlp/v1development/profiles").unwrap(),
            "https://c.example/otlp/v1development/profiles"
        );
        for bad in ["127.0.0.1:4318", "http://", "http:///x", "ftp://h/"] {
            assert!(p(bad).is_err(), "{bad}");
        }
    }
}
