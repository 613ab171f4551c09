//! One stop request shared by a command and every library it drives.
//!
//! The `kiln` binary owns the process's signal handling (SIGINT, SIGTERM, SIGHUP) and turns
//! a signal into [`Stop::raise_for_signal`]; the recorder, the load engine and the run
//! orchestration only ever look at the [`Stop`] they were handed. In one process there is
//! therefore one handler and one flag: a recorder and a load running side by side under
//! `kiln run` stop together, and no library's handler replaces another's.
//!
//! Hot loops poll [`Stop::is_raised`] (one relaxed atomic load); anything that waits uses
//! [`Stop::sleep`] or [`Stop::sleep_until`], which return as soon as the stop is raised, so
//! no sleep — a consumer's simulated processing time, a pacer's wait, a retry back-off —
//! can outlive a deadline or a Ctrl-C.
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Whether a signal has asked this process to stop ([`Stop::raise_for_signal`] of any
/// stop): for waits that hold no [`Stop`] (a database's lock wait), which must not outlast
/// the person's Ctrl-C.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

/// Whether a signal has asked this process to stop (any [`Stop`] raised for a signal).
pub fn signalled() -> bool {
    SIGNALLED.load(Ordering::Relaxed)
}

#[derive(Debug, Default)]
struct Inner {
    raised: AtomicBool,
    signal: AtomicI32,
    lock: Mutex<()>,
    wake: Condvar,
}

/// A shareable stop request. Clones share one state.
#[derive(Clone, Debug, Default)]
pub struct Stop(Arc<Inner>);

impl Stop {
    /// A stop not raised yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks everything holding this stop to finish, and wakes every sleeper.
    pub fn raise(&self) {
        self.0.raised.store(true, Ordering::SeqCst);
        let _guard = self.0.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.0.wake.notify_all();
    }

    /// [`Stop::raise`] because the process received signal `signo` (the first one is
    /// kept: it decides the exit code).
    pub fn raise_for_signal(&self, signo: i32) {
        SIGNALLED.store(true, Ordering::SeqCst);
        let _ = self
            .0
            .signal
            .compare_exchange(0, signo, Ordering::SeqCst, Ordering::SeqCst);
        self.raise();
    }

    /// Whether a stop was asked for.
    #[inline]
    pub fn is_raised(&self) -> bool {
        self.0.raised.load(Ordering::Relaxed)
    }

    /// The flag itself, for code that polls an `AtomicBool`. Raise through
    /// [`Stop::raise`] so that sleepers wake.
    pub fn as_flag(&self) -> &AtomicBool {
        &self.0.raised
    }

    /// The signal that raised the stop, if one did.
    pub fn signal(&self) -> Option<i32> {
        match self.0.signal.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }

    /// Sleeps for `d` or until the stop is raised; returns whether it is raised.
    pub fn sleep(&self, d: Duration) -> bool {
        match Instant::now().checked_add(d) {
            Some(t) => self.sleep_until(t),
            None => self.wait(),
        }
    }

    /// Sleeps until `deadline` or until the stop is raised; returns whether it is raised.
    pub fn sleep_until(&self, deadline: Instant) -> bool {
        let mut guard = self.0.lock.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if self.is_raised() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            guard = match self.0.wake.wait_timeout(guard, deadline - now) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }

    /// Sleeps until the stop is raised.
    pub fn wait(&self) -> bool {
        let mut guard = self.0.lock.lock().unwrap_or_else(|p| p.into_inner());
        while !self.is_raised() {
            guard = self.0.wake.wait(guard).unwrap_or_else(|p| p.into_inner());
        }
        true
    }

    /// A stop raised when either this one or `other` is: for a part of a run that must also
    /// end on its own deadline. Raising the returned stop does not raise the parents.
    pub fn child(&self) -> Stop {
        let child = Stop::new();
        let (parent, c) = (self.clone(), child.clone());
        // A watcher thread per child would be costly for many children; children are few
        // (one per run phase), and the watcher ends with whichever is raised first.
        std::thread::Builder::new()
            .name("kiln-stop".into())
            .spawn(move || {
                let mut guard = parent.0.lock.lock().unwrap_or_else(|p| p.into_inner());
                loop {
                    if parent.is_raised() {
                        drop(guard);
                        if let Some(s) = parent.signal() {
                            c.raise_for_signal(s);
                        } else {
                            c.raise();
                        }
                        return;
                    }
                    if c.is_raised() {
                        return;
                    }
                    guard = match parent.0.wake.wait_timeout(guard, Duration::from_millis(50)) {
                        Ok((g, _)) => g,
                        Err(p) => p.into_inner().0,
                    };
                }
            })
            .ok();
        child
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleep_wakes_on_raise() {
        let s = Stop::new();
        assert!(!s.sleep(Duration::from_millis(5)));
        let t = Instant::now();
        let s2 = s.clone();
        let h = std::thread::spawn(move || s2.sleep(Duration::from_secs(3600)));
        std::thread::sleep(Duration::from_millis(20));
        s.raise_for_signal(15);
        assert!(h.join().unwrap());
        assert!(t.elapsed() < Duration::from_secs(60));
        assert_eq!(s.signal(), Some(15));
        s.raise_for_signal(2);
        assert_eq!(s.signal(), Some(15), "the first signal is kept");
        assert!(s.sleep(Duration::MAX));
    }

    #[test]
    fn children_follow_their_parent_not_the_reverse() {
        let parent = Stop::new();
        let a = parent.child();
        a.raise();
        assert!(!parent.is_raised());
        let b = parent.child();
        parent.raise_for_signal(1);
        assert!(b.sleep(Duration::from_secs(3600)));
        assert_eq!(b.signal(), Some(1));
    }
}
