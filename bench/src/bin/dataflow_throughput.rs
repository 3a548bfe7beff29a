//! The memory dataflow alone: throughput, the cost of one more event against recomputing from
//! scratch, and resident memory per episode, measured in one run.
//!
//!     cargo run --release -p engram-bench --bin dataflow_throughput -- \
//!         [--events N] [--users U] [--workers W] [--extra K] [--file EVENTS.jsonl]
//!         [--only KIND,...]
//!
//! Events are synthetic: chat messages (`engram_bench::sentence`), and about one in ten a
//! `fact` event, one in twenty a feedback vote, one in fifty a correction (its embedding
//! supplied precomputed: one of five 384-dimensional directions plus noise, so corrections
//! cluster and get promoted), spread over U users in sessions of 20; or the events of a
//! JSON-lines file in the event format. They are turned into dataflow input up front, so the figures are the
//! dataflow's own: operators, arrangements, publication of the views. No embedding, no Lance.
//!
//! 1. Throughput: all N events are released at once and the run waits until the views are as
//!    of the last one: events/s. This is also the cost of computing the views from scratch.
//! 2. One more event: with the N resident, K further events are released one at a time, each
//!    waited for; the median against the from-scratch time is the ratio the incremental
//!    dataflow saves.
//! 3. Memory: resident set size growth per episode, once the load's episodes have reached the
//!    sink, and again after the K further events, when the merges the load started are done and
//!    the allocator has returned what the load freed (the first figure also holds those
//!    transients); and the live heap at both points: bytes allocated and not freed, counted by
//!    the global allocator (mimalloc, as in the engram binary). The prepared input records are
//!    allocated before the load and freed during it, as the dataflow is done with them: every
//!    figure counts the memory they owned as the dataflow's, so that freeing the input does not
//!    hide what the dataflow holds.

use engram_bench::{percentile, sentence};
use engram_dataflows::{run_memory_dataflow, EngineClock, InputRecord, InputSource, SharedViews};
use engram_schemas::{
    parse_event, Body, Correction, CorrectionType, Event, EventKind, Fact, Feedback,
    FeedbackContext, Header, Interaction, Role,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::alloc::GlobalAlloc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// mimalloc (as the engram binary uses), counting the bytes it has handed out and not had back.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator(AtomicU64::new(0));

struct CountingAllocator(AtomicU64);

// SAFETY: every call goes to mimalloc unchanged; the counter only adds and subtracts sizes.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        self.0.fetch_add(layout.size() as u64, Ordering::Relaxed);
        mimalloc::MiMalloc.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        self.0.fetch_sub(layout.size() as u64, Ordering::Relaxed);
        mimalloc::MiMalloc.dealloc(ptr, layout)
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        self.0.fetch_add(layout.size() as u64, Ordering::Relaxed);
        mimalloc::MiMalloc.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        self.0.fetch_add(new_size as u64, Ordering::Relaxed);
        self.0.fetch_sub(layout.size() as u64, Ordering::Relaxed);
        mimalloc::MiMalloc.realloc(ptr, layout, new_size)
    }
}

/// Bytes allocated and not yet freed: what the views and arrangements hold, without the memory
/// an allocator keeps after a free (which the resident set counts).
fn live_heap_bytes() -> u64 {
    ALLOCATOR.0.load(Ordering::Relaxed)
}

/// Directions synthetic corrections are drawn around.
const TOPICS: usize = 5;
const EMBEDDING_DIMS: usize = 384;

/// A precomputed correction embedding: the topic's fixed direction plus a little noise (cosine
/// to the direction about 0.95), so corrections of one topic link and those of two do not.
fn correction_embedding(text: &str, rng: &mut StdRng) -> Vec<f32> {
    let topic: u64 = text.trim_start_matches("topic ").parse().unwrap_or(0);
    let mut direction = StdRng::seed_from_u64(1000 + topic);
    (0..EMBEDDING_DIMS)
        .map(|_| direction.gen_range(-1.0f32..1.0) + rng.gen_range(-0.3f32..0.3))
        .collect()
}

/// Records handed to a worker per poll, like the log source's read chunk.
const POLL_CHUNK: usize = 4096;

struct Options {
    events: usize,
    users: usize,
    workers: usize,
    extra: usize,
    file: Option<String>,
    /// Event kinds to keep (`--only interaction,fact`): for attributing time and memory to
    /// the views each kind feeds. All when empty.
    only: Vec<String>,
}

fn options() -> anyhow::Result<Options> {
    let mut o = Options {
        events: 1_000_000,
        users: 1_000,
        workers: 2,
        extra: 200,
        file: None,
        only: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| anyhow::anyhow!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--events" => o.events = value()?.parse()?,
            "--users" => o.users = value()?.parse()?,
            "--workers" => o.workers = value()?.parse()?,
            "--extra" => o.extra = value()?.parse()?,
            "--file" => o.file = Some(value()?),
            "--only" => o.only = value()?.split(',').map(str::to_string).collect(),
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    Ok(o)
}

fn synthetic_events(n: usize, users: usize) -> Vec<Event> {
    let mut rng = StdRng::seed_from_u64(3);
    let start = chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap();
    (0..n)
        .map(|i| {
            let user = rng.gen_range(0..users);
            let header = Header {
                event_id: format!("e{i}"),
                tenant: "bench".into(),
                user: format!("user{user}"),
                ts: start + chrono::Duration::seconds(i as i64),
                session: Some(format!("s{}", i / (20 * users).max(1))),
            };
            let roll = rng.gen_range(0..100);
            let body = if roll < 2 {
                Body::Correction(Correction {
                    target_event_id: format!("e{}", i.saturating_sub(1)),
                    original: sentence(&mut rng),
                    corrected: None,
                    correction_type: CorrectionType::Style,
                    expected_behavior: Some(format!("topic {}", rng.gen_range(0..TOPICS))),
                    context: None,
                    domain: None,
                    confidence: None,
                    signals: None,
                })
            } else if roll < 7 {
                Body::Feedback(Feedback {
                    message_id: format!("m{}", rng.gen_range(0..n / users.max(1) + 1)),
                    skill_id: ["concise", "detailed", "technical"][rng.gen_range(0..3)].into(),
                    reward: rng.gen_range(-1..=1),
                    context: FeedbackContext {
                        intent: ["plan", "debug", "chat"][rng.gen_range(0..3)].into(),
                        sentiment: "neutral".into(),
                        time_of_day: ["morning", "evening"][rng.gen_range(0..2)].into(),
                    },
                    reason: None,
                    free_text: None,
                })
            } else if roll < 17 {
                Body::Fact(Fact {
                    subject: "user".into(),
                    attribute: ["city", "employer", "diet", "car"][rng.gen_range(0..4)].into(),
                    value: format!("value {}", rng.gen_range(0..50)),
                    source_event_id: None,
                    confidence: None,
                })
            } else {
                Body::Interaction(Interaction {
                    role: if i % 2 == 0 {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    content: sentence(&mut rng),
                    turn: None,
                    importance: None,
                    skill_id: None,
                    meta: None,
                })
            };
            Event { header, body }
        })
        .collect()
}

fn file_events(path: &str, n: usize) -> anyhow::Result<Vec<Event>> {
    let text = std::fs::read_to_string(path)?;
    let mut events = Vec::new();
    for (number, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        if events.len() == n {
            break;
        }
        events.push(
            parse_event(line.as_bytes(), None)
                .map_err(|e| anyhow::anyhow!("{path} line {}: {e}", number + 1))?,
        );
    }
    Ok(events)
}

/// A worker's share of prepared records; records at offsets below `released` are visible.
/// Each is handed over (moved, as a log source hands over what it parsed) once.
struct PreparedSource {
    records: Vec<(u64, Option<InputRecord>)>,
    next: usize,
    released: Arc<AtomicU64>,
    reported: u64,
}

impl InputSource for PreparedSource {
    fn poll(&mut self) -> Option<(Vec<(u64, InputRecord, isize)>, u64)> {
        let limit = self.released.load(Ordering::Acquire);
        let start = self.next;
        while self.next < self.records.len()
            && self.records[self.next].0 < limit
            && self.next - start < POLL_CHUNK
        {
            self.next += 1;
        }
        let upto = match self.records.get(self.next) {
            Some((offset, _)) if *offset < limit => *offset,
            _ => limit,
        };
        if self.next == start && upto == self.reported {
            return None;
        }
        self.reported = upto;
        let batch = self.records[start..self.next]
            .iter_mut()
            .filter_map(|(offset, record)| Some((*offset, record.take()?, 1)))
            .collect();
        Some((batch, upto))
    }
}

/// Waits until `as_of()` reaches `target`, looking every `interval`. (On a machine with a core
/// per worker, this thread waking often takes time from them: the load, which takes seconds,
/// is looked at every millisecond, a single event, which takes milliseconds, more often.)
fn wait_for(as_of: impl Fn() -> u64, target: u64, interval: Duration) {
    while as_of() < target {
        std::thread::sleep(interval);
    }
}

fn main() -> anyhow::Result<()> {
    let o = options()?;
    let events = load_events(&o)?;
    let loaded = (events.len() - o.extra) as u64;
    let extra = o.extra as u64;
    let workers = o.workers.max(1);
    let heap_without_input = live_heap_bytes();
    let PreparedInput {
        shares,
        episodes,
        loaded_episodes,
    } = prepare_input(&events, loaded, workers);
    // What the records own on the heap (their strings and embeddings): the sources hand it to
    // the dataflow, which frees it once the records are processed, so the heap shrinks by this
    // much over the load whatever the dataflow keeps. The figures below add it back. (The
    // shares' own slots stay allocated until the end.)
    let input_owned = live_heap_bytes()
        .saturating_sub(heap_without_input)
        .saturating_sub(
            shares
                .iter()
                .map(|s| (s.capacity() * std::mem::size_of::<(u64, Option<InputRecord>)>()) as u64)
                .sum(),
        );
    drop(events);
    let shares = std::sync::Mutex::new(shares);
    let released = Arc::new(AtomicU64::new(0));
    let views = Arc::new(SharedViews::default());
    let (episodes_out, episodes_in) = std::sync::mpsc::channel::<engram_dataflows::EpisodeBatch>();
    // the episode batches would go to Lance; here they are dropped as they come, and counted
    let drained = Arc::new(AtomicU64::new(0));
    let drain = {
        let drained = drained.clone();
        std::thread::spawn(move || {
            for batch in episodes_in {
                let n = batch.episodes.len() as u64;
                drop(batch);
                drained.fetch_add(n, Ordering::Release);
            }
        })
    };
    let rss_before = engram_bench::resident_kib(None);
    // as if the input records owned nothing: the dataflow's own heap is then the growth from here
    let heap_before = live_heap_bytes().saturating_sub(input_owned);
    let cpu_before = engram_bench::cpu_usage(None);

    let source_released = released.clone();
    let handle = run_memory_dataflow(
        workers,
        move |index, _| {
            Box::new(PreparedSource {
                records: std::mem::take(&mut shares.lock().unwrap()[index]),
                next: 0,
                released: source_released.clone(),
                reported: 0,
            })
        },
        EngineClock::Events,
        Default::default(),
        views.clone(),
        episodes_out,
    )
    .map_err(anyhow::Error::msg)?;

    let t = Instant::now();
    released.store(loaded, Ordering::Release);
    wait_for(|| handle.as_of(), loaded, Duration::from_millis(1));
    let from_scratch = t.elapsed().as_secs_f64();
    // The load is done once its episodes have reached the sink too: the last batch of them is
    // on its way there when the views are as of the last event, and counting it in the memory
    // would count its messages twice (they are in `input_owned` already). Bounded, in case a
    // file repeats an episode (the sink gets each once).
    let deadline = Instant::now() + Duration::from_secs(10);
    while drained.load(Ordering::Acquire) < loaded_episodes && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    let rss_after = engram_bench::resident_kib(None);
    let heap_after = live_heap_bytes();
    let cpu_after = engram_bench::cpu_usage(None);

    let mut one_more = Vec::with_capacity(o.extra);
    for offset in loaded..loaded + extra {
        let t = Instant::now();
        released.store(offset + 1, Ordering::Release);
        wait_for(|| handle.as_of(), offset + 1, Duration::from_micros(50));
        one_more.push(t.elapsed().as_secs_f64());
    }
    // again once the load's transients (batches on their way out, unmerged arrangement
    // batches) have had the extra events' time to settle
    let heap_settled = live_heap_bytes();
    let rss_settled = engram_bench::resident_kib(None);
    let sizes = view_sizes(&views);
    handle.stop();
    let _ = drain.join();

    print_figures(
        &o,
        Figures {
            loaded,
            episodes,
            workers,
            sizes,
            from_scratch,
            one_more,
            input_owned,
            rss: (rss_before, rss_after, rss_settled),
            heap: (heap_before, heap_after, heap_settled),
            cpu: (cpu_before, cpu_after),
        },
    );
    Ok(())
}

/// The events of the run: the file's or synthetic ones, of the `--only` kinds; more than
/// `--extra` of them.
fn load_events(o: &Options) -> anyhow::Result<Vec<Event>> {
    let total = o.events + o.extra;
    let mut events = match &o.file {
        Some(path) => file_events(path, total)?,
        None => synthetic_events(total, o.users),
    };
    for kind in &o.only {
        anyhow::ensure!(
            EventKind::parse(kind).is_some(),
            "--only: {kind} is no event kind"
        );
    }
    if !o.only.is_empty() {
        events.retain(|e| o.only.iter().any(|k| k == e.kind().as_str()));
    }
    anyhow::ensure!(
        events.len() > o.extra,
        "need more than {} events, have {}",
        o.extra,
        events.len()
    );
    Ok(events)
}

/// The dataflow input of the events, each record at its event's offset, in the share of the
/// worker its user is hashed to.
struct PreparedInput {
    shares: Vec<Vec<(u64, Option<InputRecord>)>>,
    /// Episodes among all the records.
    episodes: u64,
    /// Episodes among the loaded events (offsets below `loaded`): the sink has them all once
    /// the load is done.
    loaded_episodes: u64,
}

/// Turns `events` into input records for `workers` workers, corrections with their precomputed
/// embeddings ([`correction_embedding`]).
fn prepare_input(events: &[Event], loaded: u64, workers: usize) -> PreparedInput {
    let mut shares: Vec<Vec<(u64, Option<InputRecord>)>> = vec![Vec::new(); workers];
    let mut episodes = 0u64;
    let mut loaded_episodes = 0u64;
    let mut noise = StdRng::seed_from_u64(5);
    for (offset, event) in events.iter().enumerate() {
        let share =
            &mut shares[engram_engine::ingest::log_source::worker_for(&event.key(), workers)];
        let records = match &event.body {
            Body::Correction(c) => {
                let embedding =
                    correction_embedding(engram_dataflows::correction_text(c), &mut noise);
                let mut records = InputRecord::from_event(event, offset as u64);
                records.extend(InputRecord::correction(event, &embedding));
                records
            }
            _ => InputRecord::from_event(event, offset as u64),
        };
        for record in records {
            let episode = matches!(record, InputRecord::Episode(..)) as u64;
            episodes += episode;
            if (offset as u64) < loaded {
                loaded_episodes += episode;
            }
            share.push((offset as u64, Some(record)));
        }
    }
    PreparedInput {
        shares,
        episodes,
        loaded_episodes,
    }
}

/// How much the views hold, summed over users.
#[derive(Default)]
struct ViewSizes {
    entities: usize,
    co_mentions: usize,
    facts: usize,
    /// Distinct correction clusters.
    clusters: usize,
    patterns: usize,
    skills: usize,
}

/// The sizes of the views as they are now.
fn view_sizes(views: &SharedViews) -> ViewSizes {
    let v = views.read();
    let mut sizes = ViewSizes::default();
    for u in v.users.values() {
        let clusters: std::collections::BTreeSet<&String> =
            u.correction_clusters.values().collect();
        sizes.entities += u.entities.len();
        sizes.co_mentions += u.co_mentions.len();
        sizes.facts += u.facts.len();
        sizes.clusters += clusters.len();
        sizes.patterns += u.patterns.len();
        sizes.skills += u.skills.len();
    }
    sizes
}

/// What one run measured, for [`print_figures`].
struct Figures {
    loaded: u64,
    episodes: u64,
    workers: usize,
    sizes: ViewSizes,
    /// Seconds the load took.
    from_scratch: f64,
    /// Seconds each further event took to reach the views.
    one_more: Vec<f64>,
    /// Heap bytes the input records owned.
    input_owned: u64,
    /// Resident set (KiB) before the load, after it, and after the further events.
    rss: (u64, u64, u64),
    /// Live heap bytes at the same three points (the first as if the input owned nothing).
    heap: (u64, u64, u64),
    /// [`engram_bench::cpu_usage`] before and after the load.
    cpu: ((f64, f64, u64), (f64, f64, u64)),
}

/// Prints the run's input, the views' sizes, and the figures the module comment lists.
fn print_figures(o: &Options, f: Figures) {
    let Figures {
        loaded,
        episodes,
        workers,
        sizes:
            ViewSizes {
                entities,
                co_mentions,
                facts,
                clusters,
                patterns,
                skills,
            },
        from_scratch,
        mut one_more,
        input_owned,
        rss: (rss_before, rss_after, rss_settled),
        heap: (heap_before, heap_after, heap_settled),
        cpu: (cpu_before, cpu_after),
    } = f;
    let extra = o.extra;
    let median = percentile(&mut one_more, 50.0);
    let p95 = percentile(&mut one_more, 95.0);
    println!(
        "input: {} events ({} episodes) from {}, {} workers",
        loaded,
        episodes,
        o.file.as_deref().unwrap_or("the synthetic generator"),
        workers
    );
    println!(
        "views: {entities} entities, {co_mentions} co-mention edges, {facts} fact keys, \
         {clusters} correction clusters, {patterns} patterns, {skills} skill tallies"
    );
    println!(
        "throughput: {:.0} events/s ({} events in {:.2} s = from-scratch cost)",
        loaded as f64 / from_scratch,
        loaded,
        from_scratch
    );
    println!(
        "cpu over the load: user {:.2} s, system {:.2} s, {} minor page faults",
        cpu_after.0 - cpu_before.0,
        cpu_after.1 - cpu_before.1,
        cpu_after.2 - cpu_before.2
    );
    println!(
        "one more event with {} resident: median {:.3} ms, p95 {:.3} ms; median / from scratch = 1/{:.0}",
        loaded,
        median * 1e3,
        p95 * 1e3,
        from_scratch / median
    );
    // the input's freed memory is reused by the dataflow: count it as grown as well
    let rss_grown = (rss_after * 1024).saturating_sub(rss_before * 1024) + input_owned;
    println!(
        "resident memory at the end of the load: +{:.1} MiB, with the {:.1} MiB the input records \
         owned = {:.0} bytes per episode (this also holds merges still in progress and freed \
         pages the allocator has not yet returned)",
        rss_grown as f64 / (1024.0 * 1024.0),
        input_owned as f64 / (1024.0 * 1024.0),
        rss_grown as f64 / episodes.max(1) as f64
    );
    let rss_settled_grown = (rss_settled * 1024).saturating_sub(rss_before * 1024) + input_owned;
    println!(
        "resident memory with the {loaded} events held: {:.0} bytes per episode (counted as \
         above, after the {extra} more events: the load's merges are done and the allocator has \
         returned freed pages)",
        rss_settled_grown as f64 / episodes.max(1) as f64
    );
    println!(
        "live heap: +{:.1} MiB over the load = {:.0} bytes per episode (what the views and \
         arrangements hold, without memory the allocator keeps after a free)",
        heap_after.saturating_sub(heap_before) as f64 / (1024.0 * 1024.0),
        heap_after.saturating_sub(heap_before) as f64 / episodes.max(1) as f64
    );
    println!(
        "live heap after the {extra} more events: {:.0} bytes per episode",
        heap_settled.saturating_sub(heap_before) as f64 / episodes.max(1) as f64
    );
}
