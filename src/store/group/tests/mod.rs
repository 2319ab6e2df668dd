//! Unit tests of the group core, one file per area; shared builders here.

mod admin;
mod groups;
mod membership;
mod mixed_mode;
mod offsets;
mod rebalance;
mod stored;
mod subscription;
mod txn_commit;

use super::GroupState::*;
use super::*;

pub(super) fn cfg(delay: u64) -> GroupConfig {
    GroupConfig { initial_rebalance_delay_ms: delay, ..Default::default() }
}
pub(super) fn jreq(version: i16, member_id: &str, inst: Option<&str>, meta: &[u8]) -> JoinRequest {
    JoinRequest {
        version,
        member_id: member_id.into(),
        group_instance_id: inst.map(Into::into),
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), meta.to_vec())],
    }
}
pub(super) fn join(g: &mut Group, now: u64, token: u64, req: JoinRequest, id: &str) -> Vec<MemberAnswer> {
    g.join(now, token, req, || id.to_string())
}
pub(super) fn sreq(generation_id: i32, id: &str, inst: Option<&str>, assignments: &[(&str, &[u8])]) -> SyncRequest {
    SyncRequest {
        generation_id,
        member_id: id.into(),
        group_instance_id: inst.map(Into::into),
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assignments: assignments.iter().map(|(m, a)| (m.to_string(), a.to_vec())).collect(),
    }
}
pub(super) fn join_resp(out: &[MemberAnswer], token: u64) -> JoinResponse {
    match out.iter().find(|r| r.token == token).map(|r| &r.response) {
        Some(Response::Join(j)) => j.clone(),
        other => panic!("no join reply for {token}: {other:?} in {out:?}"),
    }
}
pub(super) fn sync_resp(out: &[MemberAnswer], token: u64) -> SyncResponse {
    match out.iter().find(|r| r.token == token).map(|r| &r.response) {
        Some(Response::Sync(s)) => s.clone(),
        other => panic!("no sync reply for {token}: {other:?} in {out:?}"),
    }
}
pub(super) fn hb(g: &mut Group, now: u64, generation: i32, id: &str, inst: Option<&str>) -> i16 {
    let out = g.heartbeat(now, 999, generation, id, inst);
    match &out.last().unwrap().response {
        Response::Heartbeat(e) => error_code(*e),
        r => panic!("{r:?}"),
    }
}
pub(super) fn oc(topic: &str, partition: i32, offset: i64) -> OffsetCommit {
    OffsetCommit { topic: topic.into(), partition, offset, leader_epoch: 3, metadata: "md".into() }
}
pub(super) fn fetched(g: &Group, topic: &str, partition: i32, require_stable: bool) -> FetchedOffset {
    g.fetch_offsets(Some(&[(topic.to_string(), partition)]), require_stable).remove(0)
}

/// Generation-1 Stable group; member i gets assignment "a-<id>". Syncs happen at t=200.
pub(super) fn stable_group(ids: &[&str], inst: bool) -> Group {
    let mut g = Group::new("g", cfg(100));
    for (i, id) in ids.iter().enumerate() {
        let instance = inst.then(|| format!("i-{id}"));
        assert!(join(&mut g, 0, i as u64, jreq(3, "", instance.as_deref(), b"m"), id).is_empty());
    }
    let mut out = g.tick(100); // initial delay extended once when several members joined
    out.extend(g.tick(200));
    assert_eq!(out.len(), ids.len());
    assert_eq!((g.state(), g.generation_id()), (CompletingRebalance, 1));
    for id in &ids[1..] {
        let instance = inst.then(|| format!("i-{id}"));
        assert!(g.sync(200, 50, sreq(1, id, instance.as_deref(), &[])).is_empty());
    }
    let assignments: Vec<(String, Vec<u8>)> =
        ids.iter().map(|id| (id.to_string(), format!("a-{id}").into_bytes())).collect();
    let leader_inst = inst.then(|| format!("i-{}", ids[0]));
    let req = SyncRequest { assignments, ..sreq(1, ids[0], leader_inst.as_deref(), &[]) };
    let out = g.sync(200, 60, req);
    assert_eq!(out.len(), ids.len());
    assert_eq!(sync_resp(&out, 60).assignment, format!("a-{}", ids[0]).into_bytes());
    assert_eq!(g.state(), Stable);
    g
}
