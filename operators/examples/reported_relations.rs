//! The relations read at ingest from each line of standard input, `SPEAKER<TAB>RFC 3339
//! time<TAB>text`: a quick look at what `extract_relations` finds in a transcript.
//!
//!     printf 'Caroline\t2023-05-08T13:56:00Z\tI went to a support group last Saturday.\n' \
//!         | cargo run --example reported_relations

use engram_operators::relation_extraction::extract_relations;
use std::io::BufRead;

fn main() {
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("read standard input");
        let mut parts = line.splitn(3, '\t');
        let (Some(speaker), Some(ts), Some(text)) = (parts.next(), parts.next(), parts.next())
        else {
            eprintln!("skipped (not SPEAKER<TAB>TIME<TAB>TEXT): {line}");
            continue;
        };
        let Ok(said) = chrono::DateTime::parse_from_rfc3339(ts) else {
            eprintln!("skipped (time not RFC 3339): {line}");
            continue;
        };
        for r in extract_relations(speaker, text, said.into()) {
            let time = r.time.unwrap_or_default();
            println!(
                "{}\t{}\t{}\t{time}\t| {text}",
                r.subject, r.relation, r.object
            );
        }
    }
}
