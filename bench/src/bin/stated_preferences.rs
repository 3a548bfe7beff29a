//! How a running engram remembers preferences stated in ordinary chat messages, on labelled
//! sets (`tests/data/stated_preferences*.json`), through the real server and its HTTP API:
//! detection precision and recall (was anything remembered from a message that states a
//! preference, and from one that does not), and precision and recall of the preferences
//! themselves (aspect and way).
//!
//!     stated_preferences [--misses] [SET.json …]
//!
//! `--misses` also prints each message whose remembered preferences differ from its labels
//! (for reading a development set's failures; never for a held-out set).
//!
//! Starts the engram binary (`ENGRAM_BIN`, else beside this one) on a fresh data folder, sends
//! each message as the only one of a user of its own and reads `/v1/memory`. With no argument,
//! the development set in the repository.

use engram_tests::stated_sets::{load, score, send_and_read};
use engram_tests::Server;
use std::path::PathBuf;
use std::time::Duration;

fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let misses = args.iter().any(|a| a == "--misses");
    args.retain(|a| a != "--misses");
    let mut sets: Vec<PathBuf> = args.into_iter().map(PathBuf::from).collect();
    if sets.is_empty() {
        sets.push(
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/stated_preferences.json"),
        );
    }
    let dir = tempfile::tempdir()?;
    let server = Server::start(dir.path());
    println!(
        "{:<32} {:>8} {:>8} {:>10} {:>10} {:>7} {:>7} {:>6}",
        "set", "messages", "stating", "det.prec.", "det.recall", "prec.", "recall", "false"
    );
    for (n, path) in sets.iter().enumerate() {
        let set = load(path)?;
        let found = send_and_read(
            &server,
            "bench",
            &format!("set{n}-"),
            &set,
            Duration::from_secs(300),
        );
        let s = score(&set, &found);
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        println!(
            "{name:<32} {:>8} {:>8} {:>10.3} {:>10.3} {:>7.3} {:>7.3} {:>6}",
            s.messages,
            s.stating,
            s.detection_precision,
            s.detection_recall,
            s.precision,
            s.recall,
            s.false_preferences
        );
        if misses {
            for (m, f) in set.iter().zip(&found) {
                if &m.states != f {
                    println!("  want {:?} got {:?}: {}", m.states, f, m.text);
                }
            }
        }
    }
    Ok(())
}
