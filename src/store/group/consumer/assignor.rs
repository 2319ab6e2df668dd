//! The server-side assignors of `group.consumer.assignors`: `uniform` (Kafka's UniformAssignor:
//! balanced and sticky, for homogeneous and heterogeneous subscriptions alike) and `range`
//! (Kafka's RangeAssignor: per topic, contiguous ranges to the subscribed members in member-id
//! order).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use uuid::Uuid;

use super::{Assignment, TopicImage};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Assignor {
    Uniform,
    Range,
}

impl Assignor {
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Uniform => "uniform",
            Assignor::Range => "range",
        }
    }

    pub fn from_name(name: &str) -> Option<Assignor> {
        match name {
            "uniform" => Some(Assignor::Uniform),
            "range" => Some(Assignor::Range),
            _ => None,
        }
    }

    /// The target assignment of every member, given each member's subscribed topics (names
    /// present in `image`) and the previous target (for stickiness).
    pub fn assign(
        self,
        subscriptions: &BTreeMap<String, BTreeSet<String>>,
        image: &TopicImage,
        previous: &BTreeMap<String, Assignment>,
    ) -> BTreeMap<String, Assignment> {
        match self {
            Assignor::Uniform => uniform(subscriptions, image, previous),
            Assignor::Range => range(subscriptions, image),
        }
    }
}

fn empty_targets(subscriptions: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, Assignment> {
    subscriptions.keys().map(|m| (m.clone(), Assignment::new())).collect()
}

/// Range: for each topic, its partitions split in contiguous ranges over the members that
/// subscribe to it, sorted by member id; the first `partitions % members` get one more.
fn range(subscriptions: &BTreeMap<String, BTreeSet<String>>, image: &TopicImage) -> BTreeMap<String, Assignment> {
    let mut out = empty_targets(subscriptions);
    let topics: BTreeSet<&String> = subscriptions.values().flatten().collect();
    for name in topics {
        let Some(info) = image.topics.get(name) else { continue };
        let members: Vec<&String> = subscriptions.iter().filter(|(_, s)| s.contains(name)).map(|(m, _)| m).collect();
        let n = members.len() as i32;
        if n == 0 || info.partitions <= 0 {
            continue;
        }
        let (quota, extra) = (info.partitions / n, info.partitions % n);
        let mut next = 0;
        for (i, m) in members.into_iter().enumerate() {
            let count = quota + i32::from((i as i32) < extra);
            if count > 0 {
                let parts: BTreeSet<i32> = (next..next + count).collect();
                if let Some(a) = out.get_mut(m) {
                    a.insert(info.id, parts);
                }
            }
            next += count;
        }
    }
    out
}

/// Uniform: every partition of a subscribed topic goes to one of its subscribers; members keep
/// what they had where they still subscribe to it, new and orphaned partitions go to the least
/// loaded subscriber, then partitions move from a member to a subscriber holding at least two
/// fewer until none can (so homogeneous subscriptions end with counts differing by at most one).
fn uniform(
    subscriptions: &BTreeMap<String, BTreeSet<String>>,
    image: &TopicImage,
    previous: &BTreeMap<String, Assignment>,
) -> BTreeMap<String, Assignment> {
    let members: Vec<&String> = subscriptions.keys().collect();
    // The partitions to place, in a stable order, and who may take each.
    let mut partitions: Vec<((Uuid, i32), Vec<usize>)> = Vec::new();
    let topics: BTreeSet<&String> = subscriptions.values().flatten().collect();
    for name in topics {
        let Some(info) = image.topics.get(name) else { continue };
        let eligible: Vec<usize> = (0..members.len()).filter(|i| subscriptions[members[*i]].contains(name)).collect();
        for p in 0..info.partitions.max(0) {
            partitions.push(((info.id, p), eligible.clone()));
        }
    }
    let index: HashMap<&String, usize> = members.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let mut owner: Vec<Option<usize>> = vec![None; partitions.len()];
    let mut load = vec![0usize; members.len()];
    let mut previous_owner: HashMap<(Uuid, i32), usize> = HashMap::new();
    for (m, a) in previous {
        if let Some(i) = index.get(m) {
            for (topic, parts) in a {
                previous_owner.extend(parts.iter().map(|p| ((*topic, *p), *i)));
            }
        }
    }
    // Stickiness: previous owners keep what they may still have.
    for (k, (tp, eligible)) in partitions.iter().enumerate() {
        if let Some(i) = previous_owner.get(tp).filter(|i| eligible.contains(i)) {
            owner[k] = Some(*i);
            load[*i] += 1;
        }
    }
    // New or orphaned partitions: to the least loaded subscriber (ties: member-id order).
    for (k, (_, eligible)) in partitions.iter().enumerate() {
        if owner[k].is_none() {
            if let Some(&i) = eligible.iter().min_by_key(|i| (load[**i], **i)) {
                owner[k] = Some(i);
                load[i] += 1;
            }
        }
    }
    // Balance: move a partition from a member to a subscriber with at least two fewer.
    // Each move lowers the sum of squared loads, so this ends.
    loop {
        let mut moved = false;
        for (k, (_, eligible)) in partitions.iter().enumerate().rev() {
            let Some(from) = owner[k] else { continue };
            if let Some(&to) = eligible.iter().filter(|i| load[**i] + 2 <= load[from]).min_by_key(|i| (load[**i], **i))
            {
                owner[k] = Some(to);
                load[from] -= 1;
                load[to] += 1;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    let mut out = empty_targets(subscriptions);
    for (k, ((topic, p), _)) in partitions.iter().enumerate() {
        if let Some(a) = owner[k].and_then(|i| out.get_mut(members[i])) {
            a.entry(*topic).or_default().insert(*p);
        }
    }
    out
}
