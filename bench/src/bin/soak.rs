//! Soak: a steady mixed load on the real `engram serve` for several minutes, to show that
//! latency and memory stay flat while the memory grows.
//!
//!     ENGRAM_BIN=…/release/engram soak [minutes events/s recalls/s prompts/s]
//!                                      (default 10 1000 50 5)
//!
//! Events go to 200 users of one tenant in requests of 10 (4 writer threads); recalls (8
//! threads) and prompts (2 threads) ask random users about what they said. Each stream runs on
//! a fixed schedule (a late request is followed at once by the next), so the offered rates hold
//! while the server keeps up. Every message is unique (a number in it), so the embedder's text
//! cache helps no more than it would with real conversations. Printed per minute: the events
//! accepted per second, each route's p50 / p99 latency, push-back (`429`) and errors (anything
//! else that is not a `200`, or no answer), the episodes committed to Lance per second, the
//! server's CPU (cores busy on average), its resident memory at the minute's end and the ingest
//! backlog's peak; then the last minute's p99 against the first's per route (goal ≤ 1.5×) and
//! the resident memory's growth from minute 2 (after warm-up) to the end. Each minute's row is
//! also printed a few seconds after the minute ends (`live`), so a run cut short still reports.
//!
//! The server runs with the environment of this process (`ENGRAM_CONFIG`, `ENGRAM_LIMIT_*`…).

use engram_bench::percentile;
use engram_tests::{interaction, Server};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TENANT: &str = "soak";
const USERS: usize = 200;
const BATCH: usize = 10;
const WRITERS: usize = 4;
const RECALLERS: usize = 8;
const PROMPTERS: usize = 2;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Route {
    Events,
    Recall,
    Prompt,
}

/// One request: its route, the minute it started in, its latency and its outcome.
struct Sample {
    route: Route,
    minute: usize,
    ms: f64,
    status: u16,
}

/// The server's state at the end of each minute.
#[derive(Default, Clone, Copy)]
struct Gauges {
    rss_mib: f64,
    backlog_peak: u64,
    /// Episodes committed to Lance, and the server's CPU seconds, at the minute's end.
    episodes_stored: u64,
    cpu_s: f64,
}

/// Seconds after a minute's end at which its live row is printed: requests started in it
/// have answered by then (or count as late in the final table only).
const LIVE_ROW_AFTER_S: u64 = 5;

fn main() -> anyhow::Result<()> {
    let args = engram_bench::numeric_args();
    let arg = |i: usize, default: usize| args.get(i).copied().unwrap_or(default);
    let (minutes, events, recalls, prompts) = (arg(0, 10), arg(1, 1000), arg(2, 50), arg(3, 5));
    let dir = tempfile::tempdir()?;
    let server = Arc::new(engram_bench::warm_server(dir.path(), TENANT)?);

    // what the server had stored and spent before the load: minute 1 counts from here
    let baseline = Gauges {
        episodes_stored: server.metric("engram_episodes_stored"),
        cpu_s: cpu_seconds(server.pid()),
        ..Gauges::default()
    };
    let started = Instant::now();
    let until = started + Duration::from_secs(60 * minutes as u64);
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    let streams = [
        (Route::Events, WRITERS, events as f64 / BATCH as f64),
        (Route::Recall, RECALLERS, recalls as f64),
        (Route::Prompt, PROMPTERS, prompts as f64),
    ];
    let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
    for (route, n, per_s) in streams {
        for thread in 0..n {
            let (server, samples) = (server.clone(), samples.clone());
            let interval = Duration::from_secs_f64(n as f64 / per_s.max(1e-9));
            threads.push(std::thread::spawn(move || {
                steady(&server, &samples, route, thread, interval, started, until)
            }));
        }
    }
    let gauges = Arc::new(Mutex::new(vec![Gauges::default(); minutes]));
    let watcher = {
        let (server, gauges, stop) = (server.clone(), gauges.clone(), stop.clone());
        let samples = samples.clone();
        std::thread::spawn(move || {
            watch(
                &server, &gauges, baseline, &samples, minutes, started, &stop,
            )
        })
    };
    for t in threads {
        t.join().expect("load thread");
    }
    stop.store(true, Ordering::Release);
    watcher.join().expect("watcher");
    let caught_up = server.wait_caught_up(Duration::from_secs(900));
    let gauges = gauges.lock().unwrap().clone();
    let samples = samples.lock().unwrap();
    print_table(&samples, &gauges, baseline, minutes);
    println!(
        "caught up {:.1} s after the load stopped",
        caught_up.as_secs_f64()
    );
    Ok(())
}

/// One load thread: a request every `interval` from `started` until `until`, each answer's
/// sample added to `samples`.
fn steady(
    server: &Server,
    samples: &Mutex<Vec<Sample>>,
    route: Route,
    thread: usize,
    interval: Duration,
    started: Instant,
    until: Instant,
) {
    let mut rng = StdRng::seed_from_u64(route as u64 * 1000 + thread as u64);
    let mut next = Instant::now();
    let mut n = 0usize;
    while next < until {
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        next += interval;
        n += 1;
        let body = match route {
            Route::Events => json!((0..BATCH)
                .map(|i| {
                    let seq = (n * BATCH + i) * WRITERS + thread;
                    let user = format!("user{}", seq % USERS);
                    let text = format!("note {seq}: {}", engram_bench::sentence(&mut rng));
                    let session = format!("s{}", seq / (USERS * 20));
                    interaction(
                        TENANT,
                        &user,
                        &format!("e-{seq}"),
                        &session,
                        (seq % 1440) as u32,
                        &text,
                    )
                })
                .collect::<Vec<Value>>()),
            Route::Recall => {
                json!({"tenant": TENANT, "user": format!("user{}", rng.gen_range(0..USERS)),
                "query": engram_bench::question(&mut rng), "k": 10})
            }
            Route::Prompt => {
                json!({"tenant": TENANT, "user": format!("user{}", rng.gen_range(0..USERS)),
                "session": "s-prompt", "query": engram_bench::question(&mut rng)})
            }
        };
        let path = match route {
            Route::Events => "/v1/events",
            Route::Recall => "/v1/recall",
            Route::Prompt => "/v1/prompt",
        };
        let asked = Instant::now();
        let status = server.try_post(path, &body).map_or(0, |(status, _)| status);
        samples.lock().unwrap().push(Sample {
            route,
            minute: asked.duration_since(started).as_secs() as usize / 60,
            ms: asked.elapsed().as_secs_f64() * 1000.0,
            status,
        });
    }
}

/// Once a second: the backlog's peak this minute, and the resident memory, episodes stored and
/// CPU seconds as of now (so at the minute's end, its last reading); a few seconds into each
/// minute, the last minute's row, live.
fn watch(
    server: &Server,
    gauges: &Mutex<Vec<Gauges>>,
    baseline: Gauges,
    samples: &Mutex<Vec<Sample>>,
    minutes: usize,
    started: Instant,
    stop: &AtomicBool,
) {
    let mut printed = 0;
    while !stop.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_secs(1));
        let elapsed = started.elapsed().as_secs();
        let minute = elapsed as usize / 60;
        let backlog = server.metric("engram_ingest_backlog_events");
        let stored = server.metric("engram_episodes_stored");
        let (rss, cpu_s) = (
            engram_bench::resident_kib(Some(server.pid())) as f64 / 1024.0,
            cpu_seconds(server.pid()),
        );
        let mut g = gauges.lock().unwrap();
        if let Some(g) = g.get_mut(minute) {
            g.backlog_peak = g.backlog_peak.max(backlog);
            (g.rss_mib, g.episodes_stored, g.cpu_s) = (rss, stored, cpu_s);
        }
        if printed < minute.min(minutes) && elapsed % 60 >= LIVE_ROW_AFTER_S {
            if printed == 0 {
                print_header();
            }
            print!("live ");
            print_row(&samples.lock().unwrap(), &g, baseline, printed);
            printed += 1;
        }
    }
}

/// User plus system CPU seconds of the server so far.
fn cpu_seconds(pid: u32) -> f64 {
    let (user, system, _) = engram_bench::cpu_usage(Some(pid));
    user + system
}

fn print_header() {
    println!("soak: events in requests of {BATCH}, recalls and prompts as offered; per minute");
    println!(
        "{:>3} {:>9} {:>10} {:>15} {:>15} {:>15} {:>6} {:>6} {:>5} {:>8} {:>8}",
        "min",
        "taken/s",
        "in Lance/s",
        "events p50/p99",
        "recall p50/p99",
        "prompt p50/p99",
        "429",
        "errors",
        "cores",
        "RSS MiB",
        "backlog^"
    );
}

/// p50 and p99 of the route's answered (200) requests that started in `minute`.
fn p50_p99(samples: &[Sample], route: Route, minute: usize) -> (f64, f64) {
    let mut ms: Vec<f64> = samples
        .iter()
        .filter(|s| s.route == route && s.minute == minute && s.status == 200)
        .map(|s| s.ms)
        .collect();
    (percentile(&mut ms, 50.0), percentile(&mut ms, 99.0))
}

/// One minute's row: what the requests started in it saw, and the gauges at its end (the
/// episodes committed and CPU time as differences from the minute before).
fn print_row(samples: &[Sample], gauges: &[Gauges], baseline: Gauges, minute: usize) {
    let of_minute = samples.iter().filter(|s| s.minute == minute);
    let stored = of_minute
        .clone()
        .filter(|s| s.route == Route::Events && s.status == 200)
        .count()
        * BATCH;
    let refused = of_minute.clone().filter(|s| s.status == 429).count();
    let errors = of_minute
        .filter(|s| s.status != 200 && s.status != 429)
        .count();
    let g = gauges[minute];
    let before = minute.checked_sub(1).map_or(baseline, |m| gauges[m]);
    let in_lance = g.episodes_stored.saturating_sub(before.episodes_stored) as f64 / 60.0;
    let cores = (g.cpu_s - before.cpu_s) / 60.0;
    let cell = |(a, b): (f64, f64)| format!("{a:.1}/{b:.1}");
    println!(
        "{:>3} {:>9.0} {:>10.0} {:>15} {:>15} {:>15} {:>6} {:>6} {:>5.1} {:>8.0} {:>8}",
        minute + 1,
        stored as f64 / 60.0,
        in_lance,
        cell(p50_p99(samples, Route::Events, minute)),
        cell(p50_p99(samples, Route::Recall, minute)),
        cell(p50_p99(samples, Route::Prompt, minute)),
        refused,
        errors,
        cores,
        g.rss_mib,
        g.backlog_peak
    );
}

fn print_table(samples: &[Sample], gauges: &[Gauges], baseline: Gauges, minutes: usize) {
    print_header();
    for minute in 0..minutes.min(gauges.len()) {
        print_row(samples, gauges, baseline, minute);
    }
    let last = minutes.saturating_sub(1);
    for route in [Route::Events, Route::Recall, Route::Prompt] {
        let (first, end) = (
            p50_p99(samples, route, 0).1,
            p50_p99(samples, route, last).1,
        );
        println!(
            "{route:?}: last minute's p99 / first's = {:.2} (goal <= 1.5)",
            end / first
        );
    }
    if let (Some(warm), Some(end)) = (gauges.get(1), gauges.get(last)) {
        println!(
            "RSS: {:.0} MiB after minute 2, {:.0} MiB at the end ({:+.1}%)",
            warm.rss_mib,
            end.rss_mib,
            (end.rss_mib / warm.rss_mib - 1.0) * 100.0
        );
    }
    let total_errors = samples
        .iter()
        .filter(|s| s.status != 200 && s.status != 429)
        .count();
    println!("errors: {total_errors}");
}
