//! Dynamic broker configs on the shared disk: `<data>/__cluster/broker_configs.json` (the
//! cluster default and each broker's, store::configs::dynamic), read whole and rewritten
//! crash-safely under the lock file `broker_configs.lock`, so brokers sharing the disk never
//! interleave two changes. Every broker reads the file again at each membership tick (a change
//! made on another broker reaches its topics within seconds); the broker that made a change
//! applies it at once. Blocking I/O: callers run it on the blocking pool.

use std::path::Path;

use super::dynamic::{ConfigMap, DynamicConfigs, DynamicError};
pub use super::shared_file::Failure;
use super::shared_file::SharedFile;
use crate::error_code::ResponseError;
use crate::store::cluster::fence::SelfFence;

const FILE: SharedFile = SharedFile { name: "broker_configs", what: "dynamic broker configs" };

/// Every dynamic broker config; none when the file does not exist (or does not parse: logged).
pub fn load(data_dir: &Path) -> std::io::Result<DynamicConfigs> {
    FILE.load(data_dir)
}

/// Changes the configs of `node` (`None`: the cluster default) with `change` (given the current
/// ones) under the lock and writes them durably unless `validate_only`; every broker's configs
/// afterwards. A change is answered only while `fence` shows that no broker took over from this
/// one (store::cluster::fence): a fenced broker answers none, though what it wrote stays.
pub fn alter(
    data_dir: &Path,
    node: Option<i32>,
    validate_only: bool,
    fence: &SelfFence,
    change: impl FnOnce(&ConfigMap) -> Result<ConfigMap, DynamicError>,
) -> Result<DynamicConfigs, Failure> {
    let all = FILE.update(data_dir, |all: &mut DynamicConfigs| {
        let current = all.resource(node);
        let next = change(&current).map_err(|e| (e.code(), e.to_string()))?;
        if validate_only || next == current {
            return Ok(false);
        }
        all.set_resource(node, next);
        Ok(true)
    })?;
    if !validate_only {
        fence.check().map_err(|e| (ResponseError::KafkaStorageError.code(), e.to_string()))?;
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::cluster::fence::fence_broker;

    fn set(name: &'static str, value: &'static str) -> impl FnOnce(&ConfigMap) -> Result<ConfigMap, DynamicError> {
        move |current| {
            let mut out = current.clone();
            out.insert(name.into(), value.into());
            Ok(out)
        }
    }

    #[test]
    fn configs_are_stored_durably_per_resource_and_validate_only_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()).unwrap(), DynamicConfigs::default());
        alter(dir.path(), None, false, &SelfFence::unchecked(), set("log.retention.ms", "1000")).unwrap();
        alter(dir.path(), Some(2), false, &SelfFence::unchecked(), set("background.threads", "9")).unwrap();
        let all = load(dir.path()).unwrap();
        assert_eq!(all.cluster["log.retention.ms"], "1000");
        assert_eq!(all.broker(2)["background.threads"], "9");
        let seen = alter(dir.path(), Some(2), true, &SelfFence::unchecked(), set("background.threads", "5")).unwrap();
        assert_eq!(seen.broker(2)["background.threads"], "9");
        assert_eq!(load(dir.path()).unwrap().broker(2)["background.threads"], "9", "validate_only writes nothing");
        alter(dir.path(), Some(2), false, &SelfFence::unchecked(), |_| Ok(ConfigMap::new())).unwrap();
        assert!(load(dir.path()).unwrap().brokers.is_empty(), "an empty set removes the broker's entry");
    }

    #[test]
    fn a_refused_change_writes_nothing_and_keeps_its_code() {
        let dir = tempfile::tempdir().unwrap();
        let (code, message) =
            alter(dir.path(), None, false, &SelfFence::unchecked(), |_| Err(DynamicError::TooMany)).unwrap_err();
        assert_eq!(code, ResponseError::PolicyViolation.code(), "{message}");
        assert!(!dir.path().join("__cluster/broker_configs.json").exists());
    }

    #[test]
    fn a_fenced_broker_answers_no_change() {
        let dir = tempfile::tempdir().unwrap();
        let fence = SelfFence::new(dir.path(), 1, 7);
        alter(dir.path(), Some(1), false, &fence, set("background.threads", "9")).expect("not fenced yet");
        fence_broker(dir.path(), 1, 7).unwrap();
        let (code, message) = alter(dir.path(), Some(1), false, &fence, set("background.threads", "8")).unwrap_err();
        assert_eq!(code, ResponseError::KafkaStorageError.code(), "{message}");
        assert!(alter(dir.path(), Some(1), true, &fence, set("background.threads", "7")).is_ok(), "validate_only");
    }

    #[test]
    fn an_unreadable_file_reads_as_no_configs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("__cluster")).unwrap();
        std::fs::write(dir.path().join("__cluster/broker_configs.json"), b"{not json").unwrap();
        assert_eq!(load(dir.path()).unwrap(), DynamicConfigs::default());
    }
}
