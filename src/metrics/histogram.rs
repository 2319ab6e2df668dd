//! A histogram observed with atomics only (prometheus-client's own takes a mutex per
//! observation): fixed bucket bounds, one atomic count per bucket and an atomic sum, in integer
//! base units (microseconds, batches) scaled to the exposed unit when encoded.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// Request times in milliseconds (Kafka's TotalTimeMs), observed in microseconds.
pub const MILLIS: &[f64] =
    &[0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10_000.0, 30_000.0];

/// fsync times in seconds, observed in microseconds.
pub const SECONDS: &[f64] =
    &[0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Sizes (batches, partitions) in powers of two.
pub const SIZES: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 4096.0];

#[derive(Debug)]
struct Inner {
    /// Upper bounds in base units (inclusive, as Prometheus' `le`).
    limits: Box<[u64]>,
    /// The bounds as exposed.
    bounds: Box<[f64]>,
    /// One per bound, and the last for +Inf.
    counts: Box<[AtomicU64]>,
    sum: AtomicU64,
    /// Exposed value of one base unit (1e-6 for microseconds shown as seconds).
    scale: f64,
}

#[derive(Debug, Clone)]
pub struct AtomicHistogram(Arc<Inner>);

impl AtomicHistogram {
    /// `bounds` in the exposed unit, ascending; an observation `v` in base units is `v * scale`
    /// exposed units.
    pub fn new(bounds: &[f64], scale: f64) -> AtomicHistogram {
        let limits = bounds.iter().map(|b| (b / scale).round() as u64).collect();
        let counts = (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect();
        AtomicHistogram(Arc::new(Inner { limits, bounds: bounds.into(), counts, sum: AtomicU64::new(0), scale }))
    }

    /// Microseconds shown in milliseconds.
    pub fn millis() -> AtomicHistogram {
        AtomicHistogram::new(MILLIS, 1e-3)
    }

    /// Microseconds shown in seconds.
    pub fn seconds() -> AtomicHistogram {
        AtomicHistogram::new(SECONDS, 1e-6)
    }

    pub fn sizes() -> AtomicHistogram {
        AtomicHistogram::new(SIZES, 1.0)
    }

    /// Records `v` base units: two relaxed atomic adds.
    pub fn observe(&self, v: u64) {
        let i = self.0.limits.partition_point(|limit| *limit < v);
        self.0.counts[i].fetch_add(1, Ordering::Relaxed);
        self.0.sum.fetch_add(v, Ordering::Relaxed);
    }

    pub fn observe_duration(&self, d: std::time::Duration) {
        self.observe(u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    }

    /// Observations so far (the sum of the buckets, so it matches them).
    pub fn count(&self) -> u64 {
        self.0.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// The sum of the observations in the exposed unit.
    pub fn sum(&self) -> f64 {
        self.0.sum.load(Ordering::Relaxed) as f64 * self.0.scale
    }

    /// (upper bound, observations in that bucket alone), +Inf last, as the encoder wants them.
    fn buckets(&self) -> Vec<(f64, u64)> {
        let bounds = self.0.bounds.iter().copied().chain([f64::INFINITY]);
        bounds.zip(self.0.counts.iter().map(|c| c.load(Ordering::Relaxed))).collect()
    }
}

impl TypedMetric for AtomicHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for AtomicHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let buckets = self.buckets();
        let count = buckets.iter().map(|(_, n)| n).sum();
        encoder.encode_histogram::<NoLabelSet>(self.sum(), count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_the_first_bucket_at_or_above_them() {
        let h = AtomicHistogram::new(&[1.0, 10.0], 1.0);
        for v in [0, 1, 2, 10, 11, 1000] {
            h.observe(v);
        }
        assert_eq!(h.buckets(), vec![(1.0, 2), (10.0, 2), (f64::INFINITY, 2)]);
        assert_eq!(h.count(), 6);
        assert_eq!(h.sum(), 1024.0);
    }

    #[test]
    fn microseconds_are_shown_in_the_exposed_unit() {
        let h = AtomicHistogram::seconds();
        h.observe_duration(std::time::Duration::from_micros(1500));
        assert!((h.sum() - 0.0015).abs() < 1e-12);
        let at_or_below = |b: f64| h.buckets().iter().filter(|(le, _)| *le <= b).map(|(_, n)| n).sum::<u64>();
        assert_eq!((at_or_below(0.001), at_or_below(0.0025)), (0, 1));
        let ms = AtomicHistogram::millis();
        ms.observe(250);
        assert_eq!(ms.buckets()[1], (0.25, 1));
    }

    #[test]
    fn clones_share_their_counts() {
        let h = AtomicHistogram::sizes();
        h.clone().observe(3);
        assert_eq!(h.count(), 1);
    }
}
