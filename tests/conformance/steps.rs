//! The requests of a sequence, in symbolic form: producer ids, epochs and sequence numbers are
//! named relative to what the client has learned so far (its model, `exec::Model`), so the same
//! step list means the same thing on Apache Kafka and on kaas, and any sub-list of it (delta
//! debugging) is still a well-formed sequence.

use std::fmt;

/// A producer: the `k`-th transactional id of the sequence, or the `k`-th idempotent producer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Who {
    Txn(u8),
    Idem(u8),
}

/// Which producer id a request carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PidSel {
    /// The producer's own (as last returned to it; -1 before any).
    Own,
    /// Another producer's id.
    Of(Who),
    /// An id no broker handed out.
    Bogus,
}

/// Which epoch a request carries, relative to the producer's current one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpochSel {
    Current,
    Delta(i16),
    Abs(i16),
}

/// Which base sequence a batch carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeqSel {
    /// The next one the producer expects to send on that partition, plus a delta (a duplicate
    /// below 0, a gap above).
    Next(i32),
    Abs(i32),
    /// A byte-for-byte retry of the `k`-th last batch sent to that partition (0 = the last).
    Resend(u8),
}

/// The (producer id, epoch) an InitProducerId claims (KIP-360, v3+).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    None,
    /// (own pid, current epoch + delta): 0 is the right claim, -1 a stale one.
    Own(i16),
    Abs(i16),
    HalfPid,
    HalfEpoch,
    Bogus,
}

/// A request of a sequence. `ListTxns` (ListTransactions) and `FindCoord` (FindCoordinator) only
/// in the authz mode: the plain mode's brokers list every concurrent sequence's transactions, and
/// its coordinators are always found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Init { txn: u8, claim: Claim, version: i16, timeout_ms: i32 },
    InitIdem { idem: u8, version: i16 },
    Add { txn: u8, parts: Vec<u8>, pid: PidSel, epoch: EpochSel, version: i16, verify_only: bool },
    AddOffsets { txn: u8, epoch: EpochSel, version: i16 },
    TxnCommit { txn: u8, epoch: EpochSel, parts: Vec<u8>, version: i16 },
    Produce { who: Who, part: u8, txnal: bool, pid: PidSel, epoch: EpochSel, seq: SeqSel, n: u8, version: i16 },
    End { txn: u8, commit: bool, epoch: EpochSel, version: i16 },
    Marker { who: Who, parts: Vec<u8>, epoch: EpochSel, commit: bool, version: i16, tv: i8 },
    Fetch { part: u8, committed: bool },
    ListOffsets { part: u8, committed: bool },
    DescribeProducers,
    DescribeTxn { txn: u8 },
    ListTxns { version: i16 },
    FindCoord { group: bool, txn: u8, version: i16 },
}

impl Step {
    /// The API's name (divergence classes are grouped by it).
    pub fn api(&self) -> &'static str {
        match self {
            Step::Init { .. } | Step::InitIdem { .. } => "InitProducerId",
            Step::Add { .. } => "AddPartitionsToTxn",
            Step::AddOffsets { .. } => "AddOffsetsToTxn",
            Step::TxnCommit { .. } => "TxnOffsetCommit",
            Step::Produce { .. } => "Produce",
            Step::End { .. } => "EndTxn",
            Step::Marker { .. } => "WriteTxnMarkers",
            Step::Fetch { .. } => "Fetch",
            Step::ListOffsets { .. } => "ListOffsets",
            Step::DescribeProducers => "DescribeProducers",
            Step::DescribeTxn { .. } => "DescribeTransactions",
            Step::ListTxns { .. } => "ListTransactions",
            Step::FindCoord { .. } => "FindCoordinator",
        }
    }
}

fn who(w: &Who) -> String {
    match w {
        Who::Txn(k) => format!("T{k}"),
        Who::Idem(k) => format!("I{k}"),
    }
}

/// `p<k>`: partition k of the sequence's topic; `x<k>`: partition k of its other topic (an index
/// of `OTHER` and above, the authz mode's AddPartitionsToTxn only).
fn parts(ps: &[u8]) -> String {
    ps.iter().map(|&p| part_name(p)).collect::<Vec<_>>().join(",")
}

/// Partition indexes from this one on name the other topic's partitions (`Ids::other`).
pub const OTHER: u8 = 10;

pub fn part_name(p: u8) -> String {
    if p >= OTHER {
        format!("x{}", p - OTHER)
    } else {
        format!("p{p}")
    }
}

impl fmt::Display for PidSel {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            PidSel::Own => write!(f, "own"),
            PidSel::Of(w) => write!(f, "pid({})", who(w)),
            PidSel::Bogus => write!(f, "bogus"),
        }
    }
}

impl fmt::Display for EpochSel {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            EpochSel::Current => write!(f, "E"),
            EpochSel::Delta(d) => write!(f, "E{d:+}"),
            EpochSel::Abs(e) => write!(f, "{e}"),
        }
    }
}

impl fmt::Display for SeqSel {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            SeqSel::Next(0) => write!(f, "next"),
            SeqSel::Next(d) => write!(f, "next{d:+}"),
            SeqSel::Abs(s) => write!(f, "{s}"),
            SeqSel::Resend(k) => write!(f, "resend#{k}"),
        }
    }
}

impl fmt::Display for Claim {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Claim::None => write!(f, "no claim"),
            Claim::Own(0) => write!(f, "claim (P, E)"),
            Claim::Own(d) => write!(f, "claim (P, E{d:+})"),
            Claim::Abs(e) => write!(f, "claim (P, {e})"),
            Claim::HalfPid => write!(f, "claim (P, -1)"),
            Claim::HalfEpoch => write!(f, "claim (-1, E)"),
            Claim::Bogus => write!(f, "claim (bogus, 0)"),
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Step::Init { txn, claim, version, timeout_ms } => {
                write!(f, "InitProducerId v{version} T{txn} {claim} timeout={timeout_ms}")
            }
            Step::InitIdem { idem, version } => write!(f, "InitProducerId v{version} I{idem} (idempotent)"),
            Step::Add { txn, parts: ps, pid, epoch, version, verify_only } => write!(
                f,
                "AddPartitionsToTxn v{version} T{txn} pid={pid} epoch={epoch} [{}]{}",
                parts(ps),
                if *verify_only { " VerifyOnly" } else { "" }
            ),
            Step::AddOffsets { txn, epoch, version } => write!(f, "AddOffsetsToTxn v{version} T{txn} epoch={epoch}"),
            Step::TxnCommit { txn, epoch, parts: ps, version } => {
                write!(f, "TxnOffsetCommit v{version} T{txn} epoch={epoch} [{}]", parts(ps))
            }
            Step::Produce { who: w, part, txnal, pid, epoch, seq, n, version } => write!(
                f,
                "Produce v{version} {} {} to p{part} pid={pid} epoch={epoch} seq={seq} n={n}",
                who(w),
                if *txnal { "transactional" } else { "idempotent" }
            ),
            Step::End { txn, commit, epoch, version } => {
                write!(f, "EndTxn v{version} T{txn} {} epoch={epoch}", if *commit { "COMMIT" } else { "ABORT" })
            }
            Step::Marker { who: w, parts: ps, epoch, commit, version, tv } => write!(
                f,
                "WriteTxnMarkers v{version} {} {} epoch={epoch} [{}]{}",
                if *commit { "COMMIT" } else { "ABORT" },
                who(w),
                parts(ps),
                if *version >= 2 { format!(" tv={tv}") } else { String::new() }
            ),
            Step::Fetch { part, committed } => {
                write!(f, "Fetch p{part} {}", if *committed { "read_committed" } else { "read_uncommitted" })
            }
            Step::ListOffsets { part, committed } => {
                write!(
                    f,
                    "ListOffsets p{part} latest {}",
                    if *committed { "read_committed" } else { "read_uncommitted" }
                )
            }
            Step::DescribeProducers => write!(f, "DescribeProducers p0,p1"),
            Step::DescribeTxn { txn } => write!(f, "DescribeTransactions T{txn}"),
            Step::ListTxns { version } => write!(f, "ListTransactions v{version}"),
            Step::FindCoord { group: true, version, .. } => write!(f, "FindCoordinator v{version} group"),
            Step::FindCoord { group: false, txn, version } => write!(f, "FindCoordinator v{version} T{txn}"),
        }
    }
}
