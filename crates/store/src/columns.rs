//! The names of the series a run keeps: the tables and their columns, declared once.
//!
//! A run's per-second data is tables of columns ([`crate::SeriesTable`]) found by name;
//! these are the names kiln writes, for every reader to use (the headline, a window's
//! figures, the findings, the report). A column per thread group is the column's name, a
//! colon and the group (`cpu user:scheduler`: [`per_group`]).
//!
//! Units: `%` is percent of one CPU (a second of CPU per second is 100), `1/s` a rate,
//! `count` and `bytes` a level read at the end of the second.

/// The load's table (its own columns are the protocol's: `sent`, `received`, `p50`...;
/// those every reader looks for are below: [`SENT`], [`CONNECTED`], [`DROPPED`],
/// [`QUEUE_DEPTH`]).
pub const LOAD: &str = "load";
/// The target's table.
pub const TARGET: &str = "target";
/// The machine's table.
pub const MACHINE: &str = "machine";
/// kiln's own table.
pub const KILN: &str = "kiln";
/// Every other process that used CPU: one column per process (`cpu:NAME (PID)`, `%`).
/// Added in 0.4.
pub const OTHERS: &str = "others";

/// Target user CPU, `%`.
pub const CPU_USER: &str = "cpu user";
/// Target system CPU, `%`.
pub const CPU_SYSTEM: &str = "cpu system";
/// Target resident memory, `bytes`.
pub const RSS: &str = "rss";
/// Target threads, `count`.
pub const THREADS: &str = "threads";
/// Voluntary context switches of every thread of the target (a thread's own counts, so
/// threads that come and go are counted while they live), `1/s`.
pub const VOLUNTARY: &str = "voluntary switches";
/// Involuntary context switches, `1/s`.
pub const INVOLUNTARY: &str = "involuntary switches";
/// Open file descriptors, `count`.
pub const OPEN_FILES: &str = "open files";
/// Open sockets that could carry work from outside the target, `count`: each once however
/// many of its processes hold it, not its TCP listeners nor the Unix socket pairs of its own.
pub const SOCKETS: &str = "sockets";
/// Time the target's threads were runnable and waited for a CPU (`schedstat`'s run-queue
/// time), `%` (of one CPU: 100 is one thread waiting the whole second). Added in 0.4.
pub const RUNNABLE: &str = "runnable";
/// Minor page faults of the target, `1/s`. Added in 0.4.
pub const MINOR_FAULTS: &str = "minor faults";
/// Major page faults (read from disk), `1/s`. Added in 0.4.
pub const MAJOR_FAULTS: &str = "major faults";
/// Bytes the target read from storage (`/proc/PID/io` `read_bytes`), `bytes/s`. Added in 0.4.
pub const DISK_READ: &str = "disk read";
/// Bytes the target caused to be written to storage, `bytes/s`. Added in 0.4.
pub const DISK_WRITE: &str = "disk write";
/// Connections waiting in the accept queues of the target's listening sockets (their
/// Recv-Q in `ss -lnt`), `count`. Added in 0.4.
pub const ACCEPT_QUEUE: &str = "accept queue";
/// Connections the target's network namespace dropped because an accept queue was full
/// (`TcpExt: ListenOverflows`), `1/s`. Added in 0.4.
pub const LISTEN_OVERFLOWS: &str = "listen overflows";
/// Time the target's cgroup was throttled by its CPU quota (`cpu.stat` `throttled_usec`),
/// `%` of the second. Added in 0.4.
pub const THROTTLED: &str = "throttled";
/// The target's cgroup CPU quota (`cpu.max`), CPUs. Added in 0.4.
pub const CPU_QUOTA: &str = "cpu quota";
/// The target's cgroup's memory limit (v2 `memory.max`, v1's hierarchical limit), MiB:
/// only when it has one.
pub const MEMORY_LIMIT: &str = "memory limit";
/// The memory the target's cgroup used (`memory.current`, v1 `memory.usage_in_bytes`:
/// its processes' and its file cache's), MiB, beside [`MEMORY_LIMIT`].
pub const MEMORY_USED: &str = "memory used";
/// File pages the target's cgroup read again after the kernel had evicted them
/// (`memory.stat` `workingset_refault_file`), pages per second, beside [`MEMORY_LIMIT`]:
/// its file cache too small for what it reads.
pub const REFAULTS: &str = "file refaults";
/// CPU of the target's child processes once they ended and it waited for them
/// (`cutime` + `cstime` of `/proc/PID/stat`: programs it ran), `%` of one CPU.
pub const CHILDREN_CPU: &str = "children cpu";
/// CPU of copies of the target (its own program, forked) that ended under a second old,
/// as their parent counted it once it waited for them: a process per connection. Part of
/// the target's CPU, `%` of one CPU.
pub const YOUNG_COPIES_CPU: &str = "young copies cpu";
/// The run-queue wait of the target's first thread (of each process, the most of any
/// one: an event loop's in Node or an asyncio server), `%` of the time.
pub const MAIN_RUNNABLE: &str = "main thread runnable";

/// A JVM target's heap in use (every generation's spaces), by its own counters
/// (`hsperfdata`, as `jstat` reads them), `bytes`: only for a JVM that keeps them.
pub const JVM_HEAP_USED: &str = "jvm heap used";
/// A JVM target's old generation in use (what survived its young collections), `bytes`.
pub const JVM_OLD_USED: &str = "jvm old used";
/// The most a JVM target's old generation may take (its maximum capacity), `bytes`.
pub const JVM_OLD_MAX: &str = "jvm old max";
/// A JVM target's collectors' time over the second (their `time` counters), `%`.
pub const JVM_GC: &str = "jvm gc";

/// Threads of the target asleep at each sample, by where they waited (their state and
/// `/proc/PID/task/TID/wchan`): `waiting:disk`, `waiting:futex` (a lock or a condition),
/// `waiting:poll`, `waiting:network`, `waiting:sleep`, `waiting:pipe`, `waiting:other`;
/// `count` (threads, sampled once a second). Added in 0.4.
pub const WAITING: &str = "waiting";

/// Per thread group: user CPU, `%`.
pub const GROUP_CPU_USER: &str = CPU_USER;
/// Per thread group: system CPU, `%`.
pub const GROUP_CPU_SYSTEM: &str = CPU_SYSTEM;
/// Per thread group: run-queue wait, `%`. Added in 0.4.
pub const GROUP_RUNNABLE: &str = RUNNABLE;
/// Per thread group: its threads, `count`. Added in 0.4.
pub const GROUP_THREADS: &str = THREADS;
/// Per thread group: the CPU of its busiest thread over the second, `%` (a thread at 100
/// used a whole CPU: nothing it does can go faster). Added in 0.4.
pub const GROUP_BUSIEST: &str = "busiest thread";

/// Per thread group: the time its busiest thread was on a CPU or runnable (waiting for
/// one) over the second, `%`: at 100 the thread never waited for work — the group's
/// bottleneck, starved of CPU or not. Added in 0.4.
pub const GROUP_BUSIEST_BUSY: &str = "busiest thread busy";

/// The machine's busy share, `%` of all its CPUs.
pub const BUSY: &str = "busy";
/// kiln's own CPU, `%`.
pub const KILN_CPU: &str = "kiln cpu";
/// An external load command's CPU (with its children), `%`.
pub const LOAD_COMMAND_CPU: &str = "load command cpu";

/// The load's operations sent (messages published, requests written), `X/s`: every
/// protocol of kiln's names its counter so.
pub const SENT: &str = "sent";
/// A fleet's connections opened (MQTT), `conn/s`.
pub const CONNECTED: &str = "connected";
/// A fleet's connections lost, `conn/s`.
pub const DROPPED: &str = "dropped";
/// A fleet's connection attempts that failed or were refused, `conn/s`.
pub const FAILED: &str = "failed";
/// Whether the broker held the load's publishers back (AMQP `connection.blocked` in
/// force: a resource alarm), each second `0` or `1`.
pub const BLOCKED: &str = "blocked";
/// The depth of the queues the load feeds (messages ready, as the broker counts them), a
/// level: its largest reading stands.
pub const QUEUE_DEPTH: &str = "queue_depth";

/// What joins a per-group column's name and its group ([`per_group`]).
pub const GROUP_SEPARATOR: char = ':';

/// The column of `column` for thread group `group`: `cpu user:scheduler`.
pub fn per_group(column: &str, group: &str) -> String {
    format!("{column}{GROUP_SEPARATOR}{group}")
}

/// The groups a table has a per-group `column` for, in its order.
pub fn groups<'a>(t: &'a crate::SeriesTable, column: &str) -> Vec<&'a str> {
    t.columns
        .iter()
        .filter_map(|c| c.name.strip_prefix(column)?.strip_prefix(GROUP_SEPARATOR))
        .collect()
}

/// What joins a table's name and the other host it is of ([`on_host`]).
pub const HOST_SEPARATOR: char = '@';

/// Another host's copy of `table` (its `/proc` series, its load agent's seconds), as a run
/// of several hosts keeps it beside the local one: `target@db1`.
pub fn on_host(table: &str, host: &str) -> String {
    format!("{table}{HOST_SEPARATOR}{host}")
}

/// The host a table of another host is of (`db1` of `target@db1`), when `name` is
/// `table`'s copy on another host.
pub fn host_of<'a>(name: &'a str, table: &str) -> Option<&'a str> {
    name.strip_prefix(table)?.strip_prefix(HOST_SEPARATOR)
}

/// Whether a table named `name` is `table`, the local one or another host's
/// ([`on_host`]).
pub fn is_table(name: &str, table: &str) -> bool {
    name == table || host_of(name, table).is_some()
}

/// What begins the name of every column of [`OTHERS`], before the process it is.
pub const OTHER_PREFIX: &str = "cpu:";

/// The column of another process in [`OTHERS`]: `cpu:NAME (PID)`.
pub fn other_process(name: &str, pid: u32) -> String {
    format!("{OTHER_PREFIX}{name} ({pid})")
}

/// The column of [`OTHERS`] that sums the processes beyond those kept one by one:
/// `cpu:(N other processes)`.
pub fn other_processes(n: usize) -> String {
    format!("{OTHER_PREFIX}({n} other processes)")
}

/// The process a column of [`OTHERS`] is (`NAME (PID)`), as a reader names it.
pub fn other_name(column: &str) -> &str {
    column.strip_prefix(OTHER_PREFIX).unwrap_or(column)
}
