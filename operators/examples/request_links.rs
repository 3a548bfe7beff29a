//! How the request normaliser alone links a labelled set of corrections (two corrections link
//! when they ask for the same non-empty set of requests): pairwise precision and recall, and
//! of them the links between opposite requests, and with `-v` every text's reading and every
//! wrong link. A quick check while changing the
//! lexicon; `bench correction_links` measures the whole rule through the server.
//!
//!     cargo run -p engram-operators --example request_links -- [-v] [--tsv] SET.json …
//!
//! `--tsv` prints `request id, reading, text` per text, tab-separated.

use engram_operators::requests::{requests_of, RequestSet};
use serde_json::Value;

fn reading(set: &RequestSet) -> String {
    set.0
        .iter()
        .map(|r| format!("{r:?}"))
        .collect::<Vec<_>>()
        .join(" + ")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let verbose = args.iter().any(|a| a == "-v");
    let tsv = args.iter().any(|a| a == "--tsv");
    for path in args.iter().filter(|a| !a.starts_with('-')) {
        let set: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("read set"))
            .expect("parse set");
        let mut texts = Vec::new(); // (request id, text, reading)
        let mut opposites = std::collections::BTreeSet::new(); // (id, id) both ways
        for r in set["requests"].as_array().expect("requests") {
            let id = r["id"].as_str().expect("id").to_string();
            let opposite_of = match &r["opposite_of"] {
                Value::String(o) => vec![o.clone()],
                Value::Array(os) => os
                    .iter()
                    .filter_map(|o| o.as_str().map(String::from))
                    .collect(),
                _ => Vec::new(),
            };
            for o in opposite_of {
                opposites.insert((id.clone(), o.clone()));
                opposites.insert((o, id.clone()));
            }
            for t in r["texts"].as_array().expect("texts") {
                let t = t.as_str().expect("text").to_string();
                let read = requests_of(&t);
                if verbose {
                    println!("{id:<32} {:<60} {}", reading(&read), t);
                }
                if tsv {
                    println!("{id}\t{}\t{}", reading(&read), t.replace(['\t', '\n'], " "));
                }
                texts.push((id.clone(), t, read));
            }
        }
        let (mut tp, mut fp, mut pos, mut empty) = (0usize, 0usize, 0usize, 0usize);
        let mut opposite = 0usize;
        for (i, a) in texts.iter().enumerate() {
            empty += a.2.is_empty() as usize;
            for b in &texts[i + 1..] {
                let same = a.0 == b.0;
                let linked = !a.2.is_empty() && a.2 == b.2;
                pos += same as usize;
                tp += (same && linked) as usize;
                fp += (!same && linked) as usize;
                opposite += (linked && opposites.contains(&(a.0.clone(), b.0.clone()))) as usize;
                if verbose && !same && linked {
                    println!("WRONG {} | {} :: {:?} / {:?}", a.0, b.0, a.1, b.1);
                }
            }
        }
        println!(
            "{path}: texts {} unread {empty} precision {:.3} recall {:.3} (links {} wrong {fp} opposite {opposite})",
            texts.len(),
            tp as f64 / (tp + fp).max(1) as f64,
            tp as f64 / pos.max(1) as f64,
            tp + fp
        );
    }
}
