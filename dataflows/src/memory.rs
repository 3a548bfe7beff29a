//! The memory dataflow and the timely workers that run it.

use crate::input::{InputRecord, InputSource};
use crate::views::{SharedViews, ViewUpdate};
use differential_dataflow::input::{Input, InputSession};
use differential_dataflow::VecCollection;
use engram_operators::correction_clusters::{
    correction_clusters, promote_patterns, similarity_links, CorrectionPoint, UserKey,
};
use engram_operators::entities::{co_mentions, entity_stats};
use engram_operators::facts::{facts_over_time, FactAssertion, FactKey};
use engram_operators::skill_feedback::{skill_feedback, FeedbackVote, MessageKey};
use engram_operators::{next_edges, Episode, SessionKey};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use timely::dataflow::operators::probe::Handle;

/// Episodes that entered the views, in log order, for the caller to store (Lance).
#[derive(Debug, Clone)]
pub struct EpisodeBatch {
    /// The views' timestamp after this batch.
    pub as_of: u64,
    pub episodes: Vec<(SessionKey, Episode)>,
}

/// A running dataflow. Dropping it does not stop it; call [`DataflowHandle::stop`].
pub struct DataflowHandle {
    stop: Arc<AtomicBool>,
    as_of: Arc<AtomicU64>,
    guards: Option<timely::communication::WorkerGuards<()>>,
}

impl DataflowHandle {
    /// The offset below which all input is reflected in the views.
    pub fn as_of(&self) -> u64 {
        self.as_of.load(Ordering::Acquire)
    }

    /// Stops the workers and waits for them.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(g) = self.guards.take() {
            let _ = g.join();
        }
    }
}

impl Drop for DataflowHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

type Captured = Arc<Mutex<Vec<(ViewUpdate, u64, isize)>>>;
type CapturedEpisodes = Arc<Mutex<Vec<((SessionKey, Episode), u64, isize)>>>;

/// Starts `workers` timely workers running the memory dataflow.
///
/// Each worker reads its share of the input through the source `make_source(index, peers)`
/// gives it. After every step, worker 0 applies all view updates at timestamps the whole
/// dataflow has passed to `views` (one write lock per step), and sends the episodes that became
/// visible, in log order, to `episodes_out`.
pub fn run_memory_dataflow<F>(
    workers: usize,
    make_source: F,
    views: Arc<SharedViews>,
    episodes_out: Sender<EpisodeBatch>,
) -> Result<DataflowHandle, String>
where
    F: Fn(usize, usize) -> Box<dyn InputSource> + Send + Sync + 'static,
{
    let stop = Arc::new(AtomicBool::new(false));
    let as_of = Arc::new(AtomicU64::new(0));
    let captured: Captured = Default::default();
    let captured_episodes: CapturedEpisodes = Default::default();
    let episodes_out = Mutex::new(episodes_out);
    let (stop2, as_of2) = (stop.clone(), as_of.clone());
    let guards = timely::execute(timely::Config::process(workers.max(1)), move |worker| {
        let index = worker.index();
        let mut source = make_source(index, worker.peers());
        let mut probe = Handle::new();
        let (cap, cap_eps) = (captured.clone(), captured_episodes.clone());
        let mut inputs = worker.dataflow::<u64, _, _>(|scope| {
            let (episodes_input, episodes) = scope.new_collection::<(SessionKey, Episode), isize>();
            let (facts_input, facts) = scope.new_collection::<(FactKey, FactAssertion), isize>();
            let (votes_input, votes) = scope.new_collection::<(MessageKey, FeedbackVote), isize>();
            let (corrections_input, corrections) =
                scope.new_collection::<(UserKey, CorrectionPoint), isize>();
            let links = similarity_links(corrections.clone());
            let clusters = correction_clusters(corrections.clone(), links);
            capture(
                promote_patterns(corrections, clusters.clone()),
                &cap,
                &mut probe,
                |(user, pattern)| ViewUpdate::Pattern(user.clone(), pattern.clone()),
            );
            capture(clusters, &cap, &mut probe, |(user, membership)| {
                ViewUpdate::ClusterMember(user.clone(), membership.clone())
            });
            let (skill_tallies, population_tallies) = skill_feedback(votes);
            capture(skill_tallies, &cap, &mut probe, |(key, tally)| {
                ViewUpdate::SkillTally(key.clone(), *tally)
            });
            capture(population_tallies, &cap, &mut probe, |(key, tally)| {
                ViewUpdate::PopulationTally(key.clone(), *tally)
            });
            capture(
                next_edges(
                    episodes
                        .clone()
                        .map(|(session, episode)| (session, episode.node())),
                ),
                &cap,
                &mut probe,
                |(key, edge)| ViewUpdate::NextEdge(key.clone(), edge.clone()),
            );
            capture(
                facts_over_time(facts),
                &cap,
                &mut probe,
                |(key, version)| ViewUpdate::Fact(key.clone(), version.clone()),
            );
            capture(
                entity_stats(episodes.clone()),
                &cap,
                &mut probe,
                |(key, stats)| ViewUpdate::Entity(key.clone(), stats.clone()),
            );
            capture(
                co_mentions(episodes.clone()),
                &cap,
                &mut probe,
                |(key, weight)| ViewUpdate::CoMention(key.clone(), *weight),
            );
            episodes
                .inspect(move |(rec, t, d)| cap_eps.lock().unwrap().push((rec.clone(), *t, *d)))
                .probe_with(&mut probe);
            Inputs {
                episodes: episodes_input,
                facts: facts_input,
                votes: votes_input,
                corrections: corrections_input,
            }
        });
        let out = episodes_out.lock().unwrap().clone();
        let mut published = 0u64;
        while !stop2.load(Ordering::Acquire) {
            if let Some((records, upto)) = source.poll() {
                for (_offset, record) in records {
                    inputs.insert(record);
                }
                inputs.advance_to(upto);
            }
            worker.step_or_park(Some(Duration::from_millis(2)));
            if index == 0 {
                let frontier = probe
                    .with_frontier(|f| f.first().copied())
                    .unwrap_or(u64::MAX);
                if frontier > published {
                    publish(frontier, &captured, &captured_episodes, &views, &out);
                    published = frontier;
                    as_of2.store(frontier, Ordering::Release);
                }
            }
        }
    })?;
    Ok(DataflowHandle {
        stop,
        as_of,
        guards: Some(guards),
    })
}

/// The dataflow's input sessions, one per kind of record.
struct Inputs {
    episodes: InputSession<u64, (SessionKey, Episode), isize>,
    facts: InputSession<u64, (FactKey, FactAssertion), isize>,
    votes: InputSession<u64, (MessageKey, FeedbackVote), isize>,
    corrections: InputSession<u64, (UserKey, CorrectionPoint), isize>,
}

impl Inputs {
    fn insert(&mut self, record: InputRecord) {
        match record {
            InputRecord::Episode(key, episode) => self.episodes.insert((key, episode)),
            InputRecord::Fact(key, assertion) => self.facts.insert((key, assertion)),
            InputRecord::Feedback(key, vote) => self.votes.insert((key, vote)),
            InputRecord::Correction(user, point) => self.corrections.insert((user, point)),
        }
    }

    /// Moves every input to `time` (if later than now) and sends what was inserted.
    fn advance_to(&mut self, time: u64) {
        if time > *self.episodes.time() {
            self.episodes.advance_to(time);
            self.facts.advance_to(time);
            self.votes.advance_to(time);
            self.corrections.advance_to(time);
        }
        self.episodes.flush();
        self.facts.flush();
        self.votes.flush();
        self.corrections.flush();
    }
}

/// Records every update of `collection` as a view update (at its time, with its diff) for
/// [`publish`], and makes the probe wait for it.
fn capture<'scope, D>(
    collection: VecCollection<'scope, u64, D>,
    captured: &Captured,
    probe: &mut Handle<u64>,
    to_update: impl Fn(&D) -> ViewUpdate + 'static,
) where
    D: Clone + 'static,
{
    let captured = captured.clone();
    collection
        .inspect(move |(d, t, r)| captured.lock().unwrap().push((to_update(d), *t, *r)))
        .probe_with(probe);
}

/// Applies the captured updates at times before `frontier`, in time order, under one lock.
fn publish(
    frontier: u64,
    captured: &Captured,
    captured_episodes: &CapturedEpisodes,
    views: &SharedViews,
    out: &Sender<EpisodeBatch>,
) {
    let ready = take_before(captured, frontier);
    let mut episodes = take_before(captured_episodes, frontier);
    {
        let mut v = views.write();
        for (update, _, diff) in ready {
            v.apply(update, diff);
        }
        for ((key, _), _, diff) in &episodes {
            v.apply(ViewUpdate::SessionEpisode(key.clone()), *diff);
        }
        v.as_of = frontier;
    }
    episodes.retain(|(_, _, d)| *d > 0);
    episodes.sort_by_key(|((_, e), _, _)| e.log_offset);
    if !episodes.is_empty() {
        let _ = out.send(EpisodeBatch {
            as_of: frontier,
            episodes: episodes.into_iter().map(|(rec, _, _)| rec).collect(),
        });
    }
}

fn take_before<D>(captured: &Mutex<Vec<(D, u64, isize)>>, frontier: u64) -> Vec<(D, u64, isize)> {
    let mut all = captured.lock().unwrap();
    let (mut ready, rest): (Vec<_>, Vec<_>) = all.drain(..).partition(|(_, t, _)| *t < frontier);
    *all = rest;
    ready.sort_by_key(|(_, t, _)| *t);
    ready
}
