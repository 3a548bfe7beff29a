//! How a running engram groups corrections as people phrase them: pairwise link precision and
//! recall, cluster purity and merged opposites, on labelled sets (`tests/data/correction_requests.json`
//! and any file of the same form), through the real server and its HTTP API.
//!
//!     correction_links [--dump DIR] [SET.json …]
//!
//! `--dump DIR` writes, per set, `DIR/<set file>`: each correction's text, request and cluster
//! (for reading a development set's failures; never for a held-out set).
//!
//! Starts the engram binary (`ENGRAM_BIN`, else beside this one) on a fresh data folder, sends
//! each set as one user's corrections, waits for the clusters and prints one row per set. With
//! no argument, the labelled set in the repository.

use engram_tests::correction_sets::{load, score, send_and_cluster};
use engram_tests::Server;
use std::path::PathBuf;
use std::time::Duration;

fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let dump = match args.iter().position(|a| a == "--dump") {
        Some(i) if i + 1 < args.len() => {
            let dir = PathBuf::from(args.remove(i + 1));
            args.remove(i);
            std::fs::create_dir_all(&dir)?;
            Some(dir)
        }
        Some(_) => anyhow::bail!("--dump needs a folder"),
        None => None,
    };
    let mut sets: Vec<PathBuf> = args.into_iter().map(PathBuf::from).collect();
    if sets.is_empty() {
        sets.push(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../tests/data/correction_requests.json"),
        );
    }
    let dir = tempfile::tempdir()?;
    let server = Server::start(dir.path());
    println!(
        "{:<48} {:>8} {:>11} {:>9} {:>7} {:>7} {:>9} {:>10}",
        "set", "requests", "corrections", "clusters", "prec.", "recall", "purity", "opposites"
    );
    for (n, path) in sets.iter().enumerate() {
        let set = load(path)?;
        let clustered = send_and_cluster(
            &server,
            "bench",
            &format!("set{n}"),
            &format!("s{n}-"),
            &set,
            Duration::from_secs(300),
        );
        let s = score(
            &clustered.labels,
            &clustered.opposites,
            &clustered.cluster_of,
        );
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if let Some(dir) = &dump {
            let texts = set.iter().flat_map(|r| r.texts.iter());
            let rows: Vec<serde_json::Value> = clustered
                .labels
                .iter()
                .zip(texts)
                .map(|((id, request), text)| {
                    serde_json::json!({"id": id, "request": request,
                        "cluster": clustered.cluster_of[id], "text": text})
                })
                .collect();
            std::fs::write(dir.join(&*name), serde_json::to_string_pretty(&rows)?)?;
        }
        println!(
            "{name:<48} {:>8} {:>11} {:>9} {:>7.3} {:>7.3} {:>9.3} {:>10}",
            s.requests,
            s.corrections,
            s.clusters,
            s.precision,
            s.recall,
            s.purity,
            s.opposites_merged
        );
    }
    Ok(())
}
