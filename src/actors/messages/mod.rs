//! The typed messages actors exchange. Replies travel on oneshot channels carried in the message,
//! so a sender can enqueue with `try_send` (bounded mailbox, order kept) and await the answer.

use tokio::sync::oneshot;

pub type Reply<T> = oneshot::Sender<T>;

mod cluster;
mod group;
mod partition;
mod txn;

pub use cluster::*;
pub use group::*;
pub use partition::*;
pub use txn::*;
