//! A local actor that comes and goes as this broker takes and gives up what it serves on the
//! shared disk (a partition, the coordinators). Handles cached per connection share the cell,
//! so they see a takeover or a hand-over without asking the registry again.

use std::sync::{Arc, PoisonError, RwLock};

use actix::{Actor, Addr};

pub struct LocalActor<A: Actor>(Arc<RwLock<Option<Addr<A>>>>);

impl<A: Actor> std::fmt::Debug for LocalActor<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.get().is_some() { "LocalActor(local)" } else { "LocalActor(empty)" })
    }
}

impl<A: Actor> Clone for LocalActor<A> {
    fn clone(&self) -> Self {
        LocalActor(self.0.clone())
    }
}

impl<A: Actor> Default for LocalActor<A> {
    fn default() -> Self {
        LocalActor(Arc::new(RwLock::new(None)))
    }
}

impl<A: Actor> LocalActor<A> {
    pub fn holding(addr: Addr<A>) -> LocalActor<A> {
        LocalActor(Arc::new(RwLock::new(Some(addr))))
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
