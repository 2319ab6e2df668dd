//! The accepted differences (tests/conformance/accepted.toml): divergence classes that are
//! explained, each with its reason and the rule it follows. A divergence whose signature no
//! entry matches fails the run.

use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub struct Accepted {
    pub id: String,
    /// A regular expression over the divergence signature (`answer::signature`).
    pub signature: String,
    /// Optionally also a regular expression over both answers of the diverging step,
    /// "<Apache Kafka answer> | <kaas answer>" (the `sent=` field shows the resolved request).
    #[serde(default)]
    pub answers: Option<String>,
    /// Transaction versions it applies to (all when empty).
    #[serde(default)]
    pub tv: Vec<i16>,
    pub reason: String,
    /// Whether both brokers are in the same state after the difference (a read, or an answer
    /// field only): the sequence then goes on; else it stops there (what follows would differ
    /// as a consequence).
    #[serde(default)]
    pub same_state: bool,
    /// A link to the rule (docs/eos-rules.md#...) or the Kafka issue.
    pub rule: String,
}

#[derive(Debug, Deserialize)]
struct File {
    #[serde(default)]
    difference: Vec<Accepted>,
}

pub struct AcceptedList {
    entries: Vec<(Accepted, regex::Regex, Option<regex::Regex>)>,
}

impl AcceptedList {
    pub fn load() -> AcceptedList {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/accepted.toml");
        let text = std::fs::read_to_string(&path).expect("read tests/conformance/accepted.toml");
        let file: File = toml::from_str(&text).expect("parse tests/conformance/accepted.toml");
        let entries = file
            .difference
            .into_iter()
            .map(|a| {
                assert!(
                    !a.reason.trim().is_empty() && !a.rule.trim().is_empty(),
                    "{}: reason and rule are required",
                    a.id
                );
                let re =
                    regex::Regex::new(&a.signature).unwrap_or_else(|e| panic!("{}: bad signature regex: {e}", a.id));
                let answers = a
                    .answers
                    .as_ref()
                    .map(|r| regex::Regex::new(r).unwrap_or_else(|e| panic!("{}: bad answers regex: {e}", a.id)));
                (a, re, answers)
            })
            .collect();
        AcceptedList { entries }
    }

    /// The entry explaining this divergence, if any.
    pub fn explain(&self, tv: i16, signature: &str, answers: &str) -> Option<&Accepted> {
        self.entries
            .iter()
            .find(|(a, re, ans)| {
                (a.tv.is_empty() || a.tv.contains(&tv))
                    && re.is_match(signature)
                    && ans.as_ref().is_none_or(|r| r.is_match(answers))
            })
            .map(|(a, _, _)| a)
    }
}
