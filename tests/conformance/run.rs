//! One sequence against both brokers, step by step (Apache Kafka first, then kaas), stopping at
//! the first step whose normalized answers differ.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::accepted::{AcceptedList, Facts};
use crate::answer::{signature, Answer};
use crate::authz::{self, Profile};
use crate::exec::{Exec, Ids};
use crate::steps::{Step, OTHER};
use crate::wire::{create_topic, delete_topic, Conn};

/// Connections to the two brokers of one transaction version.
pub struct Pair {
    pub tv: i16,
    /// The sequence's connections (the authz mode: logged in as the pair's user).
    pub ak: Conn,
    pub kaas: Conn,
    /// The authz mode: the admin's connections and the ACLs of the next runs.
    pub authz: Option<Authz>,
    accepted: Arc<AcceptedList>,
    /// Divergences an accepted difference explains, met by the runs so far (the sequence went
    /// on after each); the caller takes them.
    pub hits: Vec<Divergence>,
    /// The authz mode: authorization codes in Apache Kafka's compared answers, per API (the
    /// caller takes them).
    pub codes: BTreeMap<String, u64>,
    /// Both brokers' answers of the last run (up to where it stopped).
    pub last: (Vec<Answer>, Vec<Answer>),
    /// Run every step even after an unaccepted divergence (the authz mode's fixed cases); the
    /// outcome is still the first divergence.
    pub run_all: bool,
}

/// The authz mode's part of a pair: the super user's connections (topics, ACLs, and the runner's
/// waits on DescribeTransactions) and what the pair's user is granted during a run.
pub struct Authz {
    pub ak_admin: Conn,
    pub kaas_admin: Conn,
    pub principal: String,
    pub profile: Profile,
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
    /// The authz mode: the ACLs the sequence's user held.
    pub profile: Option<Profile>,
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
        Pair {
            tv,
            ak: Conn::new(ak_port),
            kaas: Conn::new(kaas_port),
            authz: None,
            accepted,
            hits: Vec::new(),
            codes: BTreeMap::new(),
            last: (Vec::new(), Vec::new()),
            run_all: false,
        }
    }

    /// The authz mode's pair for thread `slot`: its sequences run as user `u<slot>`.
    pub fn secure(tv: i16, ports: (u16, u16), slot: usize, accepted: Arc<AcceptedList>) -> Pair {
        let (user, pw) = authz::user(slot);
        let admin = |port| {
            let (u, p) = &authz::users(0)[0];
            Conn::with_login(port, u, p)
        };
        Pair {
            ak: Conn::with_login(ports.0, &user, &pw),
            kaas: Conn::with_login(ports.1, &user, &pw),
            authz: Some(Authz {
                ak_admin: admin(ports.0),
                kaas_admin: admin(ports.1),
                principal: format!("User:{user}"),
                profile: Profile::default(),
            }),
            ..Pair::new(tv, ports.0, ports.1, accepted)
        }
    }

    /// The ACLs the user holds in the next runs (the authz mode; ignored otherwise).
    pub fn set_profile(&mut self, profile: Option<Profile>) {
        if let (Some(a), Some(p)) = (self.authz.as_mut(), profile) {
            a.profile = p;
        }
    }

    /// Runs `steps` on fresh names (`label` and a run counter make them unique); in the authz
    /// mode as the pair's user, granted its profile's ACLs on those names for the run.
    pub fn run(&mut self, label: &str, steps: &[Step]) -> Outcome {
        let n = RUNS.fetch_add(1, Ordering::Relaxed);
        let ids = Ids::new(&format!("{}-{label}-r{n}", self.tv));
        self.last = (Vec::new(), Vec::new());
        let (ak, kaas) = match self.authz.as_mut() {
            Some(a) => (&mut a.ak_admin, &mut a.kaas_admin),
            None => (&mut self.ak, &mut self.kaas),
        };
        // The second topic only where an AddPartitionsToTxn names it (the authz mode).
        let other = steps.iter().any(|s| matches!(s, Step::Add { parts, .. } if parts.iter().any(|&p| p >= OTHER)));
        let topics: &[(&str, i32)] = if other { &[(&ids.topic, 2), (&ids.other, 1)] } else { &[(&ids.topic, 2)] };
        for (who, c) in [("Apache Kafka", &mut *ak), ("kaas", &mut *kaas)] {
            for (name, partitions) in topics {
                if let Err(e) = create_topic(c, name, *partitions) {
                    return Outcome::Setup(format!("{who}: {e}"));
                }
            }
        }
        if let Some(a) = self.authz.as_mut() {
            let bindings = a.profile.bindings(&ids, &a.principal);
            for (who, c) in [("Apache Kafka", &mut a.ak_admin), ("kaas", &mut a.kaas_admin)] {
                if let Err(e) = authz::grant(c, &a.principal, &bindings) {
                    return Outcome::Setup(format!("{who}: ACLs for {}: {e}", a.principal));
                }
            }
        }
        let mut outcome = self.compare(&ids, steps);
        if let Some(a) = self.authz.as_mut() {
            for (who, c) in [("Apache Kafka", &mut a.ak_admin), ("kaas", &mut a.kaas_admin)] {
                if let Err(e) = authz::revoke(c, &a.principal) {
                    outcome = Outcome::Setup(format!("{who}: removing the ACLs of {}: {e}", a.principal));
                }
            }
        }
        let (ak, kaas) = match self.authz.as_mut() {
            Some(a) => (&mut a.ak_admin, &mut a.kaas_admin),
            None => (&mut self.ak, &mut self.kaas),
        };
        if std::env::var_os("CONFORMANCE_KEEP_TOPICS").is_none() {
            for (name, _) in topics {
                let _ = delete_topic(ak, name);
                let _ = delete_topic(kaas, name);
            }
        }
        outcome
    }

    /// Runs the steps on both brokers. A divergence an accepted difference explains is noted in
    /// `hits`; the sequence goes on when the entry says both states are the same, else it ends
    /// there. Any other divergence ends it.
    fn compare(&mut self, ids: &Ids, steps: &[Step]) -> Outcome {
        let (profile, ak_admin, kaas_admin) = match self.authz.as_mut() {
            Some(a) => (Some(a.profile.clone()), Some(&mut a.ak_admin), Some(&mut a.kaas_admin)),
            None => (None, None, None),
        };
        let mut ak = Exec::new(&mut self.ak, ak_admin, ids);
        let mut kaas = Exec::new(&mut self.kaas, kaas_admin, ids);
        let (ak_answers, kaas_answers) = &mut self.last;
        ak_answers.clear();
        kaas_answers.clear();
        let mut first = None;
        for (i, step) in steps.iter().enumerate() {
            let a = ak.run(step, i);
            let k = kaas.run(step, i);
            let same = a == k;
            if profile.is_some() {
                authz::tally(&mut self.codes, step.api(), &a);
            }
            ak_answers.push(a);
            kaas_answers.push(k);
            if same {
                continue;
            }
            let signature = signature(step.api(), &ak_answers[i], &kaas_answers[i]);
            let both = format!("{} | {}", ak_answers[i], kaas_answers[i]);
            let facts = Facts { zombie: ak.sent_by_zombie() && kaas.sent_by_zombie(), first_write: kaas.first_write() };
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
                profile: profile.clone(),
            };
            if d.accepted_by.is_none() {
                if self.run_all {
                    first.get_or_insert(d);
                    continue;
                }
                return Outcome::Diverged(d);
            }
            self.hits.push(d);
            if !same_state && !self.run_all {
                return Outcome::Same { requests: i + 1 };
            }
        }
        match first {
            Some(d) => Outcome::Diverged(d),
            None => Outcome::Same { requests: steps.len() },
        }
    }
}

impl Divergence {
    /// The steps with both answers side by side.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Some(p) = &self.profile {
            out.push_str(&format!("   as a user with: {p}\n"));
        }
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
