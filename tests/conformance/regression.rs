//! The four divergences the first run found (Apache Kafka 4.4.0 vs kaas, TV1 and TV2, two
//! partitions, transactional Produce v8 with explicit AddPartitionsToTxn v3), and those later
//! random runs found (I-5 on), as hand-written sequences that run every time. A case that
//! diverges is reported as a KNOWN divergence and fails the run; one whose answers differ as an
//! accepted difference explains (accepted.toml) passes, as in the random runs.

use crate::steps::{Claim, EpochSel, PidSel, SeqSel, Step, Who};

fn init(claim: Claim) -> Step {
    Step::Init { txn: 0, claim, version: 4, timeout_ms: 60_000 }
}

fn add(parts: &[u8], epoch: EpochSel) -> Step {
    Step::Add { txn: 0, parts: parts.to_vec(), pid: PidSel::Own, epoch, version: 3, verify_only: false }
}

fn txn_produce(part: u8, epoch: EpochSel, seq: i32) -> Step {
    Step::Produce {
        who: Who::Txn(0),
        part,
        txnal: true,
        pid: PidSel::Own,
        epoch,
        seq: SeqSel::Abs(seq),
        n: 1,
        version: 8,
    }
}

fn produce(txnal: bool, pid: PidSel, epoch: EpochSel, seq: SeqSel) -> Step {
    Step::Produce { who: Who::Txn(0), part: 0, txnal, pid, epoch, seq, n: 1, version: 8 }
}

fn marker(epoch: i16, commit: bool) -> Step {
    Step::Marker { who: Who::Txn(0), parts: vec![0], epoch: EpochSel::Abs(epoch), commit, version: 1, tv: 0 }
}

/// (name, what Apache Kafka answers at the last step, steps)
pub fn cases() -> Vec<(&'static str, &'static str, Vec<Step>)> {
    vec![
        (
            "I-1 rejected unadded batch leaves no sequence state",
            "Produce at base sequence 3 after a refused unadded batch: AK 45, kaas 0",
            vec![
                init(Claim::None),
                txn_produce(0, EpochSel::Current, 0),
                add(&[0, 1], EpochSel::Current),
                txn_produce(0, EpochSel::Current, 3),
            ],
        ),
        (
            "I-2 first batch of a re-initialized producer at sequence 3",
            "first batch of (P, 2) at base sequence 3: AK 0 (offset 0), kaas 45 (first found as the \
             fence taken for state; kaas now refuses any first sequence but 0 where the producer never \
             wrote: accepted.toml first-batch-of-a-producer-starts-at-sequence-0)",
            vec![
                init(Claim::None),
                init(Claim::None),
                init(Claim::None),
                add(&[0, 1], EpochSel::Current),
                txn_produce(0, EpochSel::Current, 3),
            ],
        ),
        (
            "I-3 v1 marker at an older epoch for a producer that never wrote",
            "WriteTxnMarkers v1 ABORT (P, 0) on an untouched partition: AK 0, kaas 47",
            vec![init(Claim::None), init(Claim::Own(0)), marker(0, false)],
        ),
        (
            "I-4 zombie batch below the partition's epoch after a fence",
            "transactional batch at epoch 1 after a COMMIT marker at epoch 2: AK 47, kaas 48",
            vec![
                init(Claim::None),
                add(&[0], EpochSel::Current),
                Step::Init { txn: 0, claim: Claim::Abs(0), version: 4, timeout_ms: 60_000 },
                marker(2, true),
                txn_produce(0, EpochSel::Abs(1), 0),
            ],
        ),
        (
            "I-5 transactional batch of a producer id never handed out, at a negative epoch",
            "AK 49 (the coordinator does not know it), kaas was 47 (compared with no entry's epoch -1)",
            vec![produce(true, PidSel::Bogus, EpochSel::Abs(-3), SeqSel::Abs(0))],
        ),
        (
            "I-6 transactional batch before InitProducerId, at a negative epoch",
            "AK 0, kaas 49 as accepted (transactional-batch-without-producer-id); kaas was 47",
            vec![produce(true, PidSel::Own, EpochSel::Abs(-2), SeqSel::Abs(0))],
        ),
        (
            "I-7 idempotent batch of a fenced producer at an out-of-order sequence",
            "AK 45 (no state for it here), kaas 47 as accepted (fenced-producer-batch-refused-everywhere)",
            vec![init(Claim::None), init(Claim::None), produce(false, PidSel::Own, EpochSel::Abs(0), SeqSel::Abs(3))],
        ),
        (
            "I-8 TxnOffsetCommit below the epoch of the abort marker on the offsets partition",
            "the fence's markers stuck on p0 (PrepareAbort), the offsets partition has the marker at \
             epoch 1; TxnOffsetCommit v5 at epoch 0: AK 47 (the offsets partition's producer state, \
             before the coordinator), kaas was 51 (the coordinator's pending transition)",
            vec![
                init(Claim::None),
                Step::AddOffsets { txn: 0, epoch: EpochSel::Current, version: 2 },
                add(&[0, 1], EpochSel::Current),
                marker(2, false),
                init(Claim::None),
                Step::TxnCommit { txn: 0, epoch: EpochSel::Abs(0), parts: vec![0], version: 5 },
            ],
        ),
    ]
}
