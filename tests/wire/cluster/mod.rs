//! Several brokers on one shared directory: ownership and takeover, fences, markers between
//! brokers, topics seen by every broker, cluster settings, and the request routing in process.

mod fence_watcher;
mod fencing;
mod markers;
mod peer_markers;
mod routing_in_process;
mod settings;
mod shared_disk;
mod topics;
