//! The load itself: the client as the limit, and operations that failed.
use super::{cpus, pct};
use crate::facts::count_of;
use crate::{Class, Facts, Finding};

/// The load generator, not the server, was the limit: it used at least half a CPU, more
/// than the server, while the server's threads waited for work.
///
/// False when: the server's threads were on a CPU or runnable most of their time, or one
/// of them ran a whole CPU (the server was the limit, whatever the machine's state); the
/// client had CPU to spare; the load was set to a rate and held it (the rate asked for
/// was the load: nothing limited it).
pub fn client(f: &Facts) -> Vec<Finding> {
    f.client.get_or_init(|| find_client(f)).clone()
}

fn find_client(f: &Facts) -> Vec<Finding> {
    let client = f.cpus.load_command.or(f.cpus.kiln).unwrap_or(0.0);
    // A client that used little CPU limited nothing, however busy the machine was.
    if client < 0.5 {
        return Vec::new();
    }
    let sent = f.outcome.sent.or(f.outcome.throughput);
    if let (Some(rate), Some(sent)) = (f.outcome.rate, sent) {
        if rate > 0.0 && sent >= 0.95 * rate {
            return Vec::new();
        }
    }
    // The server's side: busy (on a CPU, runnable, or blocked in its work: a lock, the
    // disk, a child, any wait that is not a runtime idling or polling for events) against
    // its threads' time.
    let threads: f64 = f.groups.iter().map(|g| g.threads).sum();
    let working: f64 = f.groups.iter().map(|g| g.busy()).sum();
    let hot = f
        .groups
        .iter()
        .any(|g| g.busiest.is_some_and(|b| b >= 0.85));
    let target = f.cpus.target.unwrap_or(0.0);
    if hot || threads <= 0.0 || working / threads >= 0.5 || target >= 0.7 * f.cpus.machine {
        return Vec::new();
    }
    if client < target {
        return Vec::new();
    }
    let who = if f.cpus.load_command.is_some() {
        "the load command"
    } else {
        "kiln's load generator"
    };
    let claim = format!(
        "{who} used {} while the server used {} and its threads waited for work {} of their time: the load, not the server, was the limit — drive it from another machine or with fewer clients per CPU",
        cpus(client),
        cpus(target),
        pct(1.0 - working / threads)
    );
    vec![Finding::new(
        "client",
        Class::ClientLimited,
        0.45 + 0.45 * client.min(1.0),
        claim,
    )
    .evidence(f.ev(
        "the load generator's CPU",
        cpus(client),
        "/proc/PID/stat of kiln (or the load command and its children)",
    ))
    .evidence(f.ev(
        "the server's threads on a CPU, runnable or blocked in their work",
        format!("{} of {:.0} threads' time", pct(working / threads), threads),
        "/proc/PID/task/*/schedstat",
    ))
    .check(
        "top -b -n 1 -o %CPU (the client at 100% of its CPUs, the server's threads in S state)"
            .to_string(),
    )]
}

/// The broker held the publishers back: AMQP's `connection.blocked` was in force a
/// tenth of the window or more — a resource alarm (memory above its high watermark, free
/// disk under its limit) stops every publishing connection until it clears, so the rate
/// sent is the alarm's, not the broker's speed, and what the consumers get is the
/// backlog. The reason is the broker's own (the notification's words).
///
/// False when: no publisher was blocked, or for under a tenth of the window.
pub fn held_back(f: &Facts) -> Vec<Finding> {
    use kiln_store::columns as col;
    let flag = f.values(col::LOAD, col::BLOCKED);
    let secs: f64 = flag.iter().map(|(_, s)| s).sum();
    let blocked: f64 = flag.iter().filter(|(v, _)| *v >= 0.5).map(|(_, s)| s).sum();
    if secs <= 0.0 || blocked < 0.1 * secs {
        return Vec::new();
    }
    let share = blocked / secs;
    // The broker's reasons, as its notifications gave them ("low on memory").
    let mut reasons: Vec<String> = f.meta.load.report["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["kind"] == "blocked")
        .filter_map(|e| e["detail"].as_str())
        .map(|d| d.rsplit(": ").next().unwrap_or(d).to_string())
        .collect();
    reasons.sort();
    reasons.dedup();
    let why = reasons
        .iter()
        .map(|r| kiln_model::text::clean_cut(r, 80))
        .collect::<Vec<_>>()
        .join("; ");
    let alarm = if why.contains("memory") {
        "its memory alarm (the node's memory above vm_memory_high_watermark)"
    } else if why.contains("disk") {
        "its disk alarm (free disk under disk_free_limit)"
    } else {
        "a resource alarm"
    };
    let sent = count_of(&f.values(col::LOAD, col::SENT)).unwrap_or(0.0);
    let unit = &f.outcome.unit;
    let mut claim = format!(
        "the broker blocked the publishers {} of the window ({:.0} s of {:.0} s; connection.blocked{}): {alarm} stops every publishing connection until it clears, so they sent {}/s — the alarm's rate, not the broker's speed",
        pct(share),
        blocked,
        secs,
        if why.is_empty() { String::new() } else { format!(": \"{why}\"") },
        kiln_model::thousands((sent / f.secs.max(1e-9)).round() as u64),
    );
    let backlog = crate::rules::queues::backlog_at_end(f).filter(|b| *b >= 1.0);
    if let Some(b) = backlog {
        claim.push_str(&format!(
            "; {} {unit}s sent were not yet received (in the broker's queue, or unread in its sockets), the consumers taking {}/s of them",
            kiln_model::thousands(b.round() as u64),
            kiln_model::thousands(f.outcome.throughput.unwrap_or(0.0).round() as u64)
        ));
    }
    let mut e = f.ev(
        "publishers blocked (connection.blocked in force)",
        format!("{blocked:.0} s of {secs:.0} s"),
        "the load's own flow-control flag and the broker's notifications",
    );
    e.series = Some(format!("{}/{}", col::LOAD, col::BLOCKED));
    let mut x = Finding::new("held-back", Class::HeldBack, 0.6 + 0.38 * share, claim)
        .evidence(e)
        .explains(share * 100.0, "of the window, the publishers blocked")
        .check("rabbitmq-diagnostics alarms   # or: rabbitmqctl status (its Alarms); the node's log says 'resource limit alarm set'".to_string());
    if let Some(rss) = f
        .values(col::TARGET, col::RSS)
        .iter()
        .map(|v| v.0)
        .reduce(f64::max)
    {
        x = x.evidence(f.ev(
            "the broker's resident memory (largest)",
            kiln_model::format_bytes(rss),
            "/proc/PID/status",
        ));
    }
    vec![x]
}

/// The load's delivery accounts (sent, received, lost per publisher: MQTT's pubsub), summed
/// over the whole load, when it keeps them.
pub(crate) struct Delivery {
    /// Messages the publishers sent.
    pub sent: u64,
    /// Deliveries the subscribers received (each subscriber counts each message).
    pub received: u64,
    /// Deliveries never received.
    pub lost: u64,
    /// Of them, those after the last each subscriber received: still on their way when the
    /// load stopped, not gaps in the sequence.
    pub at_end: u64,
    /// Deliveries owed: each message to each subscriber of its topic (received once, or
    /// lost) — `sent` with one subscriber, `sent` × N when N subscribers share the topic.
    pub owed: u64,
}

pub(crate) fn delivery(f: &Facts) -> Option<Delivery> {
    let rows = f.meta.load.report["summary"]["delivery"].as_array()?;
    let sum = |k: &str| rows.iter().filter_map(|r| r[k].as_u64()).sum::<u64>();
    let (sent, received, lost) = (sum("sent"), sum("received"), sum("lost"));
    let owed = (received.saturating_sub(sum("duplicated")) + lost).max(sent);
    Some(Delivery {
        sent,
        received,
        lost,
        at_end: sum("lost_at_end").min(lost),
        owed,
    })
}

/// The share of the deliveries the load owed that it counted lost (never received, the
/// load over): 0 when it keeps no such account.
pub(crate) fn lost_share(f: &Facts) -> f64 {
    match delivery(f) {
        Some(d) if d.owed > 0 => (d.lost as f64 / d.owed as f64).min(1.0),
        _ => 0.0,
    }
}

/// Messages sent were never delivered: the load counted them lost (sent by a publisher
/// that stayed connected, not received by its subscribers when the load had drained).
/// A broker drops a subscriber's messages when the queue it keeps for it is full: the
/// subscribers fell behind, or the broker's limit is below the publishers' burst.
///
/// False when: under 1% of what was sent was lost; the load keeps no delivery account.
pub fn lost(f: &Facts) -> Vec<Finding> {
    let Some(Delivery {
        sent,
        received,
        lost,
        at_end,
        owed,
    }) = delivery(f)
    else {
        return Vec::new();
    };
    let share = lost_share(f);
    if lost == 0 || share < 0.01 {
        return Vec::new();
    }
    let unit = &f.outcome.unit;
    let qos = f.meta.load.report["summary"]["qos"]
        .as_u64()
        .map(|q| format!(" at QoS {q}"))
        .unwrap_or_default();
    let dropped: u64 = f.meta.load.report["summary"]["dropped"]
        .as_object()
        .map(|m| m.values().filter_map(|v| v.as_u64()).sum())
        .unwrap_or(0);
    let why = if dropped > 0 {
        format!(
            "{} of the load's connections were lost meanwhile, and what was on its way to them with them",
            super::queues::thousands(dropped as f64)
        )
    } else if at_end as f64 >= 0.5 * lost as f64 {
        // After the last message each subscriber got: the broker had not passed them on
        // when the load stopped — behind, not dropping (gaps in the sequence are drops).
        format!(
            "{} of them came after the last message each subscriber received — still queued in the broker or unread in its sockets when the load stopped, its drain over: the broker fell behind the publishers (it passed on {}/s); {} were gaps in the sequence (dropped)",
            super::queues::thousands(at_end as f64),
            kiln_model::thousands(f.outcome.throughput.unwrap_or(0.0).round() as u64),
            super::queues::thousands(lost.saturating_sub(at_end) as f64),
        )
    } else {
        "the broker dropped them: it drops a subscriber's messages when the queue it keeps for that subscriber is full (mosquitto: max_queued_messages, 1,000 by default, and max_inflight_messages; RabbitMQ: a queue's max-length with overflow drop-head; EMQX: max_mqueue_len) — the subscribers fell behind the publishers, or that limit is below their burst".to_string()
    };
    // Each message owed to every subscriber of its topic: the count is of deliveries.
    let fan_out = owed as f64 / sent.max(1) as f64;
    let of = if fan_out >= 1.5 {
        format!(
            "deliveries owed ({} {unit}s published{qos}, each to {fan_out:.0} subscribers on average)",
            super::queues::thousands(sent as f64),
        )
    } else {
        format!("{unit}s published{qos}")
    };
    // Behind, not dropping, with a thread of the broker never idle: that thread is why it
    // fell behind, and its finding ranks first (the messages left over are its outcome).
    let behind = dropped == 0 && at_end as f64 >= 0.5 * lost as f64;
    let limit = behind
        .then(|| super::cpu::one_thread(f))
        .and_then(|t| t.first().map(|t| t.score));
    let why = match limit {
        Some(_) => format!("{why} — its one saturated thread (its own finding) is why"),
        None => why,
    };
    let claim = format!(
        "{} of the {} {of} never reached a subscriber ({}; {} received): {why}; the latency and rate are those of the {unit}s that got through",
        super::queues::thousands(lost as f64),
        super::queues::thousands(owed as f64),
        pct(share),
        super::queues::thousands(received as f64),
    );
    vec![
        Finding::new(
            "lost",
            Class::MessagesLost,
            limit.map_or(0.5 + 0.45 * share, |l| (0.5 + 0.45 * share).min(l - 1e-6)),
            claim,
        )
            .evidence(f.ev(
                format!("{unit}s lost"),
                format!(
                    "{} of {} owed ({} sent)",
                    super::queues::thousands(lost as f64),
                    super::queues::thousands(owed as f64),
                    super::queues::thousands(sent as f64)
                ),
                "the load's own delivery accounts, per publisher and subscriber (the whole load)",
            ))
            .explains(share * 100.0, format!("of the {unit}s' deliveries"))
            .check(format!(
                "the broker's own counts: mosquitto_sub -p PORT -t '$SYS/broker/publish/messages/+' -t '$SYS/broker/load/publish/dropped/+' -v -W 12 (PUBLISH received less sent: the dropped, for one subscriber), or rabbitmqctl list_queues name messages; the broker's configuration (pid {}): its queue limits",
                f.pid()
            )),
    ]
}

/// Operations failed: answered with a server error (HTTP 5xx) or refused as the client's
/// (4xx: a URL the server does not serve, a rate limit's 429 — fast answers that measure
/// the refusal, not the work), or failed outright (refused, reset, timed out; AMQP nacks
/// and returns).
///
/// False when: under 1% failed.
pub fn errors(f: &Facts) -> Vec<Finding> {
    use kiln_store::columns as col;
    let count = |c: &str| count_of(&f.values(col::LOAD, c)).unwrap_or(0.0);
    let (server, client) = (count("status_5xx"), count("status_4xx"));
    let answered_bad = server + client;
    let outright = count("errors") + count("nacked") + count("returned");
    // The window's operations and its answers by status are counted apart (at its edges
    // they can differ by a few): the answered are at least the ones that failed.
    let ops = f.outcome.ops.unwrap_or(0.0).max(answered_bad);
    let all = ops + outright;
    let bad = answered_bad + outright;
    if all <= 0.0 || bad / all < 0.01 {
        return Vec::new();
    }
    let share = bad / all;
    let unit = &f.outcome.unit;
    let mut parts = Vec::new();
    // The codes of a class, most first, from the load's own count of each status over
    // its run.
    let codes = |class: char| -> Vec<String> {
        f.meta
            .load
            .report
            .pointer("/summary/status")
            .and_then(|v| v.as_object())
            .map(|m| {
                let mut v: Vec<(&String, u64)> = m
                    .iter()
                    .filter(|(k, _)| k.starts_with(class))
                    .filter_map(|(k, n)| Some((k, n.as_u64()?)))
                    .collect();
                v.sort_by_key(|x| std::cmp::Reverse(x.1));
                v.into_iter().take(3).map(|(k, _)| k.clone()).collect()
            })
            .unwrap_or_default()
    };
    if server > 0.0 {
        let c = codes('5');
        let how = if c.is_empty() {
            "a server error (5xx)".to_string()
        } else {
            format!("a server error ({})", c.join(", "))
        };
        parts.push(format!("{} answered with {how}", thousands(server)));
    }
    if client > 0.0 {
        let c = codes('4');
        let meaning = match c.first().map(String::as_str) {
            Some("429") => ": the server's rate limit refused them (Too Many Requests) — the load measured the refusal, not the work",
            Some("404") => ": the server does not serve that URL (Not Found) — the load measured the answer 'not found', not the work",
            Some("401") => ": the server refused the load's credentials (Unauthorized) — the load measured the refusal, not the work",
            Some("403") => ": the server forbade what the load asked for (Forbidden: its permissions on that path, or the load's credentials) — the load measured the refusal, not the work",
            _ => ": the server refused the requests as the client's error",
        };
        parts.push(format!(
            "{} answered with a client error ({}){meaning}",
            thousands(client),
            if c.is_empty() {
                "4xx".to_string()
            } else {
                c.join(", ")
            }
        ));
    }
    if outright > 0.0 {
        parts.push(format!(
            "{} failed outright (refused, reset, timed out, nacked or returned)",
            thousands(outright)
        ));
    }
    vec![Finding::new(
        "errors",
        Class::Errors,
        (share * 3.0).min(0.9),
        format!(
            "{} of the {unit}s failed ({} of {}): {}",
            pct(share),
            thousands(bad),
            thousands(all),
            parts.join("; ")
        ),
    )
    .evidence(f.ev(
        "failed",
        thousands(bad),
        "the load's own counts (status classes, errors)",
    ))
    .explains(share * 100.0, format!("of the {unit}s"))
    .check("the server's own log; curl -sv the same URL; ss -s; nstat -az".to_string())]
}

/// A fleet held fewer connections than it asked for because the server refused the rest:
/// attempts that failed or were refused (a CONNACK's refusal), over the whole load (a
/// fleet short of them at the window's start stays short through it), with the reasons
/// the load counted. A broker's limit (its connection limit, its open files) is the usual
/// cause; the figures are then the smaller fleet's.
///
/// False when: the load is no fleet of connections; under 1% of the connections asked for
/// failed.
pub fn refused(f: &Facts) -> Vec<Finding> {
    let summary = &f.meta.load.report["summary"];
    let mut reasons: Vec<(&str, u64)> = ["failed", "refusals"]
        .iter()
        .filter_map(|k| summary[k].as_object())
        .flatten()
        .filter_map(|(why, n)| Some((why.as_str(), n.as_u64()?)))
        .collect();
    let n: u64 = reasons.iter().map(|r| r.1).sum();
    let Some(asked) = f.meta.load.concurrency.filter(|a| *a >= 1.0) else {
        return Vec::new();
    };
    if n == 0 || (n as f64) < 0.01 * asked {
        return Vec::new();
    }
    reasons.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let said: Vec<String> = reasons
        .iter()
        .take(2)
        .map(|(why, k)| {
            format!(
                "\"{}\" ({})",
                kiln_model::text::clean_cut(why, 120),
                thousands(*k as f64)
            )
        })
        .collect();
    let more = if reasons.len() > 2 {
        format!(", and {} more reasons", reasons.len() - 2)
    } else {
        String::new()
    };
    let held = summary["connected"]
        .as_u64()
        .map(|c| format!(", and the fleet held {}", thousands(c as f64)))
        .unwrap_or_default();
    let share = (n as f64 / asked).min(1.0);
    // What most of them were: refused (closed, reset, a refusal's code), or never answered
    // (the server too busy to accept them, its listen backlog full): each has its causes.
    let of_kind = |kind: Failure| -> u64 {
        reasons
            .iter()
            .filter(|r| failure_kind(r.0) == kind)
            .map(|r| r.1)
            .sum()
    };
    let how = if of_kind(Failure::Refused) * 2 > n {
        "the server refused them — {}; a limit of the server's is the usual cause (its connection limit: mosquitto's max_connections, RabbitMQ's connection_max; its open files: ulimit -n)"
    } else if of_kind(Failure::Unanswered) * 2 > n {
        "the server did not answer them in time — {}; a server too busy to accept connections, or its listen backlog full (ss -ltn: Recv-Q at Send-Q), is the usual cause"
    } else {
        "{}"
    };
    let claim = format!(
        "{} of the {} connections asked for failed{held}: {}{more}, and the figures are the smaller fleet's",
        thousands(n as f64),
        thousands(asked),
        how.replace("{}", &said.join("; ")),
    );
    vec![Finding::new("refused", Class::Errors, 0.5 + 0.45 * share, claim)
        .evidence(f.ev(
            "connection attempts failed or refused",
            format!("{} of {}", thousands(n as f64), thousands(asked)),
            "the load's own counts, by reason (the whole load)",
        ))
        .explains(share * 100.0, "of the connections asked for")
        .check(format!(
            "the server's log (mosquitto: max_connections); ls /proc/{0}/fd | wc -l; grep 'open files' /proc/{0}/limits",
            f.pid()
        ))]
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Failure {
    Refused,
    Unanswered,
    Other,
}

/// What a load's reason for a failed connection says happened (its words, any case).
fn failure_kind(why: &str) -> Failure {
    let w = why.to_ascii_lowercase();
    let any = |words: &[&str]| words.iter().any(|x| w.contains(x));
    if any(&[
        "timed out",
        "timeout",
        "did not come",
        "no answer",
        "not answered",
    ]) {
        Failure::Unanswered
    } else if any(&[
        "refused",
        "reset",
        "closed",
        "not authorized",
        "unavailable",
        "rejected",
        "too many",
        "banned",
        "quota",
    ]) {
        Failure::Refused
    } else {
        Failure::Other
    }
}

/// Each request came on a new connection: the load keeps its connections open (HTTP
/// keep-alive) unless told otherwise, so connections it opened at the pace of its answers
/// were closed by the server (`Connection: close`, or a close after each response). Every
/// request then pays a TCP handshake, an accept and the server's set-up of a connection
/// (a thread, buffers) besides its own work.
///
/// False when: under half as many connections opened as answers; the load asked for it
/// (a `Connection: close` header of its own); the connections were reopened after
/// failures (the errors rule speaks for those).
pub fn connections(f: &Facts) -> Vec<Finding> {
    use kiln_store::columns as col;
    let count = |c: &str| count_of(&f.values(col::LOAD, c));
    let (Some(opened), Some(ops)) = (count("connects"), f.outcome.ops) else {
        return Vec::new();
    };
    let failed = count("errors").unwrap_or(0.0);
    let asked = f.meta.load.argv.iter().any(|a| {
        a.to_ascii_lowercase()
            .replace(' ', "")
            .contains("connection:close")
    });
    let per = opened / ops.max(1.0);
    if ops < 100.0 || per < 0.5 || asked || failed > 0.1 * opened {
        return Vec::new();
    }
    let unit = &f.outcome.unit;
    let mut claim = format!(
        "the server closed its connections after their answers: {} new connections for {} {unit}s ({:.2} per {unit}; the load keeps a connection open until the server closes it), so each {unit} paid a TCP handshake, an accept and the server's set-up of a connection besides its work — turn keep-alive on at the server (no `Connection: close`)",
        thousands(opened),
        thousands(ops),
        per,
    );
    // What the set-up cost the server: its CPU in the kernel's connection paths and in
    // creating and ending threads, when the profile says.
    if let Some(p) = f.cpu_profile() {
        let keep = crate::profile::in_group(p, None);
        let k = crate::profile::kernel_time(p, &keep);
        let setup: u128 = k
            .calls
            .iter()
            .filter(|(c, _, _)| {
                matches!(
                    c.as_str(),
                    "accept"
                        | "accept4"
                        | "close"
                        | "shutdown"
                        | "clone"
                        | "clone3"
                        | "mmap"
                        | "munmap"
                        | "mprotect"
                        | "exit"
                        | "madvise"
                        | "set_robust_list"
                )
            })
            .map(|(_, _, w)| w)
            .sum();
        let share = setup as f64 / k.total.max(1) as f64;
        if share >= 0.05 {
            claim.push_str(&format!(
                "; {} of the server's CPU went to accepting, closing and the threads and memory of connections (accept, close, clone, mmap…)",
                pct(share)
            ));
        }
    }
    vec![Finding::new(
        "connections",
        Class::ConnectionChurn,
        0.45 + 0.4 * per.min(1.0),
        claim,
    )
    .evidence(f.ev(
        "connections opened",
        format!("{} for {} {unit}s", thousands(opened), thousands(ops)),
        "the load's own counts (connects, answered)",
    ))
    .explains(100.0 * per.min(1.0), format!("of the {unit}s on a new connection"))
    .check("curl -sv URL -o /dev/null 2>&1 | grep -i '^< connection'; nstat -az TcpPassiveOpens (twice, a second apart)".to_string())]
}

/// The server started a copy of itself for its connections and each ended soon after (a
/// forking server: PostgreSQL's backend per connection, inetd's, a prefork server told
/// to serve one connection a child): processes it started at a fair share of the pace of
/// its operations, whose CPU the kernel counted for it as they ended under a second old
/// (`cutime` + `cstime` of their parent, once waited for) — a fair share of what serving
/// cost. Every connection then pays a fork, the copy's set-up (its caches, its
/// authentication) and its exit besides its work.
///
/// False when: the copies that ended young used under 0.05 CPU, or under a quarter of
/// the server's CPU; fewer than 20 new processes ran in the window, or fewer than one
/// for every five operations (long-lived workers replaced now and then). Programs the
/// server ran (another executable) are no copies: the programs rule speaks for those.
pub fn processes(f: &Facts) -> Vec<Finding> {
    let (Some(kids), Some(all)) = (f.cpus.young_copies, f.cpus.target) else {
        return Vec::new();
    };
    let share = kids / all.max(1e-9);
    if kids < 0.05 || share < 0.25 {
        return Vec::new();
    }
    let own = (all - kids).max(0.0);
    let Some(p) = f.cpu_profile() else {
        return Vec::new();
    };
    let (started, keep) = crate::profile::new_processes(p, &f.meta.target.pids);
    let per_s = started as f64 / f.secs.max(1e-9);
    let ops_per_s = f.outcome.ops.map(|o| o / f.secs.max(1e-9));
    if started < 20 || ops_per_s.is_some_and(|o| per_s < 0.2 * o) {
        return Vec::new();
    }
    let unit = &f.outcome.unit;
    let pace = match ops_per_s {
        Some(o) => format!(
            " ({per_s:.0} a second, at least: those that ran a sample; {o:.0} {unit}s a second)"
        ),
        None => format!(" ({per_s:.0} a second, at least: those that ran a sample)"),
    };
    let top = crate::profile::top_named(p, &keep, 3);
    let spent = if top.is_empty() {
        String::new()
    } else {
        format!(
            "; the new processes' CPU is mostly in {}",
            top.iter()
                .map(|(n, s)| format!("{n} ({})", pct(*s)))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let claim = format!(
        "the server started a copy of itself for its connections and each ended soon after: {} new processes ran in the window{pace}, and those that ended under a second old used {} beside the rest of the server's {} ({} of its CPU){spent} — each connection pays a fork, the copy's set-up and its exit besides its work: keep connections open (a pool in the client, or a pooler in front such as pgbouncer for PostgreSQL)",
        thousands(started as f64),
        cpus(kids),
        cpus(own),
        pct(share),
    );
    vec![Finding::new(
        "processes",
        Class::ConnectionChurn,
        (0.6 + 0.35 * share).min(0.95),
        claim,
    )
    .evidence({
        let mut e = f.ev(
            "its copies' CPU, those that ended under a second old",
            format!("{} (the rest of the server {})", cpus(kids), cpus(own)),
            "/proc/PID/stat of their parents (cutime + cstime, once waited for)",
        );
        e.series = Some(format!("{}/{}", kiln_store::columns::TARGET, kiln_store::columns::YOUNG_COPIES_CPU));
        e
    })
    .evidence(f.ev(
        "new processes that ran",
        format!("{} in {:.1} s", thousands(started as f64), f.secs),
        format!("CPU profile ({}): processes other than the target's at the start", p.event.name),
    ))
    .explains(share * 100.0, "of the server's CPU")
    .check(format!(
        "perf stat -e sched:sched_process_fork -p {} -- sleep 5   # processes started; ss -tan state time-wait | wc -l",
        f.meta.target.pids.first().copied().unwrap_or(0)
    ))]
}

fn thousands(v: f64) -> String {
    super::queues::thousands(v)
}

#[cfg(test)]
mod tests {
    use super::{failure_kind, Failure};

    #[test]
    fn a_failed_connection_is_refused_or_unanswered_by_its_reason() {
        for (why, kind) in [
            (
                "connect: Connection refused (os error 111)",
                Failure::Refused,
            ),
            ("closed by the broker before its CONNACK", Failure::Refused),
            (
                "the broker refused the connection: Server unavailable",
                Failure::Refused,
            ),
            ("connect: connection timed out", Failure::Unanswered),
            ("CONNACK did not come within 10 s", Failure::Unanswered),
            ("epoll: Bad file descriptor", Failure::Other),
        ] {
            assert_eq!(failure_kind(why), kind, "{why}");
        }
    }
}
