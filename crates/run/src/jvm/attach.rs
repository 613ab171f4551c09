//! HotSpot's attach protocol, spoken by kiln itself (what `jcmd` and `jstack` do, without
//! a JDK on kiln's side).
//!
//! A JVM listens on `/tmp/.java_pid<PID>` (its own `/tmp` and its own pid in a container:
//! kiln reaches them through `/proc/PID/root` and `NSpid`) once its attach listener has
//! started. To start it, a client creates `.attach_pid<PID>` in the JVM's working
//! directory (or its `/tmp`) and sends it SIGQUIT; the JVM sees the file, opens the socket
//! and removes nothing (the client does). A request is four NUL-terminated strings after
//! the protocol's version: `1\0threaddump\0\0\0\0`; the answer is a result code on its
//! own line (`0`: done) and the command's output, until the JVM closes the socket.
//!
//! The JVM answers only a client of its own effective uid and gid, or root; it starts its
//! listener only for a trigger file owned by its uid or root. A JVM that does not catch
//! SIGQUIT (`-Xrs`) would die of it: kiln sends it only to a JVM whose status says it
//! catches the signal.
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The most bytes of a dump read (a JVM of ten thousand threads prints a few MB).
const MAX_DUMP: u64 = 64 << 20;

/// Why a thread dump could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AttachError {
    /// The process is gone or its status cannot be read.
    #[error("its /proc status cannot be read ({0}); has it exited?")]
    Status(std::io::Error),
    /// kiln runs as another user than the JVM, and not as root.
    #[error("kiln runs as uid {kiln}, the JVM as uid {jvm}: a JVM answers only its own user or root (run kiln as root or as uid {jvm})")]
    OtherUser {
        /// kiln's effective uid.
        kiln: u32,
        /// The JVM's.
        jvm: u32,
    },
    /// The JVM does not catch SIGQUIT: the signal that starts its listener would end it.
    #[error("the JVM does not catch SIGQUIT (started with -Xrs?): kiln does not send the signal that would end it, and its attach listener is not running")]
    NoSigquit,
    /// The trigger file could not be created.
    #[error("cannot create {path} to start the JVM's attach listener: {err}")]
    Trigger {
        /// Where.
        path: PathBuf,
        /// Why.
        err: std::io::Error,
    },
    /// SIGQUIT could not be sent.
    #[error("cannot send SIGQUIT to it: {0}")]
    Signal(std::io::Error),
    /// The socket did not appear.
    #[error("its attach listener did not start within {0} s (started with -XX:+DisableAttachMechanism?)")]
    NoListener(u64),
    /// The socket is not the JVM user's.
    #[error("{path} belongs to uid {owner}, not to the JVM's uid {jvm}: not connecting to it")]
    Foreign {
        /// The socket.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The JVM's uid.
        jvm: u32,
    },
    /// Connecting, writing or reading failed.
    #[error("{what}: {err}")]
    Io {
        /// What kiln was doing.
        what: &'static str,
        /// Why it failed.
        err: std::io::Error,
    },
    /// No whole answer within the time allowed.
    #[error("no whole answer within {0} s")]
    TimedOut(u64),
    /// The JVM refused the command.
    #[error("the JVM answered code {code}: {text}")]
    Refused {
        /// Its result code.
        code: String,
        /// What it said (shown through kiln's text escaping).
        text: String,
    },
}

/// A JVM as its attach protocol addresses it.
#[derive(Clone, Debug)]
pub struct Jvm {
    /// Its pid in kiln's namespace.
    pub pid: u32,
    /// Its pid in its own (a container's) namespace.
    pub nspid: u32,
    /// Its effective uid.
    pub uid: u32,
    /// Whether it catches SIGQUIT.
    pub catches_sigquit: bool,
}

impl Jvm {
    /// The JVM of process `pid`, from `/proc/PID/status`.
    pub fn of(pid: u32) -> Result<Jvm, AttachError> {
        let status =
            std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(AttachError::Status)?;
        Ok(Jvm::from_status(pid, &status))
    }

    fn from_status(pid: u32, status: &str) -> Jvm {
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::trim)
                .unwrap_or("")
        };
        let nspid = field("NSpid:")
            .split_whitespace()
            .last()
            .and_then(|p| p.parse().ok())
            .unwrap_or(pid);
        // Uid: real, effective, saved, filesystem.
        let uid = field("Uid:")
            .split_whitespace()
            .nth(1)
            .and_then(|u| u.parse().ok())
            .unwrap_or(u32::MAX);
        let caught = u64::from_str_radix(field("SigCgt:"), 16).unwrap_or(0);
        Jvm {
            pid,
            nspid,
            uid,
            catches_sigquit: caught & (1 << (libc::SIGQUIT - 1)) != 0,
        }
    }

    fn socket(&self) -> PathBuf {
        PathBuf::from(format!(
            "/proc/{}/root/tmp/.java_pid{}",
            self.pid, self.nspid
        ))
    }
}

/// Asks the JVM of process `pid` for a thread dump (`threaddump`, as `jstack` does) and
/// returns its text; everything within `timeout`.
pub fn thread_dump(pid: u32, timeout: Duration) -> Result<String, AttachError> {
    let deadline = Instant::now() + timeout;
    let jvm = Jvm::of(pid)?;
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 && euid != jvm.uid {
        return Err(AttachError::OtherUser {
            kiln: euid,
            jvm: jvm.uid,
        });
    }
    let mut stream = match connect(&jvm) {
        Ok(s) => s,
        Err(_) => {
            start_listener(&jvm, deadline, timeout)?;
            connect(&jvm)?
        }
    };
    request(&mut stream, b"1\0threaddump\0\0\0\0", deadline, timeout)
}

/// Connects to the JVM's socket, if it is there and the JVM user's.
fn connect(jvm: &Jvm) -> Result<UnixStream, AttachError> {
    let path = jvm.socket();
    let meta = std::fs::metadata(&path).map_err(|err| AttachError::Io {
        what: "no attach socket",
        err,
    })?;
    if meta.uid() != jvm.uid && meta.uid() != 0 {
        return Err(AttachError::Foreign {
            path,
            owner: meta.uid(),
            jvm: jvm.uid,
        });
    }
    UnixStream::connect(&path).map_err(|err| AttachError::Io {
        what: "connecting to its attach socket",
        err,
    })
}

/// Starts the JVM's attach listener: the trigger file, SIGQUIT, and the socket waited for
/// until `deadline`. The trigger file is removed whatever came of it.
fn start_listener(jvm: &Jvm, deadline: Instant, timeout: Duration) -> Result<(), AttachError> {
    if !jvm.catches_sigquit {
        return Err(AttachError::NoSigquit);
    }
    let name = format!(".attach_pid{}", jvm.nspid);
    let cwd = PathBuf::from(format!("/proc/{}/cwd/{name}", jvm.pid));
    let tmp = PathBuf::from(format!("/proc/{}/root/tmp/{name}", jvm.pid));
    let trigger = match std::fs::File::create(&cwd) {
        Ok(_) => cwd,
        Err(_) => match std::fs::File::create(&tmp) {
            Ok(_) => tmp,
            Err(err) => return Err(AttachError::Trigger { path: tmp, err }),
        },
    };
    let waited = signal_and_wait(jvm, deadline, timeout);
    let _ = std::fs::remove_file(&trigger);
    waited
}

fn signal_and_wait(jvm: &Jvm, deadline: Instant, timeout: Duration) -> Result<(), AttachError> {
    let pid = i32::try_from(jvm.pid).map_err(|_| AttachError::NoListener(0))?;
    // SAFETY: kill has no memory preconditions; the pid is the JVM's, checked to catch
    // SIGQUIT.
    if unsafe { libc::kill(pid, libc::SIGQUIT) } != 0 {
        return Err(AttachError::Signal(std::io::Error::last_os_error()));
    }
    let socket = jvm.socket();
    let mut pause = Duration::from_millis(10);
    while !Path::new(&socket).exists() {
        let now = Instant::now();
        if now >= deadline {
            return Err(AttachError::NoListener(timeout.as_secs()));
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(200));
    }
    Ok(())
}

/// Sends `req` and reads the answer until the JVM closes the socket: its text when its
/// result code is 0.
fn request(
    stream: &mut UnixStream,
    req: &[u8],
    deadline: Instant,
    timeout: Duration,
) -> Result<String, AttachError> {
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or(AttachError::TimedOut(timeout.as_secs()))
    };
    stream
        .set_write_timeout(Some(left()?))
        .and_then(|_| stream.write_all(req))
        .map_err(|err| AttachError::Io {
            what: "writing the request",
            err,
        })?;
    let mut answer = Vec::new();
    let mut buf = [0u8; 64 << 10];
    loop {
        stream
            .set_read_timeout(Some(left()?))
            .map_err(|err| AttachError::Io {
                what: "reading the answer",
                err,
            })?;
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                answer.extend_from_slice(&buf[..n]);
                if answer.len() as u64 > MAX_DUMP {
                    return Err(AttachError::Refused {
                        code: "?".into(),
                        text: format!("an answer past {} MB", MAX_DUMP >> 20),
                    });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(AttachError::TimedOut(timeout.as_secs()))
            }
            Err(err) => {
                return Err(AttachError::Io {
                    what: "reading the answer",
                    err,
                })
            }
        }
    }
    answer_text(&answer)
}

/// The command's output from an answer: its result code line, then the text.
pub fn answer_text(answer: &[u8]) -> Result<String, AttachError> {
    let text = kiln_model::text::from_bytes(answer);
    let (code, rest) = text.split_once('\n').unwrap_or((&text, ""));
    if code.trim() == "0" {
        Ok(rest.to_string())
    } else {
        Err(AttachError::Refused {
            code: kiln_model::text::clean_cut(code.trim(), 40).into_owned(),
            text: kiln_model::text::clean_cut(rest.trim(), 200).into_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pids, the user and SIGQUIT's bit are read from a real status (of a JVM in a
    /// container: its own pid is NSpid's last).
    #[test]
    fn a_status_gives_the_namespace_pid_the_uid_and_sigquit() {
        let status = "Name:\tjava\nUid:\t1000\t1001\t1001\t1001\nNSpid:\t14144\t7\nSigCgt:\t2000000181005ccf\n";
        let j = Jvm::from_status(14144, status);
        assert_eq!((j.nspid, j.uid), (7, 1001));
        assert!(j.catches_sigquit);
        let rs = Jvm::from_status(5, "NSpid:\t5\nSigCgt:\t0000000000000000\n");
        assert_eq!(rs.nspid, 5);
        assert!(!rs.catches_sigquit);
    }

    /// A process that does not catch SIGQUIT (here `sleep`) is not sent it: the dump is
    /// refused with the reason, and the process lives on.
    #[test]
    fn a_process_without_a_sigquit_handler_is_not_signalled() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let got = thread_dump(child.id(), Duration::from_secs(2));
        assert!(matches!(got, Err(AttachError::NoSigquit)), "{got:?}");
        assert!(child.try_wait().unwrap().is_none(), "sleep still runs");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// The result code decides: 0 gives the text, another code is said with the JVM's
    /// words escaped.
    #[test]
    fn the_result_code_decides() {
        assert_eq!(
            answer_text(b"0\nFull thread dump\n").unwrap(),
            "Full thread dump\n"
        );
        let e = answer_text(b"101\nProtocol mismatch\x1b[31m\n").unwrap_err();
        let said = e.to_string();
        assert!(
            said.contains("code 101") && !said.contains('\u{1b}'),
            "{said}"
        );
    }
}
