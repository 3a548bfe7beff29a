//! What engram reads from the text of an event it accepted, from arbitrary text: the requests
//! a correction asks (`requests_of`, in the dataflow), the preferences an ordinary message
//! states (`stated_requests`), a correction's topic terms, the first-person facts and the
//! entities of a turn, and whether a turn reports its speaker's own event. Any text a client
//! sends reaches them, so none may panic (a panic there stops a dataflow worker; the reading's
//! own guard would hide it, so a panic aborts here), loop without end or grow without bound.
#![no_main]

use engram_operators::correction_clusters::topic_terms;
use engram_operators::entities::extract_entities;
use engram_operators::facts::extract_facts;
use engram_operators::requests::{requests_of, stated_requests, RequestSet};
use engram_operators::turn_text::reports_own_event;
use libfuzzer_sys::fuzz_target;

/// A set as the reading promises it: sorted, each aspect at most once.
fn check_set(set: &RequestSet) {
    assert!(set.0.windows(2).all(|p| p[0].aspect < p[1].aspect), "{set:?}");
}

fuzz_target!(|data: &[u8]| {
    static ABORT_ON_PANIC: std::sync::Once = std::sync::Once::new();
    ABORT_ON_PANIC.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            default(info);
            std::process::abort();
        }));
    });
    let text = String::from_utf8_lossy(data);
    check_set(&requests_of(&text));
    check_set(&stated_requests(&text));
    let terms = topic_terms(&text);
    assert!(terms.len() <= text.len(), "{terms:?}");
    let _ = extract_facts(&text);
    let _ = extract_entities(&text);
    let _ = reports_own_event(&text);
});
