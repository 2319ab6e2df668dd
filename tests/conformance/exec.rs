//! Runs steps against one broker as a client would: a model of what the client has learned
//! (each producer's id and epoch, the next sequence per partition, the last five batches sent)
//! turns symbolic steps into requests, and each response into a normalized `Answer`.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::answer::{Answer, PidNames, BOGUS_PID};
use crate::apis::{self, TxnSeen};
use crate::steps::{Claim, EpochSel, PidSel, SeqSel, Step, Who};
use crate::wire::Conn;

/// The names one run of a sequence uses on a broker (fresh per run: a rerun while minimizing
/// must not see the state of the earlier one).
#[derive(Clone, Debug)]
pub struct Ids {
    pub topic: String,
    /// A second topic (one partition), created for a run whose AddPartitionsToTxn names it (the
    /// authz mode: WRITE on it or not, beside the first).
    pub other: String,
    pub group: String,
    prefix: String,
}

impl Ids {
    pub fn new(run: &str) -> Ids {
        Ids {
            topic: format!("c{run}"),
            other: format!("c{run}-x"),
            group: format!("g{run}"),
            prefix: format!("t{run}"),
        }
    }

    pub fn txn(&self, k: u8) -> String {
        format!("{}-{k}", self.prefix)
    }

    /// What every transactional id of the run starts with (`txn(k)` is it and `k`).
    pub fn txn_prefix(&self) -> String {
        format!("{}-", self.prefix)
    }
}

/// A batch as sent (a retry sends it again byte for byte).
#[derive(Clone, Debug)]
pub struct Sent {
    pub pid: i64,
    pub epoch: i16,
    pub seq: i32,
    pub n: u8,
    pub txnal: bool,
    pub tag: String,
}

#[derive(Clone, Debug)]
struct Producer {
    pid: i64,
    epoch: i16,
    next: HashMap<u8, i32>,
    sent: HashMap<u8, Vec<Sent>>,
}

impl Default for Producer {
    fn default() -> Self {
        Producer { pid: -1, epoch: -1, next: HashMap::new(), sent: HashMap::new() }
    }
}

/// The latest epoch per producer id that InitProducerId moved it to in a run, as the client
/// learned it: what a zombie is measured against (accepted.toml `zombie`). Kafka's coordinator
/// moves an epoch there in two ways, and kaas fences every partition with both: it hands the
/// new epoch out (answer NONE), or it fences an ongoing transaction and aborts it at E+1
/// (answer CONCURRENT_TRANSACTIONS; the client sees E+1 in DescribeTransactions only).
#[derive(Clone, Debug, Default)]
pub struct Grants(HashMap<i64, i16>);

impl Grants {
    pub fn grant(&mut self, pid: i64, epoch: i16) {
        let latest = self.0.entry(pid).or_insert(epoch);
        *latest = (*latest).max(epoch);
    }

    /// Whether `epoch` is below the latest epoch `pid` was moved to (a zombie's epoch).
    pub fn fenced(&self, pid: i64, epoch: i16) -> bool {
        self.0.get(&pid).is_some_and(|&granted| epoch < granted)
    }
}

pub struct Exec<'a> {
    pub conn: &'a mut Conn,
    /// Where the runner's own waits ask DescribeTransactions (the authz mode: the admin's
    /// connection, as the sequence's user may not describe its transactions); None: `conn`.
    admin: Option<&'a mut Conn>,
    pub ids: &'a Ids,
    pub names: PidNames,
    producers: HashMap<Who, Producer>,
    grants: Grants,
    /// The batch the current step sent and its partition (None when it sent none).
    last_batch: Option<(u8, Sent)>,
    /// (producer id, partition) that a batch or a WriteTxnMarkers step this broker accepted put
    /// there (not the markers an EndTxn writes: where only those put a producer id, both brokers
    /// require sequence 0 alike, so no divergence needs the fact).
    written: HashSet<(i64, u8)>,
    /// Answers whose transaction had to settle and did not within the bound.
    pub settle_timeout: Duration,
}

impl<'a> Exec<'a> {
    pub fn new(conn: &'a mut Conn, admin: Option<&'a mut Conn>, ids: &'a Ids) -> Exec<'a> {
        Exec {
            conn,
            admin,
            ids,
            names: PidNames::default(),
            producers: HashMap::new(),
            grants: Grants::default(),
            last_batch: None,
            written: HashSet::new(),
            settle_timeout: Duration::from_secs(5),
        }
    }

    fn prod(&mut self, w: Who) -> &mut Producer {
        self.producers.entry(w).or_default()
    }

    fn pid_of(&mut self, w: Who, sel: PidSel) -> i64 {
        match sel {
            PidSel::Own => self.prod(w).pid,
            PidSel::Of(o) => self.prod(o).pid,
            PidSel::Bogus => BOGUS_PID,
        }
    }

    fn epoch_of(&mut self, w: Who, sel: EpochSel) -> i16 {
        match sel {
            EpochSel::Current => self.prod(w).epoch,
            EpochSel::Delta(d) => self.prod(w).epoch.saturating_add(d),
            EpochSel::Abs(e) => e,
        }
    }

    /// Whether the last step sent a batch at an epoch below the latest one InitProducerId
    /// handed out for its producer id.
    pub fn sent_by_zombie(&self) -> bool {
        self.last_batch.as_ref().is_some_and(|(_, b)| self.grants.fenced(b.pid, b.epoch))
    }

    /// Whether the last step sent a batch at a sequence other than 0 for a producer id with
    /// nothing accepted on that partition before (eos-rules 15: kaas refuses it).
    pub fn first_write(&self) -> bool {
        self.last_batch.as_ref().is_some_and(|(part, b)| b.seq != 0 && !self.written.contains(&(b.pid, *part)))
    }

    /// A new (pid, epoch) from the coordinator: sequences start again at 0.
    fn adopt(&mut self, w: Who, pid: i64, epoch: i16) {
        let p = self.prod(w);
        p.pid = pid;
        p.epoch = epoch;
        p.next.clear();
    }

    /// Runs one step. COORDINATOR_LOAD_IN_PROGRESS (14) from a coordinator is retried, as
    /// clients do: Apache Kafka loads its coordinator partitions for a while after start.
    pub fn run(&mut self, step: &Step, index: usize) -> Answer {
        let coordinator = matches!(
            step,
            Step::Init { .. } | Step::Add { .. } | Step::AddOffsets { .. } | Step::TxnCommit { .. } | Step::End { .. }
        );
        self.last_batch = None;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let a = self.run_once(step, index);
            let loading =
                a.0.iter()
                    .any(|(f, v)| v == "14" && (f == "err" || f == "top" || f.starts_with('p') || f.starts_with('x')));
            if !(coordinator && loading) || Instant::now() > deadline {
                return a;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn run_once(&mut self, step: &Step, index: usize) -> Answer {
        match step {
            Step::Init { txn, claim, version, timeout_ms } => {
                let w = Who::Txn(*txn);
                let (pid, epoch) = {
                    let p = self.prod(w);
                    match claim {
                        Claim::None => (-1, -1),
                        Claim::Own(d) => (p.pid, p.epoch.saturating_add(*d)),
                        Claim::Abs(e) => (p.pid, *e),
                        Claim::HalfPid => (p.pid, -1),
                        Claim::HalfEpoch => (-1, p.epoch.max(0)),
                        Claim::Bogus => (BOGUS_PID, 0),
                    }
                };
                let id = self.ids.txn(*txn);
                let r = apis::init_producer_id(self.conn, Some(&id), *timeout_ms, pid, epoch, *version);
                self.answer_init(w, r, Some(*txn))
            }
            Step::InitIdem { idem, version } => {
                let r = apis::init_producer_id(self.conn, None, -1, -1, -1, *version);
                self.answer_init(Who::Idem(*idem), r, None)
            }
            Step::Add { txn, parts, pid, epoch, version, verify_only } => {
                let w = Who::Txn(*txn);
                let (pid, epoch) = (self.pid_of(w, *pid), self.epoch_of(w, *epoch));
                let id = self.ids.txn(*txn);
                let topics = (self.ids.topic.as_str(), self.ids.other.as_str());
                apis::add_partitions(self.conn, &id, topics, parts, pid, epoch, *version, *verify_only)
                    .unwrap_or_else(|e| Answer::failed(&e))
            }
            Step::AddOffsets { txn, epoch, version } => {
                let w = Who::Txn(*txn);
                let (pid, epoch) = (self.pid_of(w, PidSel::Own), self.epoch_of(w, *epoch));
                let id = self.ids.txn(*txn);
                apis::add_offsets(self.conn, &id, &self.ids.group, pid, epoch, *version)
                    .unwrap_or_else(|e| Answer::failed(&e))
            }
            Step::TxnCommit { txn, epoch, parts, version } => {
                let w = Who::Txn(*txn);
                let (pid, epoch) = (self.pid_of(w, PidSel::Own), self.epoch_of(w, *epoch));
                let id = self.ids.txn(*txn);
                apis::txn_offset_commit(self.conn, &id, &self.ids.group, &self.ids.topic, parts, pid, epoch, *version)
                    .unwrap_or_else(|e| Answer::failed(&e))
            }
            Step::Produce { who, part, txnal, pid, epoch, seq, n, version } => {
                self.produce(*who, *part, *txnal, *pid, *epoch, *seq, *n, *version, index)
            }
            Step::End { txn, commit, epoch, version } => {
                let w = Who::Txn(*txn);
                let (pid, epoch) = (self.pid_of(w, PidSel::Own), self.epoch_of(w, *epoch));
                let id = self.ids.txn(*txn);
                match apis::end_txn(self.conn, &id, pid, epoch, *commit, *version) {
                    Err(e) => Answer::failed(&e),
                    Ok((code, rpid, repoch)) => {
                        let mut a = Answer::new().with("err", code);
                        if *version >= 5 {
                            a.push("pid", self.names.name(rpid));
                            a.push("epoch", repoch);
                            if code == 0 && rpid >= 0 {
                                self.adopt(w, rpid, repoch);
                            }
                        }
                        if code == 0 {
                            self.settle(&id, &mut a);
                        }
                        a
                    }
                }
            }
            Step::Marker { who, parts, epoch, commit, version, tv } => {
                let (pid, epoch) = (self.pid_of(*who, PidSel::Own), self.epoch_of(*who, *epoch));
                let sent = format!("{}/e{epoch}", self.names.name(pid));
                let a = apis::write_marker(self.conn, &self.ids.topic, parts, pid, epoch, *commit, *version, *tv)
                    .unwrap_or_else(|e| Answer::failed(&e));
                for p in parts {
                    if a.0.iter().any(|(f, v)| *f == format!("p{p}") && v == "0") {
                        self.written.insert((pid, *p));
                    }
                }
                a.with("sent", sent)
            }
            Step::Fetch { part, committed } => {
                apis::fetch(self.conn, &self.ids.topic, *part, *committed, &mut self.names)
                    .unwrap_or_else(|e| Answer::failed(&e))
            }
            Step::ListOffsets { part, committed } => {
                apis::list_offsets(self.conn, &self.ids.topic, *part, *committed).unwrap_or_else(|e| Answer::failed(&e))
            }
            Step::DescribeProducers => apis::describe_producers(self.conn, &self.ids.topic, &mut self.names)
                .unwrap_or_else(|e| Answer::failed(&e)),
            Step::DescribeTxn { txn } => {
                let id = self.ids.txn(*txn);
                apis::describe_txn(self.conn, &id, &self.ids.topic, &mut self.names)
                    .map(|(a, _)| a)
                    .unwrap_or_else(|e| Answer::failed(&e))
            }
            Step::ListTxns { version } => {
                apis::list_transactions(self.conn, *version, &self.ids.txn_prefix(), &mut self.names)
                    .unwrap_or_else(|e| Answer::failed(&e))
            }
            Step::FindCoord { group, txn, version } => {
                let (key, kind) = if *group { (self.ids.group.clone(), 0) } else { (self.ids.txn(*txn), 1) };
                apis::find_coordinator(self.conn, &key, kind, *version).unwrap_or_else(|e| Answer::failed(&e))
            }
        }
    }

    fn answer_init(&mut self, w: Who, r: Result<(i16, i64, i16), String>, txn: Option<u8>) -> Answer {
        match r {
            Err(e) => Answer::failed(&e),
            Ok((code, pid, epoch)) => {
                let mut a = Answer::new().with("err", code).with("pid", self.names.name(pid)).with("epoch", epoch);
                if code == 0 {
                    self.grants.grant(pid, epoch);
                    self.adopt(w, pid, epoch);
                }
                // A fence of an ongoing transaction answers 51 while its abort is written; the
                // abort's epoch (E+1, never handed out) is the coordinator's once it settled.
                if let (51, Some(t)) = (code, txn) {
                    let id = self.ids.txn(t);
                    if let Some(seen) = self.settle(&id, &mut a) {
                        self.grants.grant(seen.producer_id, seen.producer_epoch);
                    }
                }
                a
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn produce(
        &mut self,
        who: Who,
        part: u8,
        txnal: bool,
        pid: PidSel,
        epoch: EpochSel,
        seq: SeqSel,
        n: u8,
        version: i16,
        index: usize,
    ) -> Answer {
        let resend = match seq {
            SeqSel::Resend(k) => {
                let sent = self.prod(who).sent.get(&part).cloned().unwrap_or_default();
                sent.len().checked_sub(1 + k as usize).map(|i| sent[i].clone())
            }
            _ => None,
        };
        let batch = match resend {
            Some(b) => b,
            None => {
                let next = self.prod(who).next.get(&part).copied().unwrap_or(0);
                let seq = match seq {
                    SeqSel::Next(d) => next.saturating_add(d).max(0),
                    SeqSel::Abs(s) => s,
                    SeqSel::Resend(_) => next,
                };
                let n = if seq > i32::MAX - 8 { 1 } else { n.max(1) };
                Sent {
                    pid: self.pid_of(who, pid),
                    epoch: self.epoch_of(who, epoch),
                    seq,
                    n,
                    txnal,
                    tag: format!("s{index}"),
                }
            }
        };
        let txn_id = match (who, batch.txnal) {
            (Who::Txn(k), true) => Some(self.ids.txn(k)),
            _ => None,
        };
        let sent = format!("{}/e{}/s{}", self.names.name(batch.pid), batch.epoch, batch.seq);
        self.last_batch = Some((part, batch.clone()));
        match apis::produce(self.conn, &self.ids.topic, part, txn_id.as_deref(), &batch, version) {
            Err(e) => Answer::failed(&e).with("sent", sent),
            Ok(a) => {
                let a = a.with("sent", sent);
                if a.0.first().is_some_and(|(_, v)| v == "0") {
                    self.written.insert((batch.pid, part));
                    let p = self.prod(who);
                    let end = batch.seq.wrapping_add(batch.n as i32);
                    let next = p.next.entry(part).or_insert(0);
                    if batch.pid == p.pid && (end > *next || batch.seq == 0) {
                        *next = end;
                    }
                    let sent = p.sent.entry(part).or_default();
                    sent.push(batch);
                    if sent.len() > 6 {
                        sent.remove(0);
                    }
                }
                a
            }
        }
    }

    /// Waits until the transaction is no longer completing (its markers written), as a client
    /// retrying CONCURRENT_TRANSACTIONS would; notes a timeout in the answer. Returns the
    /// transaction as last seen (None when DescribeTransactions failed).
    fn settle(&mut self, txn_id: &str, a: &mut Answer) -> Option<TxnSeen> {
        let deadline = Instant::now() + self.settle_timeout;
        loop {
            let conn = match self.admin.as_deref_mut() {
                Some(admin) => admin,
                None => &mut *self.conn,
            };
            let seen = match apis::describe_txn(conn, txn_id, &self.ids.topic, &mut PidNames::default()) {
                Ok((_, seen)) => seen,
                Err(e) => {
                    a.push("settle", e.split(':').next().unwrap_or("io"));
                    return None;
                }
            };
            if !seen.state.starts_with("Prepare") {
                return Some(seen);
            }
            if Instant::now() > deadline {
                a.push("settle", format!("still {}", seen.state));
                return Some(seen);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
