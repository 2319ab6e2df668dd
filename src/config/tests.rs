use super::*;

#[test]
fn file_then_flags_win() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kaas.toml");
    std::fs::write(&file, "num_partitions = 4\nlisten = \"127.0.0.1:1111\"\n").unwrap();
    let s = Settings::load(Some(&file), &Overrides::default()).unwrap();
    assert_eq!((s.log.num_partitions, s.network.listen.as_str()), (4, "127.0.0.1:1111"));
    let o = Overrides { listen: Some("127.0.0.1:2222".into()), ..Overrides::default() };
    let s = Settings::load(Some(&file), &o).unwrap();
    assert_eq!(s.network.listen, "127.0.0.1:2222");
    assert_eq!(s.advertised(), ("127.0.0.1".to_string(), 2222));
}

fn load_toml(text: &str) -> Result<Settings, ConfigError> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kaas.toml");
    std::fs::write(&file, text).unwrap();
    Settings::load(Some(&file), &Overrides::default())
}

fn refused(text: &str, setting: &str) -> bool {
    matches!(load_toml(text), Err(ConfigError::Invalid(name, _)) if name == setting)
}

#[test]
fn when_fenced_is_rejoin_or_exit() {
    assert_eq!(load_toml("").unwrap().cluster.when_fenced, WhenFenced::Rejoin);
    assert_eq!(load_toml("when_fenced = \"exit\"\n").unwrap().cluster.when_fenced, WhenFenced::Exit);
    assert!(load_toml("when_fenced = \"restart\"\n").is_err());
}

/// docs/configuration.md's settings table is the one `settings_table` makes from the
/// declaration (config/settings.rs): every setting with its default, bounds, Kafka config and
/// description. `KAAS_BLESS=1 cargo test --lib config::` writes it.
#[test]
fn the_documented_settings_table_is_the_declared_one() {
    const BEGIN: &str = "<!-- settings table: made from src/config/settings.rs by config::settings_table -->\n";
    const END: &str = "<!-- end of the settings table -->";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (head, rest) = doc.split_once(BEGIN).expect("the table's begin marker");
    let (table, tail) = rest.split_once(END).expect("the table's end marker");
    let made = settings_table();
    if std::env::var_os("KAAS_BLESS").is_some() {
        std::fs::write(&path, format!("{head}{BEGIN}{made}{END}{tail}")).unwrap();
    } else {
        assert_eq!(table, made, "docs/configuration.md: run KAAS_BLESS=1 cargo test --lib config::");
    }
}

#[test]
fn every_setting_is_described() {
    for d in Settings::declared() {
        assert!(d.doc.trim().len() > 10, "{} has no description", d.key);
    }
}

#[test]
fn a_setting_is_read_from_the_environment_by_its_key() {
    // Through set(), as load() does for each KAAS_* variable (the process environment is shared
    // by the tests running at once, so it is not changed here).
    let mut s = Settings::default();
    let value = config::Value::new(None, config::ValueKind::String("3".into()));
    assert!(s.set("num_partitions", value.clone()).unwrap());
    assert_eq!(s.log.num_partitions, 3);
    assert!(!s.set("bin", value).unwrap(), "KAAS_BIN is not a setting");
}

#[test]
fn an_unknown_key_in_the_file_is_ignored() {
    assert_eq!(load_toml("no_such_setting = 1\nnum_partitions = 2\n").unwrap().log.num_partitions, 2);
}

#[test]
fn a_value_of_the_wrong_type_names_its_setting() {
    assert!(refused("num_partitions = \"many\"\n", "num_partitions"));
}

#[test]
fn the_migration_policy_is_one_of_kafkas_in_any_case() {
    assert!(load_toml("group_consumer_migration_policy = \"UPGRADE\"\n").is_ok());
    assert!(refused("group_consumer_migration_policy = \"sideways\"\n", "group_consumer_migration_policy"));
}

#[test]
fn the_timestamp_type_is_create_time_or_log_append_time() {
    assert!(load_toml("log_message_timestamp_type = \"LogAppendTime\"\n").is_ok());
    assert!(refused("log_message_timestamp_type = \"logappendtime\"\n", "log_message_timestamp_type"));
}

#[test]
fn invalid_values_are_refused() {
    assert!(refused("num_partitions = 0\n", "num_partitions"));
}

#[test]
fn segment_bytes_is_within_kafkas_range() {
    assert!(refused("segment_bytes = 0\n", "segment_bytes"));
    assert!(refused("segment_bytes = 1048575\n", "segment_bytes"));
    assert!(refused("segment_bytes = 1000000000000\n", "segment_bytes"));
    assert!(refused("segment_bytes = 2147483648\n", "segment_bytes"));
    assert_eq!(load_toml("segment_bytes = 2147483647\n").unwrap().log.segment_bytes, 2_147_483_647);
    assert!(load_toml("segment_bytes = 1048576\n").is_ok());
}

#[test]
fn retention_ms_is_at_least_minus_one() {
    assert!(refused("retention_ms = -2\n", "retention_ms"));
    assert!(load_toml("retention_ms = -1\n").is_ok());
}

#[test]
fn max_message_bytes_fits_in_a_request() {
    assert!(refused("max_message_bytes = 200000000\n", "max_message_bytes"));
    assert!(load_toml("max_message_bytes = 104857600\n").is_ok());
}

#[test]
fn request_and_fetch_sizes_fit_an_int() {
    assert!(refused("max_request_bytes = 4294967296\n", "max_request_bytes"));
    assert!(refused("fetch_max_bytes = 1023\n", "fetch_max_bytes"));
    assert!(refused("queued_max_response_bytes = 1023\n", "queued_max_response_bytes"));
    assert!(refused("fetch_max_bytes = 4294967296\n", "fetch_max_bytes"));
}

#[test]
fn intervals_and_expirations_are_positive() {
    assert!(refused("retention_check_interval_ms = 0\n", "retention_check_interval_ms"));
    assert!(refused("producer_id_expiration_ms = 0\n", "producer_id_expiration_ms"));
    assert!(refused("transaction_max_timeout_ms = 0\n", "transaction_max_timeout_ms"));
    assert!(refused("transactional_id_expiration_ms = 0\n", "transactional_id_expiration_ms"));
    assert!(refused("sync_threads = 0\n", "sync_threads"));
    assert!(refused("fence_poll_interval_ms = 9\n", "fence_poll_interval_ms"));
    assert_eq!(load_toml("fence_poll_interval_ms = 10\n").unwrap().cluster.fence_poll_interval_ms, 10);
    assert_eq!(load_toml("").unwrap().cluster.fence_poll_interval_ms, 2000);
}

#[test]
fn an_explicit_partition_limit_must_hold_an_auto_created_topic() {
    assert!(refused("max_partitions = 2\nnum_partitions = 3\n", "max_partitions"));
    assert!(load_toml("max_partitions = 3\nnum_partitions = 3\n").is_ok());
    assert_eq!(load_toml("").unwrap().log.max_partitions, 200_000);
    assert_eq!(load_toml("max_partitions = 0\n").unwrap().log.max_partitions, 200_000, "0 is the default");
}

#[test]
fn write_txn_markers_max_version_is_1_or_2() {
    assert_eq!(load_toml("").unwrap().transactions.write_txn_markers_max_version, 2);
    assert_eq!(load_toml("write_txn_markers_max_version = 1\n").unwrap().transactions.write_txn_markers_max_version, 1);
    assert!(refused("write_txn_markers_max_version = 0\n", "write_txn_markers_max_version"));
    assert!(refused("write_txn_markers_max_version = 3\n", "write_txn_markers_max_version"));
}

#[test]
fn the_metrics_endpoint_is_off_unless_set() {
    assert_eq!(load_toml("").unwrap().broker.metrics_listen, "");
    assert_eq!(load_toml("metrics_listen = \"127.0.0.1:9404\"\n").unwrap().broker.metrics_listen, "127.0.0.1:9404");
}

#[test]
fn group_commit_starts_at_eight_partitions_unless_set() {
    assert_eq!(load_toml("").unwrap().log.group_commit_min_partitions, 8);
    assert_eq!(load_toml("group_commit_min_partitions = 2\n").unwrap().log.group_commit_min_partitions, 2);
    assert_eq!(load_toml("group_commit_min_partitions = 0\n").unwrap().log.group_commit_min_partitions, 0);
}

#[test]
fn debug_skip_fsync_is_off_unless_set() {
    assert!(!Settings::default().log.debug_skip_fsync);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kaas.toml");
    std::fs::write(&file, "debug_skip_fsync = true\n").unwrap();
    assert!(Settings::load(Some(&file), &Overrides::default()).unwrap().log.debug_skip_fsync);
}

#[test]
fn listen_is_the_plaintext_listener_unless_listeners_names_one() {
    let s = load_toml("listeners = \"SASL_SSL://:9093\"\nssl_keystore_location = \"k.pem\"\n").unwrap();
    let names: Vec<String> = s.listeners().iter().map(|l| l.to_string()).collect();
    assert_eq!(names, ["PLAINTEXT://127.0.0.1:9092", "SASL_SSL://:9093"]);
    let s = load_toml("listeners = \"PLAINTEXT://0.0.0.0:7000\"\n").unwrap();
    assert_eq!(s.listeners().iter().map(|l| l.to_string()).collect::<Vec<_>>(), ["PLAINTEXT://0.0.0.0:7000"]);
    assert!(refused("listen = \"\"\n", "listeners"), "no listener at all");
}

#[test]
fn a_tls_listener_needs_a_keystore_and_client_auth_a_truststore() {
    assert!(refused("listeners = \"SSL://:9093\"\n", "ssl_keystore_location"));
    assert!(refused("ssl_client_auth = \"required\"\n", "ssl_truststore_location"));
    assert!(refused("ssl_client_auth = \"sometimes\"\n", "ssl_client_auth"));
}

#[test]
fn advertised_listeners_are_per_listener_name() {
    let s = load_toml(
        "listeners = \"SASL_SSL://:9093\"\nssl_keystore_location = \"k.pem\"\n\
         advertised_listeners = \"SASL_SSL://broker.example:19093\"\nadvertised_listener = \"pub.example:19092\"\n",
    )
    .unwrap();
    let adv: Vec<String> = s.advertised_listeners().iter().map(|l| l.to_string()).collect();
    assert_eq!(adv, ["PLAINTEXT://pub.example:19092", "SASL_SSL://broker.example:19093"]);
    assert_eq!(s.advertised(), ("pub.example".to_string(), 19092));
    assert!(refused("advertised_listeners = \"SSL://x:1\"\n", "advertised_listeners"), "no such listener");
}

#[test]
fn sasl_mechanisms_are_the_ones_kaas_serves() {
    assert!(refused("sasl_enabled_mechanisms = [\"GSSAPI\"]\n", "sasl_enabled_mechanisms"));
    assert!(refused(
        "listeners = \"SASL_PLAINTEXT://:9094\"\nsasl_enabled_mechanisms = []\n",
        "sasl_enabled_mechanisms"
    ));
}

#[test]
fn sasl_users_are_a_table_whose_names_keep_their_case() {
    let s = load_toml("[sasl_plain_users]\nAlice = \"Secret\"\nbob = \"pw\"\n").unwrap();
    assert_eq!(s.security.sasl_plain_users.get("Alice").map(String::as_str), Some("Secret"));
    assert_eq!(s.security.sasl_plain_users.len(), 2);
}

/// examples/secure.toml, which the README and docs/security.md tell users to start, loads.
#[test]
fn the_secured_example_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/secure.toml");
    let s = Settings::load(Some(&path), &Overrides::default()).unwrap();
    let listeners: Vec<String> = s.listeners().iter().map(|l| l.to_string()).collect();
    assert_eq!(listeners, ["SASL_SSL://127.0.0.1:9093"]);
    assert_eq!(s.security.authorizer, "standard");
    assert!(s.security.scram_users_at_first_start.contains_key("admin"));
}
