//! Shared pieces of the benchmarks: synthetic conversation text, percentile summaries and a
//! warmed-up server.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;

const SUBJECTS: &[&str] = &[
    "my sister",
    "my manager",
    "the landlord",
    "our team",
    "my doctor",
    "the new intern",
    "my cat",
    "the neighbours",
    "my best friend",
    "the client",
    "my partner",
    "the support desk",
];
const VERBS: &[&str] = &[
    "asked about",
    "complained about",
    "recommended",
    "cancelled",
    "scheduled",
    "forgot",
    "loved",
    "booked",
    "paid for",
    "mentioned",
    "rescheduled",
    "reviewed",
];
const OBJECTS: &[&str] = &[
    "the dentist appointment",
    "a trip to Lisbon",
    "the quarterly report",
    "a vegetarian restaurant",
    "the gym membership",
    "a new laptop",
    "the piano lessons",
    "our wedding anniversary dinner",
    "the car insurance renewal",
    "a hiking weekend in the Alps",
    "the kitchen renovation",
    "a Portuguese course",
    "the conference in Berlin",
    "the flat viewing",
    "a birthday present",
];
const WHEN: &[&str] = &[
    "yesterday",
    "last week",
    "on Monday",
    "this morning",
    "two days ago",
    "for next Friday",
    "in March",
    "after lunch",
    "before the holidays",
    "tonight",
];

/// A plausible chat message built from a few templates.
pub fn sentence(rng: &mut StdRng) -> String {
    format!(
        "{} {} {} {}.",
        SUBJECTS.choose(rng).unwrap(),
        VERBS.choose(rng).unwrap(),
        OBJECTS.choose(rng).unwrap(),
        WHEN.choose(rng).unwrap()
    )
}

/// A question a user might ask about such messages.
pub fn question(rng: &mut StdRng) -> String {
    let forms = [
        "when did {s} mention {o}?",
        "what happened with {o}?",
        "who {v} {o}?",
    ];
    forms
        .choose(rng)
        .unwrap()
        .replace("{s}", SUBJECTS.choose(rng).unwrap())
        .replace("{o}", OBJECTS.choose(rng).unwrap())
        .replace("{v}", VERBS.choose(rng).unwrap())
}

/// `engram serve` on `dir` with the shipped log settings (not the harness's tiny log file),
/// warmed up: one event of `tenant` stored and recallable, so the model and the tables are
/// loaded before anything is timed.
pub fn warm_server(dir: &std::path::Path, tenant: &str) -> anyhow::Result<engram_tests::Server> {
    let server = engram_tests::Server::start_with_env(
        dir,
        &[],
        &[("ENGRAM_LOG_DISCARD_AFTER_BYTES", "67108864")],
    );
    let warm = engram_tests::interaction(tenant, "warm", "warm-0", "s", 0, "warming up");
    let (status, body) = server.post("/v1/events", &serde_json::json!([warm]));
    anyhow::ensure!(status == 200, "warm-up event: {status} {body}");
    server.wait_caught_up(std::time::Duration::from_secs(120));
    Ok(server)
}

/// p-th percentile (0..=100) of the samples, in the samples' unit.
pub fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    if samples.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (samples.len() - 1) as f64).round() as usize;
    samples[rank]
}

pub fn random_user(rng: &mut StdRng, users: usize) -> String {
    format!("user{}", rng.gen_range(0..users))
}

/// The command-line arguments as numbers (the positional form the benchmarks take).
///
/// # Panics
///
/// On an argument that is not a number, naming it.
pub fn numeric_args() -> Vec<usize> {
    std::env::args()
        .skip(1)
        .map(|a| {
            a.parse()
                .unwrap_or_else(|_| panic!("{a:?} is not a number"))
        })
        .collect()
}

/// A process as `/proc` names it: `"self"` or its pid.
pub fn proc_entry(pid: Option<u32>) -> String {
    pid.map_or_else(|| "self".to_string(), |p| p.to_string())
}

/// The process's resident memory (VmRSS) in KiB, 0 where `/proc` does not say.
pub fn resident_kib(pid: Option<u32>) -> u64 {
    std::fs::read_to_string(format!("/proc/{}/status", proc_entry(pid)))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// The process's CPU time so far, user and system, in seconds, and its minor page faults (from
/// `/proc/<pid>/stat`; zeros where it cannot be read).
pub fn cpu_usage(pid: Option<u32>) -> (f64, f64, u64) {
    let stat =
        std::fs::read_to_string(format!("/proc/{}/stat", proc_entry(pid))).unwrap_or_default();
    // fields after the command name, which is in parentheses and may hold spaces
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // proc(5) counts CPU time in USER_HZ ticks, 100 a second on Linux whatever the kernel's HZ
    let ticks = 100.0;
    // fields 10, 14 and 15 of proc(5), counted from the state (field 3) at index 0
    (field(11) as f64 / ticks, field(12) as f64 / ticks, field(7))
}
