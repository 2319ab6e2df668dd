//! Random but well-formed sequences from a seed: one to three transactional ids and up to two
//! idempotent producers over two partitions, mostly what a client sends, perturbed (claims right,
//! stale, half-set, exhausted; stale and future epochs; duplicate, gapped and retried sequences;
//! foreign and unknown producer ids; retried EndTxn; markers at lower, equal and higher epochs),
//! ending with reads of the state (Fetch both isolation levels, ListOffsets, DescribeProducers,
//! DescribeTransactions).

use std::collections::HashMap;

use kafka_protocol::messages::ApiKey;

use crate::steps::{Claim, EpochSel, PidSel, SeqSel, Step, Who};

/// SplitMix64: small, seedable, the same on every platform.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5eed_c0de_d00d_f00d)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    /// Picks by weight.
    pub fn pick<T: Copy>(&mut self, choices: &[(u64, T)]) -> T {
        let total: u64 = choices.iter().map(|c| c.0).sum();
        let mut r = self.below(total);
        for &(w, v) in choices {
            if r < w {
                return v;
            }
            r -= w;
        }
        choices[0].1
    }
}

/// The versions both brokers accept, per API key.
#[derive(Clone, Debug)]
pub struct Versions(pub HashMap<i16, (i16, i16)>);

impl Versions {
    pub fn intersect(a: &HashMap<i16, (i16, i16)>, b: &HashMap<i16, (i16, i16)>) -> Versions {
        let mut out = HashMap::new();
        for (k, (amin, amax)) in a {
            if let Some((bmin, bmax)) = b.get(k) {
                let (lo, hi) = ((*amin).max(*bmin), (*amax).min(*bmax));
                if lo <= hi {
                    out.insert(*k, (lo, hi));
                }
            }
        }
        Versions(out)
    }
    pub fn range(&self, key: ApiKey) -> (i16, i16) {
        self.0.get(&(key as i16)).copied().unwrap_or((0, -1))
    }
    pub fn max(&self, key: ApiKey) -> i16 {
        self.range(key).1
    }
    /// `wanted` if both accept it, else the closest accepted version.
    pub fn fit(&self, key: ApiKey, wanted: i16) -> i16 {
        let (lo, hi) = self.range(key);
        wanted.clamp(lo, hi.max(lo))
    }
    fn random(&self, rng: &mut Rng, key: ApiKey, at_least: i16) -> i16 {
        let (lo, hi) = self.range(key);
        let lo = lo.max(at_least).min(hi);
        lo + rng.below((hi - lo + 1) as u64) as i16
    }
}

struct Gen<'a> {
    rng: Rng,
    v: &'a Versions,
    txns: u8,
    idems: u8,
    /// Per transactional id: does its client speak the TV2 protocol (EndTxn v5, Produce v12)?
    tv2_client: Vec<bool>,
}

pub fn generate(seed: u64, v: &Versions) -> Vec<Step> {
    let mut rng = Rng::new(seed);
    let txns = rng.pick(&[(3, 1u8), (4, 2), (1, 3)]);
    let idems = rng.pick(&[(5, 0u8), (4, 1), (1, 2)]);
    let tv2 = v.max(ApiKey::EndTxn) >= 5;
    let tv2_client = (0..txns).map(|_| tv2 && rng.chance(50)).collect();
    let mut g = Gen { rng, v, txns, idems, tv2_client };
    let len = 6 + g.rng.below(30) as usize;
    let mut steps = Vec::new();
    for t in 0..txns {
        steps.push(g.init(t, Claim::None));
    }
    for i in 0..idems {
        steps.push(Step::InitIdem {
            idem: i,
            version: g.v.random(&mut Rng::new(seed + i as u64), ApiKey::InitProducerId, 0),
        });
    }
    while steps.len() < len {
        let mut s = g.step();
        steps.append(&mut s);
    }
    for part in 0..2 {
        steps.push(Step::Fetch { part, committed: true });
        steps.push(Step::Fetch { part, committed: false });
    }
    steps.push(Step::ListOffsets { part: 0, committed: true });
    steps.push(Step::DescribeProducers);
    for t in 0..txns {
        steps.push(Step::DescribeTxn { txn: t });
    }
    steps
}

impl Gen<'_> {
    fn txn(&mut self) -> u8 {
        self.rng.below(self.txns as u64) as u8
    }

    fn parts(&mut self) -> Vec<u8> {
        self.rng.pick(&[(4, &[0u8][..]), (3, &[1u8][..]), (4, &[0u8, 1][..])]).to_vec()
    }

    fn epoch(&mut self, stale_percent: u64) -> EpochSel {
        if !self.rng.chance(stale_percent) {
            return EpochSel::Current;
        }
        self.rng.pick(&[
            (5, EpochSel::Delta(-1)),
            (4, EpochSel::Delta(1)),
            (1, EpochSel::Delta(-2)),
            (1, EpochSel::Delta(2)),
            (1, EpochSel::Abs(0)),
            (1, EpochSel::Abs(32766)),
            (1, EpochSel::Abs(32767)),
        ])
    }

    fn init(&mut self, txn: u8, claim: Claim) -> Step {
        let at_least = if claim == Claim::None { 0 } else { 3 };
        let version = self.v.random(&mut self.rng, ApiKey::InitProducerId, at_least);
        let timeout_ms = self.rng.pick(&[(60, 60_000), (1, 0), (1, 900_001)]);
        Step::Init { txn, claim, version, timeout_ms }
    }

    fn step(&mut self) -> Vec<Step> {
        let kind = self.rng.pick(&[
            (10, "init"),
            (2, "init_idem"),
            (12, "add"),
            (4, "add_offsets"),
            (4, "txn_commit"),
            (30, "produce"),
            (10, "end"),
            (5, "marker"),
            (5, "fetch"),
            (3, "list"),
            (3, "producers"),
            (3, "describe"),
        ]);
        match kind {
            "init" => {
                let claim = self.rng.pick(&[
                    (40, Claim::None),
                    (30, Claim::Own(0)),
                    (8, Claim::Own(-1)),
                    (4, Claim::Own(1)),
                    (4, Claim::HalfPid),
                    (4, Claim::HalfEpoch),
                    (4, Claim::Bogus),
                    (3, Claim::Abs(32766)),
                    (2, Claim::Abs(32767)),
                ]);
                let t = self.txn();
                vec![self.init(t, claim)]
            }
            "init_idem" if self.idems > 0 => {
                let idem = self.rng.below(self.idems as u64) as u8;
                vec![Step::InitIdem { idem, version: self.v.random(&mut self.rng, ApiKey::InitProducerId, 0) }]
            }
            "add" => {
                let txn = self.txn();
                let parts = self.parts();
                let pid = self.pid(Who::Txn(txn));
                let epoch = self.epoch(12);
                let (version, verify_only) = if self.rng.chance(75) {
                    (self.v.fit(ApiKey::AddPartitionsToTxn, 3), false)
                } else {
                    let v = self.v.random(&mut self.rng, ApiKey::AddPartitionsToTxn, 0);
                    (v, v >= 4 && self.rng.chance(60))
                };
                vec![Step::Add { txn, parts, pid, epoch, version, verify_only }]
            }
            "add_offsets" => {
                let txn = self.txn();
                let epoch = self.epoch(10);
                vec![Step::AddOffsets { txn, epoch, version: self.v.random(&mut self.rng, ApiKey::AddOffsetsToTxn, 0) }]
            }
            "txn_commit" => {
                let txn = self.txn();
                let epoch = self.epoch(10);
                let parts = self.parts();
                let version = if self.tv2_client[txn as usize] && self.rng.chance(70) {
                    self.v.max(ApiKey::TxnOffsetCommit)
                } else {
                    self.v.random(&mut self.rng, ApiKey::TxnOffsetCommit, 0)
                };
                vec![Step::TxnCommit { txn, epoch, parts, version }]
            }
            "produce" => self.produce(),
            "end" => {
                let txn = self.txn();
                let commit = self.rng.chance(60);
                let epoch = self.epoch(10);
                let version = if self.tv2_client[txn as usize] && self.rng.chance(85) {
                    self.v.max(ApiKey::EndTxn)
                } else if self.rng.chance(70) {
                    self.v.fit(ApiKey::EndTxn, 3)
                } else {
                    self.v.random(&mut self.rng, ApiKey::EndTxn, 0)
                };
                let end = Step::End { txn, commit, epoch, version };
                if self.rng.chance(20) {
                    // A retry: the same request again (TV2: with the epoch the first answer bumped).
                    let retry_epoch = if version >= 5 { EpochSel::Delta(-1) } else { epoch };
                    vec![end, Step::End { txn, commit, epoch: retry_epoch, version }]
                } else {
                    vec![end]
                }
            }
            "marker" => {
                let who = self.who();
                let parts = self.parts();
                let epoch = self.rng.pick(&[
                    (35, EpochSel::Current),
                    (8, EpochSel::Delta(-1)),
                    (25, EpochSel::Delta(1)),
                    (5, EpochSel::Delta(2)),
                    (3, EpochSel::Abs(0)),
                    (2, EpochSel::Abs(32767)),
                ]);
                let version = self.v.random(&mut self.rng, ApiKey::WriteTxnMarkers, 0);
                let tv = self.rng.pick(&[(2, 0i8), (2, 1), (4, 2)]);
                vec![Step::Marker { who, parts, epoch, commit: self.rng.chance(50), version, tv }]
            }
            "fetch" => vec![Step::Fetch { part: self.rng.below(2) as u8, committed: self.rng.chance(60) }],
            "list" => vec![Step::ListOffsets { part: self.rng.below(2) as u8, committed: self.rng.chance(60) }],
            "producers" => vec![Step::DescribeProducers],
            "describe" => vec![Step::DescribeTxn { txn: self.txn() }],
            _ => Vec::new(),
        }
    }

    fn who(&mut self) -> Who {
        if self.idems > 0 && self.rng.chance(20) {
            Who::Idem(self.rng.below(self.idems as u64) as u8)
        } else {
            Who::Txn(self.txn())
        }
    }

    fn pid(&mut self, own: Who) -> PidSel {
        let other = self.who();
        self.rng.pick(&[
            (92, PidSel::Own),
            (4, if other != own { PidSel::Of(other) } else { PidSel::Bogus }),
            (4, PidSel::Bogus),
        ])
    }

    fn produce(&mut self) -> Vec<Step> {
        let who = self.who();
        let txnal = match who {
            Who::Txn(_) => !self.rng.chance(5),
            Who::Idem(_) => self.rng.chance(5),
        };
        let part = self.rng.below(2) as u8;
        let pid = self.pid(who);
        let epoch = self.epoch(12);
        let seq = self.rng.pick(&[
            (70, SeqSel::Next(0)),
            (10, SeqSel::Resend(0)),
            (4, SeqSel::Resend(1)),
            (3, SeqSel::Resend(4)),
            (2, SeqSel::Resend(5)),
            (3, SeqSel::Next(-1)),
            (2, SeqSel::Next(-3)),
            (4, SeqSel::Next(1)),
            (2, SeqSel::Next(3)),
            (4, SeqSel::Abs(0)),
            (1, SeqSel::Abs(i32::MAX)),
        ]);
        let n = 1 + self.rng.below(3) as u8;
        let tv2_client = matches!(who, Who::Txn(t) if self.tv2_client[t as usize]);
        let version = if txnal && tv2_client && self.rng.chance(80) {
            self.v.max(ApiKey::Produce)
        } else {
            let v = self.rng.pick(&[(6, 8i16), (2, 3), (2, 9), (2, 11)]);
            self.v.fit(ApiKey::Produce, v.min(if tv2_client || !txnal { 12 } else { 11 }))
        };
        vec![Step::Produce { who, part, txnal, pid, epoch, seq, n, version }]
    }
}
