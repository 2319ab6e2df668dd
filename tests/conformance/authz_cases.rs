//! The authz mode's fixed cases, run on every transaction version before the random sequences,
//! so every run covers what the random profiles might miss: a principal without WRITE on its
//! transactional id, one without READ on its group (AddOffsetsToTxn, TxnOffsetCommit), a client
//! sending WriteTxnMarkers without CLUSTER_ACTION, and the other checks of the exactly-once
//! APIs. A case passes when both brokers answer alike and the answers carry the codes it names
//! (Kafka 4.4's KafkaApis: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
//! TxnOffsetCommit, Produce, EndTxn, WriteTxnMarkers, DescribeTransactions, DescribeProducers,
//! ListTransactions).

use kafka_protocol::messages::ApiKey;

use crate::authz::{Acl, Op, Profile, Res};
use crate::gen::Versions;
use crate::report::CaseResult;
use crate::run::{Outcome, Pair};
use crate::steps::{Claim, EpochSel, PidSel, SeqSel, Step, Who, OTHER};

/// One case: its name, the user's ACLs, the steps, and (step, field, value) both answers must
/// carry (Apache Kafka 4.4's answers). `known` names a kaas divergence found by this mode and not
/// yet fixed: such a case fails the run unless CONFORMANCE_KNOWN=report, as regression.rs's.
pub struct Case {
    pub name: &'static str,
    pub profile: Profile,
    pub steps: Vec<Step>,
    pub expect: Vec<(usize, &'static str, &'static str)>,
    pub known: bool,
}

fn allow(res: Res, op: Op) -> Acl {
    Acl { res, op, allow: true, elsewhere: false }
}

fn deny(res: Res, op: Op) -> Acl {
    Acl { res, op, allow: false, elsewhere: false }
}

/// WRITE on T0, WRITE and READ on the topic, READ on the group, IDEMPOTENT_WRITE: what a
/// transactional client needs; each case takes something away or adds a DENY.
fn client(extra: &[Acl], without: &[(Res, Op)]) -> Profile {
    let base = [
        allow(Res::Txn(0), Op::Write),
        allow(Res::Topic, Op::Write),
        allow(Res::Topic, Op::Read),
        allow(Res::Group, Op::Read),
        allow(Res::Cluster, Op::IdempotentWrite),
    ];
    let mut v: Vec<Acl> = base.into_iter().filter(|a| !without.contains(&(a.res, a.op))).collect();
    v.extend_from_slice(extra);
    Profile(v)
}

fn init(txn: u8) -> Step {
    Step::Init { txn, claim: Claim::None, version: 4, timeout_ms: 60_000 }
}

fn add(parts: &[u8], version: i16) -> Step {
    add_for(0, parts, version)
}

fn add_for(txn: u8, parts: &[u8], version: i16) -> Step {
    Step::Add { txn, parts: parts.to_vec(), pid: PidSel::Own, epoch: EpochSel::Current, version, verify_only: false }
}

fn produce(who: Who, part: u8, txnal: bool) -> Step {
    Step::Produce {
        who,
        part,
        txnal,
        pid: PidSel::Own,
        epoch: EpochSel::Current,
        seq: SeqSel::Next(0),
        n: 1,
        version: 8,
    }
}

fn add_offsets() -> Step {
    Step::AddOffsets { txn: 0, epoch: EpochSel::Current, version: 3 }
}

fn txn_commit() -> Step {
    Step::TxnCommit { txn: 0, epoch: EpochSel::Current, parts: vec![0], version: 3 }
}

fn end(commit: bool) -> Step {
    Step::End { txn: 0, commit, epoch: EpochSel::Current, version: 3 }
}

fn marker(version: i16) -> Step {
    Step::Marker { who: Who::Txn(0), parts: vec![0], epoch: EpochSel::Current, commit: true, version, tv: 2 }
}

pub fn cases(v: &Versions) -> Vec<Case> {
    let markers_max = v.max(ApiKey::WriteTxnMarkers);
    let list = v.fit(ApiKey::ListTransactions, 0);
    let find = v.max(ApiKey::FindCoordinator);
    let mut cases = vec![
        Case {
            name: "no WRITE on the transactional id (DESCRIBE only): every transactional API is 53",
            profile: client(&[allow(Res::Txn(0), Op::Describe)], &[(Res::Txn(0), Op::Write)]),
            steps: vec![
                init(0),
                add(&[0], 3),
                produce(Who::Txn(0), 0, true),
                add_offsets(),
                txn_commit(),
                end(true),
                Step::DescribeTxn { txn: 0 },
                Step::ListTxns { version: list },
            ],
            expect: vec![
                (0, "err", "53"),
                (1, "p0", "53"),
                (2, "err", "53"),
                (3, "err", "53"),
                (4, "p0", "53"),
                (5, "err", "53"),
                (6, "err", "105"),
                (7, "txns", "[]"),
            ],
            known: false,
        },
        Case {
            name: "no READ on the group (DESCRIBE only): AddOffsetsToTxn and TxnOffsetCommit are 30, the rest commits",
            profile: client(&[allow(Res::Group, Op::Describe)], &[(Res::Group, Op::Read)]),
            steps: vec![
                init(0),
                add(&[0], 3),
                produce(Who::Txn(0), 0, true),
                add_offsets(),
                txn_commit(),
                end(true),
                Step::DescribeTxn { txn: 0 },
            ],
            expect: vec![
                (0, "err", "0"),
                (1, "p0", "0"),
                (2, "err", "0"),
                (3, "err", "30"),
                (4, "p0", "30"),
                (5, "err", "0"),
                (6, "state", "CompleteCommit"),
            ],
            known: false,
        },
        Case {
            name: "a DENY of READ on the group overrides a PREFIXED ALLOW",
            profile: client(&[allow(Res::GroupPrefix, Op::Read), deny(Res::Group, Op::Read)], &[]),
            steps: vec![init(0), add_offsets(), txn_commit(), Step::DescribeTxn { txn: 0 }],
            expect: vec![(0, "err", "0"), (1, "err", "30"), (2, "p0", "30"), (3, "state", "Empty")],
            known: false,
        },
        Case {
            name: "READ on the group: AddOffsetsToTxn and TxnOffsetCommit pass",
            profile: client(&[], &[]),
            steps: vec![init(0), add_offsets(), txn_commit(), end(true)],
            expect: vec![(0, "err", "0"), (1, "err", "0"), (2, "p0", "0"), (3, "err", "0")],
            known: false,
        },
        Case {
            name: "WriteTxnMarkers from a client without CLUSTER_ACTION is 31 and writes nothing",
            profile: client(&[], &[]),
            steps: vec![
                init(0),
                add(&[0], 3),
                produce(Who::Txn(0), 0, true),
                marker(1),
                marker(markers_max),
                Step::Fetch { part: 0, committed: true },
                end(false),
            ],
            expect: vec![(3, "p0", "31"), (4, "p0", "31"), (5, "records", "[]"), (6, "err", "0")],
            known: false,
        },
        Case {
            name: "WriteTxnMarkers: CLUSTER_ACTION denied by a DENY ALL on the cluster is 31",
            profile: client(&[allow(Res::Cluster, Op::ClusterAction), deny(Res::Cluster, Op::All)], &[]),
            steps: vec![init(0), add(&[0], 3), produce(Who::Txn(0), 0, true), marker(1)],
            expect: vec![(0, "err", "0"), (3, "p0", "31")],
            known: false,
        },
        Case {
            name: "idempotent InitProducerId without IDEMPOTENT_WRITE nor WRITE on any topic is 31",
            profile: client(&[], &[(Res::Cluster, Op::IdempotentWrite), (Res::Topic, Op::Write)]),
            steps: vec![Step::InitIdem { idem: 0, version: 4 }],
            expect: vec![(0, "err", "31")],
            known: false,
        },
        Case {
            name: "idempotent InitProducerId with WRITE on a topic only (KIP-679), then an idempotent Produce",
            profile: client(&[], &[(Res::Cluster, Op::IdempotentWrite)]),
            steps: vec![Step::InitIdem { idem: 0, version: 4 }, produce(Who::Idem(0), 1, false)],
            expect: vec![(0, "err", "0"), (1, "err", "0")],
            known: false,
        },
        Case {
            name: "no WRITE on the topic: AddPartitionsToTxn and a transactional Produce are 29, reads pass",
            profile: client(&[], &[(Res::Topic, Op::Write)]),
            steps: vec![
                init(0),
                add(&[0, 1], 3),
                produce(Who::Txn(0), 0, true),
                Step::Fetch { part: 0, committed: false },
                Step::DescribeProducers,
            ],
            expect: vec![(0, "err", "0"), (1, "p0", "29"), (1, "p1", "29"), (2, "err", "29"), (3, "err", "0")],
            known: false,
        },
        Case {
            name: "no READ, DESCRIBE only on the topic: Fetch, DescribeProducers and TxnOffsetCommit are 29",
            profile: client(&[allow(Res::Topic, Op::Describe)], &[(Res::Topic, Op::Read), (Res::Topic, Op::Write)]),
            steps: vec![
                init(0),
                Step::Fetch { part: 0, committed: true },
                Step::ListOffsets { part: 0, committed: false },
                Step::DescribeProducers,
                add_offsets(),
                txn_commit(),
            ],
            expect: vec![(1, "err", "29"), (2, "err", "0"), (3, "p0.err", "29"), (4, "err", "0"), (5, "p0", "29")],
            known: false,
        },
        Case {
            name: "no DESCRIBE on the transactional id: DescribeTransactions is 53, ListTransactions leaves it out",
            profile: client(&[allow(Res::Txn(1), Op::Write)], &[(Res::Txn(0), Op::Write)]),
            steps: vec![init(1), Step::DescribeTxn { txn: 0 }, Step::ListTxns { version: list }],
            expect: vec![(0, "err", "0"), (1, "err", "53")],
            known: false,
        },
        Case {
            name: "a PREFIXED WRITE on the transactional ids, a LITERAL DENY on T0",
            profile: client(&[allow(Res::TxnPrefix, Op::Write), deny(Res::Txn(0), Op::Write)], &[]),
            steps: vec![init(0), init(1), Step::DescribeTxn { txn: 1 }],
            expect: vec![(0, "err", "53"), (1, "err", "0"), (2, "state", "Empty")],
            known: false,
        },
        Case {
            name: "FindCoordinator needs DESCRIBE on the transactional id (53) or the group (30)",
            profile: client(&[allow(Res::Txn(1), Op::Describe)], &[(Res::Group, Op::Read)]),
            steps: vec![
                Step::FindCoord { group: false, txn: 0, version: find },
                Step::FindCoord { group: false, txn: 1, version: find },
                Step::FindCoord { group: false, txn: 2, version: find },
                Step::FindCoord { group: true, txn: 0, version: find },
            ],
            expect: vec![(0, "err", "0"), (1, "err", "0"), (2, "err", "53"), (3, "err", "30")],
            known: false,
        },
        Case {
            name: "idempotent InitProducerId: a LITERAL DENY of WRITE on the topic leaves a PREFIXED ALLOW (KIP-679)",
            profile: client(
                &[allow(Res::TopicPrefix, Op::Write), deny(Res::Topic, Op::Write)],
                &[(Res::Cluster, Op::IdempotentWrite), (Res::Topic, Op::Write)],
            ),
            steps: vec![Step::InitIdem { idem: 0, version: 4 }],
            expect: vec![(0, "err", "0")],
            known: false,
        },
        Case {
            name: "AddPartitionsToTxn: a topic without WRITE is 29, a missing partition 3, the other partitions 55",
            profile: client(&[], &[]),
            steps: vec![init(0), add(&[0, OTHER], 3), add(&[0, 2], 3), add(&[1], 3), Step::DescribeTxn { txn: 0 }],
            expect: vec![
                (1, "p0", "55"),
                (1, "x0", "29"),
                (2, "p0", "55"),
                (2, "p2", "3"),
                (3, "p1", "0"),
                (4, "partitions", "[T-1]"),
            ],
            known: false,
        },
        // The three below are divergences this mode found (kaas fixed them in 6d71f64).
        Case {
            name: "idempotent InitProducerId: a PREFIXED DENY of WRITE covering the only topic ALLOW is 31 (KIP-679)",
            profile: client(&[deny(Res::TopicPrefix, Op::Write)], &[(Res::Cluster, Op::IdempotentWrite)]),
            steps: vec![Step::InitIdem { idem: 0, version: 4 }],
            expect: vec![(0, "err", "31")],
            known: false,
        },
        Case {
            name: "DescribeTransactions leaves out the partitions of topics the user may not DESCRIBE",
            profile: client(&[deny(Res::TopicPrefix, Op::Describe)], &[]),
            steps: vec![init(0), add(&[0], 3), add_offsets(), Step::DescribeTxn { txn: 0 }, end(false)],
            expect: vec![(1, "p0", "0"), (2, "err", "0"), (3, "state", "Ongoing"), (3, "partitions", "[]")],
            known: false,
        },
    ];
    if v.max(ApiKey::AddPartitionsToTxn) >= 4 {
        cases.push(Case {
            name: "AddPartitionsToTxn v4+ needs only CLUSTER_ACTION: no WRITE on the transactional id nor the topics",
            profile: client(
                &[allow(Res::Cluster, Op::ClusterAction), allow(Res::Txn(1), Op::Write)],
                &[(Res::Txn(0), Op::Write), (Res::Topic, Op::Write)],
            ),
            steps: vec![init(1), add_for(1, &[0, 1], 4), add_for(0, &[0], 4), Step::DescribeTxn { txn: 1 }],
            expect: vec![
                (0, "err", "0"),
                (1, "p0", "0"),
                (1, "p1", "0"),
                (2, "p0", "49"),
                (3, "partitions", "[T-0,T-1]"),
            ],
            known: false,
        });
        cases.push(Case {
            name: "AddPartitionsToTxn v4+ (the brokers' version) from a client without CLUSTER_ACTION is 31",
            profile: client(&[], &[]),
            steps: vec![init(0), add(&[0], 4)],
            expect: vec![(0, "err", "0"), (1, "top", "31")],
            known: false,
        });
    }
    cases
}

/// Runs each case on `pair` (an authz pair).
pub fn run(pair: &mut Pair, v: &Versions) -> Vec<CaseResult> {
    pair.run_all = true;
    let results = cases(v)
        .into_iter()
        .map(|c| {
            pair.set_profile(Some(c.profile.clone()));
            let outcome = pair.run("case", &c.steps);
            pair.hits.clear();
            pair.codes.clear();
            let (ak, kaas) = &pair.last;
            let mut problems = Vec::new();
            match outcome {
                Outcome::Same { .. } => {}
                Outcome::Diverged(d) => problems.push(format!("the brokers diverge from step {} on", d.at)),
                Outcome::Setup(e) => problems.push(format!("set-up failed: {e}")),
            }
            for (i, field, want) in &c.expect {
                for (who, answers) in [("Apache Kafka", ak), ("kaas", kaas)] {
                    let got =
                        answers.get(*i).and_then(|a| a.0.iter().find(|(f, _)| f == field)).map(|(_, v)| v.as_str());
                    if got != Some(*want) {
                        problems.push(format!("step {i}: {who} answered {field}={got:?}, the case expects {want}"));
                    }
                }
            }
            let mut detail = format!("as a user with: {}\n", c.profile);
            for (i, s) in c.steps.iter().enumerate() {
                detail.push_str(&format!("  {i:>2}. {s}\n"));
                if let (Some(a), Some(k)) = (ak.get(i), kaas.get(i)) {
                    detail.push_str(&format!("        Apache Kafka: {a}\n        kaas:         {k}\n"));
                }
            }
            detail.push_str(&problems.join("\n"));
            CaseResult { name: c.name, ok: problems.is_empty(), known: c.known, detail }
        })
        .collect();
    pair.run_all = false;
    results
}
