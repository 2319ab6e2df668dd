//! Delta debugging (Zeller's ddmin) over the steps of a diverging sequence: removes chunks of
//! steps while the rest, run again on fresh names against both brokers, still diverges the
//! same way (same signature). Bounded by a number of reruns.

use crate::run::{Divergence, Outcome, Pair};
use crate::steps::Step;

pub fn minimize(pair: &mut Pair, label: &str, found: &Divergence, max_runs: usize) -> (Divergence, usize) {
    let mut best = found.clone();
    let mut runs = 0;
    // The authz mode: every candidate runs as a user with the ACLs the sequence had.
    pair.set_profile(found.profile.clone());
    let test = |pair: &mut Pair, cand: &[Step], runs: &mut usize| -> Option<Divergence> {
        *runs += 1;
        pair.hits.clear();
        match pair.run(&format!("{label}-min"), cand) {
            Outcome::Diverged(d) if d.signature == found.signature => Some(d),
            _ => None,
        }
    };
    let mut n = 2usize;
    while best.steps.len() >= 2 && runs < max_runs {
        let len = best.steps.len();
        let chunk = len.div_ceil(n);
        let mut reduced = false;
        // Try each complement (the sequence without one chunk).
        for start in (0..len).step_by(chunk) {
            if runs >= max_runs {
                break;
            }
            let cand: Vec<Step> = best
                .steps
                .iter()
                .enumerate()
                .filter(|(i, _)| *i < start || *i >= start + chunk)
                .map(|(_, s)| s.clone())
                .collect();
            if cand.is_empty() {
                continue;
            }
            if let Some(d) = test(pair, &cand, &mut runs) {
                best = d;
                n = (n - 1).max(2);
                reduced = true;
                break;
            }
        }
        if !reduced {
            if n >= len {
                break;
            }
            n = (n * 2).min(len);
        }
    }
    (best, runs)
}
