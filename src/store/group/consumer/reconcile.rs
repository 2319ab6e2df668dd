//! A member's next assignment towards its target (Kafka's CurrentAssignmentBuilder): partitions
//! it must give up are revoked first, at its current epoch; it gets the target epoch and new
//! partitions only once it no longer owns any partition it must revoke, and a new partition only
//! once no other member owns it (its owner's epoch is -1).

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::{Assignment, ConsumerMember, MemberState};

/// The partitions the member says it owns (its heartbeat's TopicPartitions; None when the
/// heartbeat did not carry them).
pub type Owned = Option<Assignment>;

fn owns_any(owned: &Owned, partitions: &Assignment) -> bool {
    let Some(owned) = owned else { return true };
    owned.iter().any(|(t, ps)| partitions.get(t).is_some_and(|r| ps.iter().any(|p| r.contains(p))))
}

/// The member reconciled one step towards `target` (Kafka's CurrentAssignmentBuilder.build).
/// `partition_epoch(topic, p)` is the epoch of the member owning the partition, -1 when free.
pub fn reconcile(
    member: &ConsumerMember,
    target_epoch: i32,
    target: &Assignment,
    owned: &Owned,
    partition_epoch: impl Fn(Uuid, i32) -> i32,
) -> ConsumerMember {
    match member.state {
        MemberState::Stable if member.member_epoch == target_epoch => member.clone(),
        MemberState::Stable | MemberState::UnreleasedPartitions => {
            next_assignment(member, member.member_epoch, target_epoch, target, owned, partition_epoch)
        }
        MemberState::UnrevokedPartitions => {
            if owned.is_none() || owns_any(owned, &member.pending_revocation) {
                return member.clone();
            }
            // Revoked: it moves on to the next epoch towards the target.
            let epoch = (member.member_epoch + 1).min(target_epoch);
            next_assignment(member, epoch, target_epoch, target, owned, partition_epoch)
        }
    }
}

fn next_assignment(
    member: &ConsumerMember,
    member_epoch: i32,
    target_epoch: i32,
    target: &Assignment,
    owned: &Owned,
    partition_epoch: impl Fn(Uuid, i32) -> i32,
) -> ConsumerMember {
    let mut kept = Assignment::new();
    let mut revoke = Assignment::new();
    let mut assign = Assignment::new();
    let mut unreleased = false;
    let topics: BTreeSet<Uuid> = member.assigned.keys().chain(target.keys()).copied().collect();
    for topic in topics {
        let current = member.assigned.get(&topic).cloned().unwrap_or_default();
        let wanted = target.get(&topic).cloned().unwrap_or_default();
        let k: BTreeSet<i32> = current.intersection(&wanted).copied().collect();
        let r: BTreeSet<i32> = current.difference(&wanted).copied().collect();
        let mut a = BTreeSet::new();
        for p in wanted.difference(&current) {
            // Free, or still this member's (e.g. pending revocation that came back).
            let e = partition_epoch(topic, *p);
            if e == -1 || member.pending_revocation.get(&topic).is_some_and(|s| s.contains(p)) {
                a.insert(*p);
            } else {
                unreleased = true;
            }
        }
        if !k.is_empty() {
            kept.insert(topic, k);
        }
        if !r.is_empty() {
            revoke.insert(topic, r);
        }
        if !a.is_empty() {
            assign.insert(topic, a);
        }
    }
    let mut next = member.clone();
    if !revoke.is_empty() && owns_any(owned, &revoke) {
        // Revoke first: same epoch, the kept partitions, the others pending revocation.
        next.state = MemberState::UnrevokedPartitions;
        next.member_epoch = member_epoch;
        next.assigned = kept;
        next.pending_revocation = revoke;
    } else {
        for (t, ps) in assign {
            kept.entry(t).or_default().extend(ps);
        }
        next.state = if unreleased { MemberState::UnreleasedPartitions } else { MemberState::Stable };
        next.member_epoch = target_epoch;
        next.assigned = kept;
        next.pending_revocation = Assignment::new();
    }
    if next.member_epoch != member.member_epoch {
        next.previous_member_epoch = member.member_epoch;
    }
    next.assignment_epochs = assignment_epochs(member, &next);
    next
}

/// The assignment epochs of what `next` holds (KIP-1251): a partition `before` held keeps its
/// epoch (revoked ones too, while pending); a new one is given at `next`'s member epoch.
fn assignment_epochs(before: &ConsumerMember, next: &ConsumerMember) -> BTreeMap<Uuid, BTreeMap<i32, i32>> {
    let mut out: BTreeMap<Uuid, BTreeMap<i32, i32>> = BTreeMap::new();
    for (topic, ps) in next.assigned.iter().chain(&next.pending_revocation) {
        for &p in ps {
            let since = before.held_since(*topic, p).unwrap_or(next.member_epoch);
            out.entry(*topic).or_default().insert(p, since);
        }
    }
    out
}
