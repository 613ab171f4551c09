//! Reading a BPF ring buffer on a thread of its own.
//!
//! The programs write their records without waking anyone (`BPF_RB_NO_WAKEUP`: a wake-up
//! per record would cost more than the record). Whoever reads the ring must therefore come
//! back often, and when the recorder's own thread is busy — naming frames, reading
//! `/proc`, building an unwind table, or simply not scheduled on a saturated machine —
//! the kernel's buffer fills and records are lost. Here a thread does nothing but copy
//! the ring's records into memory every few milliseconds; the recorder takes them when
//! it can (reading the ring once more itself, so it gets everything written so far). The
//! kernel's buffer then only has to cover the few milliseconds this thread may be late,
//! and a slow consumer costs memory, not records.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use libbpf_rs::{MapCore, RingBuffer, RingBufferBuilder};

use crate::load::map_err;
use crate::BpfError;

/// How long the reading thread sleeps between two reads of the ring.
const INTERVAL: Duration = Duration::from_millis(3);

/// Records copied out of the ring, each preceded by its length (native-endian u32).
type Queue = Arc<Mutex<Vec<u8>>>;

/// A ring buffer read by a thread of its own (see the module's documentation).
pub(crate) struct RingReader {
    ring: Arc<Mutex<RingBuffer<'static>>>,
    queue: Queue,
    stop: Arc<AtomicBool>,
    /// The first error of the reading thread.
    error: Arc<Mutex<Option<BpfError>>>,
    thread: Option<JoinHandle<()>>,
}

impl RingReader {
    /// Starts reading the ring buffer `map` of `program`.
    pub fn start(map: &dyn MapCore, program: &'static str) -> Result<RingReader, BpfError> {
        let action: &'static str = match program {
            "sampling" => "opening the sampling program's ring buffer",
            _ => "opening the off-CPU program's ring buffer",
        };
        let queue: Queue = Arc::new(Mutex::new(Vec::new()));
        let q = queue.clone();
        let mut builder = RingBufferBuilder::new();
        builder
            .add(map, move |data: &[u8]| {
                if let Ok(mut q) = q.lock() {
                    q.extend_from_slice(&(data.len() as u32).to_ne_bytes());
                    q.extend_from_slice(data);
                }
                0
            })
            .map_err(map_err(action))?;
        let ring = Arc::new(Mutex::new(builder.build().map_err(map_err(action))?));
        let stop = Arc::new(AtomicBool::new(false));
        let error = Arc::new(Mutex::new(None));
        let (r, s, e) = (ring.clone(), stop.clone(), error.clone());
        let thread = std::thread::Builder::new()
            .name("kiln-ring".into())
            .spawn(move || {
                while !s.load(Ordering::Acquire) {
                    let read = match r.lock() {
                        Ok(ring) => ring.consume(),
                        Err(_) => return,
                    };
                    if let Err(err) = read {
                        if let Ok(mut slot) = e.lock() {
                            slot.get_or_insert(map_err("reading a ring buffer")(err));
                        }
                        return;
                    }
                    std::thread::sleep(INTERVAL);
                }
            })
            .map_err(|err| BpfError::Map {
                action,
                detail: format!("starting its reading thread: {err}"),
            })?;
        Ok(RingReader {
            ring,
            queue,
            stop,
            error,
            thread: Some(thread),
        })
    }

    /// Every record the kernel wrote so far (the ring is read once more), each preceded
    /// by its length; an error of the reading thread, once.
    pub fn take(&self) -> Result<Vec<u8>, BpfError> {
        if let Some(e) = self.error.lock().ok().and_then(|mut e| e.take()) {
            return Err(e);
        }
        if let Ok(ring) = self.ring.lock() {
            ring.consume().map_err(map_err("reading a ring buffer"))?;
        }
        Ok(self
            .queue
            .lock()
            .map(|mut q| std::mem::take(&mut *q))
            .unwrap_or_default())
    }

    /// Gives an emptied buffer back, so the next records reuse its memory.
    pub(crate) fn give_back(&self, mut buf: Vec<u8>) {
        if let Ok(mut q) = self.queue.lock() {
            if q.is_empty() {
                buf.clear();
                *q = buf;
            }
        }
    }

    /// Stops the reading thread.
    fn finish(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for RingReader {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Hands each record of what [`RingReader::take`] returned to `f`; returns 1 when a length
/// runs past the end (a bug: the callback writes whole records), else 0.
pub(crate) fn for_each_record(buf: &[u8], mut f: impl FnMut(&[u8])) -> u64 {
    let mut rest = buf;
    while rest.len() >= 4 {
        let len = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let Some(rec) = rest.get(4..4 + len) else {
            return 1;
        };
        f(rec);
        rest = &rest[4 + len..];
    }
    0
}
