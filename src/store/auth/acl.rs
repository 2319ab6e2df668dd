//! Kafka's ACLs and its StandardAuthorizer's decision (KIP-11, KIP-290), pure: bindings of a
//! resource pattern (type, name, LITERAL or PREFIXED) to an entry (principal, host, operation,
//! ALLOW or DENY); a request is allowed for a super user, denied by any DENY entry that matches
//! it, allowed by an ALLOW entry that matches it or implies it (DESCRIBE by READ, WRITE, DELETE
//! or ALTER; DESCRIBE_CONFIGS by ALTER_CONFIGS), and, where no ACL at all names the resource,
//! decided by `allow.everyone.if.no.acl.found`. The filters of DescribeAcls and DeleteAcls, and
//! CreateAcls' checks of a binding, as Kafka answers them.

use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};

/// Kafka's ResourceType ids.
pub const RESOURCE_ANY: i8 = 1;
pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_GROUP: i8 = 3;
pub const RESOURCE_CLUSTER: i8 = 4;
pub const RESOURCE_TRANSACTIONAL_ID: i8 = 5;
pub const RESOURCE_DELEGATION_TOKEN: i8 = 6;
pub const RESOURCE_USER: i8 = 7;

/// Kafka's PatternType ids.
pub const PATTERN_ANY: i8 = 1;
pub const PATTERN_MATCH: i8 = 2;
pub const PATTERN_LITERAL: i8 = 3;
pub const PATTERN_PREFIXED: i8 = 4;

/// Kafka's AclOperation ids.
pub const OP_ANY: i8 = 1;
pub const OP_ALL: i8 = 2;
pub const OP_READ: i8 = 3;
pub const OP_WRITE: i8 = 4;
pub const OP_CREATE: i8 = 5;
pub const OP_DELETE: i8 = 6;
pub const OP_ALTER: i8 = 7;
pub const OP_DESCRIBE: i8 = 8;
pub const OP_CLUSTER_ACTION: i8 = 9;
pub const OP_DESCRIBE_CONFIGS: i8 = 10;
pub const OP_ALTER_CONFIGS: i8 = 11;
pub const OP_IDEMPOTENT_WRITE: i8 = 12;
pub const OP_CREATE_TOKENS: i8 = 13;
pub const OP_DESCRIBE_TOKENS: i8 = 14;
pub const OP_TWO_PHASE_COMMIT: i8 = 15;

/// The operations Kafka defines on a topic and on the cluster
/// (`AclEntry.supportedOperations`), the ones an authorized-operations bitfield reports.
pub const TOPIC_OPERATIONS: [i8; 8] =
    [OP_READ, OP_WRITE, OP_CREATE, OP_DESCRIBE, OP_DELETE, OP_ALTER, OP_DESCRIBE_CONFIGS, OP_ALTER_CONFIGS];
pub const CLUSTER_OPERATIONS: [i8; 7] =
    [OP_CREATE, OP_CLUSTER_ACTION, OP_DESCRIBE_CONFIGS, OP_ALTER_CONFIGS, OP_IDEMPOTENT_WRITE, OP_ALTER, OP_DESCRIBE];
pub const GROUP_OPERATIONS: [i8; 5] = [OP_READ, OP_DELETE, OP_DESCRIBE, OP_DESCRIBE_CONFIGS, OP_ALTER_CONFIGS];

/// Kafka's authorized-operations bitfield (`Utils.to32BitField`): bit `op` set for each of
/// `supported` that `allowed` grants.
pub fn operations_bitfield(supported: &[i8], allowed: impl Fn(i8) -> bool) -> i32 {
    supported.iter().filter(|op| allowed(**op)).fold(0, |bits, op| bits | (1 << op))
}

/// Kafka's AclPermissionType ids.
pub const PERMISSION_ANY: i8 = 1;
pub const PERMISSION_DENY: i8 = 2;
pub const PERMISSION_ALLOW: i8 = 3;

/// The one cluster resource's name.
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// A LITERAL name matching every resource of its type; a principal or host matching all.
pub const WILDCARD: &str = "*";
pub const WILDCARD_PRINCIPAL: &str = "User:*";

/// One ACL.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AclBinding {
    pub resource_type: i8,
    pub name: String,
    pub pattern_type: i8,
    /// `User:alice`.
    pub principal: String,
    pub host: String,
    pub operation: i8,
    pub permission: i8,
}

/// A DescribeAcls / DeleteAcls filter: None fields match anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclFilter {
    pub resource_type: i8,
    pub name: Option<String>,
    pub pattern_type: i8,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: i8,
    pub permission: i8,
}

/// Whether pattern (`pattern_type`, `pattern`) names resource `name`.
fn pattern_matches(pattern_type: i8, pattern: &str, name: &str) -> bool {
    match pattern_type {
        PATTERN_LITERAL => pattern == name || pattern == WILDCARD,
        PATTERN_PREFIXED => name.starts_with(pattern),
        _ => false,
    }
}

/// Whether an ALLOW entry for `granted` allows `wanted`.
fn allows(granted: i8, wanted: i8) -> bool {
    granted == OP_ALL
        || granted == wanted
        || (wanted == OP_DESCRIBE && matches!(granted, OP_READ | OP_WRITE | OP_DELETE | OP_ALTER))
        || (wanted == OP_DESCRIBE_CONFIGS && granted == OP_ALTER_CONFIGS)
}

/// What the authorizer knows: the ACLs and its settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Acls {
    pub bindings: Vec<AclBinding>,
    /// `super_users`: principals allowed everything (`User:admin`).
    pub super_users: Vec<String>,
    /// Kafka's `allow.everyone.if.no.acl.found` (false: a resource no ACL names is denied).
    pub allow_if_no_acl: bool,
}

/// The cluster's ACLs as every part of a broker that decides with them shares them: the
/// connections (protocol::authorizer) and the group coordinator (a KIP-848 regex subscription
/// resolves to the topics the member may describe).
#[derive(Clone)]
pub struct SharedAcls(Arc<RwLock<Acls>>);

impl SharedAcls {
    pub fn new(acls: Acls) -> SharedAcls {
        SharedAcls(Arc::new(RwLock::new(acls)))
    }

    pub fn replace_bindings(&self, bindings: Vec<AclBinding>) {
        if let Ok(mut acls) = self.0.write() {
            acls.bindings = bindings;
        }
    }

    pub fn bindings(&self) -> Vec<AclBinding> {
        self.0.read().map(|a| a.bindings.clone()).unwrap_or_default()
    }

    /// [`Acls::authorize`]; false if the lock is poisoned.
    pub fn authorize(&self, a: Action<'_>) -> bool {
        self.0.read().map(|acls| acls.authorize(a)).unwrap_or(false)
    }

    /// [`Acls::authorize_any`]; false if the lock is poisoned.
    pub fn authorize_any(&self, principal: &str, host: &str, operation: i8, resource_type: i8) -> bool {
        self.0.read().map(|acls| acls.authorize_any(principal, host, operation, resource_type)).unwrap_or(false)
    }
}

impl std::fmt::Debug for SharedAcls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedAcls")
    }
}

impl PartialEq for SharedAcls {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// One request to authorize.
#[derive(Debug, Clone, Copy)]
pub struct Action<'a> {
    pub principal: &'a str,
    pub host: &'a str,
    pub operation: i8,
    pub resource_type: i8,
    pub name: &'a str,
}

impl Acls {
    /// Kafka's StandardAuthorizer decision for `a`.
    pub fn authorize(&self, a: Action<'_>) -> bool {
        if self.super_users.iter().any(|s| s == a.principal) {
            return true;
        }
        let mut named = false;
        let mut allowed = false;
        for b in &self.bindings {
            if b.resource_type != a.resource_type || !pattern_matches(b.pattern_type, &b.name, a.name) {
                continue;
            }
            named = true;
            let who = b.principal == a.principal || b.principal == WILDCARD_PRINCIPAL;
            let from = b.host == a.host || b.host == WILDCARD;
            if !(who && from) {
                continue;
            }
            match b.permission {
                // A DENY matches its operation or ALL only (it implies nothing), and wins.
                PERMISSION_DENY if b.operation == a.operation || b.operation == OP_ALL => return false,
                PERMISSION_ALLOW if allows(b.operation, a.operation) => allowed = true,
                _ => {}
            }
        }
        allowed || (!named && self.allow_if_no_acl)
    }

    /// Whether `principal` may do `operation` on some resource of `resource_type` (Kafka's
    /// authorizeByResourceType), used where any topic will do (KIP-679: idempotent produce with
    /// WRITE on any topic). As Kafka decides it: what a made-up resource name would be allowed
    /// (super users; `allow.everyone.if.no.acl.found` where nothing names it) is allowed; a
    /// LITERAL `*` DENY denies; else some ALLOW (of the operation itself or ALL) must survive
    /// the DENYs: a LITERAL `*` ALLOW always does, a LITERAL name unless a LITERAL DENY names it
    /// or a PREFIXED DENY is a prefix of it, a PREFIXED name unless a PREFIXED DENY is a prefix
    /// of it.
    pub fn authorize_any(&self, principal: &str, host: &str, operation: i8, resource_type: i8) -> bool {
        let made_up = Action { principal, host, operation, resource_type, name: "hardcode" };
        if self.authorize(made_up) {
            return true;
        }
        let applies = |b: &&AclBinding| {
            b.resource_type == resource_type
                && (b.principal == principal || b.principal == WILDCARD_PRINCIPAL)
                && (b.host == host || b.host == WILDCARD)
                && (b.operation == operation || b.operation == OP_ALL)
        };
        let denies: Vec<&AclBinding> =
            self.bindings.iter().filter(applies).filter(|b| b.permission == PERMISSION_DENY).collect();
        if denies.iter().any(|d| d.pattern_type == PATTERN_LITERAL && d.name == WILDCARD) {
            return false;
        }
        let dominated = |allow: &AclBinding| {
            denies.iter().any(|d| match d.pattern_type {
                PATTERN_PREFIXED => allow.name.starts_with(d.name.as_str()),
                PATTERN_LITERAL => allow.pattern_type == PATTERN_LITERAL && d.name == allow.name,
                _ => false,
            })
        };
        self.bindings.iter().filter(applies).filter(|b| b.permission == PERMISSION_ALLOW).any(|b| {
            match b.pattern_type {
                PATTERN_LITERAL if b.name == WILDCARD => true,
                PATTERN_LITERAL | PATTERN_PREFIXED => !dominated(b),
                _ => false,
            }
        })
    }
}

impl AclFilter {
    /// Whether `b` matches this filter (Kafka's AclBindingFilter.matches: MATCH takes every
    /// pattern that names the filter's resource name, ANY every pattern).
    pub fn matches(&self, b: &AclBinding) -> bool {
        let resource = self.resource_type == RESOURCE_ANY || self.resource_type == b.resource_type;
        let pattern = match (self.pattern_type, &self.name) {
            (PATTERN_ANY, None) => true,
            (PATTERN_ANY, Some(n)) => &b.name == n,
            (PATTERN_MATCH, None) => true,
            (PATTERN_MATCH, Some(n)) => pattern_matches(b.pattern_type, &b.name, n),
            (t, None) => t == b.pattern_type,
            (t, Some(n)) => t == b.pattern_type && &b.name == n,
        };
        let principal = self.principal.as_ref().is_none_or(|p| p == &b.principal);
        let host = self.host.as_ref().is_none_or(|h| h == &b.host);
        let operation = self.operation == OP_ANY || self.operation == b.operation;
        let permission = self.permission == PERMISSION_ANY || self.permission == b.permission;
        resource && pattern && principal && host && operation && permission
    }
}

/// Why CreateAcls refuses a binding: INVALID_REQUEST (42) with Kafka's message.
pub fn check_binding(b: &AclBinding) -> Result<(), String> {
    if !matches!(b.resource_type, RESOURCE_TOPIC | RESOURCE_GROUP | RESOURCE_CLUSTER | RESOURCE_TRANSACTIONAL_ID) {
        return Err(format!("Invalid resource type {}", b.resource_type));
    }
    if !matches!(b.pattern_type, PATTERN_LITERAL | PATTERN_PREFIXED) {
        return Err(format!("Invalid pattern type {}", b.pattern_type));
    }
    if !(OP_ALL..=OP_TWO_PHASE_COMMIT).contains(&b.operation) {
        return Err(format!("Invalid operation {}", b.operation));
    }
    if !matches!(b.permission, PERMISSION_DENY | PERMISSION_ALLOW) {
        return Err(format!("Invalid permission type {}", b.permission));
    }
    if b.name.is_empty() {
        return Err("Resource name should not be empty".into());
    }
    if b.resource_type == RESOURCE_CLUSTER && b.name != CLUSTER_NAME {
        return Err("The only valid name for the CLUSTER resource is kafka-cluster".into());
    }
    if b.pattern_type == PATTERN_PREFIXED && b.name == WILDCARD {
        return Err("Invalid ACL: a PREFIXED pattern cannot be *".into());
    }
    match b.principal.split_once(':') {
        Some((kind, name)) if !kind.is_empty() && !name.is_empty() => {}
        _ => return Err(format!("Invalid principal {}", b.principal)),
    }
    if b.host.is_empty() {
        return Err("Invalid host: empty".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorized_operations_are_a_bitfield_of_the_allowed_supported_ones() {
        // Every topic operation: what Kafka answers without an authorizer.
        assert_eq!(operations_bitfield(&TOPIC_OPERATIONS, |_| true), 0b1101_1111_1000);
        assert_eq!(
            operations_bitfield(&TOPIC_OPERATIONS, |op| op == OP_READ || op == OP_DESCRIBE),
            (1 << 3) | (1 << 8)
        );
        assert_eq!(operations_bitfield(&CLUSTER_OPERATIONS, |_| true).count_ones(), 7);
        // Kafka 4.4 without an authorizer: READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
        assert_eq!(operations_bitfield(&GROUP_OPERATIONS, |_| true), 0b1101_0100_1000);
    }

    fn acl(rt: i8, name: &str, pt: i8, principal: &str, op: i8, perm: i8) -> AclBinding {
        AclBinding {
            resource_type: rt,
            name: name.into(),
            pattern_type: pt,
            principal: principal.into(),
            host: WILDCARD.into(),
            operation: op,
            permission: perm,
        }
    }

    fn can(acls: &Acls, principal: &str, op: i8, rt: i8, name: &str) -> bool {
        acls.authorize(Action { principal, host: "10.0.0.1", operation: op, resource_type: rt, name })
    }

    #[test]
    fn a_resource_no_acl_names_is_denied_unless_allow_everyone_if_no_acl_found() {
        let mut acls = Acls::default();
        assert!(!can(&acls, "User:alice", OP_READ, RESOURCE_TOPIC, "t"));
        acls.allow_if_no_acl = true;
        assert!(can(&acls, "User:alice", OP_READ, RESOURCE_TOPIC, "t"));
        // Once an ACL names the resource, only the ACLs decide.
        acls.bindings.push(acl(RESOURCE_TOPIC, "t", PATTERN_LITERAL, "User:bob", OP_READ, PERMISSION_ALLOW));
        assert!(!can(&acls, "User:alice", OP_READ, RESOURCE_TOPIC, "t"));
    }

    #[test]
    fn super_users_are_allowed_everything() {
        let acls = Acls { super_users: vec!["User:admin".into()], ..Acls::default() };
        assert!(can(&acls, "User:admin", OP_CLUSTER_ACTION, RESOURCE_CLUSTER, CLUSTER_NAME));
    }

    #[test]
    fn deny_wins_over_allow() {
        let acls = Acls {
            bindings: vec![
                acl(RESOURCE_TOPIC, "*", PATTERN_LITERAL, "User:alice", OP_ALL, PERMISSION_ALLOW),
                acl(RESOURCE_TOPIC, "secret", PATTERN_PREFIXED, "User:*", OP_READ, PERMISSION_DENY),
            ],
            ..Acls::default()
        };
        assert!(can(&acls, "User:alice", OP_READ, RESOURCE_TOPIC, "public"));
        assert!(!can(&acls, "User:alice", OP_READ, RESOURCE_TOPIC, "secret-plans"));
        // A DENY of READ does not deny DESCRIBE (a DENY implies nothing).
        assert!(can(&acls, "User:alice", OP_DESCRIBE, RESOURCE_TOPIC, "secret-plans"));
    }

    #[test]
    fn read_write_delete_alter_imply_describe_and_alter_configs_implies_describe_configs() {
        for op in [OP_READ, OP_WRITE, OP_DELETE, OP_ALTER] {
            let acls = Acls {
                bindings: vec![acl(RESOURCE_TOPIC, "t", PATTERN_LITERAL, "User:a", op, PERMISSION_ALLOW)],
                ..Acls::default()
            };
            assert!(can(&acls, "User:a", OP_DESCRIBE, RESOURCE_TOPIC, "t"), "{op}");
            assert!(!can(&acls, "User:a", OP_CREATE, RESOURCE_TOPIC, "t"), "{op}");
        }
        let acls = Acls {
            bindings: vec![acl(RESOURCE_TOPIC, "t", PATTERN_LITERAL, "User:a", OP_ALTER_CONFIGS, PERMISSION_ALLOW)],
            ..Acls::default()
        };
        assert!(can(&acls, "User:a", OP_DESCRIBE_CONFIGS, RESOURCE_TOPIC, "t"));
    }

    #[test]
    fn prefixed_and_wildcard_patterns_and_hosts_match() {
        let mut from_host = acl(RESOURCE_GROUP, "app-", PATTERN_PREFIXED, "User:a", OP_READ, PERMISSION_ALLOW);
        from_host.host = "10.0.0.1".into();
        let acls = Acls { bindings: vec![from_host], ..Acls::default() };
        assert!(can(&acls, "User:a", OP_READ, RESOURCE_GROUP, "app-1"));
        assert!(!can(&acls, "User:a", OP_READ, RESOURCE_GROUP, "other"));
        let elsewhere = Action {
            principal: "User:a",
            host: "10.0.0.2",
            operation: OP_READ,
            resource_type: RESOURCE_GROUP,
            name: "app-1",
        };
        assert!(!acls.authorize(elsewhere));
    }

    #[test]
    fn write_on_any_topic_authorizes_idempotent_produce() {
        let acls = Acls {
            bindings: vec![acl(RESOURCE_TOPIC, "orders", PATTERN_LITERAL, "User:p", OP_WRITE, PERMISSION_ALLOW)],
            ..Acls::default()
        };
        assert!(acls.authorize_any("User:p", "h", OP_WRITE, RESOURCE_TOPIC));
        assert!(!acls.authorize_any("User:q", "h", OP_WRITE, RESOURCE_TOPIC));
        let mut denied = acls.clone();
        denied.bindings.push(acl(RESOURCE_TOPIC, "*", PATTERN_LITERAL, "User:p", OP_WRITE, PERMISSION_DENY));
        assert!(!denied.authorize_any("User:p", "h", OP_WRITE, RESOURCE_TOPIC));
    }

    #[test]
    fn a_prefixed_deny_covering_every_allow_denies_by_resource_type() {
        let allow = |name: &str, pattern| acl(RESOURCE_TOPIC, name, pattern, "User:p", OP_WRITE, PERMISSION_ALLOW);
        let deny = |name: &str, pattern| acl(RESOURCE_TOPIC, name, pattern, "User:p", OP_WRITE, PERMISSION_DENY);
        let with = |bindings| Acls { bindings, ..Acls::default() };
        // A PREFIXED DENY that is a prefix of the only LITERAL or PREFIXED ALLOW cancels it.
        assert!(!with(vec![allow("orders-eu", PATTERN_LITERAL), deny("orders", PATTERN_PREFIXED)]).authorize_any(
            "User:p",
            "h",
            OP_WRITE,
            RESOURCE_TOPIC
        ));
        assert!(!with(vec![allow("orders-", PATTERN_PREFIXED), deny("orders", PATTERN_PREFIXED)]).authorize_any(
            "User:p",
            "h",
            OP_WRITE,
            RESOURCE_TOPIC
        ));
        // One that is not a prefix of it, or a LITERAL DENY of a PREFIXED ALLOW's name, does not.
        assert!(with(vec![allow("orders-eu", PATTERN_LITERAL), deny("payments", PATTERN_PREFIXED)]).authorize_any(
            "User:p",
            "h",
            OP_WRITE,
            RESOURCE_TOPIC
        ));
        assert!(with(vec![allow("orders-", PATTERN_PREFIXED), deny("orders-", PATTERN_LITERAL)]).authorize_any(
            "User:p",
            "h",
            OP_WRITE,
            RESOURCE_TOPIC
        ));
        // A LITERAL `*` ALLOW survives PREFIXED DENYs; ALL counts, an implied operation does not.
        assert!(with(vec![allow("*", PATTERN_LITERAL), deny("o", PATTERN_PREFIXED)]).authorize_any(
            "User:p",
            "h",
            OP_WRITE,
            RESOURCE_TOPIC
        ));
        let all = acl(RESOURCE_TOPIC, "t", PATTERN_LITERAL, "User:p", OP_ALL, PERMISSION_ALLOW);
        assert!(with(vec![all]).authorize_any("User:p", "h", OP_WRITE, RESOURCE_TOPIC));
        let read = acl(RESOURCE_TOPIC, "t", PATTERN_LITERAL, "User:p", OP_READ, PERMISSION_ALLOW);
        assert!(!with(vec![read]).authorize_any("User:p", "h", OP_DESCRIBE, RESOURCE_TOPIC));
    }

    #[test]
    fn filters_match_as_kafkas_acl_binding_filter() {
        let b = acl(RESOURCE_TOPIC, "app-", PATTERN_PREFIXED, "User:a", OP_READ, PERMISSION_ALLOW);
        let any = AclFilter {
            resource_type: RESOURCE_ANY,
            name: None,
            pattern_type: PATTERN_ANY,
            principal: None,
            host: None,
            operation: OP_ANY,
            permission: PERMISSION_ANY,
        };
        assert!(any.matches(&b));
        let m = AclFilter { name: Some("app-orders".into()), pattern_type: PATTERN_MATCH, ..any.clone() };
        assert!(m.matches(&b));
        let literal = AclFilter { name: Some("app-".into()), pattern_type: PATTERN_LITERAL, ..any.clone() };
        assert!(!literal.matches(&b));
        let other = AclFilter { principal: Some("User:b".into()), ..any };
        assert!(!other.matches(&b));
    }

    #[test]
    fn create_acls_refuses_what_kafka_refuses() {
        let good = acl(RESOURCE_TOPIC, "t", PATTERN_LITERAL, "User:a", OP_READ, PERMISSION_ALLOW);
        assert!(check_binding(&good).is_ok());
        assert!(check_binding(&AclBinding { name: "other".into(), resource_type: RESOURCE_CLUSTER, ..good.clone() })
            .is_err());
        assert!(check_binding(&AclBinding { pattern_type: PATTERN_MATCH, ..good.clone() }).is_err());
        assert!(check_binding(&AclBinding { principal: "alice".into(), ..good.clone() }).is_err());
        assert!(check_binding(&AclBinding { operation: OP_ANY, ..good.clone() }).is_err());
        assert!(check_binding(&AclBinding { name: "*".into(), pattern_type: PATTERN_PREFIXED, ..good }).is_err());
    }
}
