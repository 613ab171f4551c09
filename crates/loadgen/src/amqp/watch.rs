//! The depth of the queues a load feeds, read from the broker while the load runs.
//!
//! A load that drives a broker past what it can take fills a queue: the latency past a
//! rate sweep's knee is then time spent waiting in it, not time spent working. PerfTest
//! never looks; kiln asks the broker itself, four times a second, with a passive
//! `queue.declare` of each named queue on a connection of its own (no management plugin):
//! the answer carries `message_count` (messages ready, not yet delivered to a consumer).
//! The engine takes the latest answer at the end of each second as the `queue_depth`
//! level of that second.
//!
//! Only named queues (`--queue`, `--queue-pattern`) can be watched: a server-named
//! exclusive queue belongs to its consumer's connection, and the broker refuses any other
//! (405 RESOURCE_LOCKED).
use super::conn::Connection;
use super::driver::{Shared, M};
use std::time::Duration;

/// How often the broker is asked.
const EVERY: Duration = Duration::from_millis(250);
/// How long to wait before opening a new connection after one failed.
const RETRY: Duration = Duration::from_secs(1);

/// Watches `sh.topo.queues` until the run's stop.
pub(super) fn run(sh: &Shared) {
    let ctx = sh.ctx;
    let mut conn: Option<Connection> = None;
    let mut failures = 0u64;
    let mut first_failure: Option<String> = None;
    while !sh.stopping() {
        let c = match conn.take() {
            Some(c) => Ok(c),
            None => Connection::open(sh.uri, "kiln-queue-watch"),
        };
        let (depth, c) = match c {
            Ok(mut c) => match depth(&mut c, &sh.topo.queues) {
                Ok(d) => (Some(d), Some(c)),
                Err(e) => {
                    failures += 1;
                    first_failure.get_or_insert(e.to_string());
                    (None, None)
                }
            },
            Err(e) => {
                failures += 1;
                first_failure.get_or_insert(e.to_string());
                (None, None)
            }
        };
        ctx.set_level(M.queue_depth, depth.map(|d| d as f64));
        let wait = if c.is_some() { EVERY } else { RETRY };
        conn = c;
        if ctx.stop().sleep(wait) {
            break;
        }
    }
    if let Some(c) = conn {
        c.close();
    }
    if let Some(first) = first_failure {
        ctx.event(
            "queue-watch",
            format!("{failures} reading(s) of the queue depth failed; the first: {first}"),
        );
    }
}

/// The messages ready in all of `queues`.
fn depth(c: &mut Connection, queues: &[String]) -> Result<u64, crate::Error> {
    let mut total = 0u64;
    for q in queues {
        total += u64::from(c.queue_depth(q)?.0);
    }
    Ok(total)
}
