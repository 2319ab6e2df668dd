//! A local actor that comes and goes as this broker takes and gives up what it serves on the
//! shared disk (a partition, the coordinators). Handles cached per connection share the slot,
//! so they see a takeover or a hand-over without asking the registry again.

use std::sync::{Arc, PoisonError, RwLock};

use actix::{Actor, Addr};

pub struct Slot<A: Actor>(Arc<RwLock<Option<Addr<A>>>>);

impl<A: Actor> std::fmt::Debug for Slot<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.get().is_some() { "Slot(local)" } else { "Slot(empty)" })
    }
}

impl<A: Actor> Clone for Slot<A> {
    fn clone(&self) -> Self {
        Slot(self.0.clone())
    }
}

impl<A: Actor> Default for Slot<A> {
    fn default() -> Self {
        Slot(Arc::new(RwLock::new(None)))
    }
}

impl<A: Actor> Slot<A> {
    pub fn holding(addr: Addr<A>) -> Slot<A> {
        Slot(Arc::new(RwLock::new(Some(addr))))
    }

    /// The actor, while this broker serves it. A panic while the lock was held stops the broker
    /// (actors::supervisor); the value is a plain address, so a poisoned lock is still readable.
    pub fn get(&self) -> Option<Addr<A>> {
        self.0.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub fn set(&self, addr: Option<Addr<A>>) -> Option<Addr<A>> {
        std::mem::replace(&mut *self.0.write().unwrap_or_else(PoisonError::into_inner), addr)
    }
}
