//! One sequence against both brokers, step by step (Apache Kafka first, then kaas), stopping at
//! the first step whose normalized answers differ.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::accepted::{AcceptedList, Facts};
use crate::answer::{signature, Answer};
use crate::exec::{Exec, Ids};
use crate::steps::Step;
use crate::wire::{create_topic, delete_topic, Conn};

/// Connections to the two brokers of one transaction version.
pub struct Pair {
    pub tv: i16,
    pub ak: Conn,
    pub kaas: Conn,
    accepted: Arc<AcceptedList>,
    /// Divergences an accepted difference explains, met by the runs so far (the sequence went
    /// on after each); the caller takes them.
    pub hits: Vec<Divergence>,
}

#[derive(Clone, Debug)]
pub struct Divergence {
    /// Index of the step whose answers differ.
    pub at: usize,
    pub steps: Vec<Step>,
    /// Both brokers' answers to steps 0..=at.
    pub ak: Vec<Answer>,
    pub kaas: Vec<Answer>,
    pub signature: String,
    /// (accepted.toml id, reason) when an accepted difference explains it.
    pub accepted_by: Option<(String, String)>,
}

pub enum Outcome {
    Same {
        requests: usize,
    },
    Diverged(Divergence),
    /// The harness could not set the sequence up (a topic not created).
    Setup(String),
}

static RUNS: AtomicU64 = AtomicU64::new(0);

impl Pair {
    pub fn new(tv: i16, ak_port: u16, kaas_port: u16, accepted: Arc<AcceptedList>) -> Pair {
        Pair { tv, ak: Conn::new(ak_port), kaas: Conn::new(kaas_port), accepted, hits: Vec::new() }
    }

    /// Runs `steps` on fresh names (`label` and a run counter make them unique).
    pub fn run(&mut self, label: &str, steps: &[Step]) -> Outcome {
        let n = RUNS.fetch_add(1, Ordering::Relaxed);
        let ids = Ids::new(&format!("{}-{label}-r{n}", self.tv));
        for (who, c) in [("Apache Kafka", &mut self.ak), ("kaas", &mut self.kaas)] {
            if let Err(e) = create_topic(c, &ids.topic, 2) {
                return Outcome::Setup(format!("{who}: {e}"));
            }
        }
        let outcome = self.compare(&ids, steps);
        if std::env::var_os("CONFORMANCE_KEEP_TOPICS").is_none() {
            let _ = delete_topic(&mut self.ak, &ids.topic);
            let _ = delete_topic(&mut self.kaas, &ids.topic);
        }
        outcome
    }

    /// Runs the steps on both brokers. A divergence an accepted difference explains is noted in
    /// `hits`; the sequence goes on when the entry says both states are the same, else it ends
    /// there. Any other divergence ends it.
    fn compare(&mut self, ids: &Ids, steps: &[Step]) -> Outcome {
        let mut ak = Exec::new(&mut self.ak, ids);
        let mut kaas = Exec::new(&mut self.kaas, ids);
        let (mut ak_answers, mut kaas_answers) = (Vec::new(), Vec::new());
        for (i, step) in steps.iter().enumerate() {
            let a = ak.run(step, i);
            let k = kaas.run(step, i);
            let same = a == k;
            ak_answers.push(a);
            kaas_answers.push(k);
            if same {
                continue;
            }
            let signature = signature(step.api(), &ak_answers[i], &kaas_answers[i]);
            let both = format!("{} | {}", ak_answers[i], kaas_answers[i]);
            let facts = Facts { zombie: ak.sent_by_zombie() && kaas.sent_by_zombie() };
            let explained = self.accepted.explain(self.tv, &signature, &both, facts);
            let same_state = explained.is_some_and(|a| a.same_state);
            let accepted_by = explained.map(|a| (a.id.clone(), a.reason.clone()));
            let d = Divergence {
                at: i,
                steps: steps[..=i].to_vec(),
                ak: ak_answers.clone(),
                kaas: kaas_answers.clone(),
                signature,
                accepted_by,
            };
            if d.accepted_by.is_none() {
                return Outcome::Diverged(d);
            }
            self.hits.push(d);
            if !same_state {
                return Outcome::Same { requests: i + 1 };
            }
        }
        Outcome::Same { requests: steps.len() }
    }
}

impl Divergence {
    /// The steps with both answers side by side.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (i, step) in self.steps.iter().enumerate() {
            let mark = if i == self.at { ">>" } else { "  " };
            out.push_str(&format!("{mark} {i:>2}. {step}\n"));
            if self.ak[i] == self.kaas[i] {
                out.push_str(&format!("         both:         {}\n", self.ak[i]));
            } else {
                out.push_str(&format!("         Apache Kafka: {}\n", self.ak[i]));
                out.push_str(&format!("         kaas:         {}\n", self.kaas[i]));
            }
        }
        out
    }
}
