//! The sync threads' job queue: bounded (a full queue makes the sending partition thread wait),
//! and a sync thread with nothing to do sleeps at once. crossbeam-channel's blocking receive
//! first spins and then yields the CPU up to four times before it sleeps; on the 2-core
//! development machine that was a `sched_yield`, mostly a context switch, for about every job
//! the sync threads took (docs/performance.md, "Context switches"). Here a thread that finds the
//! queue empty waits on a condition variable, and a sender wakes one only when one is waiting.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

struct State<T> {
    items: VecDeque<T>,
    senders: usize,
    receivers: usize,
    /// Receivers waiting for an item; senders waiting for room.
    waiting_receivers: usize,
    waiting_senders: usize,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    not_empty: Condvar,
    not_full: Condvar,
    capacity: usize,
}

impl<T> Shared<T> {
    /// The queue; a thread that panicked while holding it left it consistent (every change is one
    /// VecDeque or counter operation), so a poisoned lock is still used.
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A bounded queue of `capacity` (at least 1) items, with any number of senders and receivers.
pub fn bounded<T>(capacity: usize) -> (JobSender<T>, JobReceiver<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            items: VecDeque::new(),
            senders: 1,
            receivers: 1,
            waiting_receivers: 0,
            waiting_senders: 0,
        }),
        not_empty: Condvar::new(),
        not_full: Condvar::new(),
        capacity: capacity.max(1),
    });
    (JobSender(shared.clone()), JobReceiver(shared))
}

pub struct JobSender<T>(Arc<Shared<T>>);

pub struct JobReceiver<T>(Arc<Shared<T>>);

impl<T> JobSender<T> {
    /// Queues `item`, waiting while the queue is full; gives it back when every receiver is gone.
    pub fn send(&self, item: T) -> Result<(), T> {
        let shared = &self.0;
        let mut state = shared.lock();
        while state.items.len() >= shared.capacity && state.receivers > 0 {
            state.waiting_senders += 1;
            state = shared.not_full.wait(state).unwrap_or_else(PoisonError::into_inner);
            state.waiting_senders -= 1;
        }
        if state.receivers == 0 {
            return Err(item);
        }
        state.items.push_back(item);
        if state.waiting_receivers > 0 {
            shared.not_empty.notify_one();
        }
        Ok(())
    }
}

impl<T> JobReceiver<T> {
    /// Waits for at least one item, then takes up to `max` (at least 1) of those queued, oldest
    /// first; None once the queue is empty and every sender is gone.
    pub fn recv_up_to(&self, max: usize) -> Option<Vec<T>> {
        let shared = &self.0;
        let mut state = shared.lock();
        while state.items.is_empty() {
            if state.senders == 0 {
                return None;
            }
            state.waiting_receivers += 1;
            state = shared.not_empty.wait(state).unwrap_or_else(PoisonError::into_inner);
            state.waiting_receivers -= 1;
        }
        let n = state.items.len().min(max.max(1));
        let taken: Vec<T> = state.items.drain(..n).collect();
        if state.waiting_senders > 0 {
            shared.not_full.notify_all();
        }
        // Another waiting receiver takes what is left.
        if !state.items.is_empty() && state.waiting_receivers > 0 {
            shared.not_empty.notify_one();
        }
        Some(taken)
    }
}

impl<T> Clone for JobSender<T> {
    fn clone(&self) -> Self {
        self.0.lock().senders += 1;
        JobSender(self.0.clone())
    }
}

impl<T> Clone for JobReceiver<T> {
    fn clone(&self) -> Self {
        self.0.lock().receivers += 1;
        JobReceiver(self.0.clone())
    }
}

impl<T> Drop for JobSender<T> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.senders -= 1;
        if state.senders == 0 {
            self.0.not_empty.notify_all();
        }
    }
}

impl<T> Drop for JobReceiver<T> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.receivers -= 1;
        if state.receivers == 0 {
            self.0.not_full.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;
    use std::time::Duration;

    #[test]
    fn a_receiver_takes_what_is_queued_oldest_first_up_to_max() {
        let (tx, rx) = bounded(8);
        for i in 0..5 {
            tx.send(i).unwrap();
        }
        assert_eq!(rx.recv_up_to(3), Some(vec![0, 1, 2]));
        assert_eq!(rx.recv_up_to(10), Some(vec![3, 4]));
    }

    #[test]
    fn a_waiting_receiver_wakes_for_an_item() {
        let (tx, rx) = bounded(1);
        let waiter = thread::spawn(move || rx.recv_up_to(4));
        thread::sleep(Duration::from_millis(50));
        tx.send(7).unwrap();
        assert_eq!(waiter.join().unwrap(), Some(vec![7]));
    }

    #[test]
    fn a_full_queue_makes_the_sender_wait_until_there_is_room() {
        let (tx, rx) = bounded(2);
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        let sender = thread::spawn(move || {
            tx.send(3).unwrap();
        });
        thread::sleep(Duration::from_millis(50));
        assert!(!sender.is_finished(), "the third item waits for room");
        assert_eq!(rx.recv_up_to(1), Some(vec![1]));
        sender.join().unwrap();
        assert_eq!(rx.recv_up_to(8), Some(vec![2, 3]));
    }

    #[test]
    fn receivers_end_once_the_senders_are_gone_and_the_queue_is_empty() {
        let (tx, rx) = bounded(4);
        let rx2 = rx.clone();
        let waiter = thread::spawn(move || rx2.recv_up_to(4));
        thread::sleep(Duration::from_millis(50));
        tx.send(1).unwrap();
        let tx2 = tx.clone();
        drop(tx);
        // One sender is left: the item is taken, the queue is open.
        assert_eq!(waiter.join().unwrap(), Some(vec![1]));
        tx2.send(2).unwrap();
        drop(tx2);
        // What was queued before the senders went is still taken; then the receivers end.
        assert_eq!(rx.recv_up_to(4), Some(vec![2]));
        assert_eq!(rx.recv_up_to(4), None);
        let (tx, rx) = bounded::<i32>(4);
        let waiter = thread::spawn(move || rx.recv_up_to(4));
        thread::sleep(Duration::from_millis(50));
        drop(tx);
        assert_eq!(waiter.join().unwrap(), None, "a waiting receiver wakes when the last sender goes");
    }

    #[test]
    fn a_send_without_receivers_gives_the_item_back() {
        let (tx, rx) = bounded(4);
        drop(rx);
        assert_eq!(tx.send(9), Err(9));
    }

    #[test]
    fn a_sender_waiting_on_a_full_queue_is_refused_when_the_receivers_go() {
        let (tx, rx) = bounded(1);
        tx.send(1).unwrap();
        let sender = thread::spawn(move || tx.send(2));
        thread::sleep(Duration::from_millis(50));
        drop(rx);
        assert_eq!(sender.join().unwrap(), Err(2));
    }
}
