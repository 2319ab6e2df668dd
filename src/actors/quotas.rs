//! Broker-wide bounds on what clients can make the broker hold: open connections (Kafka's
//! `max.connections`, `max.connections.per.ip`) and bytes of requests read but not yet answered
//! (Kafka's `queued.max.request.bytes`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use prometheus_client::metrics::gauge::Gauge;
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum QuotaError {
    #[error("{0} connections open, the broker-wide limit (max_connections)")]
    Broker(usize),
    #[error("{1} connections open from {0}, the per-address limit (max_connections_per_ip)")]
    PerIp(IpAddr, usize),
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
    /// `total`, published (kafka_server_socketservermetrics_connection_count).
    gauge: Gauge,
}

impl Counts {
    fn publish(&self) {
        self.gauge.set(i64::try_from(self.total).unwrap_or(i64::MAX));
    }
}

/// Counts open connections; a permit is returned with each accepted one and gives its slot
/// back when dropped (when the connection actor ends, whichever thread that is on).
#[derive(Debug, Clone)]
pub struct ConnectionQuotas {
    max_total: usize,
    max_per_ip: usize,
    counts: Arc<Mutex<Counts>>,
}

#[derive(Debug)]
pub struct ConnectionPermit {
    ip: IpAddr,
    counts: Arc<Mutex<Counts>>,
}

impl ConnectionQuotas {
    pub fn new(max_total: usize, max_per_ip: usize) -> Self {
        Self::counted_in(max_total, max_per_ip, Gauge::default())
    }

    /// Also keeps `gauge` at the number of open connections.
    pub fn counted_in(max_total: usize, max_per_ip: usize, gauge: Gauge) -> Self {
        let counts = Counts { gauge, ..Counts::default() };
        ConnectionQuotas { max_total, max_per_ip, counts: Arc::new(Mutex::new(counts)) }
    }

    /// Takes a slot for a new connection from `ip`, or says which limit it would break.
    pub fn admit(&self, ip: IpAddr) -> Result<ConnectionPermit, QuotaError> {
        let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        if c.total >= self.max_total {
            return Err(QuotaError::Broker(c.total));
        }
        let from_ip = c.per_ip.get(&ip).copied().unwrap_or(0);
        if from_ip >= self.max_per_ip {
            return Err(QuotaError::PerIp(ip, from_ip));
        }
        c.total += 1;
        c.publish();
        *c.per_ip.entry(ip).or_insert(0) += 1;
        Ok(ConnectionPermit { ip, counts: self.counts.clone() })
    }

    pub fn open(&self) -> usize {
        self.counts.lock().unwrap_or_else(|p| p.into_inner()).total
    }
}

impl Drop for ConnectionPermit {
    fn drop(&mut self) {
        let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        c.total = c.total.saturating_sub(1);
        c.publish();
        if let Some(n) = c.per_ip.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                c.per_ip.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn max_connections_refuses_beyond_the_broker_limit_and_frees_on_drop() {
        let q = ConnectionQuotas::new(2, 10);
        let a = q.admit(ip(1)).unwrap();
        let _b = q.admit(ip(2)).unwrap();
        assert_eq!(q.admit(ip(3)).unwrap_err(), QuotaError::Broker(2));
        drop(a);
        assert!(q.admit(ip(3)).is_ok());
    }

    #[test]
    fn max_connections_per_ip_refuses_one_address_but_not_others() {
        let q = ConnectionQuotas::new(10, 1);
        let _a = q.admit(ip(1)).unwrap();
        assert_eq!(q.admit(ip(1)).unwrap_err(), QuotaError::PerIp(ip(1), 1));
        let _c = q.admit(ip(2)).unwrap();
        assert_eq!(q.open(), 2);
    }

    #[test]
    fn the_gauge_follows_the_open_connections() {
        let gauge = Gauge::default();
        let q = ConnectionQuotas::counted_in(10, 10, gauge.clone());
        let a = q.admit(ip(1)).unwrap();
        let _b = q.admit(ip(1)).unwrap();
        assert_eq!(gauge.get(), 2);
        drop(a);
        assert_eq!(gauge.get(), 1);
    }
}
