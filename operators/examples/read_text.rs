//! What each line of standard input asks for: its reading as a correction (`requests_of`) and as
//! an ordinary message (`stated_requests`). A quick look at one text while changing the rule.
//!
//!     echo "no emojis pls, my screen reader reads them" | cargo run --example read_text

use engram_operators::requests::{requests_of, stated_requests, RequestSet};
use std::io::BufRead;

fn named(set: RequestSet) -> Vec<String> {
    set.0
        .iter()
        .map(|r| format!("{:?}:{:?}", r.aspect, r.way))
        .collect()
}

fn main() {
    for line in std::io::stdin().lock().lines() {
        let text = line.expect("read standard input");
        println!(
            "stated {:?} | read {:?} | {text}",
            named(stated_requests(&text)),
            named(requests_of(&text))
        );
    }
}
