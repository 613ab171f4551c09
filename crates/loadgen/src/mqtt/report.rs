//! An MQTT run in words: delivery per publisher, refusals by name, what QoS promised.
use super::driver::{Delivery, Outcome, M, SCHEMA_CONN, SCHEMA_PUB, SCHEMA_SUB};
use super::options::{MqttOptions, Scenario};
use crate::engine::report::{self as er, LoadHeadline, Report};
use crate::engine::stats::{Schema, Tick};
use std::collections::BTreeMap;

/// The protocol's own summary (the `summary` object of the JSON file).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MqttSummary {
    /// `conn`, `sub`, `pub` or `pubsub`.
    pub scenario: Scenario,
    /// QoS of the run.
    pub qos: u8,
    /// Connections at the end that had been established and not lost.
    pub connected: u64,
    /// Pings sent and not answered.
    pub pings_unanswered: u64,
    /// Refusals by packet and reason code name (`CONNACK Not authorized`: 3).
    pub refusals: BTreeMap<String, u64>,
    /// Established connections lost, by reason (`malformed packet from the broker: …`: 4).
    #[serde(default)]
    pub dropped: BTreeMap<String, u64>,
    /// Connection attempts that failed, by reason (`cannot connect: … no ephemeral port
    /// left from 127.0.0.2 …`: 150).
    #[serde(default)]
    pub failed: BTreeMap<String, u64>,
    /// Per publisher of this load: sent, received, lost, duplicated, out of order.
    pub delivery: Vec<Delivery>,
    /// The load's identity in its messages, `NONCE/AGENT` (pub, pubsub).
    #[serde(default)]
    pub load: Option<String>,
    /// Shared subscription whose group other loads' subscribers share: this load's
    /// messages its subscribers did not receive, not judged lost (the run as a whole
    /// judges delivery).
    #[serde(default)]
    pub not_received_here: Option<u64>,
    /// Foreign messages that the run's other agents published (the same nonce, another
    /// agent index): what the run as a whole adds to this load's received.
    #[serde(default)]
    pub from_run: u64,
    /// What the delivery accounting shows, in words.
    pub verdict: String,
}

impl MqttSummary {
    pub(crate) fn of(o: &MqttOptions, r: &Report, out: &Outcome) -> Self {
        let h = &r.headline;
        MqttSummary {
            scenario: o.scenario,
            qos: o.qos,
            connected: h
                .total_of(M.connected)
                .saturating_sub(h.total_of(M.dropped))
                .saturating_sub(h.total_of(M.reconnects)),
            pings_unanswered: h.total_of(M.pings).saturating_sub(h.total_of(M.pongs)),
            refusals: out.refusals.clone(),
            dropped: out.drops.clone(),
            failed: out.failures.clone(),
            delivery: out.deliveries.clone(),
            load: out.load.map(|l| l.to_string()),
            not_received_here: out.unjudged,
            from_run: out.from_run,
            verdict: verdict(
                o,
                h,
                out.unjudged,
                out.deliveries.iter().map(|d| d.lost_at_end).sum(),
            ),
        }
    }
}

/// `at_end`: of the lost, those after the last message each subscriber received (still on
/// their way when the load stopped: a broker behind, not dropping them).
fn verdict(o: &MqttOptions, h: &LoadHeadline, unjudged: Option<u64>, at_end: u64) -> String {
    if let Some(note) = o.unmarked_note().filter(|_| o.scenario != Scenario::Conn) {
        return format!(
            "QoS {}: {} sent, {} received: {note}",
            o.qos,
            h.total_of(M.sent),
            h.total_of(M.received)
        );
    }
    if o.scenario != Scenario::PubSub {
        return match o.scenario {
            Scenario::Conn => format!(
                "{} connections established, {} failed, {} dropped; {} of {} pings answered",
                h.total_of(M.connected),
                h.total_of(M.failed),
                h.total_of(M.dropped),
                h.total_of(M.pongs),
                h.total_of(M.pings)
            ),
            _ => "delivery is accounted per publisher only when both sides run in one process (pubsub)".into(),
        };
    }
    let (lost, dup, ooo) = (
        h.total_of(M.lost),
        h.total_of(M.duplicated),
        h.total_of(M.out_of_order),
    );
    let counts = format!(
        "{} sent, {} received, {lost} lost, {dup} duplicated, {ooo} out of order",
        h.total_of(M.sent),
        h.total_of(M.received)
    );
    let foreign = h.total_of(M.foreign);
    let counts = if foreign > 0 {
        format!("{counts} ({foreign} foreign: other loads' or clients')")
    } else {
        counts
    };
    if let Some(n) = unjudged {
        return format!(
            "QoS {}: {counts}; shared subscription with other loads in the group: {n} of this load's messages went to no subscriber of this load, delivery judged by the run as a whole (the sum of every load's sent and received)",
            o.qos
        );
    }
    // "received" counts each subscriber's copy: with N subscribers a message is owed N times.
    let counts = if at_end > 0 {
        format!(
            "{counts}; {at_end} of the lost came after the last message each subscriber received: still queued in the broker or unread in its sockets when the load stopped (a broker behind), the other {} gaps in the sequence",
            lost.saturating_sub(at_end)
        )
    } else {
        counts
    };
    match o.qos {
        0 if lost == 0 => {
            format!("QoS 0: {counts}: every message arrived (QoS 0 does not promise it)")
        }
        0 if at_end * 2 >= lost => format!(
            "QoS 0: {counts}: {lost} never arrived, most of them behind in the broker when the load stopped (counted, not hidden)"
        ),
        0 => format!(
            "QoS 0: {counts}: the broker dropped {lost} (QoS 0 allows it; counted, not hidden)"
        ),
        1 if lost == 0 => format!("QoS 1: {counts}: at least once held, nothing lost"),
        1 => format!("QoS 1: {counts}: AT LEAST ONCE BROKEN: {lost} messages lost"),
        _ if lost == 0 && dup == 0 => format!("QoS 2: {counts}: exactly once held"),
        _ => format!("QoS 2: {counts}: EXACTLY ONCE BROKEN: {lost} lost, {dup} duplicated"),
    }
}

/// The schema of a scenario.
pub fn schema(o: &MqttOptions) -> &'static Schema {
    match o.scenario {
        Scenario::Conn => &SCHEMA_CONN,
        Scenario::Pub => &SCHEMA_PUB,
        Scenario::Sub | Scenario::PubSub => &SCHEMA_SUB,
    }
}

/// One line per second.
pub fn format_tick(o: &MqttOptions, t: &Tick) -> String {
    er::format_tick(schema(o), &o.id, t)
}

/// The summary lines.
pub fn format_summary(o: &MqttOptions, r: &Report) -> String {
    let h = &r.headline;
    let mut extra = Vec::new();
    if h.total_of(M.pings) > 0 {
        extra.push(format!(
            "pings: {} sent, {} answered",
            h.total_of(M.pings),
            h.total_of(M.pongs)
        ));
    }
    if let Ok(s) = serde_json::from_value::<MqttSummary>(r.summary.clone()) {
        for (name, n) in &s.refusals {
            extra.push(format!("refused: {name} × {n}"));
        }
        for (why, n) in &s.dropped {
            extra.push(format!(
                "dropped: {} × {n}",
                kiln_model::text::clean_cut(why, 200)
            ));
        }
        for (why, n) in &s.failed {
            extra.push(format!(
                "failed: {} × {n}",
                kiln_model::text::clean_cut(why, 300)
            ));
        }
        let bad: Vec<&Delivery> = s
            .delivery
            .iter()
            .filter(|d| d.lost + d.duplicated + d.out_of_order > 0)
            .take(10)
            .collect();
        for d in bad {
            extra.push(format!(
                "publisher {}: sent {}, received {}, lost {}, duplicated {}, out of order {}",
                d.publisher, d.sent, d.received, d.lost, d.duplicated, d.out_of_order
            ));
        }
        extra.push(s.verdict);
    }
    er::format_summary(schema(o), h, &extra)
}
