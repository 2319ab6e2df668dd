//! The authz mode (tests/conformance/README.md, "Authorization"): both brokers serve SASL_PLAINTEXT
//! with PLAIN and the StandardAuthorizer; each sequence runs as a user that holds only the ACLs
//! its profile draws from the seed, so the authorization error codes of the exactly-once APIs
//! are compared along with everything else.
//!
//! Every thread of the run has its own user (`u<slot>`), and a sequence's ACLs (cluster-level
//! ones included) are bound to that user alone: created by the super user before the sequence
//! and deleted after it, so concurrent sequences never see each other's grants (Kafka's
//! idempotent InitProducerId asks whether the principal may WRITE *any* topic, KIP-679).
//! Apache Kafka's StandardAuthorizer applies ACLs from its metadata log, after CreateAcls has
//! answered: the runner waits until DescribeAcls lists them (and, after DeleteAcls, lists none).

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::*;

use crate::answer::Answer;
use crate::exec::Ids;
use crate::gen::{Rng, Versions};
use crate::steps::{Step, OTHER};
use crate::wire::{str_bytes, Conn, WireResult};

/// The super user both brokers name in their super users: it creates the topics and the ACLs.
pub const ADMIN: &str = "admin";

/// (user, password) of every login both brokers accept: the admin first, then one user per
/// thread (`slot`).
pub fn users(slots: usize) -> Vec<(String, String)> {
    let mut v = vec![(ADMIN.to_string(), "admin-secret".to_string())];
    v.extend((0..slots).map(user));
    v
}

pub fn user(slot: usize) -> (String, String) {
    (format!("u{slot}"), format!("u{slot}-secret"))
}

/// What an ACL names, relative to the run's names (`exec::Ids`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Res {
    Cluster,
    Topic,
    /// PREFIXED: the topic's name without its last character.
    TopicPrefix,
    Group,
    GroupPrefix,
    /// The k-th transactional id, LITERAL.
    Txn(u8),
    /// PREFIXED: every transactional id of the run.
    TxnPrefix,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    All,
    Read,
    Write,
    Describe,
    Alter,
    ClusterAction,
    IdempotentWrite,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acl {
    pub res: Res,
    pub op: Op,
    pub allow: bool,
    /// Bound to another host (10.0.0.1), so it never matches the harness's connections.
    pub elsewhere: bool,
}

/// The ACLs one sequence's user holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile(pub Vec<Acl>);

/// An ACL as the wire carries it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Binding {
    pub resource_type: i8,
    pub name: String,
    pub pattern: i8,
    pub principal: String,
    pub host: String,
    pub operation: i8,
    pub permission: i8,
}

// Kafka's codes: ResourceType, PatternType, AclOperation, AclPermissionType.
const ANY: i8 = 1;
const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const CLUSTER: i8 = 4;
const TRANSACTIONAL_ID: i8 = 5;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
const DENY: i8 = 2;
const ALLOW: i8 = 3;

impl Op {
    fn code(self) -> i8 {
        match self {
            Op::All => 2,
            Op::Read => 3,
            Op::Write => 4,
            Op::Alter => 7,
            Op::Describe => 8,
            Op::ClusterAction => 9,
            Op::IdempotentWrite => 12,
        }
    }
}

impl Res {
    fn resolve(self, ids: &Ids) -> (i8, String, i8) {
        let without_last = |s: &str| s[..s.len() - 1].to_string();
        match self {
            Res::Cluster => (CLUSTER, "kafka-cluster".to_string(), LITERAL),
            Res::Topic => (TOPIC, ids.topic.clone(), LITERAL),
            Res::TopicPrefix => (TOPIC, without_last(&ids.topic), PREFIXED),
            Res::Group => (GROUP, ids.group.clone(), LITERAL),
            Res::GroupPrefix => (GROUP, without_last(&ids.group), PREFIXED),
            Res::Txn(k) => (TRANSACTIONAL_ID, ids.txn(k), LITERAL),
            Res::TxnPrefix => (TRANSACTIONAL_ID, ids.txn_prefix(), PREFIXED),
        }
    }
}

impl Profile {
    /// The ACLs for `principal` on the run's names, each once.
    pub fn bindings(&self, ids: &Ids, principal: &str) -> Vec<Binding> {
        let mut v: Vec<Binding> = self
            .0
            .iter()
            .map(|a| {
                let (resource_type, name, pattern) = a.res.resolve(ids);
                Binding {
                    resource_type,
                    name,
                    pattern,
                    principal: principal.to_string(),
                    host: if a.elsewhere { "10.0.0.1" } else { "*" }.to_string(),
                    operation: a.op.code(),
                    permission: if a.allow { ALLOW } else { DENY },
                }
            })
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

/// The profile of a seed: a random subset of what the exactly-once APIs check, sometimes
/// through a PREFIXED pattern, sometimes a DENY that overrides an ALLOW, sometimes an ALLOW for
/// another host. Drawn from its own stream, so the steps are the plain mode's for that seed.
pub fn profile(seed: u64) -> Profile {
    let mut r = Rng::new(seed ^ 0xac1_ac1_ac1);
    let mut acls = Vec::new();
    let mut add = |res, op, allow| acls.push(Acl { res, op, allow, elsewhere: false });
    if r.chance(4) {
        return Profile(Vec::new()); // a user with no ACL at all
    }
    // Transactional ids: WRITE (which implies DESCRIBE) and/or DESCRIBE.
    if r.chance(25) {
        if r.chance(80) {
            add(Res::TxnPrefix, Op::Write, true);
        }
        if r.chance(40) {
            add(Res::TxnPrefix, Op::Describe, true);
        }
    } else {
        for k in 0..3 {
            if r.chance(75) {
                add(Res::Txn(k), Op::Write, true);
            } else if r.chance(50) {
                add(Res::Txn(k), Op::Describe, true);
            }
        }
    }
    if r.chance(4) {
        add(Res::TxnPrefix, Op::All, true);
    }
    if r.chance(10) {
        let op = r.pick(&[(3, Op::Write), (1, Op::Describe), (1, Op::All)]);
        add(Res::Txn(0), op, false);
    }
    // The topic: WRITE, READ, DESCRIBE.
    let topic = if r.chance(20) { Res::TopicPrefix } else { Res::Topic };
    for (percent, op) in [(80, Op::Write), (65, Op::Read), (20, Op::Describe), (4, Op::All)] {
        if r.chance(percent) {
            add(topic, op, true);
        }
    }
    if r.chance(8) {
        let op = r.pick(&[(2, Op::Write), (2, Op::Read), (1, Op::Describe), (1, Op::All)]);
        let res = if r.chance(50) { Res::Topic } else { Res::TopicPrefix };
        add(res, op, false);
    }
    // The group: READ, DESCRIBE.
    let group = if r.chance(15) { Res::GroupPrefix } else { Res::Group };
    if r.chance(70) {
        add(group, Op::Read, true);
    }
    if r.chance(20) {
        add(group, Op::Describe, true);
    }
    if r.chance(8) {
        add(Res::Group, Op::Read, false);
    }
    // The cluster: IDEMPOTENT_WRITE, CLUSTER_ACTION (WriteTxnMarkers, AddPartitionsToTxn v4+),
    // ALTER (WriteTxnMarkers accepts it too).
    for (percent, op) in [(50, Op::IdempotentWrite), (30, Op::ClusterAction), (5, Op::Alter)] {
        if r.chance(percent) {
            add(Res::Cluster, op, true);
        }
    }
    if r.chance(6) {
        let op = r.pick(&[(1, Op::IdempotentWrite), (1, Op::ClusterAction), (1, Op::All)]);
        add(Res::Cluster, op, false);
    }
    // Now and then one ALLOW is bound to another host: it grants nothing here.
    if !acls.is_empty() && r.chance(6) {
        let i = r.below(acls.len() as u64) as usize;
        acls[i].elsewhere = acls[i].allow;
    }
    Profile(acls)
}

/// The authz mode's sequence for a seed: the plain generator's steps (the same seed gives the
/// same steps; some AddPartitionsToTxn name more partitions) with, at random places, ListTransactions (whose answer lists only what the user
/// may describe; also at the end) and FindCoordinator (DESCRIBE on the group or the
/// transactional id), and the seed's profile.
pub fn generate(seed: u64, v: &Versions) -> (Vec<Step>, Profile) {
    let mut steps = crate::gen::generate(seed, v);
    let mut r = Rng::new(seed ^ 0x0115_7a11);
    // Some AddPartitionsToTxn also name the run's other topic (which the profile's PREFIXED topic
    // ACLs cover, its LITERAL ones not), or a partition the topic does not have: the refused
    // topic's partitions are 29 (a missing partition 3), the others OPERATION_NOT_ATTEMPTED.
    for s in steps.iter_mut() {
        if let Step::Add { parts, .. } = s {
            match r.below(100) {
                0..=24 => parts.push(OTHER),
                25..=29 => parts.push(2),
                _ => {}
            }
        }
    }
    let version = |r: &mut Rng, key: ApiKey, at_most: i16| {
        let (lo, hi) = v.range(key);
        let hi = hi.min(at_most);
        (hi >= lo).then(|| lo + r.below((hi - lo + 1) as u64) as i16)
    };
    for _ in 0..1 + r.below(2) {
        let at = r.below(steps.len() as u64) as usize;
        if let Some(version) = version(&mut r, ApiKey::FindCoordinator, i16::MAX) {
            let (group, txn) = (r.chance(40), r.below(2) as u8);
            steps.insert(at, Step::FindCoord { group, txn, version });
        }
    }
    // ListTransactions v0-1 (v2's id pattern is not needed: the user lists only its own ids).
    for _ in 0..1 + r.below(2) {
        let at = r.below(steps.len() as u64) as usize;
        if let Some(version) = version(&mut r, ApiKey::ListTransactions, 1) {
            steps.insert(at, Step::ListTxns { version });
        }
    }
    if let Some(version) = version(&mut r, ApiKey::ListTransactions, 1) {
        steps.push(Step::ListTxns { version });
    }
    (steps, profile(seed))
}

/// The ACLs DescribeAcls lists for `principal`.
pub fn listed(c: &mut Conn, principal: &str) -> WireResult<Vec<Binding>> {
    // Every ACL of the principal: any resource, pattern, host, operation and permission (a
    // null name and host; kafka-protocol's default is the empty string, which matches none).
    let mut req = DescribeAclsRequest::default();
    req.resource_name_filter = None;
    req.host_filter = None;
    req.resource_type_filter = ANY;
    req.pattern_type_filter = ANY;
    req.principal_filter = Some(str_bytes(principal));
    req.operation = ANY;
    req.permission_type = ANY;
    let r: DescribeAclsResponse = c.call(ApiKey::DescribeAcls, 3, req)?;
    if r.error_code != 0 {
        return Err(format!("DescribeAcls error {}", r.error_code));
    }
    let mut v: Vec<Binding> = r
        .resources
        .iter()
        .flat_map(|res| {
            res.acls.iter().map(move |a| Binding {
                resource_type: res.resource_type,
                name: res.resource_name.to_string(),
                pattern: res.pattern_type,
                principal: a.principal.to_string(),
                host: a.host.to_string(),
                operation: a.operation,
                permission: a.permission_type,
            })
        })
        .collect();
    v.sort();
    Ok(v)
}

/// Polls DescribeAcls until it lists exactly `want` for `principal` (at most 30 s).
fn await_listed(c: &mut Conn, principal: &str, want: &[Binding]) -> WireResult<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = listed(c, principal)?;
        if now == want {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "DescribeAcls still lists {} ACLs of {principal}, not the {} wanted",
                now.len(),
                want.len()
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Creates the bindings (as the admin, on `c`) and waits until the broker lists them.
pub fn grant(c: &mut Conn, principal: &str, bindings: &[Binding]) -> WireResult<()> {
    if !bindings.is_empty() {
        let mut req = CreateAclsRequest::default();
        req.creations = bindings
            .iter()
            .map(|b| {
                let mut a = AclCreation::default();
                a.resource_type = b.resource_type;
                a.resource_name = str_bytes(&b.name);
                a.resource_pattern_type = b.pattern;
                a.principal = str_bytes(&b.principal);
                a.host = str_bytes(&b.host);
                a.operation = b.operation;
                a.permission_type = b.permission;
                a
            })
            .collect();
        let r: CreateAclsResponse = c.call(ApiKey::CreateAcls, 3, req)?;
        if let Some(bad) = r.results.iter().find(|x| x.error_code != 0) {
            return Err(format!("CreateAcls error {} ({:?})", bad.error_code, bad.error_message));
        }
    }
    await_listed(c, principal, bindings)
}

/// Deletes every ACL of `principal` and waits until the broker lists none.
pub fn revoke(c: &mut Conn, principal: &str) -> WireResult<()> {
    let mut f = DeleteAclsFilter::default();
    f.resource_name_filter = None;
    f.host_filter = None;
    f.resource_type_filter = ANY;
    f.pattern_type_filter = ANY;
    f.principal_filter = Some(str_bytes(principal));
    f.operation = ANY;
    f.permission_type = ANY;
    let mut req = DeleteAclsRequest::default();
    req.filters = vec![f];
    let r: DeleteAclsResponse = c.call(ApiKey::DeleteAcls, 3, req)?;
    if let Some(bad) = r.filter_results.iter().find(|x| x.error_code != 0) {
        return Err(format!("DeleteAcls error {}", bad.error_code));
    }
    await_listed(c, principal, &[])
}

/// The authorization error codes (and OPERATION_NOT_ATTEMPTED beside a refused topic) an answer
/// carries, counted per API: the run's coverage.
pub fn tally(codes: &mut BTreeMap<String, u64>, api: &str, a: &Answer) {
    let mut seen: Vec<&str> =
        a.0.iter()
            .filter(|(f, _)| {
                f == "err"
                    || f == "top"
                    || f.ends_with(".err")
                    || f.len() == 2 && (f.starts_with('p') || f.starts_with('x'))
            })
            .map(|(_, v)| v.as_str())
            .filter(|v| matches!(*v, "29" | "30" | "31" | "53" | "55"))
            .collect();
    seen.sort();
    seen.dedup();
    for code in seen {
        *codes.entry(format!("{api} {code}")).or_default() += 1;
    }
}

impl fmt::Display for Acl {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let res = match self.res {
            Res::Cluster => "cluster".to_string(),
            Res::Topic => "topic".to_string(),
            Res::TopicPrefix => "topic-prefix".to_string(),
            Res::Group => "group".to_string(),
            Res::GroupPrefix => "group-prefix".to_string(),
            Res::Txn(k) => format!("T{k}"),
            Res::TxnPrefix => "T*-prefix".to_string(),
        };
        let op = format!("{:?}", self.op);
        write!(
            f,
            "{} {op} {res}{}",
            if self.allow { "ALLOW" } else { "DENY" },
            if self.elsewhere { "@10.0.0.1" } else { "" }
        )
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.0.is_empty() {
            return write!(f, "no ACL");
        }
        let v: Vec<String> = self.0.iter().map(|a| a.to_string()).collect();
        write!(f, "{}", v.join(", "))
    }
}
