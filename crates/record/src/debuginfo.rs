//! Where the symbols of a stripped binary are: separate debug files, found as gdb and
//! perf find them, and a debuginfod client.
//!
//! Debian strips its binaries (`beam.smp`, most servers) and ships their symbols apart:
//! `-dbgsym` packages install them under `/usr/lib/debug/.build-id/`, and
//! debuginfod servers hand them out by build id. Looked for in this order, the first
//! file with more symbols than the binary itself wins:
//!
//! 1. `/usr/lib/debug/.build-id/XX/YYYY….debug` (the build id's hex, split after two
//!    digits): `-dbgsym` packages;
//! 2. the file named by `.gnu_debuglink`, whose CRC-32 must match: beside the binary,
//!    in its `.debug/` directory, and under `/usr/lib/debug/` + its directory;
//! 3. `/usr/lib/debug/` + the binary's path + `.debug`;
//! 4. a debuginfod server, when `DEBUGINFOD_URLS` is set (space-separated URLs, as for
//!    gdb and perf): `GET URL/buildid/HEX/debuginfo`, kept in the same cache as
//!    elfutils' client (`$DEBUGINFOD_CACHE_PATH`, else
//!    `$XDG_CACHE_HOME/debuginfod_client`, else `~/.cache/debuginfod_client`), as
//!    `HEX/debuginfo`. Off when the variable is unset or empty.
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Candidate debug files for an image at `path` (in the order above, debuginfod
/// apart): `(file, crc)` where `crc` is the CRC-32 the file must have
/// (`.gnu_debuglink`'s), if any.
pub(crate) fn local_candidates(
    path: &Path,
    file: &object::File<'_>,
) -> Vec<(PathBuf, Option<u32>)> {
    use object::Object;
    use std::os::unix::ffi::OsStrExt;
    let mut v = Vec::new();
    if let Some(hex) = build_id_hex(file) {
        v.push((
            PathBuf::from(format!(
                "/usr/lib/debug/.build-id/{}/{}.debug",
                &hex[..2],
                &hex[2..]
            )),
            None,
        ));
    }
    if let Ok(Some((name, crc))) = file.gnu_debuglink() {
        let name = Path::new(std::ffi::OsStr::from_bytes(name));
        // A link is a file name; never let it climb out of the directories searched.
        if name.components().count() == 1 && !name.as_os_str().is_empty() {
            let dir = path.parent().unwrap_or(Path::new("/"));
            v.push((dir.join(name), Some(crc)));
            v.push((dir.join(".debug").join(name), Some(crc)));
            let mut global = PathBuf::from("/usr/lib/debug");
            global.push(dir.strip_prefix("/").unwrap_or(dir));
            v.push((global.join(name), Some(crc)));
        }
    }
    let mut p = PathBuf::from("/usr/lib/debug");
    p.push(path.strip_prefix("/").unwrap_or(path));
    let mut s = p.into_os_string();
    s.push(".debug");
    v.push((PathBuf::from(s), None));
    v
}

/// The Debian packages that installed `paths` (one `dpkg -S` for all of them: it reads
/// dpkg's whole database, ~0.1 s, whatever the number of paths), each `None` where dpkg
/// knows no package (or dpkg is absent).
pub(crate) fn packages_of(paths: &[&Path]) -> Vec<Option<String>> {
    let mut found = vec![None; paths.len()];
    if paths.is_empty() {
        return found;
    }
    let Ok(out) = std::process::Command::new("dpkg")
        .arg("-S")
        .args(paths)
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return found;
    };
    // A line per path found (the status is 1 when any is not):
    // `erlang-base: /usr/lib/erlang/erts-13.1.5/bin/beam.smp`, a package may carry an
    // architecture (`libc6:amd64: /lib/...`), several packages are comma-separated.
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((pkgs, path)) = line.rsplit_once(": ") else {
            continue;
        };
        let Some(i) = paths.iter().position(|p| p.as_os_str() == path.trim()) else {
            continue;
        };
        let pkg = pkgs
            .split(',')
            .next()
            .unwrap_or("")
            .split(':')
            .next()
            .unwrap_or("")
            .trim();
        if found[i].is_none() && !pkg.is_empty() && !pkg.contains(' ') {
            found[i] = Some(pkg.to_string());
        }
    }
    found
}

/// The image's build id in hexadecimal, if it has one.
pub(crate) fn build_id_hex(file: &object::File<'_>) -> Option<String> {
    use object::Object;
    match file.build_id() {
        Ok(Some(id)) if id.len() > 1 => Some(id.iter().map(|b| format!("{b:02x}")).collect()),
        _ => None,
    }
}

/// Whether `bytes` have the CRC-32 `.gnu_debuglink` asks for.
pub(crate) fn crc_matches(bytes: &[u8], crc: u32) -> bool {
    crc32fast::hash(bytes) == crc
}

/// A debuginfod client (see the module's documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Debuginfod {
    /// Servers, asked in turn.
    pub urls: Vec<String>,
    /// Where fetched files are kept (`BUILDID/debuginfo` under it).
    pub cache: PathBuf,
    /// The longest a request may take.
    pub timeout: Duration,
}

impl Debuginfod {
    /// The client `DEBUGINFOD_URLS` asks for, or `None` when it is unset or empty.
    pub(crate) fn from_env() -> Option<Debuginfod> {
        let urls: Vec<String> = std::env::var("DEBUGINFOD_URLS")
            .ok()?
            .split_ascii_whitespace()
            .map(|u| u.trim_end_matches('/').to_string())
            .filter(|u| !u.is_empty())
            .collect();
        if urls.is_empty() {
            return None;
        }
        let env = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let cache = env("DEBUGINFOD_CACHE_PATH")
            .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("debuginfod_client")))
            .or_else(|| env("HOME").map(|d| d.join(".cache/debuginfod_client")))
            .unwrap_or_else(|| std::env::temp_dir().join("debuginfod_client"));
        let timeout = std::env::var("DEBUGINFOD_TIMEOUT")
            .ok()
            .and_then(|t| t.parse().ok())
            .map_or(Duration::from_secs(90), Duration::from_secs);
        Some(Debuginfod {
            urls,
            cache,
            timeout,
        })
    }

    /// The debug file of build id `hex`: from the cache, else fetched from the first
    /// server that has it (and kept in the cache). The error says what each server
    /// answered.
    pub fn debuginfo(&self, hex: &str) -> Result<PathBuf, String> {
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("'{hex}' is not a build id"));
        }
        let dir = self.cache.join(hex);
        let path = dir.join("debuginfo");
        if path.is_file() {
            return Ok(path);
        }
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(self.timeout))
            .http_status_as_error(false)
            .build()
            .new_agent();
        let mut why = Vec::new();
        for url in &self.urls {
            let at = format!("{url}/buildid/{hex}/debuginfo");
            match agent.get(&at).call() {
                Ok(resp) if resp.status() == 200 => {
                    let mut body = Vec::new();
                    if let Err(e) = resp
                        .into_body()
                        .into_reader()
                        .take(1 << 32)
                        .read_to_end(&mut body)
                    {
                        why.push(format!("{at}: {e}"));
                        continue;
                    }
                    if object::File::parse(&*body).is_err() {
                        why.push(format!("{at}: not an ELF file"));
                        continue;
                    }
                    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                    let mut tmp =
                        tempfile_in(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                    std::io::Write::write_all(&mut tmp.1, &body)
                        .and_then(|()| std::fs::rename(&tmp.0, &path))
                        .map_err(|e| {
                            let _ = std::fs::remove_file(&tmp.0);
                            format!("{}: {e}", path.display())
                        })?;
                    return Ok(path);
                }
                Ok(resp) => why.push(format!("{at}: HTTP {}", resp.status())),
                Err(e) => why.push(format!("{at}: {e}")),
            }
        }
        Err(why.join("; "))
    }
}

/// A new file in `dir` with an unpredictable name, created exclusively.
fn tempfile_in(dir: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ (std::process::id() as u64) << 32;
    for _ in 0..16 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let p = dir.join(format!(".debuginfo.{seed:016x}.tmp"));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o644)
            .open(&p)
        {
            Ok(f) => return Ok((p, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free temporary name"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One `dpkg -S` names the package of each path it knows, in the order asked, and
    /// nothing for a path no package installed (on a machine with dpkg).
    #[test]
    fn one_dpkg_call_names_each_paths_package() {
        if !Path::new("/usr/bin/dpkg").exists() {
            kiln_testkit::skip("dpkg is not installed");
            return;
        }
        let none = Path::new("/nonexistent/kiln-test-binary");
        let got = packages_of(&[none, Path::new("/usr/bin/dpkg-query"), none]);
        assert_eq!(got, vec![None, Some("dpkg".to_string()), None]);
        assert_eq!(packages_of(&[]), Vec::<Option<String>>::new());
    }

    #[test]
    fn debuginfod_is_off_unless_asked_for() {
        // The variables are read once per call; this test only reads them.
        if std::env::var_os("DEBUGINFOD_URLS").is_none() {
            assert_eq!(Debuginfod::from_env(), None);
        }
        let d = Debuginfod {
            urls: vec!["http://127.0.0.1:1".into()],
            cache: std::env::temp_dir(),
            timeout: Duration::from_secs(1),
        };
        assert!(d
            .debuginfo("../etc")
            .unwrap_err()
            .contains("not a build id"));
        // Nothing listens on port 1: the error names the request.
        let e = d.debuginfo("00ff").unwrap_err();
        assert!(
            e.contains("http://127.0.0.1:1/buildid/00ff/debuginfo"),
            "{e}"
        );
    }
}
