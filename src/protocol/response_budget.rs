//! The broker-wide bound on bytes of fetched records not yet sent (`queued_max_response_bytes`).
//! Records go out with sendfile from the segment files (protocol::outgoing) and are not held in
//! memory, except a range too large for a stand-in; still, without a bound many consumers (or
//! clients that never read their socket) could keep `fetch_max_bytes` x requests in flight x
//! connections of reads outstanding, each holding its segment file open. A Fetch reserves each
//! partition read here before it reads, and the charge goes with the response until its bytes
//! are written to the socket. When the budget is spent, fetches wait (up to their max_wait_ms)
//! and answer with what they have, as when no data is there.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

#[derive(Debug)]
struct Inner {
    limit: usize,
    used: Mutex<usize>,
    released: Notify,
}

impl Inner {
    fn used(&self) -> std::sync::MutexGuard<'_, usize> {
        // Only counts live behind the lock; a panic elsewhere leaves them consistent.
        self.used.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[derive(Debug, Clone)]
pub struct ResponseBudget {
    inner: Arc<Inner>,
}

/// Bytes held against the budget; given back when dropped.
#[derive(Debug, Default)]
pub struct Charge {
    bytes: usize,
    inner: Option<Arc<Inner>>,
}

impl ResponseBudget {
    pub fn new(limit: usize) -> ResponseBudget {
        ResponseBudget { inner: Arc::new(Inner { limit, used: Mutex::new(0), released: Notify::new() }) }
    }

    /// Reserves `bytes` if all of them are free, for a read of at most that many.
    pub fn try_reserve(&self, bytes: usize) -> Option<Charge> {
        let mut used = self.inner.used();
        if bytes > self.inner.limit.saturating_sub(*used) {
            return None;
        }
        *used += bytes;
        Some(Charge { bytes, inner: Some(self.inner.clone()) })
    }

    /// The most it ever lends at once (the setting).
    pub fn limit(&self) -> usize {
        self.inner.limit
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        *self.inner.used()
    }

    /// Resolves when some charge is given back (or at once if one is given back meanwhile and
    /// the caller registered first; a missed wake-up only costs the caller its max_wait_ms).
    pub async fn released(&self) {
        self.inner.released.notified().await;
    }
}

impl Charge {
    /// Holds nothing (responses other than Fetch).
    pub fn none() -> Charge {
        Charge::default()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Settles a reservation to what was read: the unused part goes back; a read longer than
    /// the reservation (KIP-74 returns a first batch whole even past the limit) is taken on top.
    pub fn settle(&mut self, actual: usize) {
        let Some(inner) = &self.inner else { return };
        let mut used = inner.used();
        *used = (*used + actual).saturating_sub(self.bytes);
        let gave_back = actual < self.bytes;
        self.bytes = actual;
        drop(used);
        if gave_back {
            inner.released.notify_waiters();
        }
    }

    /// Adds `other`'s bytes to this charge (one charge per response).
    pub fn absorb(&mut self, mut other: Charge) {
        if other.bytes == 0 {
            return;
        }
        if self.inner.is_none() {
            self.inner = other.inner.take();
            self.bytes = other.bytes;
        } else {
            self.bytes += other.bytes;
            other.inner = None;
        }
        other.bytes = 0;
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else { return };
        if self.bytes == 0 {
            return;
        }
        {
            let mut used = inner.used();
            *used = used.saturating_sub(self.bytes);
        }
        inner.released.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_is_all_or_nothing_and_comes_back_when_dropped() {
        let budget = ResponseBudget::new(100);
        let a = budget.try_reserve(60).expect("free");
        assert!(budget.try_reserve(41).is_none(), "only 40 bytes are free");
        let b = budget.try_reserve(40).expect("exactly what is free");
        assert_eq!(budget.used(), 100);
        drop(a);
        assert_eq!(budget.used(), 40);
        drop(b);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn settle_gives_back_the_unread_part_and_takes_an_overshoot() {
        let budget = ResponseBudget::new(100);
        let mut c = budget.try_reserve(50).expect("free");
        c.settle(10);
        assert_eq!((c.bytes(), budget.used()), (10, 10));
        // A first batch larger than the partition limit is returned whole (KIP-74).
        c.settle(120);
        assert_eq!((c.bytes(), budget.used()), (120, 120));
        assert!(budget.try_reserve(1).is_none(), "over the limit until it is given back");
        drop(c);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn absorbed_charges_are_given_back_once() {
        let budget = ResponseBudget::new(100);
        let mut all = Charge::none();
        all.absorb(budget.try_reserve(30).expect("free"));
        all.absorb(budget.try_reserve(20).expect("free"));
        all.absorb(Charge::none());
        assert_eq!((all.bytes(), budget.used()), (50, 50));
        drop(all);
        assert_eq!(budget.used(), 0);
    }

    #[tokio::test]
    async fn a_waiter_wakes_when_bytes_come_back() {
        let budget = ResponseBudget::new(10);
        let held = budget.try_reserve(10).expect("free");
        let waiter = budget.clone();
        let wait = tokio::spawn(async move { waiter.released().await });
        tokio::task::yield_now().await;
        drop(held);
        tokio::time::timeout(std::time::Duration::from_secs(5), wait).await.expect("woken").expect("joined");
    }
}
