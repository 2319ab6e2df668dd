//! The broker's authorizer (Kafka's StandardAuthorizer, store::auth::acl): the cluster's ACLs,
//! shared by every connection and the group coordinator, read again from the shared disk when
//! they changed (store::auth::acl_store), and the decisions handlers ask of it. Denials are counted in
//! `kaas_authorization_denied`.

use crate::config::Settings;
use crate::metrics::Metrics;
use crate::store::auth::acl::{AclBinding, Acls, Action, SharedAcls};

#[derive(Clone)]
pub struct Authorizer {
    acls: SharedAcls,
    metrics: Metrics,
}

impl Authorizer {
    /// The authorizer the settings ask for (None: every request is allowed), with `bindings`.
    pub fn from_settings(settings: &Settings, bindings: Vec<AclBinding>, metrics: Metrics) -> Option<Authorizer> {
        let sec = &settings.security;
        (sec.authorizer == "standard").then(|| Authorizer {
            acls: SharedAcls::new(Acls {
                bindings,
                super_users: sec.super_users.clone(),
                allow_if_no_acl: sec.allow_everyone_if_no_acl_found,
            }),
            metrics,
        })
    }

    pub fn replace_bindings(&self, bindings: Vec<AclBinding>) {
        self.acls.replace_bindings(bindings);
    }

    pub fn bindings(&self) -> Vec<AclBinding> {
        self.acls.bindings()
    }

    /// The ACLs themselves, for the parts of the broker outside a connection.
    pub fn shared(&self) -> SharedAcls {
        self.acls.clone()
    }

    pub fn authorize(&self, a: Action<'_>) -> bool {
        let allowed = self.acls.authorize(a);
        if !allowed {
            self.metrics.authorization_denied();
            tracing::debug!(
                principal = a.principal,
                host = a.host,
                operation = a.operation,
                resource_type = a.resource_type,
                name = a.name,
                "denied"
            );
        }
        allowed
    }

    pub fn authorize_any(&self, principal: &str, host: &str, operation: i8, resource_type: i8) -> bool {
        self.acls.authorize_any(principal, host, operation, resource_type)
    }
}
