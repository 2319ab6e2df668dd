//! The `settings!` macro: every setting is declared once, in `config/settings.rs`, with its
//! type, default, bounds, description and the Kafka broker configs it is. From that one
//! declaration come the section structs and their defaults, the loading of a key
//! (`Settings::set`), the bounds check (`Settings::check_declared`), the settings table of
//! docs/configuration.md (`settings_table`, kept equal by a unit test) and the broker configs
//! DescribeConfigs lists (`Settings::declared`).

use super::Settings;

/// How a setting is bounded (checked at load; `Settings::check_declared`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bounds {
    Any,
    AtLeast(String),
    Range(String, String),
    /// One of these; the bool: in any case (Kafka's CaseInsensitiveValidString).
    OneOf(&'static [&'static str], bool),
}

/// A Kafka broker config a setting is: DescribeConfigs of the broker lists it with the value
/// `value` renders (store::configs::broker).
#[derive(Clone, Copy)]
pub struct KafkaConfig {
    pub name: &'static str,
    /// Kafka's ConfigType id (store::configs::TYPE_*).
    pub config_type: i8,
    /// Kafka's default; `None` where Kafka has none (null).
    pub kafka_default: Option<&'static str>,
    pub value: fn(&Settings) -> String,
}

/// One setting as declared.
pub struct Declared {
    /// The key in the TOML file (`KAAS_<KEY>` in the environment).
    pub key: &'static str,
    /// The `Settings` section it is kept in.
    pub section: &'static str,
    /// Markdown, one line per doc comment line.
    pub doc: &'static str,
    pub default: serde_json::Value,
    pub bounds: Bounds,
    pub kafka: Vec<KafkaConfig>,
}

/// How a setting's value reads as a Kafka config value.
pub trait KafkaValue {
    fn kafka_value(&self) -> String;
}

macro_rules! kafka_value_by_display {
    ($($t:ty),*) => { $(impl KafkaValue for $t { fn kafka_value(&self) -> String { self.to_string() } })* };
}
kafka_value_by_display!(bool, i16, i32, i64, u32, u64, usize, String);

impl KafkaValue for Vec<String> {
    fn kafka_value(&self) -> String {
        self.join(",")
    }
}

/// `$e` when given, else `$d`.
macro_rules! or_default {
    (; $d:expr) => {
        $d
    };
    ($e:expr; $d:expr) => {
        $e
    };
}
pub(crate) use or_default;

/// Declares the sections of `Settings` and their settings (see the module doc). A setting:
/// `/// description` lines, `key: Type = default`, then optionally `, at_least MIN`,
/// `, range MIN, MAX`, `, one_of ["a", "b"]`, `, one_of_any_case [...]`, and any number of
/// `, kafka "kafka.name" TYPE_X Some("kafka default") [=> |s| render]`.
macro_rules! settings {
    (
        $(
            $(#[doc = $sdoc:literal])*
            $sec:ident: $Sec:ident {
                $(
                    $(#[doc = $doc:literal])*
                    $key:ident: $ty:ty = $default:expr
                    $(, at_least $min:expr)?
                    $(, range $lo:expr, $hi:expr)?
                    $(, one_of [$($choice:literal),+])?
                    $(, one_of_any_case [$($ichoice:literal),+])?
                    $(, kafka $kname:literal $ktype:ident $kdefault:expr $(=> $render:expr)?)*
                    ;
                )*
            }
        )*
    ) => {
        $(
            $(#[doc = $sdoc])*
            #[derive(Debug, Clone, serde::Serialize)]
            pub struct $Sec {
                $( $(#[doc = $doc])* pub $key: $ty, )*
            }

            impl Default for $Sec {
                fn default() -> Self {
                    $Sec { $( $key: $default, )* }
                }
            }
        )*

        /// Every setting, in sections; the keys are flat (`segment_bytes`, not `log.segment_bytes`).
        #[derive(Debug, Clone, Default, serde::Serialize)]
        pub struct Settings {
            $( $(#[doc = $sdoc])* #[serde(flatten)] pub $sec: $Sec, )*
        }

        impl Settings {
            /// Sets setting `key` from a configuration value; false when no setting has that name.
            pub(super) fn set(&mut self, key: &str, value: config::Value) -> Result<bool, ConfigError> {
                $($(
                    if key == stringify!($key) {
                        self.$sec.$key = value
                            .try_deserialize()
                            .map_err(|e| ConfigError::Invalid(stringify!($key), e.to_string()))?;
                        return Ok(true);
                    }
                )*)*
                Ok(false)
            }

            /// Each setting within its declared bounds.
            pub(super) fn check_declared(&self) -> Result<(), ConfigError> {
                $($(
                    $( at_least(stringify!($key), self.$sec.$key, $min)?; )?
                    $( in_range(stringify!($key), self.$sec.$key, $lo, $hi)?; )?
                    $( one_of(stringify!($key), &self.$sec.$key, &[$($choice),+], false)?; )?
                    $( one_of(stringify!($key), &self.$sec.$key, &[$($ichoice),+], true)?; )?
                )*)*
                Ok(())
            }

            /// Every setting as declared, in declaration order.
            pub fn declared() -> Vec<Declared> {
                let defaults = Settings::default();
                vec![$($(
                    Declared {
                        key: stringify!($key),
                        section: stringify!($sec),
                        doc: concat!($($doc, "\n"),*),
                        default: serde_json::to_value(&defaults.$sec.$key).unwrap_or(serde_json::Value::Null),
                        bounds: {
                            #[allow(unused_mut, unused_assignments)]
                            let mut b = Bounds::Any;
                            $( b = Bounds::AtLeast(($min).to_string()); )?
                            $( b = Bounds::Range(($lo).to_string(), ($hi).to_string()); )?
                            $( b = Bounds::OneOf(&[$($choice),+], false); )?
                            $( b = Bounds::OneOf(&[$($ichoice),+], true); )?
                            b
                        },
                        kafka: vec![$(
                            KafkaConfig {
                                name: $kname,
                                config_type: $crate::store::configs::$ktype,
                                kafka_default: $kdefault,
                                value: $crate::config::declare::or_default!(
                                    $($render)?;
                                    |s: &Settings| KafkaValue::kafka_value(&s.$sec.$key)
                                ),
                            },
                        )*],
                    },
                )*)*]
            }
        }
    };
}
pub(crate) use settings;

/// A declared description as plain text (DescribeConfigs' documentation): lines joined, no
/// backticks, links as their text.
pub fn plain(doc: &str) -> String {
    let joined = doc.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    let mut out = String::with_capacity(joined.len());
    let mut rest = joined.as_str();
    while let Some(open) = rest.find('[') {
        let link = rest[open..].find("](").and_then(|mid| rest[open + mid..].find(')').map(|close| (mid, mid + close)));
        match link {
            Some((mid, close)) => {
                out.push_str(&rest[..open]);
                out.push_str(&rest[open + 1..open + mid]);
                rest = &rest[open + close + 1..];
            }
            None => {
                out.push_str(&rest[..=open]);
                rest = &rest[open + 1..];
            }
        }
    }
    out.push_str(rest);
    out.replace('`', "")
}

/// How the settings table writes a default.
fn documented_default(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "none".to_string(),
        serde_json::Value::String(s) if s.is_empty() => "`\"\"`".to_string(),
        serde_json::Value::String(s) => format!("`{s}`"),
        serde_json::Value::Array(items) => {
            format!("`[{}]`", items.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", "))
        }
        other => format!("`{other}`"),
    }
}

fn documented_bounds(b: &Bounds) -> String {
    match b {
        Bounds::Any => String::new(),
        Bounds::AtLeast(min) => format!(">= {min}"),
        Bounds::Range(lo, hi) => format!("{lo} ..= {hi}"),
        Bounds::OneOf(choices, any_case) => {
            let list = choices.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ");
            if *any_case {
                format!("{list} (any case)")
            } else {
                list
            }
        }
    }
}

/// The settings table of docs/configuration.md: one row per setting, by section.
pub fn settings_table() -> String {
    let mut out = String::new();
    let mut section = "";
    for d in Settings::declared() {
        if d.section != section {
            section = d.section;
            out.push_str(&format!("\n### `{section}`\n\n"));
            out.push_str("| key | default | bounds | Kafka broker config | meaning |\n|---|---|---|---|---|\n");
        }
        let kafka = d.kafka.iter().map(|k| format!("`{}`", k.name)).collect::<Vec<_>>().join(", ");
        let doc = d.doc.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            d.key,
            documented_default(&d.default),
            documented_bounds(&d.bounds),
            kafka,
            doc
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_drops_backticks_and_keeps_link_text() {
        assert_eq!(plain("a `b`\n see [the doc](x.md#y) [1] end"), "a b see the doc [1] end");
    }
}
