//! Topic metadata on disk: `<data>/__cluster/topics/<topic>.json` (write tmp + fsync + rename).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;
use uuid::Uuid;

#[derive(Debug, Error)]
pub enum TopicError {
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("bad topic file {0}: {1}")]
    Parse(PathBuf, serde_json::Error),
    #[error("invalid topic name {0:?}")]
    InvalidName(String),
    #[error("invalid partition count {0}")]
    InvalidPartitions(i32),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicMeta {
    pub name: String,
    pub id: Uuid,
    pub partitions: i32,
    #[serde(default)]
    pub configs: BTreeMap<String, String>,
}

/// Kafka's legal topic names: 1..=249 chars of [a-zA-Z0-9._-], not "." or "..".
pub fn validate_name(name: &str) -> Result<(), TopicError> {
    let legal = !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-');
    if legal {
        Ok(())
    } else {
        Err(TopicError::InvalidName(name.to_string()))
    }
}

pub fn topics_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("__cluster").join("topics")
}

pub fn partition_dir(data_dir: &Path, topic: &str, partition: i32) -> PathBuf {
    data_dir.join("topics").join(format!("{topic}-{partition}"))
}

/// Writes `bytes` to `path` atomically and durably (tmp file, fsync, rename, fsync dir).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    crate::store::durable::create_dir_all_durable(dir)?;
    let tmp = path.with_extension("tmp");
    {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    File::open(dir)?.sync_all()?;
    Ok(())
}

pub fn load_all(data_dir: &Path) -> Result<Vec<TopicMeta>, TopicError> {
    let dir = topics_dir(data_dir);
    crate::store::durable::create_dir_all_durable(&dir)?;
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let text = std::fs::read(&path)?;
        let meta: TopicMeta = serde_json::from_slice(&text).map_err(|e| TopicError::Parse(path.clone(), e))?;
        out.push(meta);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

pub fn save(data_dir: &Path, meta: &TopicMeta) -> Result<(), TopicError> {
    validate_name(&meta.name)?;
    if meta.partitions < 1 {
        return Err(TopicError::InvalidPartitions(meta.partitions));
    }
    let bytes = serde_json::to_vec_pretty(meta).map_err(|e| TopicError::Parse(PathBuf::from(&meta.name), e))?;
    write_atomic(&topics_dir(data_dir).join(format!("{}.json", meta.name)), &bytes)?;
    Ok(())
}

pub fn remove(data_dir: &Path, meta: &TopicMeta) -> Result<(), TopicError> {
    std::fs::remove_file(topics_dir(data_dir).join(format!("{}.json", meta.name)))?;
    for p in 0..meta.partitions {
        let dir = partition_dir(data_dir, &meta.name, p);
        if dir.exists() {
            std::fs::remove_dir_all(dir)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_follow_kafka_rules() {
        assert!(validate_name("orders.v1_x-2").is_ok());
        for bad in ["", ".", "..", "a b", "ü", &"x".repeat(250)] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn topics_round_trip_and_remove() {
        let dir = tempfile::tempdir().unwrap();
        let meta = TopicMeta { name: "t".into(), id: Uuid::new_v4(), partitions: 3, configs: BTreeMap::new() };
        save(dir.path(), &meta).unwrap();
        assert_eq!(load_all(dir.path()).unwrap(), vec![meta.clone()]);
        std::fs::create_dir_all(partition_dir(dir.path(), "t", 1)).unwrap();
        remove(dir.path(), &meta).unwrap();
        assert!(load_all(dir.path()).unwrap().is_empty());
        assert!(!partition_dir(dir.path(), "t", 1).exists());
    }
}
