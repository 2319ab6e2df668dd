//! Listeners as Apache Kafka names them: `listeners = "PLAINTEXT://127.0.0.1:9092,SASL_SSL://:9093"`,
//! each `NAME://HOST:PORT` with the name its security protocol (Kafka's default
//! listener.security.protocol.map), an empty host meaning every interface; and
//! `advertised_listeners` in the same form, per listener name.

use std::fmt;

/// Kafka's SecurityProtocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    pub fn from_name(name: &str) -> Option<SecurityProtocol> {
        match name {
            "PLAINTEXT" => Some(SecurityProtocol::Plaintext),
            "SSL" => Some(SecurityProtocol::Ssl),
            "SASL_PLAINTEXT" => Some(SecurityProtocol::SaslPlaintext),
            "SASL_SSL" => Some(SecurityProtocol::SaslSsl),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    pub fn tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    pub fn sasl(self) -> bool {
        matches!(self, SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl)
    }
}

/// One listener: its name (its protocol's), where it binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub protocol: SecurityProtocol,
    /// Empty: every interface.
    pub host: String,
    pub port: u16,
}

impl Listener {
    pub fn name(&self) -> &'static str {
        self.protocol.name()
    }

    /// The address to bind.
    pub fn bind_address(&self) -> String {
        let host = if self.host.is_empty() { "0.0.0.0" } else { &self.host };
        format!("{host}:{}", self.port)
    }
}

impl fmt::Display for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.name(), self.host, self.port)
    }
}

/// Parses a Kafka listener list. Each name at most once, as Kafka requires.
pub fn parse_listeners(list: &str) -> Result<Vec<Listener>, String> {
    let mut out: Vec<Listener> = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, address) = item.split_once("://").ok_or_else(|| format!("{item}: not NAME://HOST:PORT"))?;
        let protocol = SecurityProtocol::from_name(name)
            .ok_or_else(|| format!("{item}: unknown listener {name} (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)"))?;
        let (host, port) = address.rsplit_once(':').ok_or_else(|| format!("{item}: no port"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        let port: u16 = port.parse().map_err(|_| format!("{item}: the port is not a number in 0..=65535"))?;
        if out.iter().any(|l| l.protocol == protocol) {
            return Err(format!("{name} is listed twice (each listener name at most once)"));
        }
        out.push(Listener { protocol, host, port });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_listener_syntax_is_parsed() {
        let l = parse_listeners("PLAINTEXT://127.0.0.1:9092, SASL_SSL://:9093").unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!((l[0].protocol, l[0].host.as_str(), l[0].port), (SecurityProtocol::Plaintext, "127.0.0.1", 9092));
        assert_eq!(
            (l[1].protocol, l[1].host.as_str(), l[1].bind_address()),
            (SecurityProtocol::SaslSsl, "", "0.0.0.0:9093".into())
        );
        assert!(l[1].protocol.tls() && l[1].protocol.sasl());
        assert_eq!(parse_listeners("").unwrap(), vec![]);
    }

    #[test]
    fn a_listener_named_twice_or_unknown_is_refused() {
        assert!(parse_listeners("SSL://:1,SSL://:2").is_err());
        assert!(parse_listeners("HTTP://:1").is_err());
        assert!(parse_listeners("SSL://host").is_err());
        assert!(parse_listeners("SSL://host:99999").is_err());
        assert!(parse_listeners("127.0.0.1:9092").is_err());
    }
}
