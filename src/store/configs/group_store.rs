//! Per-group config overrides on the shared disk: `<data>/__cluster/group_configs.json` (group id
//! -> its overrides, store::configs::group), read whole and rewritten crash-safely under the lock
//! file `group_configs.lock`, so brokers sharing the disk never interleave two changes. The
//! group coordinator reads the file again while it has consumer groups (a change made on
//! another broker reaches it within seconds); the broker that made a change tells its own
//! coordinator at once. Blocking I/O: callers run it on the blocking pool.

use std::collections::BTreeMap;
use std::path::Path;

use super::group::{GroupConfigError, GroupOverrides, MAX_GROUPS_WITH_CONFIGS};
pub use super::shared_file::Failure;
use super::shared_file::SharedFile;

/// Every group's overrides.
pub type AllGroupConfigs = BTreeMap<String, GroupOverrides>;

const FILE: SharedFile = SharedFile { name: "group_configs", what: "group configs" };

/// Every group's overrides; none when the file does not exist (or does not parse: logged).
pub fn load(data_dir: &Path) -> std::io::Result<AllGroupConfigs> {
    FILE.load(data_dir)
}

/// Changes group `group`'s overrides with `change` (given its current ones) under the lock and
/// writes them durably unless `validate_only`; every group's overrides afterwards.
pub fn alter(
    data_dir: &Path,
    group: &str,
    validate_only: bool,
    change: impl FnOnce(&GroupOverrides) -> Result<GroupOverrides, GroupConfigError>,
) -> Result<AllGroupConfigs, Failure> {
    FILE.update(data_dir, |all: &mut AllGroupConfigs| {
        let current = all.get(group).cloned().unwrap_or_default();
        let next = change(&current).map_err(|e| (e.code(), e.to_string()))?;
        if validate_only || next == current {
            return Ok(false);
        }
        if next.is_empty() {
            all.remove(group);
        } else {
            if !all.contains_key(group) && all.len() >= MAX_GROUPS_WITH_CONFIGS {
                let e = GroupConfigError::TooManyGroups;
                return Err((e.code(), e.to_string()));
            }
            all.insert(group.to_string(), next);
        }
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error_code::ResponseError;

    fn set(value: &str) -> impl FnOnce(&GroupOverrides) -> Result<GroupOverrides, GroupConfigError> + '_ {
        move |_| Ok(GroupOverrides::from([("consumer.session.timeout.ms".to_string(), value.to_string())]))
    }

    #[test]
    fn overrides_are_stored_durably_and_an_empty_set_removes_the_group() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_empty());
        alter(dir.path(), "g", false, set("50000")).unwrap();
        assert_eq!(load(dir.path()).unwrap()["g"]["consumer.session.timeout.ms"], "50000");
        let all = alter(dir.path(), "h", true, set("1")).unwrap();
        assert!(!all.contains_key("h") && !load(dir.path()).unwrap().contains_key("h"), "validate_only writes nothing");
        alter(dir.path(), "g", false, |_| Ok(GroupOverrides::new())).unwrap();
        assert!(load(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn the_number_of_groups_with_configs_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let full: AllGroupConfigs = (0..MAX_GROUPS_WITH_CONFIGS)
            .map(|i| (format!("g{i}"), GroupOverrides::from([("consumer.session.timeout.ms".into(), "50000".into())])))
            .collect();
        std::fs::create_dir_all(dir.path().join("__cluster")).unwrap();
        std::fs::write(dir.path().join("__cluster/group_configs.json"), serde_json::to_vec(&full).unwrap()).unwrap();
        let (code, _) = alter(dir.path(), "one-more", false, set("50000")).unwrap_err();
        assert_eq!(code, ResponseError::PolicyViolation.code());
        alter(dir.path(), "g0", false, set("55000")).expect("a group that has configs may change them");
    }

    #[test]
    fn an_unreadable_file_reads_as_no_overrides() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("__cluster")).unwrap();
        std::fs::write(dir.path().join("__cluster/group_configs.json"), b"{not json").unwrap();
        assert!(load(dir.path()).unwrap().is_empty());
    }
}
