//! Reads that carry the kernel's receive time (`SO_TIMESTAMPNS`): a response's latency
//! ends when its last bytes reached the socket, not when the client got round to reading
//! them, so how the client waits (asleep on epoll, or napping on a timer, see
//! `client.rs`) does not change what it measures.

use mio::net::TcpStream;
use std::io;
use std::os::fd::AsRawFd;

/// Asks the kernel to stamp what it queues on `sock` with its arrival time. Without it
/// (an error, which is ignored) reads carry no time and latency ends at the read; so do
/// the reads of the first moment after the machine's first socket asked (the kernel
/// turns stamping on in deferred work).
pub(super) fn enable(sock: &TcpStream) {
    crate::engine::fleet::turn_on(sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS);
}

/// Room for one `timespec` control message (and some to spare).
const CONTROL: usize = 64;

/// One read into `buf`: the bytes read, and when the last of them arrived (the kernel's
/// `CLOCK_REALTIME`, ns) if the kernel said.
pub(super) fn read(sock: &TcpStream, buf: &mut [u8]) -> io::Result<(usize, Option<i128>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; CONTROL / 8];
    // SAFETY: msghdr is plain data; zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = CONTROL;
    // SAFETY: the header points at `buf` and `control`, both alive and of the lengths given.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: the CMSG macros walk the control buffer the kernel filled, within
    // msg_controllen; a timespec is read unaligned from its message's data.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                stamp = Some(ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, stamp))
}

/// When bytes stamped `stamp` arrived, on a monotonic clock that reads `now` (ns) at
/// this moment: as long before `now` as the stamp is before the kernel's clock now (never
/// before the clock's zero, nor after now); `now` when there is no stamp.
pub(super) fn arrived(stamp: Option<i128>, now: u64) -> u64 {
    stamp.map_or(now, |s| {
        let ago = (real_now() - s).clamp(0, now as i128);
        now - ago as u64
    })
}

/// The kernel's clock now (`CLOCK_REALTIME`, which `SystemTime` reads), in ns: the
/// clock of the stamps.
fn real_now() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::{Duration, Instant};

    #[test]
    fn bytes_read_late_are_placed_when_they_arrived() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut tx = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (rx, _) = l.accept().unwrap();
        let rx = TcpStream::from_std(rx);
        enable(&rx);
        // The kernel turns stamping on a moment after the first socket asks for it (a
        // deferred switch): until then reads carry no time.
        let mut buf = [0u8; 16];
        let t0 = Instant::now();
        loop {
            tx.write_all(b"x").unwrap();
            std::thread::sleep(Duration::from_millis(5));
            let (n, stamp) = read(&rx, &mut buf).unwrap();
            assert_eq!(n, 1);
            if stamp.is_some() {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "the kernel never stamped"
            );
        }
        let base = Instant::now();
        let ns = || base.elapsed().as_nanos() as u64;
        let sent = ns();
        tx.write_all(b"one").unwrap();
        let written = ns();
        std::thread::sleep(Duration::from_millis(80));
        let (n, stamp) = read(&rx, &mut buf).unwrap();
        let now = ns();
        assert_eq!(&buf[..n], b"one");
        assert!(stamp.is_some(), "the kernel gave no receive time");
        let at = arrived(stamp, now);
        // Read 80 ms after the write, placed at the write (within 5 ms of clock skew).
        assert!(now - written >= 80_000_000);
        assert!(
            at + 5_000_000 >= sent && at <= written + 5_000_000,
            "sent {sent} written {written} arrived {at} read {now}"
        );
        assert_eq!(arrived(None, now), now);
    }
}
