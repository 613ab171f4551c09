//! A command started for a recording: held before `exec` until the events are attached.
use crate::error::RecordError;
use std::io;
use std::os::fd::OwnedFd;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

/// A program we started, held before `exec` until the events are attached.
pub(crate) struct HeldChild {
    pub pid: i32,
    release: Option<OwnedFd>,
    exec_errors: OwnedFd,
    status: Option<ExitStatus>,
}

impl HeldChild {
    /// Forks; the child waits for one byte on a pipe, then execs `argv`, so the events
    /// can be attached (with `enable_on_exec`) before the program runs. (`Command::spawn`
    /// cannot do this: it waits for the `exec` itself.)
    pub fn spawn(argv: &[std::ffi::OsString]) -> Result<HeldChild, RecordError> {
        use std::os::unix::ffi::OsStrExt;
        let spawn_err = |source: io::Error| RecordError::Spawn {
            command: argv[0].to_string_lossy().into_owned(),
            source,
        };
        let cargs: Vec<std::ffi::CString> = argv
            .iter()
            .map(|a| std::ffi::CString::new(a.as_bytes()))
            .collect::<Result<_, _>>()
            .map_err(|_| {
                spawn_err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "argument contains a NUL byte",
                ))
            })?;
        let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let pipe = || -> Result<(OwnedFd, OwnedFd), RecordError> {
            let mut fds = [0i32; 2];
            // SAFETY: pipe2 fills two descriptors.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                return Err(RecordError::sys("pipe", io::Error::last_os_error()));
            }
            // SAFETY: both descriptors are fresh and ours.
            unsafe {
                Ok((
                    <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fds[0]),
                    <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fds[1]),
                ))
            }
        };
        let (go_rd, go_wr) = pipe()?;
        let (err_rd, err_wr) = pipe()?;
        use std::os::fd::AsRawFd;
        let (go_rd_fd, err_wr_fd) = (go_rd.as_raw_fd(), err_wr.as_raw_fd());
        // SAFETY: after fork the child only calls async-signal-safe functions (read,
        // execvp, write, _exit) on memory prepared before the fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(spawn_err(io::Error::last_os_error()));
        }
        if pid == 0 {
            // SAFETY: see above; the child never returns from this block.
            unsafe {
                let mut b = 0u8;
                if libc::read(go_rd_fd, &mut b as *mut u8 as *mut libc::c_void, 1) == 1 {
                    libc::execvp(ptrs[0], ptrs.as_ptr());
                }
                let e = *libc::__errno_location();
                libc::write(err_wr_fd, &e as *const i32 as *const libc::c_void, 4);
                libc::_exit(127);
            }
        }
        drop(go_rd);
        drop(err_wr);
        Ok(HeldChild {
            pid,
            release: Some(go_wr),
            exec_errors: err_rd,
            status: None,
        })
    }

    /// Lets the child exec; fails if the exec failed.
    pub fn release(&mut self, argv0: &std::ffi::OsStr) -> Result<(), RecordError> {
        use std::os::fd::AsRawFd;
        if let Some(w) = self.release.take() {
            // SAFETY: writing one byte to our pipe end.
            unsafe { libc::write(w.as_raw_fd(), b"g".as_ptr() as *const libc::c_void, 1) };
        }
        let mut e = 0i32;
        // SAFETY: reading at most 4 bytes into an i32; EOF (0) means the exec succeeded.
        let n = unsafe {
            libc::read(
                self.exec_errors.as_raw_fd(),
                &mut e as *mut i32 as *mut libc::c_void,
                4,
            )
        };
        if n == 4 {
            self.wait_blocking();
            return Err(RecordError::Spawn {
                command: argv0.to_string_lossy().into_owned(),
                source: io::Error::from_raw_os_error(e),
            });
        }
        Ok(())
    }

    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            let mut st = 0;
            // SAFETY: waiting for our own child without blocking.
            if unsafe { libc::waitpid(self.pid, &mut st, libc::WNOHANG) } == self.pid {
                self.status = Some(std::os::unix::process::ExitStatusExt::from_raw(st));
            }
        }
        self.status
    }

    pub(crate) fn wait_blocking(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            let mut st = 0;
            // SAFETY: waiting for our own child.
            if unsafe { libc::waitpid(self.pid, &mut st, 0) } == self.pid {
                self.status = Some(std::os::unix::process::ExitStatusExt::from_raw(st));
            }
        }
        self.status
    }

    /// Stops the child we started: SIGTERM, then SIGKILL after two seconds.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        if let Some(s) = self.try_wait() {
            return Some(s);
        }
        self.release.take();
        // SAFETY: signalling our own child by PID.
        unsafe { libc::kill(self.pid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Some(s) = self.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        self.wait_blocking()
    }
}
