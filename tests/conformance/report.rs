//! What a run found, per transaction version: counts, the known divergences (regression.rs), and
//! each divergence class with its first seed, its minimized sequence and both answers.

use std::collections::BTreeMap;

use crate::run::Divergence;

pub struct Known {
    pub name: &'static str,
    pub expect: &'static str,
    pub diverged: bool,
    pub detail: String,
    pub signature: String,
}

pub struct Class {
    pub first_seed: u64,
    pub count: u64,
    pub found: Divergence,
    /// The minimized sequence and the number of reruns it took.
    pub minimized: Option<(Divergence, usize)>,
    /// (accepted.toml id, reason)
    pub accepted_by: Option<(String, String)>,
    /// Whether the diverging prefix diverged the same way when run again.
    pub reproduced: bool,
}

/// A fixed case of the authz mode (`authz_cases`): the same answers on both brokers, and the
/// codes it is there for.
pub struct CaseResult {
    pub name: &'static str,
    pub ok: bool,
    /// A kaas divergence this mode found, not fixed yet (fails only with CONFORMANCE_KNOWN=fail).
    pub known: bool,
    pub detail: String,
}

pub struct TvReport {
    pub tv: i16,
    /// "" (plain) or "authz".
    pub mode: &'static str,
    pub sequences: u64,
    /// Requests compared (each sent to both brokers), up to the first divergence of a sequence.
    pub requests: u64,
    pub diverged: u64,
    /// Sequences that met at least one accepted difference.
    pub with_accepted: u64,
    pub classes: BTreeMap<String, Class>,
    pub known: Vec<Known>,
    pub setup_failures: Vec<String>,
    pub seconds: u64,
    /// The authz mode: its fixed cases, and the authorization codes in Apache Kafka's compared
    /// answers ("<API> <code>": answers carrying it).
    pub cases: Vec<CaseResult>,
    pub codes: BTreeMap<String, u64>,
}

impl TvReport {
    pub fn new(tv: i16) -> TvReport {
        TvReport {
            tv,
            sequences: 0,
            requests: 0,
            diverged: 0,
            with_accepted: 0,
            classes: BTreeMap::new(),
            known: Vec::new(),
            setup_failures: Vec::new(),
            seconds: 0,
            mode: "",
            cases: Vec::new(),
            codes: BTreeMap::new(),
        }
    }

    /// Fixed cases of the authz mode that failed: (not known, known kaas divergences).
    pub fn failed_cases(&self) -> (usize, usize) {
        let failed = |known: bool| self.cases.iter().filter(|c| !c.ok && c.known == known).count();
        (failed(false), failed(true))
    }

    /// The variables that run one seed again in this mode.
    fn rerun(&self, seed: u64) -> String {
        let mode = if self.mode.is_empty() { "plain" } else { self.mode };
        format!("CONFORMANCE_MODES={mode} CONFORMANCE_TV={} CONFORMANCE_SEED_LIST={seed}", self.tv)
    }

    /// Files a divergence (an accepted one, or the one that ended a sequence) under its class.
    pub fn add(&mut self, seed: u64, d: Divergence, reproduced: bool) {
        let key = match (&d.accepted_by, reproduced) {
            (Some((id, _)), _) => format!("{} [accepted: {id}]", d.signature),
            (None, true) => d.signature.clone(),
            (None, false) => format!("{} [not reproduced]", d.signature),
        };
        let accepted_by = d.accepted_by.clone();
        let class = self.classes.entry(key).or_insert_with(|| Class {
            first_seed: seed,
            count: 0,
            found: d,
            minimized: None,
            accepted_by,
            reproduced,
        });
        class.count += 1;
    }

    /// Divergent sequences no accepted difference explains (and that reproduced).
    pub fn unexplained(&self) -> usize {
        self.classes.values().filter(|c| c.accepted_by.is_none() && c.reproduced).map(|c| c.count as usize).sum()
    }

    /// Divergent sequences whose divergence did not happen again on a rerun.
    pub fn not_reproduced(&self) -> u64 {
        self.classes.values().filter(|c| c.accepted_by.is_none() && !c.reproduced).map(|c| c.count).sum()
    }

    pub fn render(&self) -> String {
        let mut o = String::new();
        let accepted: u64 = self.classes.values().filter(|c| c.accepted_by.is_some()).map(|c| c.count).sum();
        let mode = match self.mode {
            "" => String::new(),
            m => format!(" {m} (SASL/PLAIN, StandardAuthorizer, a user per sequence with some of the ACLs)"),
        };
        o.push_str(&format!(
            "=== TV{}{mode}: {} random sequences, {} requests compared on each broker; {} without an unaccepted \
             divergence ({} of them met accepted differences, {} in all); {} ended at an unaccepted \
             divergence ({} unexplained, {} not reproduced) in {} classes; {} set-up failures; {} s\n",
            self.tv,
            self.sequences,
            self.requests,
            self.sequences - self.diverged - self.setup_failures.len() as u64,
            self.with_accepted,
            accepted,
            self.diverged,
            self.unexplained(),
            self.not_reproduced(),
            self.classes.len(),
            self.setup_failures.len(),
            self.seconds
        ));
        for c in &self.cases {
            let status = match (c.ok, c.known) {
                (true, _) => "ok",
                (false, false) => "FAILED",
                (false, true) => "STILL DIVERGES (known kaas bug, fix pending)",
            };
            o.push_str(&format!("--- authz case {}: {status}\n", c.name));
            if !c.ok {
                o.push_str(&indent(&c.detail));
            }
        }
        if !self.codes.is_empty() {
            let v: Vec<String> = self.codes.iter().map(|(k, n)| format!("{k}: {n}")).collect();
            o.push_str(&format!(
                "--- authorization codes in Apache Kafka's compared answers of the random sequences \
                 (answers carrying the code, per API): {}\n",
                v.join(", ")
            ));
        }
        for k in &self.known {
            let status =
                if k.diverged { "STILL DIVERGES (known kaas bug, fix pending)" } else { "fixed: same answers" };
            o.push_str(&format!("--- known {}: {status}\n    expected: {}\n", k.name, k.expect));
            if k.diverged {
                o.push_str(&indent(&k.detail));
            }
        }
        for (sig, c) in &self.classes {
            let known = self.known.iter().find(|k| k.diverged && k.signature == *sig);
            let verdict = match (&c.accepted_by, known) {
                (Some((id, reason)), _) => format!("ACCEPTED ({id}: {reason})"),
                (None, _) if !c.reproduced => "NOT REPRODUCED on a rerun (timing-dependent)".to_string(),
                (None, Some(k)) => format!("UNEXPLAINED, same signature as known {}", k.name),
                (None, None) => "UNEXPLAINED".to_string(),
            };
            o.push_str(&format!(
                "--- class [{verdict}] {sig}\n    {} sequences, first seed {} (rerun: {})\n",
                c.count,
                c.first_seed,
                self.rerun(c.first_seed)
            ));
            match &c.minimized {
                Some((d, runs)) => {
                    o.push_str(&format!(
                        "    minimized from {} to {} steps in {runs} reruns:\n",
                        c.found.steps.len(),
                        d.steps.len()
                    ));
                    o.push_str(&indent(&d.render()));
                }
                None => {
                    o.push_str("    not minimized; as found:\n");
                    o.push_str(&indent(&c.found.render()));
                }
            }
        }
        for f in &self.setup_failures {
            o.push_str(&format!("--- set-up failure: {f}\n"));
        }
        o
    }
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    {l}\n")).collect()
}

pub fn render_all(reports: &[TvReport]) -> String {
    let mut o = String::from("# kaas vs Apache Kafka 4.4.0: differential conformance report\n");
    for r in reports {
        o.push_str(&r.render());
    }
    o
}
