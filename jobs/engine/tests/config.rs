use engram_engine::config::{Config, ConfigError};
use std::collections::HashMap;

#[test]
fn file_then_environment_override_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("engram.toml");
    std::fs::write(
        &path,
        "data_dir = \"/srv/engram\"\nworkers = 4\n[recall]\ndefault_k = 7\n[index]\nann_min_rows = 1000\n",
    )
    .unwrap();
    let mut cfg = Config::load(Some(&path)).unwrap();
    assert_eq!(cfg.data_dir.to_str(), Some("/srv/engram"));
    assert_eq!(cfg.workers, 4);
    assert_eq!(cfg.recall.default_k, 7);
    assert_eq!(cfg.recall.max_k, 200, "unset keys keep their defaults");
    assert_eq!(cfg.index.ann_min_rows, 1000);
    assert_eq!(cfg.index.reindex_after_rows, 5000);

    let env: HashMap<&str, &str> = [
        ("ENGRAM_WORKERS", "2"),
        ("ENGRAM_HTTP_ADDR", "127.0.0.1:9999"),
        ("ENGRAM_DEMO", "false"),
    ]
    .into_iter()
    .collect();
    cfg.apply_env(|k| env.get(k).map(|v| v.to_string()))
        .unwrap();
    assert_eq!(cfg.workers, 2);
    assert_eq!(cfg.http_addr.port(), 9999);
    assert!(!cfg.demo);
    assert_eq!(cfg.log_dir(), std::path::Path::new("/srv/engram/log"));
}

#[test]
fn bad_settings_are_errors_that_say_where() {
    let mut cfg = Config::default();
    let err = cfg
        .apply_env(|k| (k == "ENGRAM_WORKERS").then(|| "many".to_string()))
        .unwrap_err();
    match err {
        ConfigError::Env { name, value, .. } => {
            assert_eq!(name, "ENGRAM_WORKERS");
            assert_eq!(value, "many");
        }
        other => panic!("{other}"),
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("engram.toml");
    std::fs::write(&path, "wrokers = 3\n").unwrap();
    let err = Config::load(Some(&path)).unwrap_err().to_string();
    assert!(
        err.contains("engram.toml") && err.contains("wrokers"),
        "{err}"
    );
    let missing = Config::load(Some(&dir.path().join("nope.toml")))
        .unwrap_err()
        .to_string();
    assert!(missing.contains("nope.toml"), "{missing}");
}

#[test]
fn mrs_weights_must_name_a_preset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("engram.toml");
    std::fs::write(
        &path,
        "[recall]\nrank_by = \"mrs\"\nmrs_weights = \"balanced\"\n",
    )
    .unwrap();
    let cfg = Config::load(Some(&path)).unwrap();
    assert_eq!(cfg.recall.mrs_weights, "balanced");
    std::fs::write(&path, "[recall]\nmrs_weights = \"loudest\"\n").unwrap();
    match Config::load(Some(&path)) {
        Err(ConfigError::Invalid { key, reason }) => {
            assert_eq!(key, "recall.mrs_weights");
            assert!(reason.contains("similarity_feedback"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn limits_come_from_the_file_and_every_limit_variable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("engram.toml");
    std::fs::write(&path, "[limits]\nrequests_per_s = 5\nmax_connections = 0\n").unwrap();
    let mut cfg = Config::load(Some(&path)).unwrap();
    assert_eq!(cfg.limits.requests_per_s, 5);
    assert_eq!(cfg.limits.max_connections, 0);
    assert_eq!(
        cfg.limits.events_per_s, 20_000,
        "unset keys keep their defaults"
    );
    // each variable sets its own key: variable i gets the value i + 1
    let env: HashMap<&str, String> = engram_engine::config::LIMITS_ENV
        .iter()
        .enumerate()
        .map(|(i, name)| (*name, (i + 1).to_string()))
        .collect();
    cfg.apply_env(|k| env.get(k).cloned()).unwrap();
    let l = &cfg.limits;
    assert_eq!(
        (l.requests_per_s, l.events_per_s, l.bytes_per_s, l.burst_s),
        (1, 2, 3, 4.0)
    );
    assert_eq!(
        (l.header_read_timeout_s, l.idle_timeout_s, l.write_timeout_s),
        (5, 6, 7)
    );
    assert_eq!(
        (
            l.max_connections,
            l.dashboard_streams_per_tenant,
            l.dashboard_streams
        ),
        (8, 9, 10)
    );
    cfg.limits.burst_s = 0.0;
    assert!(cfg
        .check()
        .unwrap_err()
        .to_string()
        .contains("limits.burst_s"));
}

#[test]
fn fusion_weights_are_weights() {
    let mut cfg = Config::default();
    assert!(cfg.check().is_ok());
    cfg.fusion.video = 0.5;
    assert!(cfg.check().is_ok());
    for bad in [-0.1, 1.5, f64::NAN, f64::INFINITY] {
        cfg.fusion.screen = bad;
        let err = cfg.check().unwrap_err().to_string();
        assert!(err.contains("fusion.screen"), "{err}");
    }
}

#[test]
fn the_blocking_pool_is_bounded_and_needs_a_thread() {
    let mut cfg = Config::default();
    assert_eq!(cfg.blocking_threads, 32);
    cfg.apply_env(|k| (k == "ENGRAM_BLOCKING_THREADS").then(|| "8".to_string()))
        .unwrap();
    assert_eq!(cfg.blocking_threads, 8);
    assert!(cfg.check().is_ok());
    cfg.blocking_threads = 0;
    assert!(cfg
        .check()
        .unwrap_err()
        .to_string()
        .contains("blocking_threads"));
    assert!(cfg
        .apply_env(|k| (k == "ENGRAM_BLOCKING_THREADS").then(|| "many".to_string()))
        .is_err());
}
