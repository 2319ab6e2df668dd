//! Normalized answers: what the comparison sees of a response. Producer ids are renamed P1, P2,
//! ... in order of first appearance in that broker's answers of the sequence; timestamps,
//! throttle times, error messages, leader epochs, node ids and hosts are left out.

use std::collections::HashMap;
use std::fmt;

/// A producer id no broker hands out in a sequence (the "bogus" pid of the steps).
pub const BOGUS_PID: i64 = 7_777_777_777;

#[derive(Default)]
pub struct PidNames {
    names: HashMap<i64, usize>,
}

impl PidNames {
    /// Whether `pid` was already named in this sequence.
    pub fn known(&self, pid: i64) -> bool {
        pid < 0 || pid == BOGUS_PID || self.names.contains_key(&pid)
    }

    pub fn name(&mut self, pid: i64) -> String {
        match pid {
            -1 => "-1".to_string(),
            BOGUS_PID => "BOGUS".to_string(),
            p if p < 0 => p.to_string(),
            p => {
                let next = self.names.len() + 1;
                format!("P{}", self.names.entry(p).or_insert(next))
            }
        }
    }
}

/// Ordered (field, value) pairs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answer(pub Vec<(String, String)>);

impl Answer {
    pub fn new() -> Answer {
        Answer(Vec::new())
    }

    pub fn with(mut self, field: &str, value: impl ToString) -> Answer {
        self.0.push((field.to_string(), value.to_string()));
        self
    }

    pub fn push(&mut self, field: &str, value: impl ToString) {
        self.0.push((field.to_string(), value.to_string()));
    }

    pub fn failed(problem: &str) -> Answer {
        Answer::new().with("io", problem.split(':').next().unwrap_or(problem))
    }

    fn get(&self, field: &str) -> Option<&str> {
        self.0.iter().find(|(f, _)| f == field).map(|(_, v)| v.as_str())
    }

    /// Fields whose values differ (or exist on one side only), in order.
    pub fn differing(&self, other: &Answer) -> Vec<String> {
        let mut fields: Vec<String> = Vec::new();
        for (f, _) in self.0.iter().chain(other.0.iter()) {
            if !fields.contains(f) && self.get(f) != other.get(f) {
                fields.push(f.clone());
            }
        }
        fields
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
        write!(f, "{}", parts.join(" "))
    }
}

/// The class of a divergence: the API and, per differing field, both values when the field is
/// an error code or a state (the values that name a behaviour), else only the field's name
/// (offsets and record lists differ from seed to seed).
pub fn signature(api: &str, ak: &Answer, kaas: &Answer) -> String {
    let mut parts = Vec::new();
    for f in ak.differing(kaas) {
        let kind = f.rsplit('.').next().unwrap_or(&f);
        if matches!(kind, "err" | "top" | "state" | "io") || (f.starts_with('p') || f.starts_with('x')) && f.len() == 2
        {
            parts.push(format!("{f}: {} vs {}", ak.get(&f).unwrap_or("-"), kaas.get(&f).unwrap_or("-")));
        } else {
            parts.push(format!("{f} differs"));
        }
    }
    format!("{api}: {}", parts.join(", "))
}
