//! How a running engram groups corrections as people phrase them: pairwise link precision and
//! recall, cluster purity and merged opposites, on labelled sets (`tests/data/correction_requests.json`
//! and any file of the same form), through the real server and its HTTP API.
//!
//!     correction_links [SET.json …]
//!
//! Starts the engram binary (`ENGRAM_BIN`, else beside this one) on a fresh data folder, sends
//! each set as one user's corrections, waits for the clusters and prints one row per set. With
//! no argument, the labelled set in the repository.

use engram_tests::correction_sets::{load, send_and_score};
use engram_tests::Server;
use std::path::PathBuf;
use std::time::Duration;

fn main() -> anyhow::Result<()> {
    let mut sets: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
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
        let s = send_and_score(
            &server,
            "bench",
            &format!("set{n}"),
            &format!("s{n}-"),
            &set,
            Duration::from_secs(300),
        );
        let name = path.file_name().unwrap_or_default().to_string_lossy();
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
