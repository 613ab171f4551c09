//! HotSpot's thread dump as text (what `jcmd PID Thread.print` and `jstack` print), read
//! into its Java threads: each one's name, state and frames, and on a frame the monitors
//! it waits to lock or holds. The text is the target's: any bytes are read without a
//! panic, and a line of a thread that is not understood is counted, never dropped
//! silently.
//!
//! ```text
//! "pool-1-thread-3" #17 prio=5 os_prio=0 cpu=314.14ms elapsed=77.40s tid=0x… nid=0x38d7 waiting for monitor entry  [0x…]
//!    java.lang.Thread.State: BLOCKED (on object monitor)
//!     at Ledger.post(Ledger.java:14)
//!     - waiting to lock <0x000000069cc14e50> (a Ledger)
//!     at Ledger.lambda$main$0(Ledger.java:26)
//! ```
use kiln_store::{JvmDump, MonitorWait};
use std::collections::{BTreeMap, HashMap};

/// A dump's Java threads (the JVM's own threads, which have no Java state, are left out).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThreadDump {
    /// The Java threads, in the dump's order.
    pub threads: Vec<JavaThread>,
    /// Lines inside the threads' blocks that were not understood.
    pub unparsed: u32,
}

/// One Java thread of a dump.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JavaThread {
    /// Its name, as quoted on its header line.
    pub name: String,
    /// Its state (`BLOCKED (on object monitor)`, `RUNNABLE`).
    pub state: String,
    /// Its frames, innermost first.
    pub frames: Vec<StackFrame>,
}

/// One frame of a Java thread.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StackFrame {
    /// The method, qualified (`com.sun.net.httpserver.Filter$Chain.doFilter`).
    pub method: String,
    /// Where in it (`Ledger.java:14`, `java.base@17.0.15/Thread.java:840`, `Native Method`).
    pub location: String,
    /// The monitor it waits to enter (`- waiting to lock`).
    pub waiting_to_lock: Option<ObjectRef>,
    /// The monitors it holds (`- locked`).
    pub locked: Vec<ObjectRef>,
    /// The object it parks waiting for (`- parking to wait for`: a `java.util.concurrent`
    /// lock's or condition's).
    pub parked_on: Option<ObjectRef>,
}

/// An object a dump names: `<0x000000069cc14e50> (a Ledger)`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObjectRef {
    /// Its address (`0x000000069cc14e50`).
    pub address: String,
    /// Its class (`Ledger`; `java.lang.Class for Ledger` for a static method's monitor).
    pub class: String,
}

impl JavaThread {
    /// Whether it waits to enter a monitor.
    pub fn is_blocked(&self) -> bool {
        self.state.starts_with("BLOCKED")
    }
}

/// Reads a thread dump. Never fails: what is not a Java thread's block is passed over,
/// and the lines of a thread's block that are not understood are counted.
pub fn parse(text: &str) -> ThreadDump {
    let mut out = ThreadDump::default();
    let mut current: Option<JavaThread> = None;
    // A header seen, its state line not yet: a JVM thread has none and is left out.
    let mut header: Option<String> = None;
    // In `jstack -l`'s list of a thread's ownable synchronizers (after a blank line).
    let mut ownable = false;
    for line in text.lines() {
        if line.starts_with('"') {
            out.threads.extend(current.take());
            header = Some(thread_name(line));
            ownable = false;
            continue;
        }
        let t = line.trim();
        if t.is_empty() {
            out.threads.extend(current.take());
            header = None;
            ownable = false;
            continue;
        }
        if t == "Locked ownable synchronizers:" {
            ownable = true;
            continue;
        }
        if ownable {
            if !(t == "- None" || t.starts_with("- <")) {
                out.unparsed = out.unparsed.saturating_add(1);
            }
            continue;
        }
        if let Some(state) = t.strip_prefix("java.lang.Thread.State:") {
            if let Some(name) = header.take() {
                current = Some(JavaThread {
                    name,
                    state: state.trim().to_string(),
                    frames: Vec::new(),
                });
                continue;
            }
        }
        let Some(thread) = current.as_mut() else {
            continue;
        };
        if !frame_line(thread, t) {
            out.unparsed = out.unparsed.saturating_add(1);
        }
    }
    out.threads.extend(current);
    out
}

/// Reads line `t` (trimmed) of `thread`'s block into it; false when it is not understood.
fn frame_line(thread: &mut JavaThread, t: &str) -> bool {
    if let Some(at) = t.strip_prefix("at ") {
        let (method, location) = match at.split_once('(') {
            Some((m, rest)) => (m, rest.strip_suffix(')').unwrap_or(rest)),
            None => (at, ""),
        };
        thread.frames.push(StackFrame {
            method: method.to_string(),
            location: location.to_string(),
            ..StackFrame::default()
        });
        return true;
    }
    // A JIT compiler thread's line: what it compiles.
    if t == "No compile task" || t.starts_with("Compiling:") {
        return true;
    }
    let Some(what) = t.strip_prefix("- ") else {
        return false;
    };
    let Some(frame) = thread.frames.last_mut() else {
        return false;
    };
    if let Some(rest) = what.strip_prefix("waiting to lock ") {
        match object_ref(rest) {
            Some(o) => frame.waiting_to_lock = Some(o),
            None => return false,
        }
    } else if let Some(rest) = what.strip_prefix("locked ") {
        match object_ref(rest) {
            Some(o) => frame.locked.push(o),
            None => return false,
        }
    } else if let Some(rest) = what.strip_prefix("parking to wait for ") {
        match object_ref(rest) {
            Some(o) => frame.parked_on = Some(o),
            None => return false,
        }
    } else if !["waiting on ", "waiting to re-lock", "eliminated "]
        .iter()
        .any(|p| what.starts_with(p))
    {
        return false;
    }
    true
}

/// `<0x000000069cc14e50> (a Ledger)`.
fn object_ref(s: &str) -> Option<ObjectRef> {
    let s = s.trim_start();
    let rest = s.strip_prefix('<')?;
    let (address, rest) = rest.split_once('>')?;
    let class = rest.trim().strip_prefix("(a ")?.strip_suffix(')')?;
    Some(ObjectRef {
        address: address.to_string(),
        class: class.to_string(),
    })
}

/// The name quoted at the start of a thread's header line. A name may hold quotes
/// itself: it ends at the last quote followed by ` #` (a Java thread's number) or, for a
/// JVM thread, by the header's first field.
fn thread_name(line: &str) -> String {
    let body = &line[1..];
    let ends = [r#"" #"#, r#"" daemon"#, r#"" prio="#, r#"" os_prio="#];
    let end = ends
        .iter()
        .filter_map(|e| body.rfind(e))
        .max()
        .or_else(|| body.rfind('"'))
        .unwrap_or(body.len());
    body[..end].to_string()
}

/// A thread's name with each run of digits as `N`: the threads of one pool share it.
pub fn group_of(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut digits = false;
    for c in name.chars() {
        if c.is_ascii_digit() {
            if !digits {
                out.push('N');
            }
            digits = true;
        } else {
            out.push(c);
            digits = false;
        }
    }
    out
}

/// What the run keeps of a dump that arrived at `at_ns` after `took_ms`: its threads by
/// group, and each thread BLOCKED on a monitor with the method waiting, the monitor's
/// class and the thread holding it.
pub fn summarise(dump: &ThreadDump, at_ns: u64, took_ms: f64) -> JvmDump {
    let mut groups: BTreeMap<String, u32> = BTreeMap::new();
    let mut holders: HashMap<&str, (&str, &str)> = HashMap::new();
    for t in &dump.threads {
        *groups.entry(group_of(&t.name)).or_default() += 1;
        for f in &t.frames {
            for o in &f.locked {
                // The outermost frame that locked it is the one that entered it.
                holders.insert(&o.address, (t.name.as_str(), f.method.as_str()));
            }
        }
    }
    let parked = dump.threads.iter().filter_map(parked_on_lock);
    let blocked = dump
        .threads
        .iter()
        .filter(|t| t.is_blocked())
        .filter_map(|t| {
            let f = t.frames.iter().find(|f| f.waiting_to_lock.is_some())?;
            let o = f.waiting_to_lock.as_ref()?;
            let holder = holders
                .get(o.address.as_str())
                .filter(|(h, _)| *h != t.name);
            Some(MonitorWait {
                thread: t.name.clone(),
                group: group_of(&t.name),
                method: f.method.clone(),
                address: o.address.clone(),
                class: o.class.clone(),
                holder: holder.map(|(h, _)| h.to_string()),
                holder_method: holder.map(|(_, m)| m.to_string()),
                parked: false,
            })
        })
        .chain(parked)
        .collect();
    JvmDump {
        at_ns,
        took_ms,
        groups: groups.into_iter().collect(),
        blocked,
        unparsed: dump.unparsed,
    }
}

/// A thread parked waiting for a `java.util.concurrent` lock (a `ReentrantLock`, either
/// side of a `ReentrantReadWriteLock`): the lock's class without its inner `Sync`, and the
/// program's method that asked for it — the innermost frame outside the JDK. A thread
/// parked on a condition or a queue (a pool's idle worker) is not one.
fn parked_on_lock(t: &JavaThread) -> Option<MonitorWait> {
    if !t.state.contains("(parking)") {
        return None;
    }
    let o = t.frames.iter().find_map(|f| f.parked_on.as_ref())?;
    let lock = o.class.split('$').next().unwrap_or(&o.class);
    if !matches!(
        lock,
        "java.util.concurrent.locks.ReentrantLock"
            | "java.util.concurrent.locks.ReentrantReadWriteLock"
    ) {
        return None;
    }
    let jdk = |m: &str| {
        ["java.", "javax.", "jdk.", "sun.", "com.sun."]
            .iter()
            .any(|p| m.starts_with(p))
    };
    let f = t.frames.iter().find(|f| !jdk(&f.method))?;
    Some(MonitorWait {
        thread: t.name.clone(),
        group: group_of(&t.name),
        method: f.method.clone(),
        address: o.address.clone(),
        class: lock.to_string(),
        holder: None,
        holder_method: None,
        parked: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// `jcmd PID Thread.print` of the Ledger server under load (tests/data/jvm/README.md).
    const LEDGER: &str = include_str!("../../tests/data/jvm/thread-print-ledger.txt");
    /// The same server, `jcmd PID Thread.print -l` (ownable synchronizers listed).
    const LEDGER_L: &str = include_str!("../../tests/data/jvm/thread-print-l-ledger.txt");

    /// The fixture's Java threads as a plain reading counts them: a header line followed
    /// by a state line; the BLOCKED ones; and the `waiting to lock` lines.
    fn model(text: &str) -> (usize, usize, usize) {
        let lines: Vec<&str> = text.lines().collect();
        let java = lines
            .windows(2)
            .filter(|w| w[0].starts_with('"') && w[1].contains("java.lang.Thread.State:"))
            .count();
        let blocked = lines
            .iter()
            .filter(|l| l.contains("java.lang.Thread.State: BLOCKED"))
            .count();
        let waiting = lines
            .iter()
            .filter(|l| l.contains("- waiting to lock <"))
            .count();
        (java, blocked, waiting)
    }

    #[test]
    fn a_real_dump_reads_whole() {
        for (name, text) in [("Thread.print", LEDGER), ("Thread.print -l", LEDGER_L)] {
            let d = parse(text);
            let (java, blocked, waiting) = model(text);
            assert_eq!(
                d.unparsed, 0,
                "{name}: every line of the threads understood"
            );
            assert_eq!(d.threads.len(), java, "{name}");
            assert_eq!(
                d.threads.iter().filter(|t| t.is_blocked()).count(),
                blocked,
                "{name}"
            );
            let w = d
                .threads
                .iter()
                .flat_map(|t| &t.frames)
                .filter(|f| f.waiting_to_lock.is_some())
                .count();
            assert_eq!(w, waiting, "{name}");
            assert!(blocked >= 10, "{name}: the fixture caught the pool BLOCKED");
        }
    }

    #[test]
    fn a_blocked_thread_names_its_method_monitor_and_holder() {
        let d = parse(LEDGER);
        let t = d
            .threads
            .iter()
            .find(|t| t.name == "pool-1-thread-1")
            .unwrap();
        assert_eq!(t.state, "BLOCKED (on object monitor)");
        assert_eq!(t.frames[0].method, "Ledger.post");
        assert_eq!(t.frames[0].location, "Ledger.java:14");
        assert_eq!(
            t.frames[0].waiting_to_lock,
            Some(ObjectRef {
                address: "0x000000069cc14e50".into(),
                class: "Ledger".into()
            })
        );
        assert_eq!(
            t.frames[3].method,
            "com.sun.net.httpserver.Filter$Chain.doFilter"
        );
        assert_eq!(
            t.frames[3].location,
            "jdk.httpserver@17.0.15/Filter.java:95"
        );
        let s = summarise(&d, 7, 1.5);
        let (_, blocked, _) = model(LEDGER);
        assert_eq!(s.blocked.len(), blocked);
        for b in &s.blocked {
            assert_eq!(
                (b.method.as_str(), b.class.as_str()),
                ("Ledger.post", "Ledger")
            );
            assert_eq!(b.group, "pool-N-thread-N");
            assert_eq!(b.holder.as_deref(), Some("pool-1-thread-13"));
            assert_eq!(b.holder_method.as_deref(), Some("Ledger.post"));
        }
        assert!(s.groups.contains(&("pool-N-thread-N".to_string(), 16)));
        assert!(
            !s.groups.iter().any(|(g, _)| g.starts_with("GC Thread")),
            "JVM threads are not Java threads"
        );
        assert_eq!((s.at_ns, s.took_ms, s.unparsed), (7, 1.5, 0));
    }

    /// From `jcmd PID Thread.print` of a server whose 16 threads take one ReentrantLock
    /// (bench/findings/cases/java-reentrant): one parked on the lock, one idle worker
    /// parked on its queue's condition.
    const PARKED: &str = "\"pool-1-thread-1\" #15 prio=5 os_prio=0 cpu=42.29ms elapsed=3.20s tid=0x00007f5d98008ea0 nid=0x44cf waiting on condition  [0x00007f5e106fd000]
   java.lang.Thread.State: WAITING (parking)
\tat jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)
\t- parking to wait for  <0x000000069cc00508> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)
\tat java.util.concurrent.locks.LockSupport.park(java.base@17.0.15/LockSupport.java:211)
\tat java.util.concurrent.locks.AbstractQueuedSynchronizer.acquire(java.base@17.0.15/AbstractQueuedSynchronizer.java:715)
\tat java.util.concurrent.locks.ReentrantLock$Sync.lock(java.base@17.0.15/ReentrantLock.java:153)
\tat java.util.concurrent.locks.ReentrantLock.lock(java.base@17.0.15/ReentrantLock.java:322)
\tat Journal.append(Journal.java:17)
\tat Journal.lambda$main$0(Journal.java:32)
\tat com.sun.net.httpserver.Filter$Chain.doFilter(jdk.httpserver@17.0.15/Filter.java:95)

\"pool-1-thread-2\" #16 prio=5 os_prio=0 cpu=36.62ms elapsed=1.76s tid=0x00007f59f8007bd0 nid=0x4335 waiting on condition  [0x00007f5a169fd000]
   java.lang.Thread.State: WAITING (parking)
\tat jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)
\t- parking to wait for  <0x000000069dc00de8> (a java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject)
\tat java.util.concurrent.locks.LockSupport.park(java.base@17.0.15/LockSupport.java:341)
\tat java.util.concurrent.LinkedBlockingQueue.take(java.base@17.0.15/LinkedBlockingQueue.java:435)
\tat java.util.concurrent.ThreadPoolExecutor.getTask(java.base@17.0.15/ThreadPoolExecutor.java:1062)
\tat java.lang.Thread.run(java.base@17.0.15/Thread.java:840)

";

    #[test]
    fn a_thread_parked_on_a_reentrant_lock_is_a_wait_at_the_programs_method() {
        let d = parse(PARKED);
        assert_eq!((d.threads.len(), d.unparsed), (2, 0));
        let s = summarise(&d, 0, 1.0);
        assert_eq!(
            s.blocked,
            vec![MonitorWait {
                thread: "pool-1-thread-1".into(),
                group: "pool-N-thread-N".into(),
                method: "Journal.append".into(),
                address: "0x000000069cc00508".into(),
                class: "java.util.concurrent.locks.ReentrantLock".into(),
                holder: None,
                holder_method: None,
                parked: true,
            }]
        );
    }

    #[test]
    fn names_and_odd_lines() {
        let text = "\"a \"quoted\" name\" #9 prio=5 tid=0x1 nid=0x2 waiting for monitor entry\n   java.lang.Thread.State: BLOCKED (on object monitor)\n\t- locked <0x1> (a X)\n\tat p.C.m(C.java:1)\n\t- waiting to lock <0x2> (a java.lang.Class for p.C)\n\t- what is this\n\tat p.C.n\n\n\"VM Thread\" os_prio=0 runnable\n\n";
        let d = parse(text);
        assert_eq!(d.threads.len(), 1);
        let t = &d.threads[0];
        assert_eq!(t.name, "a \"quoted\" name");
        assert_eq!(
            t.frames[0].waiting_to_lock.as_ref().unwrap().class,
            "java.lang.Class for p.C"
        );
        assert_eq!(
            (t.frames[1].method.as_str(), t.frames[1].location.as_str()),
            ("p.C.n", "")
        );
        // The lock before any frame and the unknown line are counted.
        assert_eq!(d.unparsed, 2);
        assert_eq!(group_of("pool-12-thread-3"), "pool-N-thread-N");
        for junk in [
            "\"",
            "\"\n",
            "\u{0}\"x\" #1\n java.lang.Thread.State:\n- waiting to lock <\n",
            "",
        ] {
            let _ = summarise(&parse(junk), 0, 0.0);
        }
    }
}
