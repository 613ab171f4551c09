//! Raw `perf_event_open(2)` and its memory-mapped ring buffer.
//!
//! Why hand-written rather than a wrapper crate: the recorder needs a handful of flags
//! (`inherit`, `enable_on_exec`, `sample_id_all`, `mmap2`, `use_clockid`) and the user
//! register/stack dump, and the ring buffer must be read in place (records that wrap around
//! the end are handed on as two slices, never copied into a `Vec` of records).
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{fence, Ordering};

pub(crate) const PERF_TYPE_SOFTWARE: u32 = 1;
pub(crate) const PERF_TYPE_TRACEPOINT: u32 = 2;
pub(crate) const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
pub(crate) const PERF_COUNT_SW_PAGE_FAULTS: u64 = 2;
pub(crate) const PERF_COUNT_SW_DUMMY: u64 = 9;

pub(crate) const SAMPLE_IP: u64 = 1 << 0;
pub(crate) const SAMPLE_TID: u64 = 1 << 1;
pub(crate) const SAMPLE_TIME: u64 = 1 << 2;
pub(crate) const SAMPLE_CALLCHAIN: u64 = 1 << 5;
pub(crate) const SAMPLE_CPU: u64 = 1 << 7;
pub(crate) const SAMPLE_PERIOD: u64 = 1 << 8;
pub(crate) const SAMPLE_RAW: u64 = 1 << 10;
pub(crate) const SAMPLE_REGS_USER: u64 = 1 << 12;
pub(crate) const SAMPLE_STACK_USER: u64 = 1 << 13;
pub(crate) const SAMPLE_IDENTIFIER: u64 = 1 << 16;

pub(crate) const FLAG_DISABLED: u64 = 1 << 0;
pub(crate) const FLAG_INHERIT: u64 = 1 << 1;
pub(crate) const FLAG_MMAP: u64 = 1 << 8;
pub(crate) const FLAG_COMM: u64 = 1 << 9;
pub(crate) const FLAG_FREQ: u64 = 1 << 10;
pub(crate) const FLAG_ENABLE_ON_EXEC: u64 = 1 << 12;
pub(crate) const FLAG_TASK: u64 = 1 << 13;
pub(crate) const FLAG_WATERMARK: u64 = 1 << 14;
pub(crate) const FLAG_SAMPLE_ID_ALL: u64 = 1 << 18;
pub(crate) const FLAG_EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
pub(crate) const FLAG_MMAP2: u64 = 1 << 23;
pub(crate) const FLAG_COMM_EXEC: u64 = 1 << 24;
pub(crate) const FLAG_USE_CLOCKID: u64 = 1 << 25;

/// x86-64 user registers dumped with each sample: bp (6), sp (7), ip (8). They come in
/// bit order, which is what the unwinder needs and nothing more.
pub(crate) const REGS_MASK_X86_64: u64 = (1 << 6) | (1 << 7) | (1 << 8);
pub(crate) const REG_BP: u64 = 6;
pub(crate) const REG_SP: u64 = 7;
pub(crate) const REG_IP: u64 = 8;

/// `struct perf_event_attr`, `PERF_ATTR_SIZE_VER8` (136 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PerfEventAttr {
    pub type_: u32,
    pub size: u32,
    pub config: u64,
    pub sample_period_or_freq: u64,
    pub sample_type: u64,
    pub read_format: u64,
    pub flags: u64,
    pub wakeup: u32,
    pub bp_type: u32,
    pub config1: u64,
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub aux_watermark: u32,
    pub sample_max_stack: u16,
    pub reserved2: u16,
    pub aux_sample_size: u32,
    pub reserved3: u32,
    pub sig_data: u64,
}

impl PerfEventAttr {
    /// The attribute as the bytes the kernel (and perf.data files) use.
    pub(crate) fn to_bytes(self) -> Vec<u8> {
        let mut v = Vec::with_capacity(136);
        v.extend_from_slice(&self.type_.to_ne_bytes());
        v.extend_from_slice(&(std::mem::size_of::<PerfEventAttr>() as u32).to_ne_bytes());
        for x in [
            self.config,
            self.sample_period_or_freq,
            self.sample_type,
            self.read_format,
            self.flags,
        ] {
            v.extend_from_slice(&x.to_ne_bytes());
        }
        v.extend_from_slice(&self.wakeup.to_ne_bytes());
        v.extend_from_slice(&self.bp_type.to_ne_bytes());
        for x in [
            self.config1,
            self.config2,
            self.branch_sample_type,
            self.sample_regs_user,
        ] {
            v.extend_from_slice(&x.to_ne_bytes());
        }
        v.extend_from_slice(&self.sample_stack_user.to_ne_bytes());
        v.extend_from_slice(&self.clockid.to_ne_bytes());
        v.extend_from_slice(&self.sample_regs_intr.to_ne_bytes());
        v.extend_from_slice(&self.aux_watermark.to_ne_bytes());
        v.extend_from_slice(&self.sample_max_stack.to_ne_bytes());
        v.extend_from_slice(&self.reserved2.to_ne_bytes());
        v.extend_from_slice(&self.aux_sample_size.to_ne_bytes());
        v.extend_from_slice(&self.reserved3.to_ne_bytes());
        v.extend_from_slice(&self.sig_data.to_ne_bytes());
        v
    }
}

/// Opens one event. `pid` -1 with a `cpu` means every task on that CPU.
pub(crate) fn perf_event_open(attr: &PerfEventAttr, pid: i32, cpu: i32) -> io::Result<OwnedFd> {
    let mut a = *attr;
    a.size = std::mem::size_of::<PerfEventAttr>() as u32;
    // SAFETY: `a` is a properly sized, initialised perf_event_attr that lives across the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &a as *const PerfEventAttr,
            pid,
            cpu,
            -1i32,
            8u64, // PERF_FLAG_FD_CLOEXEC
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a fresh file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_SET_OUTPUT: libc::c_ulong = 0x2405;
const IOC_ID: libc::c_ulong = 0x8008_2407;

/// Enables a counter that was opened disabled.
pub(crate) fn enable(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: plain ioctl on a perf fd we own.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), IOC_ENABLE as _, 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Disables a counter (the end of a recording: no more samples after this).
pub(crate) fn disable(fd: &OwnedFd) {
    // SAFETY: plain ioctl on a perf fd we own; a failure only means it is already gone.
    unsafe { libc::ioctl(fd.as_raw_fd(), IOC_DISABLE as _, 0) };
}

/// The event's count so far (its children's, for an inherited event, included); `None`
/// when it cannot be read. For an event sampled at every occurrence (period 1), the
/// number of samples the kernel should have given.
pub(crate) fn count(fd: &OwnedFd) -> Option<u64> {
    let mut v = [0u8; 8];
    // SAFETY: reading at most 8 bytes into a buffer of 8; read_format is 0, so the kernel
    // writes one u64.
    let n = unsafe { libc::read(fd.as_raw_fd(), v.as_mut_ptr().cast(), v.len()) };
    (n == 8).then(|| u64::from_ne_bytes(v))
}

/// Sends the records of `fd` into the ring buffer of `target` (same CPU).
pub(crate) fn set_output(fd: &OwnedFd, target: &OwnedFd) -> io::Result<()> {
    // SAFETY: plain ioctl on perf fds we own.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), IOC_SET_OUTPUT as _, target.as_raw_fd()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The kernel's id of an event, as found in `PERF_SAMPLE_IDENTIFIER`.
pub(crate) fn event_id(fd: &OwnedFd) -> io::Result<u64> {
    let mut id: u64 = 0;
    // SAFETY: the kernel writes one u64 to the pointer.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), IOC_ID as _, &mut id as *mut u64) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(id)
}

/// A memory-mapped perf ring buffer: one metadata page plus `2^n` data pages.
pub(crate) struct RingBuffer {
    base: *mut u8,
    len: usize,
    data_offset: usize,
    data_size: usize,
    fd: OwnedFd,
}

// SAFETY: the mapping is only touched through &mut self / &self by one thread at a time.
unsafe impl Send for RingBuffer {}

impl RingBuffer {
    /// Maps `pages` (a power of two) data pages of `fd`.
    pub(crate) fn new(fd: OwnedFd, pages: usize) -> io::Result<Self> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let len = page * (pages + 1);
        // SAFETY: mapping a perf fd shared read-write is the documented interface.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = base as *mut u8;
        // SAFETY: the metadata page is mapped; data_offset/data_size are at 1040/1048.
        let (data_offset, data_size) = unsafe {
            (
                std::ptr::read_volatile(base.add(1040) as *const u64) as usize,
                std::ptr::read_volatile(base.add(1048) as *const u64) as usize,
            )
        };
        let (data_offset, data_size) = if data_size == 0 {
            (page, page * pages)
        } else {
            (data_offset, data_size)
        };
        Ok(RingBuffer {
            base,
            len,
            data_offset,
            data_size,
            fd,
        })
    }

    /// The file descriptor, for `poll` and `SET_OUTPUT`.
    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Calls `f(type, misc, part1, part2)` for every complete record, then frees their space.
    /// A record that wraps around the end of the buffer comes as two parts.
    pub(crate) fn drain(&mut self, mut f: impl FnMut(u32, u16, &[u8], &[u8])) {
        // SAFETY: data_head (offset 1024) is written by the kernel; the fence orders the
        // data reads after it, as perf_event_open(2) prescribes.
        let head = unsafe { std::ptr::read_volatile(self.base.add(1024) as *const u64) };
        fence(Ordering::Acquire);
        // SAFETY: data_tail (offset 1032) is ours.
        let mut tail = unsafe { std::ptr::read_volatile(self.base.add(1032) as *const u64) };
        // SAFETY: the data area is mapped for data_size bytes at data_offset.
        let data =
            unsafe { std::slice::from_raw_parts(self.base.add(self.data_offset), self.data_size) };
        let size = self.data_size as u64;
        while tail + 8 <= head {
            let at = (tail % size) as usize;
            let mut hdr = [0u8; 8];
            for (i, b) in hdr.iter_mut().enumerate() {
                *b = data[(at + i) % self.data_size];
            }
            let rtype = u32::from_ne_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]);
            let misc = u16::from_ne_bytes([hdr[4], hdr[5]]);
            let rsize = u16::from_ne_bytes([hdr[6], hdr[7]]) as u64;
            if rsize < 8 || tail + rsize > head {
                // A corrupt size would loop forever; drop what is left of this batch.
                tail = head;
                break;
            }
            let start = (at + 8) % self.data_size;
            let body = (rsize - 8) as usize;
            if start + body <= self.data_size {
                f(rtype, misc, &data[start..start + body], &[]);
            } else {
                let first = self.data_size - start;
                f(rtype, misc, &data[start..], &data[..body - first]);
            }
            tail += rsize;
        }
        fence(Ordering::Release);
        // SAFETY: publishing the new tail lets the kernel reuse the space.
        unsafe { std::ptr::write_volatile(self.base.add(1032) as *mut u64, tail) };
    }
}

impl Drop for RingBuffer {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what new() mapped.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

/// The ids of the online CPUs (`/sys/devices/system/cpu/online`, such as `0-3,8`); when
/// the file cannot be read, 0 to the number of online CPUs sysconf gives (at least one).
pub(crate) fn online_cpus() -> Vec<i32> {
    let text = kiln_os::proc::read_text("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut cpus = Vec::new();
    for part in text.trim().split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<i32>(), b.parse::<i32>()) {
            cpus.extend(a..=b);
        }
    }
    if cpus.is_empty() {
        // SAFETY: sysconf has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as i32;
        cpus.extend(0..n);
    }
    cpus
}

/// Waits until one of `fds` is readable or `timeout_ms` passes.
pub(crate) fn poll(fds: &[&OwnedFd], timeout_ms: i32) {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|f| libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: p is a valid array of pollfd of the given length.
    unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, timeout_ms) };
}

/// `/proc/sys/kernel/perf_event_paranoid`, for error messages.
pub(crate) fn paranoid() -> String {
    kiln_os::proc::read_text("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}
