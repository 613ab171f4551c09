//! A test's own network: a private network namespace with its loopback up, its own
//! ephemeral port range and other `net.*` settings, which no other test or server sees.
use crate::Error;
use std::process::{Command, Stdio};

/// Runs `f` on a thread of its own inside a new network namespace whose loopback is up
/// (`unshare(CLONE_NEWNET)`, root or CAP_SYS_ADMIN). Every socket `f` opens and every
/// process it starts (servers, kiln) lives in that namespace — 127.0.0.1 there is the
/// test's alone — and `net.*` settings changed inside ([`set_sysctl`]) stay inside. The
/// namespace ends with its last process. A panic in `f` is the caller's.
pub fn in_private_netns<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, Error> {
    let r = std::thread::scope(|s| {
        s.spawn(|| -> Result<T, Error> {
            // SAFETY: unshare(CLONE_NEWNET) moves only the calling thread (and what it
            // starts from now on) into a new namespace.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(Error::Io {
                    what: "creating a network namespace (needs root or CAP_SYS_ADMIN)".into(),
                    source: std::io::Error::last_os_error(),
                });
            }
            let st = Command::new("ip")
                .args(["link", "set", "lo", "up"])
                .stdin(Stdio::null())
                .status()
                .map_err(|source| Error::Io {
                    what: "running ip link set lo up (iproute2)".into(),
                    source,
                })?;
            if !st.success() {
                return Err(Error::Io {
                    what: "ip link set lo up".into(),
                    source: std::io::Error::other(format!("exited with {st}")),
                });
            }
            Ok(f())
        })
        .join()
    });
    match r {
        Ok(r) => r,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Sets `net.…` setting `name` (dotted, as `sysctl` names it) to `value` in the calling
/// thread's network namespace, and reads it back.
pub fn set_sysctl(name: &str, value: &str) -> Result<(), Error> {
    let path = format!("/proc/sys/{}", name.replace('.', "/"));
    let io = |source| Error::Io {
        what: format!("setting {name} ({path})"),
        source,
    };
    std::fs::write(&path, value).map_err(io)?;
    let now = std::fs::read_to_string(&path).map_err(io)?;
    let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    if norm(&now) != norm(value) {
        return Err(io(std::io::Error::other(format!(
            "reads back '{}', not '{value}'",
            now.trim()
        ))));
    }
    Ok(())
}
