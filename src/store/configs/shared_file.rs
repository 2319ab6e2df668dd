//! A JSON file of configs on the shared disk, under `<data>/__cluster/`: read whole, changed and
//! rewritten crash-safely (store::durable::write_atomic) under its lock file, so brokers sharing
//! the disk never interleave two changes. What group_store and broker_store share. Blocking I/O:
//! callers run it on the blocking pool.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error_code::ResponseError;
use crate::store::cluster::file_lock;
use crate::store::durable::{create_dir_all_durable, write_atomic};

/// How long a change waits for another broker's change (each takes milliseconds).
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// A refusal with the Kafka error code and message it is answered with.
pub type Failure = (i16, String);

/// One file: its name in `__cluster` (`<name>.json`, locked by `<name>.lock`) and what it holds,
/// for messages.
#[derive(Debug, Clone, Copy)]
pub struct SharedFile {
    pub name: &'static str,
    pub what: &'static str,
}

impl SharedFile {
    fn path(&self, data_dir: &Path) -> PathBuf {
        data_dir.join("__cluster").join(format!("{}.json", self.name))
    }

    /// The file's contents; the default when it does not exist. A file that does not parse (a
    /// hand edit) is reported and read as the default, so the broker keeps serving.
    pub fn load<T: DeserializeOwned + Default>(&self, data_dir: &Path) -> std::io::Result<T> {
        let p = self.path(data_dir);
        match std::fs::read(&p) {
            Ok(bytes) => Ok(serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::error!(path = %p.display(), "unreadable {}, none applied: {e}", self.what);
                T::default()
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
            Err(e) => Err(e),
        }
    }

    fn storage(&self, e: std::io::Error) -> Failure {
        (ResponseError::KafkaStorageError.code(), format!("{}: {e}", self.what))
    }

    /// Under the lock: reads the file, lets `change` alter it (its answer: whether to write),
    /// writes it durably if so; the contents afterwards.
    pub fn update<T: Serialize + DeserializeOwned + Default>(
        &self,
        data_dir: &Path,
        change: impl FnOnce(&mut T) -> Result<bool, Failure>,
    ) -> Result<T, Failure> {
        let dir = data_dir.join("__cluster");
        create_dir_all_durable(&dir).map_err(|e| self.storage(e))?;
        let lock_path = dir.join(format!("{}.lock", self.name));
        let Some(lock) = file_lock::lock_file_within(&lock_path, LOCK_WAIT).map_err(|e| self.storage(e))? else {
            let busy = format!("Another broker is changing the {}; try again.", self.what);
            return Err((ResponseError::RequestTimedOut.code(), busy));
        };
        let mut all: T = self.load(data_dir).map_err(|e| self.storage(e))?;
        if change(&mut all)? {
            let bytes = serde_json::to_vec(&all).map_err(|e| self.storage(e.into()))?;
            write_atomic(&self.path(data_dir), &bytes).map_err(|e| self.storage(e))?;
        }
        drop(lock);
        Ok(all)
    }
}
