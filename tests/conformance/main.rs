//! Differential conformance: the same random but well-formed sequences of
//! exactly-once requests against Apache Kafka 4.4 and kaas, every answer compared.
//! See tests/conformance/README.md. Environment:
//!   CONFORMANCE_MODES=plain,authz  the plain mode, and the authz mode (SASL and ACLs, authz_run.rs)
//!   CONFORMANCE_SEEDS=200        random sequences per transaction version (plain mode)
//!   CONFORMANCE_AUTHZ_SEEDS=100  random sequences per transaction version (authz mode)
//!   CONFORMANCE_SEED_START=0     first seed (a divergence names its seed: rerun it alone)
//!   CONFORMANCE_SEED_LIST=3,17   exactly these seeds instead
//!   CONFORMANCE_TV=1,2           transaction versions (a cluster pair each)
//!   CONFORMANCE_THREADS=12       sequences run at once (mostly waiting for markers to settle)
//!   CONFORMANCE_MINIMIZE=5       divergence classes minimized per TV (0: none)
//!   CONFORMANCE_MINIMIZE_RUNS=60  reruns allowed per minimization
//!   CONFORMANCE_KNOWN=fail|report  whether the known divergences (regression.rs) fail the run
//!   CONFORMANCE_REPORT=target/conformance-report.txt

#[path = "../common/mod.rs"]
mod common;

mod accepted;
mod answer;
mod apache;
mod apis;
mod authz;
mod authz_cases;
mod authz_run;
mod ddmin;
mod exec;
mod gen;
mod regression;
mod report;
mod run;
mod secure_kaas;
mod steps;
mod wire;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use accepted::AcceptedList;
use report::{Known, TvReport};
use run::{Outcome, Pair};

fn env_or<T: std::str::FromStr>(key: &str, default: T) -> T {
    std::env::var(key).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

/// The settings every mode shares.
pub struct RunConfig {
    pub start: u64,
    pub threads: usize,
    pub accepted: std::sync::Arc<AcceptedList>,
}

#[test]
fn conformance() {
    let seeds: u64 = env_or("CONFORMANCE_SEEDS", 200);
    let authz_seeds: u64 = env_or("CONFORMANCE_AUTHZ_SEEDS", 100);
    let modes = std::env::var("CONFORMANCE_MODES").unwrap_or_else(|_| "plain,authz".into());
    let modes: Vec<&str> = modes.split(',').map(str::trim).collect();
    let tvs: Vec<i16> = std::env::var("CONFORMANCE_TV")
        .unwrap_or_else(|_| "1,2".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let known_fail = std::env::var("CONFORMANCE_KNOWN").map(|v| v != "report").unwrap_or(true);
    let cfg = RunConfig {
        start: env_or("CONFORMANCE_SEED_START", 0),
        threads: env_or("CONFORMANCE_THREADS", 12),
        accepted: std::sync::Arc::new(AcceptedList::load()),
    };
    let mut reports = Vec::new();
    let mut broker_problems = Vec::new();
    for tv in tvs {
        if modes.contains(&"plain") {
            reports.push(plain(tv, seeds, &cfg));
        }
        if modes.contains(&"authz") && authz_seeds > 0 {
            let (rep, problems) = authz_run::run(tv, authz_seeds, &cfg);
            reports.push(rep);
            broker_problems.extend(problems);
        }
    }
    let text = report::render_all(&reports);
    let path = std::env::var("CONFORMANCE_REPORT").unwrap_or_else(|_| {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/conformance-report.txt").display().to_string()
    });
    let _ = std::fs::write(&path, &text);
    println!("{text}\n(report written to {path})");
    let unexplained: usize = reports.iter().map(|r| r.unexplained()).sum();
    let known: usize = reports.iter().map(|r| r.known.iter().filter(|k| k.diverged).count()).sum();
    let setup: usize = reports.iter().map(|r| r.setup_failures.len()).sum();
    let cases: usize = reports.iter().map(|r| r.failed_cases().0).sum();
    let known = known + reports.iter().map(|r| r.failed_cases().1).sum::<usize>();
    assert!(broker_problems.is_empty(), "kaas (authz mode) was not healthy: {}", broker_problems.join("\n"));
    assert!(setup == 0, "{setup} sequences could not be set up (see the report)");
    assert!(unexplained == 0, "{unexplained} divergent sequences no accepted difference explains (see the report)");
    assert!(cases == 0, "{cases} fixed cases of the authz mode failed (see the report)");
    assert!(
        !known_fail || known == 0,
        "{known} runs of the known divergences (regression.rs, authz_cases.rs) still diverge"
    );
}

/// The plain mode on one transaction version: PLAINTEXT listeners, no authorizer.
fn plain(tv: i16, seeds: u64, cfg: &RunConfig) -> TvReport {
    let began = Instant::now();
    eprintln!("[conformance] TV{tv}: starting Apache Kafka 4.4 and kaas");
    let ak = apache::Apache::start(tv, None);
    let tv_s = tv.to_string();
    // The test batches are stamped in 2023: time retention is off on both brokers, or each
    // would delete them at its own retention check, a timing difference and not a rule.
    let mut kaas =
        common::Broker::start_with_env(&[("KAAS_TRANSACTION_VERSION", tv_s.as_str()), ("KAAS_RETENTION_MS", "-1")]);
    // Requests a client would never send may be logged as errors; they are not failures here.
    kaas.allow_log_errors("");
    let mut pair = Pair::new(tv, ak.port, kaas.port, cfg.accepted.clone());
    let versions = {
        let a = wire::api_versions(&mut pair.ak).expect("Apache Kafka ApiVersions");
        let k = wire::api_versions(&mut pair.kaas).expect("kaas ApiVersions");
        gen::Versions::intersect(&a, &k)
    };
    let mut rep = TvReport::new(tv);
    rep.known = run_known(&mut pair);
    let ports = (ak.port, kaas.port);
    let make_pair = |_slot: usize| Pair::new(tv, ports.0, ports.1, cfg.accepted.clone());
    let sequence = |seed: u64| (gen::generate(seed, &versions), None);
    random(&mut rep, &Mode { pair: &make_pair, sequence: &sequence }, seeds, cfg);
    minimize(&mut rep, &mut pair);
    rep.seconds = began.elapsed().as_secs();
    eprintln!("{}", rep.render());
    drop(pair);
    drop(ak);
    kaas.finish();
    rep
}

fn run_known(pair: &mut Pair) -> Vec<Known> {
    pair.hits.clear();
    regression::cases()
        .into_iter()
        .map(|(name, expect, steps)| {
            let outcome = pair.run("known", &steps);
            let (diverged, detail, signature) = match outcome {
                Outcome::Same { .. } => (false, String::new(), String::new()),
                Outcome::Diverged(d) => (true, d.render(), d.signature),
                Outcome::Setup(e) => (true, format!("setup failed: {e}"), String::new()),
            };
            Known { name, expect, diverged, detail, signature }
        })
        .collect()
}

/// How a mode's threads make their pairs (from a thread's index) and their sequences (from a
/// seed: the steps, and in the authz mode the user's ACLs).
pub struct Mode<'a> {
    pub pair: &'a (dyn Fn(usize) -> Pair + Sync),
    #[allow(clippy::type_complexity)]
    pub sequence: &'a (dyn Fn(u64) -> (Vec<steps::Step>, Option<authz::Profile>) + Sync),
}

pub fn random(rep: &mut TvReport, mode: &Mode, seeds: u64, cfg: &RunConfig) {
    let start = cfg.start;
    // CONFORMANCE_SEED_LIST=3,17,42 runs exactly those seeds.
    let list: Option<Vec<u64>> = std::env::var("CONFORMANCE_SEED_LIST")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect());
    let list = list.as_ref();
    let next = AtomicU64::new(if list.is_some() { 0 } else { start });
    let shared = Mutex::new(std::mem::replace(rep, TvReport::new(rep.tv)));
    let diverged = Mutex::new(Vec::new());
    let tv = rep.tv;
    let label = if rep.mode.is_empty() { String::new() } else { format!(" {}", rep.mode) };
    let (next, shared_ref, diverged_ref, label) = (&next, &shared, &diverged, &label);
    std::thread::scope(|s| {
        for slot in 0..cfg.threads.max(1) {
            s.spawn(move || {
                let mut pair = (mode.pair)(slot);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let seed = match list {
                        Some(l) => match l.get(i as usize) {
                            Some(s) => *s,
                            None => break,
                        },
                        None if i >= start + seeds => break,
                        None => i,
                    };
                    let (steps, profile) = (mode.sequence)(seed);
                    pair.set_profile(profile);
                    let outcome = pair.run(&format!("s{seed}"), &steps);
                    let hits = std::mem::take(&mut pair.hits);
                    let codes = std::mem::take(&mut pair.codes);
                    let mut r = shared_ref.lock().unwrap_or_else(|e| e.into_inner());
                    r.sequences += 1;
                    for (k, n) in codes {
                        *r.codes.entry(k).or_default() += n;
                    }
                    if !hits.is_empty() {
                        r.with_accepted += 1;
                    }
                    for d in hits {
                        r.add(seed, d, true);
                    }
                    match outcome {
                        Outcome::Same { requests } => r.requests += requests as u64,
                        Outcome::Setup(e) => r.setup_failures.push(format!("seed {seed}: {e}")),
                        Outcome::Diverged(d) => {
                            r.requests += d.steps.len() as u64;
                            r.diverged += 1;
                            diverged_ref.lock().unwrap_or_else(|e| e.into_inner()).push((seed, d));
                        }
                    }
                    if r.sequences % 100 == 0 {
                        eprintln!(
                            "[conformance] TV{tv}{label}: {} sequences, {} requests, {} diverged",
                            r.sequences, r.requests, r.diverged
                        );
                    }
                }
            });
        }
    });
    *rep = shared.into_inner().unwrap_or_else(|e| e.into_inner());
    // A divergence counts as found when its diverging prefix, run again on fresh names with no
    // other sequence running, diverges the same way; else it is reported as not reproduced
    // (timing, or Apache Kafka batching the verifications of concurrent sequences, see the
    // README).
    let mut pair = (mode.pair)(0);
    let mut found = diverged.into_inner().unwrap_or_else(|e| e.into_inner());
    found.sort_by_key(|(seed, _)| *seed);
    for (seed, d) in found {
        pair.set_profile(d.profile.clone());
        let again = pair.run(&format!("s{seed}-again"), &d.steps);
        pair.hits.clear();
        pair.codes.clear();
        let reproduced = matches!(again, Outcome::Diverged(e) if e.signature == d.signature);
        rep.add(seed, d, reproduced);
    }
}

pub fn minimize(rep: &mut TvReport, pair: &mut Pair) {
    let budget: usize = env_or("CONFORMANCE_MINIMIZE", 5);
    let max_runs: usize = env_or("CONFORMANCE_MINIMIZE_RUNS", 60);
    let mut order: Vec<(u64, String)> = rep
        .classes
        .iter()
        .filter(|(_, c)| c.accepted_by.is_none() && c.reproduced)
        .map(|(s, c)| (c.first_seed, s.clone()))
        .collect();
    order.sort();
    for (seed, sig) in order.into_iter().take(budget) {
        let Some(class) = rep.classes.get_mut(&sig) else { continue };
        eprintln!("[conformance] TV{}: minimizing seed {seed}: {sig}", rep.tv);
        let (min, runs) = ddmin::minimize(pair, &format!("s{seed}"), &class.found, max_runs);
        pair.codes.clear();
        class.minimized = Some((min, runs));
    }
}
