//! The functional core and the on-disk formats: no actors here.

pub mod batch;
pub mod log;
pub mod producer_state;
