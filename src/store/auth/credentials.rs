//! The SCRAM credentials of the cluster's users: per user and mechanism a salted credential
//! (never a password), kept in `<data>/__cluster/scram_credentials.json` on the shared disk so
//! every broker of the cluster authenticates the same users. The users the configuration names
//! (`scram_users_at_first_start`) are written when the file does not exist yet (an exclusive
//! create: of brokers starting at once, one writes it).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use thiserror::Error;

use super::scram::{Credential, Mechanism, MIN_ITERATIONS};
use crate::error_code::ResponseError;
use crate::store::durable::{create_atomic, create_dir_all_durable};

#[derive(Debug, Error)]
pub enum CredentialsError {
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("{0}: {1}")]
    Format(PathBuf, serde_json::Error),
}

/// user -> mechanism -> credential.
pub type CredentialMap = BTreeMap<String, BTreeMap<Mechanism, Credential>>;

pub fn credentials_path(data_dir: &Path) -> PathBuf {
    data_dir.join("__cluster").join("scram_credentials.json")
}

/// Reads the credentials file (none yet: no users).
pub fn load(data_dir: &Path) -> Result<CredentialMap, CredentialsError> {
    let path = credentials_path(data_dir);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| CredentialsError::Format(path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(CredentialMap::new()),
        Err(e) => Err(CredentialsError::Io(path, e)),
    }
}

/// Credentials of both mechanisms for each (user, password), with a fresh salt each.
pub fn initial_credentials(users: &BTreeMap<String, String>, salt: &mut dyn FnMut() -> Vec<u8>) -> CredentialMap {
    users
        .iter()
        .map(|(user, password)| {
            let per_mechanism = [Mechanism::Sha256, Mechanism::Sha512]
                .into_iter()
                .map(|m| (m, Credential::from_password(m, password, &salt(), MIN_ITERATIONS)))
                .collect();
            (user.clone(), per_mechanism)
        })
        .collect()
}

/// Writes `initial` as the credentials file unless the file exists; then reads the file.
pub fn create_or_load(data_dir: &Path, initial: &CredentialMap) -> Result<CredentialMap, CredentialsError> {
    let path = credentials_path(data_dir);
    if !initial.is_empty() && !path.exists() {
        let dir = data_dir.join("__cluster");
        create_dir_all_durable(&dir).map_err(|e| CredentialsError::Io(dir, e))?;
        let bytes = serde_json::to_vec_pretty(initial).map_err(|e| CredentialsError::Format(path.clone(), e))?;
        create_atomic(&path, &bytes).map_err(|e| CredentialsError::Io(path.clone(), e))?;
    }
    load(data_dir)
}

/// The credentials a broker authenticates with, shared by its connections.
#[derive(Debug, Clone, Default)]
pub struct ScramCredentials(Arc<RwLock<CredentialMap>>);

impl ScramCredentials {
    pub fn new(map: CredentialMap) -> ScramCredentials {
        ScramCredentials(Arc::new(RwLock::new(map)))
    }

    pub fn get(&self, user: &str, m: Mechanism) -> Option<Credential> {
        self.0.read().ok()?.get(user)?.get(&m).cloned()
    }

    pub fn replace(&self, map: CredentialMap) {
        if let Ok(mut current) = self.0.write() {
            *current = map;
        }
    }
}

/// One user of a DescribeUserScramCredentials answer: its (mechanism type id, iterations), or
/// the error Kafka answers for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserCredentials {
    pub user: String,
    pub result: Result<Vec<(i8, i32)>, (ResponseError, String)>,
}

/// DescribeUserScramCredentials as Kafka's ScramControlManager answers it: every user with
/// credentials when `users` is None or empty; else each named user in request order, a user
/// without credentials RESOURCE_NOT_FOUND, a name asked twice DUPLICATE_RESOURCE (every
/// occurrence of it).
pub fn describe(users: Option<&[String]>, map: &CredentialMap) -> Vec<UserCredentials> {
    let infos = |creds: &BTreeMap<Mechanism, Credential>| -> Vec<(i8, i32)> {
        creds.iter().map(|(m, c)| (m.type_id(), c.iterations)).collect()
    };
    let named = match users {
        Some(u) if !u.is_empty() => u,
        _ => {
            return map
                .iter()
                .map(|(user, creds)| UserCredentials { user: user.clone(), result: Ok(infos(creds)) })
                .collect()
        }
    };
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for u in named {
        *counts.entry(u.as_str()).or_default() += 1;
    }
    named
        .iter()
        .map(|u| {
            let result = if counts.get(u.as_str()).copied().unwrap_or(0) > 1 {
                let why = format!("Cannot describe SCRAM credentials for the same user twice in a single request: {u}");
                Err((ResponseError::DuplicateResource, why))
            } else {
                match map.get(u) {
                    Some(creds) => Ok(infos(creds)),
                    None => {
                        let why = format!("Attempt to describe a user credential that does not exist: {u}");
                        Err((ResponseError::ResourceNotFound, why))
                    }
                }
            };
            UserCredentials { user: u.clone(), result }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_start_users_are_written_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let users = BTreeMap::from([("admin".to_string(), "admin-secret".to_string())]);
        let mut n = 0u8;
        let mut salt = || {
            n += 1;
            vec![n; 16]
        };
        let first = initial_credentials(&users, &mut salt);
        let stored = create_or_load(dir.path(), &first).unwrap();
        assert_eq!(stored, first);
        // A later start with other users keeps the file as it is.
        let other = initial_credentials(&BTreeMap::from([("x".into(), "y".into())]), &mut salt);
        assert_eq!(create_or_load(dir.path(), &other).unwrap(), first);
        let text = std::fs::read_to_string(credentials_path(dir.path())).unwrap();
        assert!(!text.contains("admin-secret"), "never the password");
        let creds = ScramCredentials::new(stored);
        assert!(creds.get("admin", Mechanism::Sha512).is_some());
        assert!(creds.get("admin", Mechanism::Sha256).is_some());
        assert!(creds.get("nobody", Mechanism::Sha256).is_none());
    }

    #[test]
    fn describe_lists_every_user_or_the_named_ones_with_kafkas_errors() {
        let map = initial_credentials(&BTreeMap::from([("admin".into(), "pw".into())]), &mut || vec![1; 16]);
        let all = describe(None, &map);
        assert_eq!(all, vec![UserCredentials { user: "admin".into(), result: Ok(vec![(1, 4096), (2, 4096)]) }]);
        assert_eq!(describe(Some(&[]), &map), all);
        let users = ["alice".to_string(), "admin".to_string(), "alice".to_string()];
        let codes: Vec<_> =
            describe(Some(&users), &map).into_iter().map(|u| (u.user, u.result.map_err(|e| e.0))).collect();
        assert_eq!(
            codes,
            vec![
                ("alice".into(), Err(ResponseError::DuplicateResource)),
                ("admin".into(), Ok(vec![(1, 4096), (2, 4096)])),
                ("alice".into(), Err(ResponseError::DuplicateResource)),
            ]
        );
        let missing = describe(Some(&["bob".to_string()]), &CredentialMap::new());
        assert_eq!(missing[0].result.as_ref().map_err(|e| e.0), Err(ResponseError::ResourceNotFound));
    }

    #[test]
    fn no_file_is_no_users() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_empty());
    }
}
