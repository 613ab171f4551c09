//! Output files that appear whole or not at all, and never damage what they replace.
//!
//! Every kiln output goes through [`AtomicFile`]. What happens depends on what is at the
//! destination path:
//!
//! * **Nothing, or a regular file with one link**: the output is written to a temporary
//!   file beside it and renamed over it when complete, so a failure (bad input, a full
//!   disk, Ctrl-C) never leaves half a flame graph behind. A replaced file keeps its mode
//!   (and, as root, its owner).
//! * **A regular file with several hard links**: renaming would split the links, so the
//!   output is completed in a temporary file first and then copied into the existing file.
//! * **A symbolic link**: followed, as a shell redirection follows it; the file it points
//!   to is written (by the rules above) and the link stays a link.
//! * **A device node, FIFO or socket** (`/dev/null`, a named pipe): written directly, as a
//!   shell redirection would; it is never replaced by a regular file.
//! * **A directory**: refused.
//! * **A stream kiln already holds open**: `-` (standard output), `/dev/stdout`,
//!   `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N` (and this process's `/proc/PID/fd/N`,
//!   through any symbolic links to them) are written through that descriptor as it is —
//!   never reopened, replaced, truncated or moved: a pipe gets the bytes, and a file the
//!   shell redirected standard output to gets them where the shell left it (after what
//!   was written before, truncated or appended to as the shell asked: `>` or `>>`).
//!
//! Temporary files get an unpredictable name and are created exclusively without following
//! links (`O_EXCL`, via the `tempfile` crate), so a planted symbolic link cannot redirect
//! the write. They are removed on every error path (drop) and, through
//! [`remove_temporary_files`], by the binary's signal handler before it exits.
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Temporary files being written right now, for [`remove_temporary_files`].
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Removes every temporary file an [`AtomicFile`] of this process is writing. For a signal
/// handler thread about to exit the process: the outputs will never be committed.
pub fn remove_temporary_files() {
    for p in live().drain(..) {
        let _ = fs::remove_file(p);
    }
}

/// How an [`AtomicFile`] reaches its destination.
#[derive(Debug)]
enum Mode {
    /// Rename the temporary file over the destination.
    Rename,
    /// Copy the finished temporary file into the existing destination (hard links).
    CopyInto,
    /// Writing straight into the destination (not a regular file).
    Direct,
    /// Writing into a descriptor this process already held (`-`, `/dev/stdout`): a
    /// duplicate of it, so that its position and flags are the stream's own.
    Stream,
}

/// A file being written; [`AtomicFile::commit`] moves it into place. Dropping it without
/// committing removes the temporary file.
#[derive(Debug)]
pub struct AtomicFile {
    dest: PathBuf,
    mode: Mode,
    tmp: Option<tempfile::TempPath>,
    writer: Option<BufWriter<File>>,
}

/// The descriptor of this process that `path` names, read from the path's words alone: `-`
/// (standard output), `/dev/stdout`, `/dev/stderr`, `/dev/stdin`, `/dev/fd/N`,
/// `/proc/self/fd/N`, `/proc/thread-self/fd/N` and `/proc/PID/fd/N` for this process's PID.
/// Opening such a path would make a new description of the file (at offset 0, or a
/// bogus `pipe:[…]` path once its link is followed); writing to the descriptor keeps the
/// stream as it is.
pub fn stream_fd(path: &Path) -> Option<i32> {
    let s = path.to_str()?;
    match s {
        "-" | "/dev/stdout" => return Some(1),
        "/dev/stderr" => return Some(2),
        "/dev/stdin" => return Some(0),
        _ => {}
    }
    let own = std::process::id().to_string();
    let n = ["/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"]
        .iter()
        .find_map(|p| s.strip_prefix(p))
        .or_else(|| {
            s.strip_prefix("/proc/")?
                .strip_prefix(own.as_str())?
                .strip_prefix("/fd/")
        })?;
    let fd: i32 = n.trim_end_matches('/').parse().ok()?;
    (fd >= 0).then_some(fd)
}

/// What an output path names: a path (links followed), or a descriptor kiln holds.
enum Target {
    Path(PathBuf),
    Fd(i32),
}

/// Follows symbolic links from `path` to what they finally name (which may not exist yet),
/// stopping at a name of one of this process's descriptors ([`stream_fd`]).
fn resolve_target(path: &Path) -> io::Result<Target> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        if let Some(fd) = stream_fd(&p) {
            return Ok(Target::Fd(fd));
        }
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(Target::Path(p)),
        }
    }
    Err(io::Error::other(format!(
        "too many levels of symbolic links at '{}'",
        path.display()
    )))
}

fn err(kind: io::ErrorKind, msg: String) -> io::Error {
    io::Error::new(kind, msg)
}

impl AtomicFile {
    /// Starts writing `dest` (see the module documentation for what each kind of
    /// destination gets).
    pub fn create(dest: impl AsRef<Path>) -> io::Result<Self> {
        let asked = dest.as_ref();
        if asked.as_os_str().is_empty() {
            return Err(err(
                io::ErrorKind::InvalidInput,
                "output path is empty".into(),
            ));
        }
        let dest = match resolve_target(asked)? {
            Target::Fd(fd) => return Self::stream(asked, fd),
            Target::Path(p) => p,
        };
        let existing = match fs::metadata(&dest) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        if let Some(m) = &existing {
            let ft = m.file_type();
            if ft.is_dir() {
                return Err(err(
                    io::ErrorKind::IsADirectory,
                    format!("'{}' is a directory", dest.display()),
                ));
            }
            if ft.is_char_device() || ft.is_block_device() || ft.is_fifo() || ft.is_socket() {
                let file = OpenOptions::new().write(true).open(&dest)?;
                return Ok(AtomicFile {
                    dest,
                    mode: Mode::Direct,
                    tmp: None,
                    writer: Some(BufWriter::with_capacity(128 * 1024, file)),
                });
            }
        }
        let name = dest.file_name().ok_or_else(|| {
            err(
                io::ErrorKind::InvalidInput,
                format!("output path '{}' has no file name", asked.display()),
            )
        })?;
        let dir = match dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        // New files get 0666 less the umask, as a shell redirection gives them; a replaced
        // file keeps its own mode.
        let perms =
            fs::Permissions::from_mode(existing.as_ref().map_or(0o666, |m| m.mode() & 0o7777));
        let tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".kiln-tmp")
            .permissions(perms)
            .tempfile_in(&dir)?;
        let (file, tmp) = tmp.into_parts();
        live().push(tmp.to_path_buf());
        let mut mode = Mode::Rename;
        if let Some(m) = &existing {
            // The exact mode (the umask applied at creation), and the owner too (only root
            // can give a file away; others keep their own).
            file.set_permissions(fs::Permissions::from_mode(m.mode() & 0o7777))?;
            if m.uid() != current_uid() || m.gid() != current_gid() {
                let _ = std::os::unix::fs::fchown(&file, Some(m.uid()), Some(m.gid()));
            }
            if m.nlink() > 1 {
                mode = Mode::CopyInto;
            }
        }
        Ok(AtomicFile {
            dest,
            mode,
            tmp: Some(tmp),
            writer: Some(BufWriter::with_capacity(128 * 1024, file)),
        })
    }

    /// Writing into descriptor `fd`, which `asked` names: through a duplicate of it (the
    /// same open file description: its offset, `O_APPEND`), never reopened or truncated.
    fn stream(asked: &Path, fd: i32) -> io::Result<Self> {
        // SAFETY: fcntl(F_DUPFD_CLOEXEC) on any integer is defined: it fails with EBADF
        // for a descriptor that is not open.
        let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
        if dup < 0 {
            let e = io::Error::last_os_error();
            return Err(err(
                e.kind(),
                format!("'{}': descriptor {fd} is not open: {e}", asked.display()),
            ));
        }
        // SAFETY: `dup` is a descriptor just made for us alone; the File owns it.
        let file = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(dup) };
        Ok(AtomicFile {
            dest: asked.to_path_buf(),
            mode: Mode::Stream,
            tmp: None,
            writer: Some(BufWriter::with_capacity(128 * 1024, file)),
        })
    }

    /// Whether this output goes into a stream kiln already held (`-`, `/dev/stdout`).
    pub fn is_stream(&self) -> bool {
        matches!(self.mode, Mode::Stream)
    }

    /// The destination path (after following symbolic links).
    pub fn path(&self) -> &Path {
        &self.dest
    }

    /// Flushes, syncs and moves the file into place.
    pub fn commit(mut self) -> io::Result<()> {
        let w = self
            .writer
            .take()
            .ok_or_else(|| io::Error::other("output already committed"))?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        let tmp = self.tmp.take();
        let result = match (&self.mode, tmp) {
            (Mode::Direct | Mode::Stream, _) => Ok(()),
            (_, None) => Err(io::Error::other("temporary file missing")),
            (Mode::Rename, Some(tmp)) => {
                file.sync_all()?;
                drop(file);
                let path = tmp.to_path_buf();
                let r = tmp.persist(&self.dest).map_err(|e| {
                    // `e.path` is dropped here, removing the temporary file.
                    e.error
                });
                forget_live(&path);
                r
            }
            (Mode::CopyInto, Some(tmp)) => {
                drop(file);
                let path = tmp.to_path_buf();
                let r = copy_into(&path, &self.dest);
                forget_live(&path);
                drop(tmp);
                r
            }
        };
        result.map_err(|e| {
            err(
                e.kind(),
                format!("cannot move the output into '{}': {e}", self.dest.display()),
            )
        })
    }
}

fn copy_into(from: &Path, to: &Path) -> io::Result<()> {
    let mut src = File::open(from)?;
    let mut dst = OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(to)?;
    io::copy(&mut src, &mut dst)?;
    dst.sync_all()
}

fn forget_live(path: &Path) {
    live().retain(|p| p != path);
}

fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

fn current_gid() -> u32 {
    // SAFETY: getgid has no preconditions and cannot fail.
    unsafe { libc::getgid() }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer
            .as_mut()
            .ok_or_else(|| io::Error::other("output already committed"))?
            .write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer
            .as_mut()
            .ok_or_else(|| io::Error::other("output already committed"))?
            .write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        match self.writer.as_mut() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        // Without a commit the temporary file goes (TempPath removes it on drop).
        self.writer.take();
        if let Some(tmp) = self.tmp.take() {
            forget_live(&tmp);
        }
    }
}

/// Writes `dest` atomically with the bytes `f` produces.
pub fn write_atomically<E: From<io::Error>>(
    dest: impl AsRef<Path>,
    f: impl FnOnce(&mut dyn Write) -> Result<(), E>,
) -> Result<(), E> {
    let mut file = AtomicFile::create(dest)?;
    f(&mut file)?;
    file.commit()?;
    Ok(())
}

/// Whether `a` and `b` are the same file (same device and inode, links followed). A path
/// that does not exist is nobody's twin.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// The tests share the registry of temporary files; one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());
    fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn commit_and_abort() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.txt");
        let mut f = AtomicFile::create(&dest).unwrap();
        f.write_all(b"half").unwrap();
        drop(f);
        assert!(!dest.exists());
        assert!(names(dir.path()).is_empty(), "temporary file removed");
        assert!(live().is_empty());
        let r: Result<(), io::Error> = write_atomically(&dest, |w| w.write_all(b"whole"));
        r.unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"whole");
        assert_eq!(names(dir.path()), ["out.txt"]);
    }

    #[test]
    fn replaced_file_keeps_its_mode_and_hard_links() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.txt");
        fs::write(&dest, b"old").unwrap();
        fs::set_permissions(&dest, fs::Permissions::from_mode(0o600)).unwrap();
        write_atomically::<io::Error>(&dest, |w| w.write_all(b"new")).unwrap();
        assert_eq!(fs::metadata(&dest).unwrap().mode() & 0o777, 0o600);

        let twin = dir.path().join("twin.txt");
        fs::hard_link(&dest, &twin).unwrap();
        write_atomically::<io::Error>(&dest, |w| w.write_all(b"both")).unwrap();
        assert_eq!(fs::read(&twin).unwrap(), b"both", "hard link not split");
        assert!(same_file(&dest, &twin));
        assert_eq!(names(dir.path()), ["out.txt", "twin.txt"]);
    }

    #[test]
    fn links_are_followed_and_stay_links() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real.svg");
        fs::write(&target, b"old").unwrap();
        let link = dir.path().join("link.svg");
        symlink("real.svg", &link).unwrap();
        write_atomically::<io::Error>(&link, |w| w.write_all(b"new")).unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&target).unwrap(), b"new");
        // A dangling link: its target is created, as a shell redirection would.
        let dangling = dir.path().join("dangling.svg");
        symlink("made.svg", &dangling).unwrap();
        write_atomically::<io::Error>(&dangling, |w| w.write_all(b"x")).unwrap();
        assert_eq!(fs::read(dir.path().join("made.svg")).unwrap(), b"x");
    }

    #[test]
    fn fifos_and_devices_are_written_not_replaced() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read(fifo).unwrap())
        };
        write_atomically::<io::Error>(&fifo, |w| w.write_all(b"through the pipe")).unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(names(dir.path()), ["pipe"]);

        write_atomically::<io::Error>("/dev/null", |w| w.write_all(b"gone")).unwrap();
        assert!(fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
    }

    #[test]
    fn directories_are_refused_and_leave_nothing() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("adir");
        fs::create_dir(&sub).unwrap();
        let e = AtomicFile::create(&sub).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        assert_eq!(names(dir.path()), ["adir"]);
    }

    #[test]
    fn a_failed_rename_leaves_no_temporary_file() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("soon-a-dir");
        let mut f = AtomicFile::create(&dest).unwrap();
        f.write_all(b"data").unwrap();
        fs::create_dir(&dest).unwrap();
        fs::write(dest.join("keep"), b"x").unwrap();
        let e = f.commit().unwrap_err();
        assert!(e.to_string().contains("soon-a-dir"), "{e}");
        assert_eq!(names(dir.path()), ["soon-a-dir"]);
    }

    #[test]
    fn planted_links_at_temporary_names_are_never_followed() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        fs::write(&victim, b"precious").unwrap();
        // The old predictable name, and a guess at the new prefix.
        for n in [
            format!(".out.svg.kiln-tmp-{}", std::process::id()),
            ".out.svg.kiln-tmp".to_string(),
        ] {
            symlink(&victim, dir.path().join(n)).unwrap();
        }
        write_atomically::<io::Error>(dir.path().join("out.svg"), |w| w.write_all(b"svg")).unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        assert_eq!(fs::read(dir.path().join("out.svg")).unwrap(), b"svg");
    }

    #[test]
    fn temporary_files_can_be_removed_by_a_signal_handler() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let mut f = AtomicFile::create(dir.path().join("big.svg")).unwrap();
        f.write_all(&[b'x'; 1000]).unwrap();
        f.flush().unwrap();
        assert_eq!(names(dir.path()).len(), 1);
        remove_temporary_files();
        assert!(names(dir.path()).is_empty());
        drop(f);
    }

    #[test]
    fn streams_are_named_by_their_paths() {
        let me = std::process::id();
        for (p, fd) in [
            ("-", Some(1)),
            ("/dev/stdout", Some(1)),
            ("/dev/stderr", Some(2)),
            ("/dev/fd/7", Some(7)),
            ("/proc/self/fd/12", Some(12)),
            ("/proc/thread-self/fd/3", Some(3)),
            (&format!("/proc/{me}/fd/5"), Some(5)),
            (&format!("/proc/{}/fd/5", me + 1), None),
            ("/dev/fd/x", None),
            ("./-", None),
            ("/dev/null", None),
            ("out.svg", None),
        ] {
            assert_eq!(stream_fd(Path::new(p)), fd, "{p}");
        }
    }

    /// A descriptor opened as a shell opens a redirection: `>>` appends, `>` after what
    /// was written before keeps it; a pipe gets the bytes; a link to the descriptor's
    /// name is followed to it. Nothing is reopened, truncated or replaced.
    #[test]
    fn streams_are_written_as_they_are() {
        use std::os::fd::AsRawFd;
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let appended = dir.path().join("appended");
        fs::write(&appended, b"before\n").unwrap();
        let f = OpenOptions::new().append(true).open(&appended).unwrap();
        write_atomically::<io::Error>(format!("/dev/fd/{}", f.as_raw_fd()), |w| {
            w.write_all(b"kiln\n")
        })
        .unwrap();
        assert_eq!(fs::read(&appended).unwrap(), b"before\nkiln\n");

        let truncated = dir.path().join("truncated");
        fs::write(&truncated, b"old contents, longer than the new\n").unwrap();
        let mut f = OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&truncated)
            .unwrap();
        f.write_all(b"header\n").unwrap();
        write_atomically::<io::Error>(format!("/proc/self/fd/{}", f.as_raw_fd()), |w| {
            w.write_all(b"kiln\n")
        })
        .unwrap();
        f.write_all(b"footer\n").unwrap();
        assert_eq!(fs::read(&truncated).unwrap(), b"header\nkiln\nfooter\n");

        let mut fds = [0; 2];
        // SAFETY: a valid array of two descriptors for pipe(2) to fill.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the descriptors pipe(2) just made, owned from here on.
        let (r, w) = unsafe {
            use std::os::fd::FromRawFd;
            (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1]))
        };
        let link = dir.path().join("to-the-pipe");
        symlink(format!("/proc/self/fd/{}", w.as_raw_fd()), &link).unwrap();
        let out = AtomicFile::create(&link).unwrap();
        assert!(out.is_stream());
        let mut out = out;
        out.write_all(b"through the pipe").unwrap();
        out.commit().unwrap();
        drop(w);
        let mut got = Vec::new();
        io::Read::read_to_end(&mut &r, &mut got).unwrap();
        assert_eq!(got, b"through the pipe");
        assert_eq!(names(dir.path()), ["appended", "to-the-pipe", "truncated"]);
        assert!(live().is_empty());

        let e = AtomicFile::create("/dev/fd/999").unwrap_err();
        assert!(e.to_string().contains("descriptor 999 is not open"), "{e}");
    }

    #[test]
    fn same_file_sees_through_links() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        fs::write(&a, b"").unwrap();
        symlink(&a, dir.path().join("b")).unwrap();
        assert!(same_file(&a, &dir.path().join("b")));
        assert!(!same_file(&a, &dir.path().join("missing")));
    }
}
