//! A cluster's nodes in the run report: when a run recorded several hosts (`-p HOST:PID`,
//! every sample labelled `host=NAME`), each node's own flame graph follows the whole
//! cluster's (the merged view), named `EVENT on NODE`, with the same window selection.
use kiln_compare::nodes::{hosts_of, node_profile};
use kiln_model::Profile;

/// Each node's profile of every event that holds several nodes.
pub(crate) fn per_node(profiles: &[&Profile]) -> Vec<Profile> {
    let mut out = Vec::new();
    for p in profiles {
        let hosts = hosts_of(p);
        if hosts.len() < 2 {
            continue;
        }
        for h in hosts {
            let mut n = node_profile(p, &h);
            n.event.name = format!("{} on {h}", p.event.name);
            out.push(n);
        }
    }
    out
}
