//! What an MQTT load measures: its counters, latencies, flags and levels, and the
//! schema of each scenario.
use super::super::options::{MqttOptions, Scenario};
use crate::engine::stats::{
    metrics, CounterDef, CounterId, FlagDef, LatencyDef, LevelDef, Schema, Show,
};

metrics! {
    counters(COUNTERS) {
        connected, failed, dropped, reconnects, pings, pongs, sent, acked, received, lost,
        duplicated, out_of_order, refused, foreign,
    }
    latencies(LATENCIES) {
        connect_latency, ping_latency, latency, latency_intended, ack_latency,
    }
    flags(FLAGS) { disconnected, stalled }
    levels(LEVELS) { in_flight, undelivered }
}

const LEVELS: &[LevelDef] = &[
    LevelDef {
        name: "in_flight",
        unit: "msg",
        description: "QoS 1 and 2 messages published and not yet acknowledged by the broker \
                      (PUBACK, PUBCOMP), at the end of the second",
    },
    LevelDef {
        name: "undelivered",
        unit: "msg",
        description: "this load's messages sent and not yet received by its subscribers (each \
                      subscriber's copy counted), at the end of the second",
    },
];

const COUNTERS: &[CounterDef] = &[
    CounterDef::new("connected", "conn", "connections accepted (CONNACK success)", Show::NonZero).rate("connect rate"),
    CounterDef::new("failed", "conn", "connection attempts that failed or were refused", Show::NonZero),
    CounterDef::new("dropped", "conn", "established connections lost", Show::NonZero),
    CounterDef::new("reconnects", "conn", "connections established again (--reconnect)", Show::NonZero),
    CounterDef::new("pings", "ping", "PINGREQ sent", Show::NonZero),
    CounterDef::new("pongs", "ping", "PINGRESP received", Show::NonZero),
    CounterDef::new("sent", "msg", "PUBLISH written", Show::NonZero).rate("sending rate"),
    CounterDef::new("acked", "msg", "PUBACK (QoS 1) or PUBCOMP (QoS 2) received", Show::NonZero).rate("ack rate"),
    CounterDef::new("received", "msg", "PUBLISH delivered to subscribers", Show::NonZero).rate("receiving rate"),
    CounterDef::new("lost", "msg", "messages a subscriber never received (gaps in a publisher's sequence, and its tail after the drain)", Show::NonZero),
    CounterDef::new("duplicated", "msg", "messages a subscriber received again", Show::NonZero),
    CounterDef::new("out_of_order", "msg", "messages received after a later one of the same publisher", Show::NonZero),
    CounterDef::new("refused", "packet", "CONNACK/SUBACK/PUBACK refusals and server DISCONNECTs (by reason code name in events)", Show::NonZero),
    CounterDef::new("foreign", "msg", "messages received in pubsub that this load did not publish (other loads and clients on the topics, or a previous run's backlog): counted, never as duplicates or losses", Show::NonZero),
];

const LATENCIES: &[LatencyDef] = &[
    LatencyDef {
        name: "connect_latency",
        csv: "connect",
        line_label: "connect latency",
        summary_label: "connect latency (TCP connect to CONNACK)",
        description: "TCP connect to CONNACK",
    },
    LatencyDef {
        name: "ping_latency",
        csv: "ping",
        line_label: "ping",
        summary_label: "ping round trip",
        description: "PINGREQ to PINGRESP",
    },
    LatencyDef {
        name: "latency",
        csv: "latency",
        line_label: "min/median/75th/95th/99th/99.9th/max latency",
        summary_label: "end-to-end latency",
        description: "publish (send time in the message) to delivery",
    },
    LatencyDef {
        name: "latency_intended",
        csv: "latency_intended",
        line_label: "from intended send",
        summary_label: "end-to-end latency from intended send",
        description: "intended send time to delivery (no coordinated omission)",
    },
    LatencyDef {
        name: "ack_latency",
        csv: "ack",
        line_label: "ack latency",
        summary_label: "publish to PUBACK/PUBCOMP",
        description: "PUBLISH written to PUBACK (QoS 1) or PUBCOMP (QoS 2)",
    },
];

const FLAGS: &[FlagDef] = &[
    FlagDef {
        name: "disconnected",
        marker: "DISCONNECTED",
        description: "a connection was down",
    },
    FlagDef {
        name: "stalled",
        marker: "STALLED",
        description: "publishers had messages due but sent none",
    },
];

const fn schema(throughput: CounterId, unit: &'static str) -> Schema {
    Schema {
        protocol: "mqtt",
        counters: COUNTERS,
        latencies: LATENCIES,
        flags: FLAGS,
        levels: LEVELS,
        throughput,
        throughput_unit: unit,
        sent: M.sent,
        stall: Some((M.stalled, M.sent)),
    }
}

/// What `conn` measures (throughput: connections per second).
pub static SCHEMA_CONN: Schema = schema(M.connected, "conn/s");
/// What `pub` measures (throughput: messages sent per second).
pub static SCHEMA_PUB: Schema = schema(M.sent, "msg/s");
/// What `sub` and `pubsub` measure (throughput: messages received per second).
pub static SCHEMA_SUB: Schema = schema(M.received, "msg/s");

/// What a scenario measures.
pub fn schema_for(opts: &MqttOptions) -> &'static Schema {
    match opts.scenario {
        Scenario::Conn => &SCHEMA_CONN,
        Scenario::Pub => &SCHEMA_PUB,
        Scenario::Sub | Scenario::PubSub => &SCHEMA_SUB,
    }
}
