//! The authz mode on one transaction version: its own pair of brokers (Apache Kafka with a
//! SASL_PLAINTEXT listener and the StandardAuthorizer, kaas with the same settings), the fixed
//! cases (`authz_cases`), then the random sequences, each as a user holding the seed's profile
//! of ACLs (`authz`), compared and minimized as in the plain mode.

use std::time::Instant;

use crate::apache::{Apache, Security};
use crate::authz;
use crate::gen::Versions;
use crate::report::TvReport;
use crate::run::Pair;
use crate::secure_kaas::SecureKaas;
use crate::{authz_cases, minimize, random, wire, Mode, RunConfig};

/// The report, and what was wrong with kaas at the end (it must still run, stop cleanly on
/// SIGTERM and have logged no panic).
pub fn run(tv: i16, seeds: u64, cfg: &RunConfig) -> (TvReport, Vec<String>) {
    let began = Instant::now();
    eprintln!("[conformance] TV{tv} authz: starting Apache Kafka 4.4 and kaas with SASL/PLAIN and the authorizer");
    // A user per thread (the rerun and minimizing pairs use thread 0's).
    let security = Security { users: authz::users(cfg.threads.max(1)) };
    let ak = Apache::start(tv, Some(&security));
    let kaas = SecureKaas::start(tv, &security);
    let ports = (ak.port, kaas.port);
    let mut pair = Pair::secure(tv, ports, 0, cfg.accepted.clone());
    let versions = {
        let a = wire::api_versions(&mut pair.ak).expect("Apache Kafka ApiVersions (as u0)");
        let k = wire::api_versions(&mut pair.kaas)
            .unwrap_or_else(|e| panic!("kaas ApiVersions (as u0): {e}\n{}", kaas.log()));
        Versions::intersect(&a, &k)
    };
    let mut rep = TvReport::new(tv);
    rep.mode = "authz";
    rep.cases = authz_cases::run(&mut pair, &versions);
    let make_pair = |slot: usize| Pair::secure(tv, ports, slot, cfg.accepted.clone());
    let sequence = |seed: u64| {
        let (steps, profile) = authz::generate(seed, &versions);
        (steps, Some(profile))
    };
    random(&mut rep, &Mode { pair: &make_pair, sequence: &sequence }, seeds, cfg);
    minimize(&mut rep, &mut pair);
    rep.seconds = began.elapsed().as_secs();
    eprintln!("{}", rep.render());
    drop(pair);
    drop(ak);
    (rep, kaas.finish())
}
