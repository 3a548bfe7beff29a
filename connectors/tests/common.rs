#![allow(dead_code)]
use engram_connectors::{Embedder, EmbedderConfig};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// The models folder `scripts/setup` fills (the test command runs it first).
pub fn models_dir() -> PathBuf {
    std::env::var_os("ENGRAM_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/engram/models")
        })
}

/// The default embedder (the prepared model), loaded once per test binary.
pub fn embedder() -> Arc<Embedder> {
    static E: OnceLock<Arc<Embedder>> = OnceLock::new();
    E.get_or_init(|| load(EmbedderConfig::from_models_dir(&models_dir())))
        .clone()
}

/// The shipped model's embedder (float compute: a text's vector does not depend on the batch
/// it is embedded in), loaded once per test binary.
pub fn shipped_embedder() -> Arc<Embedder> {
    static E: OnceLock<Arc<Embedder>> = OnceLock::new();
    E.get_or_init(|| load(shipped_config())).clone()
}

/// The default configuration with the shipped model.
pub fn shipped_config() -> EmbedderConfig {
    EmbedderConfig {
        model: models_dir().join(engram_connectors::embedder::SHIPPED_MODEL),
        ..EmbedderConfig::from_models_dir(&models_dir())
    }
}

fn load(cfg: EmbedderConfig) -> Arc<Embedder> {
    Arc::new(
        Embedder::load(&cfg)
            .unwrap_or_else(|e| panic!("{e}\n(run scripts/setup, or set ENGRAM_MODELS_DIR)")),
    )
}

/// Whether any file under `dir` contains `needle`.
pub fn any_file_contains(dir: &std::path::Path, needle: &[u8]) -> bool {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path)
                .unwrap()
                .windows(needle.len())
                .any(|w| w == needle)
            {
                return true;
            }
        }
    }
    false
}

/// Every record from 0 to the end, reading in chunks of `chunk` as the log's readers do.
pub fn read_all(log: &engram_connectors::EventLog, chunk: usize) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    while (out.len() as u64) < log.end_offset() {
        let got = log.read(out.len() as u64, chunk).unwrap();
        assert!(!got.is_empty(), "a read below the end returned nothing");
        out.extend(got);
    }
    out
}
