//! The SCRAM credentials of the cluster's users: per user and mechanism a salted credential
//! (never a password), kept in `<data>/__cluster/scram_credentials.json` on the shared disk so
//! every broker of the cluster authenticates the same users. The users the configuration names
//! (`scram_users_at_first_start`) are written when the file does not exist yet (an exclusive
//! create: of brokers starting at once, one writes it).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use thiserror::Error;

use super::scram::{Credential, Mechanism, MAX_ITERATIONS, MIN_ITERATIONS};
use crate::error_code::ResponseError;
use crate::store::durable::{create_atomic, create_dir_all_durable};

#[derive(Debug, Error)]
pub enum CredentialsError {
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("{0}: {1}")]
    Format(PathBuf, serde_json::Error),
    #[error("Another broker is changing the SCRAM credentials; try again.")]
    Busy,
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

/// How long a change waits for another broker's change.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Changes the credentials with `change` under the lock file `scram_credentials.lock` and writes
/// them durably when they changed: brokers sharing the disk never interleave two changes.
pub fn change<T>(
    data_dir: &Path,
    change: impl FnOnce(&CredentialMap) -> (CredentialMap, T),
) -> Result<(CredentialMap, T), CredentialsError> {
    let dir = data_dir.join("__cluster");
    create_dir_all_durable(&dir).map_err(|e| CredentialsError::Io(dir.clone(), e))?;
    let lock_path = dir.join("scram_credentials.lock");
    let _lock = crate::store::cluster::file_lock::lock_file_within(&lock_path, LOCK_WAIT)
        .map_err(|e| CredentialsError::Io(lock_path.clone(), e))?
        .ok_or(CredentialsError::Busy)?;
    let current = load(data_dir)?;
    let (next, report) = change(&current);
    if next != current {
        let path = credentials_path(data_dir);
        let bytes = serde_json::to_vec_pretty(&next).map_err(|e| CredentialsError::Format(path.clone(), e))?;
        crate::store::durable::write_atomic(&path, &bytes).map_err(|e| CredentialsError::Io(path.clone(), e))?;
    }
    Ok((next, report))
}

/// One deletion of AlterUserScramCredentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deletion {
    pub user: String,
    /// Kafka's ScramMechanism type id.
    pub mechanism: i8,
}

/// One upsertion of AlterUserScramCredentials: the client salts the password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upsertion {
    pub user: String,
    pub mechanism: i8,
    pub iterations: i32,
    pub salt: Vec<u8>,
    pub salted_password: Vec<u8>,
}

/// At most this many SCRAM users (the file is read whole by every broker after each change), and
/// a salt of at most this many bytes (clients send 32 or 64).
pub const MAX_USERS: usize = 10_000;
pub const MAX_SALT_BYTES: usize = 1024;

/// One user's answer.
pub type UserResult = (String, Result<(), (ResponseError, String)>);

/// AlterUserScramCredentials as Kafka's controller answers it (ControllerApis,
/// ScramControlManager): per user, in the order the request names them, its first error; a user
/// with an error changes nothing. A (user, mechanism) altered twice is DUPLICATE_RESOURCE, an
/// empty user name or iterations outside 4096..=16384 UNACCEPTABLE_CREDENTIAL, an unknown
/// mechanism UNSUPPORTED_SASL_MECHANISM, deleting a credential that does not exist
/// RESOURCE_NOT_FOUND. The new credentials, and the answers.
pub fn alter(
    map: &CredentialMap,
    deletions: &[Deletion],
    upsertions: &[Upsertion],
) -> (CredentialMap, Vec<UserResult>) {
    let mut order: Vec<String> = Vec::new();
    let mut errors: HashMap<String, (ResponseError, String)> = HashMap::new();
    let mut seen: HashMap<(String, i8), usize> = HashMap::new();
    let ops = deletions
        .iter()
        .map(|d| (d.user.clone(), d.mechanism))
        .chain(upsertions.iter().map(|u| (u.user.clone(), u.mechanism)));
    for (user, mechanism) in ops {
        if !order.contains(&user) {
            order.push(user.clone());
        }
        *seen.entry((user, mechanism)).or_default() += 1;
    }
    let mut fail = |user: &str, e: ResponseError, why: &str| {
        errors.entry(user.to_string()).or_insert((e, why.to_string()));
    };
    for ((user, _), n) in &seen {
        if *n > 1 {
            fail(
                user,
                ResponseError::DuplicateResource,
                "A user credential cannot be altered twice in the same request",
            );
        }
    }
    for user in &order {
        if user.is_empty() {
            fail(user, ResponseError::UnacceptableCredential, "Username must not be empty");
        }
    }
    for d in deletions {
        match Mechanism::from_type_id(d.mechanism) {
            None => fail(&d.user, ResponseError::UnsupportedSaslMechanism, "Unknown SCRAM mechanism"),
            Some(m) if map.get(&d.user).is_none_or(|c| !c.contains_key(&m)) => fail(
                &d.user,
                ResponseError::ResourceNotFound,
                "Attempt to delete a user credential that does not exist",
            ),
            Some(_) => {}
        }
    }
    for u in upsertions {
        match Mechanism::from_type_id(u.mechanism) {
            None => fail(&u.user, ResponseError::UnsupportedSaslMechanism, "Unknown SCRAM mechanism"),
            Some(_) if u.iterations < MIN_ITERATIONS => {
                fail(&u.user, ResponseError::UnacceptableCredential, "Too few iterations")
            }
            Some(_) if u.iterations > MAX_ITERATIONS => {
                fail(&u.user, ResponseError::UnacceptableCredential, "Too many iterations")
            }
            Some(m)
                if u.salt.is_empty() || u.salt.len() > MAX_SALT_BYTES || u.salted_password.len() != m.hash_len() =>
            {
                fail(&u.user, ResponseError::UnacceptableCredential, "Invalid salt or salted password")
            }
            Some(_) => {}
        }
    }
    // New users beyond the bound are refused before anything is applied.
    let mut new_users: Vec<String> = Vec::new();
    for u in upsertions {
        if !map.contains_key(&u.user) && !errors.contains_key(&u.user) && !new_users.contains(&u.user) {
            new_users.push(u.user.clone());
        }
    }
    for user in new_users.into_iter().skip(MAX_USERS.saturating_sub(map.len())) {
        let why = format!("kaas keeps at most {MAX_USERS} SCRAM users");
        errors.insert(user, (ResponseError::UnacceptableCredential, why));
    }
    let mut next = map.clone();
    for d in deletions.iter().filter(|d| !errors.contains_key(&d.user)) {
        if let (Some(m), Some(creds)) = (Mechanism::from_type_id(d.mechanism), next.get_mut(&d.user)) {
            creds.remove(&m);
        }
    }
    for u in upsertions.iter().filter(|u| !errors.contains_key(&u.user)) {
        if let Some(m) = Mechanism::from_type_id(u.mechanism) {
            let c = Credential::from_salted_password(m, &u.salt, &u.salted_password, u.iterations);
            next.entry(u.user.clone()).or_default().insert(m, c);
        }
    }
    next.retain(|_, creds| !creds.is_empty());
    let results = order
        .into_iter()
        .map(|u| {
            let r = errors.get(&u).cloned().map_or(Ok(()), Err);
            (u, r)
        })
        .collect();
    (next, results)
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

    fn upsert(user: &str, mechanism: i8, iterations: i32) -> Upsertion {
        let m = Mechanism::from_type_id(mechanism).unwrap_or(Mechanism::Sha256);
        let salted_password = m.salted_password(b"pw", b"salt", 4096);
        Upsertion { user: user.into(), mechanism, iterations, salt: b"salt".to_vec(), salted_password }
    }

    #[test]
    fn alter_adds_replaces_and_deletes_credentials() {
        let (map, results) = alter(&CredentialMap::new(), &[], &[upsert("alice", 1, 4096), upsert("alice", 2, 8192)]);
        assert_eq!(results, vec![("alice".to_string(), Ok(()))]);
        assert_eq!(describe(None, &map)[0].result, Ok(vec![(1, 4096), (2, 8192)]));
        let (map, results) = alter(&map, &[Deletion { user: "alice".into(), mechanism: 1 }], &[]);
        assert_eq!(results[0].1, Ok(()));
        assert_eq!(describe(None, &map)[0].result, Ok(vec![(2, 8192)]));
        let (map, _) = alter(&map, &[Deletion { user: "alice".into(), mechanism: 2 }], &[]);
        assert!(map.is_empty(), "a user without credentials is gone");
    }

    #[test]
    fn alter_refuses_what_kafka_refuses_and_a_failed_user_changes_nothing() {
        let code =
            |r: &[UserResult], u: &str| r.iter().find(|x| x.0 == u).and_then(|x| x.1.as_ref().err().map(|e| e.0));
        let (map, r) = alter(
            &CredentialMap::new(),
            &[Deletion { user: "ghost".into(), mechanism: 1 }],
            &[
                upsert("few", 1, 100),
                upsert("many", 2, 20000),
                upsert("dup", 1, 4096),
                upsert("dup", 1, 4096),
                upsert("odd", 9, 4096),
                upsert("", 1, 4096),
                upsert("ok", 1, 4096),
            ],
        );
        assert_eq!(code(&r, "ghost"), Some(ResponseError::ResourceNotFound));
        assert_eq!(code(&r, "few"), Some(ResponseError::UnacceptableCredential));
        assert_eq!(code(&r, "many"), Some(ResponseError::UnacceptableCredential));
        assert_eq!(code(&r, "dup"), Some(ResponseError::DuplicateResource));
        assert_eq!(code(&r, "odd"), Some(ResponseError::UnsupportedSaslMechanism));
        assert_eq!(code(&r, ""), Some(ResponseError::UnacceptableCredential));
        assert_eq!(code(&r, "ok"), None);
        assert_eq!(map.keys().collect::<Vec<_>>(), vec!["ok"]);
    }

    #[test]
    fn new_users_beyond_the_bound_and_oversized_salts_are_unacceptable() {
        let full: CredentialMap = (0..MAX_USERS).map(|i| (format!("u{i}"), BTreeMap::new())).collect();
        let (map, r) = alter(&full, &[], &[upsert("u1", 1, 4096), upsert("one-more", 1, 4096)]);
        assert_eq!(r[0].1, Ok(()), "an existing user may still change");
        assert_eq!(r[1].1.as_ref().map_err(|e| e.0), Err(ResponseError::UnacceptableCredential));
        assert!(!map.contains_key("one-more"));
        let big = Upsertion { salt: vec![1; MAX_SALT_BYTES + 1], ..upsert("s", 1, 4096) };
        let (_, r) = alter(&CredentialMap::new(), &[], &[big]);
        assert_eq!(r[0].1.as_ref().map_err(|e| e.0), Err(ResponseError::UnacceptableCredential));
    }

    #[test]
    fn changes_are_written_under_the_lock_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let (map, ()) = change(dir.path(), |cur| (alter(cur, &[], &[upsert("bob", 2, 4096)]).0, ())).unwrap();
        assert_eq!(load(dir.path()).unwrap(), map);
    }

    #[test]
    fn no_file_is_no_users() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_empty());
    }
}
