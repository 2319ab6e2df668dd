//! The producer fences this broker knows: those of its own transaction coordinators and those its
//! peers wrote to their fence files. A partition this broker starts leading later (a takeover, a
//! hand-back) gets them too, so it refuses a fenced epoch like the partitions that were led here
//! when the fence came (eos-rules 9; the seed's cross-broker fencing). Bounded like the fence
//! files: a fence older than producer_id_expiration_ms is forgotten, since by then every
//! partition has expired that producer's state.

use std::collections::HashMap;

#[derive(Debug)]
pub struct KnownFences {
    /// producer id -> (highest fenced epoch, when it was learned, ms)
    by_producer: HashMap<i64, (i16, i64)>,
    max_age_ms: i64,
}

impl KnownFences {
    pub fn new(max_age_ms: i64) -> KnownFences {
        KnownFences { by_producer: HashMap::new(), max_age_ms }
    }

    /// Records that epochs below `epoch` of `producer_id` are fenced; a lower or equal epoch than
    /// the one known changes nothing.
    pub fn record(&mut self, producer_id: i64, epoch: i16, now_ms: i64) {
        let entry = self.by_producer.entry(producer_id).or_insert((epoch, now_ms));
        if epoch > entry.0 {
            *entry = (epoch, now_ms);
        }
        if self.by_producer.len() % 1024 == 0 {
            self.forget_old(now_ms);
        }
    }

    /// The fences still in force, (producer id, epoch).
    pub fn current(&mut self, now_ms: i64) -> Vec<(i64, i16)> {
        self.forget_old(now_ms);
        self.by_producer.iter().map(|(pid, (epoch, _))| (*pid, *epoch)).collect()
    }

    fn forget_old(&mut self, now_ms: i64) {
        let max_age = self.max_age_ms;
        self.by_producer.retain(|_, (_, at)| now_ms.saturating_sub(*at) < max_age);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_epoch_of_a_producer_is_kept() {
        let mut f = KnownFences::new(1_000);
        f.record(7, 3, 0);
        f.record(7, 2, 10);
        f.record(8, 1, 10);
        let mut now = f.current(20);
        now.sort();
        assert_eq!(now, vec![(7, 3), (8, 1)]);
        f.record(7, 5, 30);
        assert!(f.current(40).contains(&(7, 5)));
    }

    #[test]
    fn fences_older_than_producer_expiration_are_forgotten() {
        let mut f = KnownFences::new(1_000);
        f.record(7, 3, 0);
        f.record(8, 1, 900);
        assert_eq!(f.current(1_500), vec![(8, 1)]);
        assert!(f.current(2_000).is_empty());
    }
}
