//! The memory dataflow and the timely workers that run it.

use crate::captured::{in_time_order, CapturedUpdates};
use crate::input::{InputRecord, InputSource};
use crate::views::{SharedViews, ViewUpdate};
use differential_dataflow::input::{Input, InputSession};
use differential_dataflow::VecCollection;
use engram_operators::correction_clusters::{
    cluster_measures, correction_clusters, present_corrections, promoted_patterns,
    similarity_links, CorrectionPoint, UserKey,
};
use engram_operators::correction_notes::{correction_notes, CorrectionNote};
use engram_operators::entities::{co_mentions_of, entity_stats_of, episode_entities};
use engram_operators::facts::{facts_over_time, FactAssertion, FactKey};
use engram_operators::lifecycle::{
    lifecycle_states, preference_traces, PreferenceKey, PreferenceTrace,
};
use engram_operators::math::decay::{LifecycleState, LifecycleThresholds};
use engram_operators::memory_marks::{memory_marks_of, MemoryUse};
use engram_operators::preference_contradictions::preference_contradictions;
use engram_operators::skill_confidence::{discounted_skill_feedback_of, skill_confidences_of};
use engram_operators::skill_feedback::{latest_votes, skill_feedback_of, FeedbackVote, MessageKey};
use engram_operators::style_preferences::style_preferences_of;
use engram_operators::summaries::{user_summaries, SummaryNode};
use engram_operators::team_preferences::{
    org_preferences, team_preferences, user_teams, TeamAssignment,
};
use engram_operators::{next_edges, Episode, SessionKey};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::probe::Handle;
use timely::dataflow::operators::Probe;

/// Episodes that entered the views, in log order, for the caller to store (Lance).
#[derive(Debug, Clone)]
pub struct EpisodeBatch {
    /// The views' timestamp after this batch.
    pub as_of: u64,
    pub episodes: Vec<(SessionKey, Episode)>,
    /// Fact assertions that entered the views, in log order, for the caller to store (Lance):
    /// `((tenant, user, subject, attribute), assertion)`.
    pub facts: Vec<(FactKey, FactAssertion)>,
    /// Summaries that entered the views, in log order, for the caller to store (Lance).
    pub summaries: Vec<(UserKey, SummaryNode)>,
}

/// A running dataflow. Dropping it does not stop it; call [`DataflowHandle::stop`].
pub struct DataflowHandle {
    stop: Arc<AtomicBool>,
    as_of: Arc<AtomicU64>,
    guards: Option<timely::communication::WorkerGuards<()>>,
    publisher: Option<std::thread::JoinHandle<()>>,
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
        // worker 0 has dropped its end of the publisher's channel: the publisher finishes
        if let Some(p) = self.publisher.take() {
            let _ = p.join();
        }
    }
}

impl Drop for DataflowHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

type Captured = Arc<Mutex<CapturedUpdates<ViewUpdate>>>;
type CapturedEpisodes = Arc<Mutex<CapturedUpdates<(SessionKey, Episode)>>>;
type CapturedFacts = Arc<Mutex<CapturedUpdates<(FactKey, FactAssertion)>>>;
type CapturedSummaries = Arc<Mutex<CapturedUpdates<(UserKey, SummaryNode)>>>;
type CapturedStates = Arc<Mutex<CapturedUpdates<(PreferenceKey, LifecycleState)>>>;

/// What moves engine time, the clock of preference lifecycles (decay happens in engine time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineClock {
    /// The wall clock: live serving, where memories fade while nobody writes.
    #[default]
    Wall,
    /// The latest event time read so far: replays and benchmarks, so a replay is deterministic
    /// and history decays as it did when it happened.
    Events,
}

impl std::str::FromStr for EngineClock {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "wall" => Ok(EngineClock::Wall),
            "events" => Ok(EngineClock::Events),
            other => Err(format!("expected \"wall\" or \"events\", got {other:?}")),
        }
    }
}

/// Engine time in whole seconds since the Unix epoch, shared by the workers: the wall clock,
/// or the latest event time any worker has read.
struct EngineTime {
    clock: EngineClock,
    latest_event_secs: AtomicU64,
    /// The least second not yet closed by any worker's lifecycle input.
    closed_before: AtomicU64,
}

impl EngineTime {
    fn saw_event_at(&self, micros: i64) {
        let secs = micros.div_euclid(1_000_000).max(0) as u64;
        self.latest_event_secs.fetch_max(secs, Ordering::AcqRel);
    }

    /// Records that a worker closes every second before `secs`; returns the latest such bound
    /// of all workers, to which every worker advances.
    fn close_before(&self, secs: u64) -> u64 {
        self.closed_before
            .fetch_max(secs, Ordering::AcqRel)
            .max(secs)
    }

    fn now_secs(&self) -> u64 {
        match self.clock {
            EngineClock::Wall => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            EngineClock::Events => self.latest_event_secs.load(Ordering::Acquire),
        }
    }
}

/// Starts `workers` timely workers running the memory dataflow.
///
/// Each worker reads its share of the input through the source `make_source(index, peers)`
/// gives it. After every step, worker 0 tells a publisher thread how far the whole dataflow
/// has got; the publisher applies all view updates at timestamps before that to `views` (one
/// write lock per publication), and sends the episodes that became visible, in log order, to
/// `episodes_out`. (Publication on a thread of its own, not on worker 0, lets the operating
/// system share it out over the cores: worker 0 would otherwise do a share of the dataflow and
/// all of the publishing, while the other workers waited for it.)
///
/// Preference lifecycles run in a second dataflow per worker whose timestamps are engine time
/// (`clock`, whole seconds): the preference traces the memory dataflow derives enter it at the
/// engine time they are seen, and the transitions it schedules become visible as engine time
/// passes them, also while no input arrives.
pub fn run_memory_dataflow<F>(
    workers: usize,
    make_source: F,
    clock: EngineClock,
    params: DataflowParams,
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
    let captured_facts: CapturedFacts = Default::default();
    let captured_summaries: CapturedSummaries = Default::default();
    let captured_states: CapturedStates = Default::default();
    let engine_time = Arc::new(EngineTime {
        clock,
        latest_event_secs: AtomicU64::new(0),
        closed_before: AtomicU64::new(0),
    });
    let (frontiers_out, frontiers_in) = std::sync::mpsc::channel::<Frontiers>();
    let publisher = {
        let captured = CapturedOutputs {
            views: captured.clone(),
            episodes: captured_episodes.clone(),
            facts: captured_facts.clone(),
            summaries: captured_summaries.clone(),
            states: captured_states.clone(),
        };
        let as_of = as_of.clone();
        std::thread::Builder::new()
            .name("engram-publish".into())
            .spawn(move || {
                publish_until_closed(frontiers_in, &captured, &views, &episodes_out, &as_of)
            })
            .map_err(|e| format!("cannot start the publisher thread: {e}"))?
    };
    let frontiers_out = Mutex::new(Some(frontiers_out));
    let stop2 = stop.clone();
    let mut config = timely::Config::process(workers.max(1));
    // Arrangements finish their merges while a worker has no input (a burst leaves them
    // half-merged, holding both inputs of each merge), not only as further updates arrive.
    differential_dataflow::configure(
        &mut config.worker,
        &differential_dataflow::Config::default().idle_merge_effort(Some(IDLE_MERGE_EFFORT)),
    );
    let guards = timely::execute(config, move |worker| {
        let index = worker.index();
        let mut source = make_source(index, worker.peers());
        let mut probe = Handle::new();
        let mut lifecycle_probe = Handle::new();
        let (cap, cap_eps) = (captured.clone(), captured_episodes.clone());
        let cap_facts = captured_facts.clone();
        let cap_summaries = captured_summaries.clone();
        // preference traces as the memory dataflow emits them, for the lifecycle dataflow
        let new_traces: Rc<RefCell<Vec<(PreferenceKey, PreferenceTrace, isize)>>> =
            Default::default();
        let cap_states = captured_states.clone();
        let mut traces_in = worker.dataflow::<u64, _, _>(|scope| {
            let (input, traces) = scope.new_collection::<(PreferenceKey, PreferenceTrace), isize>();
            keep_updates(
                lifecycle_states(traces, LifecycleThresholds::default()),
                &mut lifecycle_probe,
                move |updates| cap_states.lock().unwrap().push_all(updates),
            );
            input
        });
        let mut inputs = worker.dataflow::<u64, _, _>(|scope| {
            let (episodes_input, episodes) = scope.new_collection::<(SessionKey, Episode), isize>();
            let (facts_input, facts) = scope.new_collection::<(FactKey, FactAssertion), isize>();
            let (votes_input, votes) = scope.new_collection::<(MessageKey, FeedbackVote), isize>();
            let (corrections_input, corrections) =
                scope.new_collection::<(UserKey, CorrectionPoint), isize>();
            let (notes_input, notes) = scope.new_collection::<(UserKey, CorrectionNote), isize>();
            let (assignments_input, assignments) =
                scope.new_collection::<(UserKey, TeamAssignment), isize>();
            let (uses_input, uses) = scope.new_collection::<(MessageKey, MemoryUse), isize>();
            let (summaries_input, summaries) =
                scope.new_collection::<(UserKey, SummaryNode), isize>();
            let cap_views = cap.clone();
            keep_updates(user_summaries(summaries), &mut probe, move |updates| {
                let (mut views, mut kept) =
                    (cap_views.lock().unwrap(), cap_summaries.lock().unwrap());
                for ((user, summary), t, d) in updates.drain(..) {
                    kept.push((user.clone(), summary.clone()), t, d);
                    views.push(ViewUpdate::Summary(user, Box::new(summary)), t, d);
                }
            });
            // each message's latest vote, derived once for every view of feedback (each
            // derivation arranges every vote twice)
            let votes = latest_votes(votes);
            capture(
                memory_marks_of(uses, votes.clone()),
                &cap,
                &mut probe,
                |(key, mark)| ViewUpdate::MemoryMark(key, Box::new(mark)),
            );
            capture(correction_notes(notes), &cap, &mut probe, |(user, note)| {
                ViewUpdate::CorrectionNote(user, Box::new(note))
            });
            // one arrangement of the present corrections for every operator that reads them
            let present = present_corrections(corrections);
            let links = similarity_links(present.clone(), params.corrections.link_cosine);
            let clusters = correction_clusters(present.clone(), links);
            let measures = cluster_measures(present.clone(), clusters.clone());
            let patterns = promoted_patterns(measures.clone());
            let teams = user_teams(assignments);
            let team_prefs = team_preferences(
                measures.clone(),
                teams.clone(),
                params.hierarchy.team_min_users,
            );
            capture(
                org_preferences(team_prefs.clone(), params.hierarchy.org_min_teams),
                &cap,
                &mut probe,
                |(tenant, p)| ViewUpdate::OrgPreference(tenant, Box::new(p)),
            );
            capture(team_prefs, &cap, &mut probe, |(team, p)| {
                ViewUpdate::TeamPreference(team, Box::new(p))
            });
            capture(teams, &cap, &mut probe, |(user, team)| {
                ViewUpdate::UserTeam(user, team)
            });
            capture(
                preference_contradictions(present.clone(), measures.clone()),
                &cap,
                &mut probe,
                |(key, contradiction)| ViewUpdate::Contradiction(key, Box::new(contradiction)),
            );
            capture(measures, &cap, &mut probe, |(user, measure)| {
                ViewUpdate::ClusterMeasure(user, Box::new(measure))
            });
            let traces = preference_traces(present, clusters.clone(), patterns.clone());
            let traces_out = new_traces.clone();
            let cap_views = cap.clone();
            keep_updates(traces, &mut probe, move |updates| {
                let mut views = cap_views.lock().unwrap();
                let mut out = traces_out.borrow_mut();
                for ((key, trace), t, d) in updates.drain(..) {
                    out.push((key.clone(), trace, d));
                    views.push(ViewUpdate::PreferenceTrace(key, trace), t, d);
                }
            });
            capture(patterns, &cap, &mut probe, |(user, pattern)| {
                ViewUpdate::Pattern(user, pattern)
            });
            capture(clusters, &cap, &mut probe, |(user, membership)| {
                ViewUpdate::ClusterMember(user, membership)
            });
            capture(
                style_preferences_of(votes.clone()),
                &cap,
                &mut probe,
                |(user, style)| ViewUpdate::Style(user, Box::new(style)),
            );
            capture(
                skill_confidences_of(votes.clone()),
                &cap,
                &mut probe,
                |(key, confidence)| ViewUpdate::SkillConfidence(key, confidence),
            );
            if let Some(half_life) = params.skills.half_life_secs() {
                capture(
                    discounted_skill_feedback_of(votes.clone(), half_life),
                    &cap,
                    &mut probe,
                    |(key, tally)| ViewUpdate::DiscountedSkillTally(key, Box::new(tally)),
                );
            }
            let (skill_tallies, population_tallies) = skill_feedback_of(votes);
            capture(skill_tallies, &cap, &mut probe, |(key, tally)| {
                ViewUpdate::SkillTally(key, tally)
            });
            capture(population_tallies, &cap, &mut probe, |(key, tally)| {
                ViewUpdate::PopulationTally(key, tally)
            });
            capture(
                next_edges(
                    episodes
                        .clone()
                        .map(|(session, episode)| (session, episode.node())),
                ),
                &cap,
                &mut probe,
                |(key, edge)| ViewUpdate::NextEdge(key, edge),
            );
            keep_updates(facts.clone(), &mut probe, move |updates| {
                cap_facts.lock().unwrap().push_all(updates)
            });
            capture(
                facts_over_time(facts),
                &cap,
                &mut probe,
                |(key, version)| ViewUpdate::Fact(key, Box::new(version)),
            );
            // extracted once for both entity views
            let entities = episode_entities(episodes.clone());
            capture(
                entity_stats_of(entities.clone()),
                &cap,
                &mut probe,
                |(key, stats)| ViewUpdate::Entity(key, stats),
            );
            capture(
                co_mentions_of(entities),
                &cap,
                &mut probe,
                |(key, weight)| ViewUpdate::CoMention(key, weight),
            );
            keep_updates(episodes, &mut probe, move |updates| {
                cap_eps.lock().unwrap().push_all(updates)
            });
            Inputs {
                episodes: episodes_input,
                facts: facts_input,
                votes: votes_input,
                corrections: corrections_input,
                notes: notes_input,
                assignments: assignments_input,
                uses: uses_input,
                summaries: summaries_input,
            }
        });
        // worker 0 tells the publisher; the others' ends are None
        let frontiers_out = if index == 0 {
            frontiers_out.lock().unwrap().take()
        } else {
            None
        };
        let mut published = 0u64;
        let mut published_engine_time = 0u64;
        // the ends of the batches this worker has taken that the dataflow has not finished
        let mut in_flight: VecDeque<u64> = VecDeque::new();
        while !stop2.load(Ordering::Acquire) {
            while in_flight.front().is_some_and(|end| !probe.less_than(end)) {
                in_flight.pop_front();
            }
            // While a backlog lasts, up to INPUT_BATCH records share one timestamp: the
            // operators that reduce a key's whole history (facts, votes) replay it once per
            // distinct time of a batch, so fewer times cost less. With no backlog, each poll
            // is its own time. No more input is taken while MAX_IN_FLIGHT batches are still
            // on their way through: a backlog read all at once would sit in the operators'
            // queues, gigabytes of fresh memory for the kernel to zero, where a batch's memory
            // is freed and reused by the next.
            let (mut taken, mut polls, mut upto) = (0, 0, None);
            while in_flight.len() < MAX_IN_FLIGHT
                && taken < INPUT_BATCH
                && polls < MAX_POLLS_PER_STEP
            {
                let Some((records, to)) = source.poll() else {
                    break;
                };
                polls += 1;
                taken += records.len();
                for (_offset, record, diff) in records {
                    if diff > 0 {
                        engine_time.saw_event_at(record.event_time_micros());
                    }
                    inputs.update(record, diff);
                }
                upto = Some(to);
            }
            if let Some(upto) = upto {
                inputs.advance_to(upto);
                in_flight.push_back(upto);
            }
            // Traces enter the lifecycle dataflow at the engine time they are seen, and that
            // second is closed at once: with the event clock no later event may come to close
            // it. (A trace seen within a second already closed enters at the next one.)
            let mut final_before = engine_time.now_secs() + 1;
            let mut new = new_traces.borrow_mut();
            if !new.is_empty() {
                final_before = final_before.max(*traces_in.time() + 1);
                for (key, trace, diff) in new.drain(..) {
                    traces_in.update((key, trace), diff);
                }
            }
            drop(new);
            // every worker closes the same seconds, or the slowest would hold the others' back
            let final_before = engine_time.close_before(final_before);
            if final_before > *traces_in.time() {
                traces_in.advance_to(final_before);
            }
            traces_in.flush();
            worker.step_or_park(Some(Duration::from_millis(2)));
            if let Some(frontiers_out) = &frontiers_out {
                let frontier = probe
                    .with_frontier(|f| f.first().copied())
                    .unwrap_or(u64::MAX);
                let engine_frontier = lifecycle_probe
                    .with_frontier(|f| f.first().copied())
                    .unwrap_or(u64::MAX);
                if frontier > published || engine_frontier > published_engine_time {
                    // an error only means the publisher is gone, as it is once stopped
                    let _ = frontiers_out.send(Frontiers {
                        log: frontier,
                        engine_time: engine_frontier,
                    });
                    published = frontier;
                    published_engine_time = engine_frontier;
                }
            }
        }
    })?;
    Ok(DataflowHandle {
        stop,
        as_of,
        guards: Some(guards),
        publisher: Some(publisher),
    })
}

/// Input records a worker takes before it gives them one timestamp and runs the dataflow. Each
/// time costs per key it touches, not per record (a user's entities and pairs change once a
/// time, histories replay once a time): 131,072 took a fifth less CPU through a bulk load than
/// 65,536, for the same settled memory.
const INPUT_BATCH: usize = 131_072;
/// Updates' worth of merging an idle arrangement does per step.
const IDLE_MERGE_EFFORT: isize = 10_000;
/// Batches a worker has taken and the dataflow not finished, at most, before it takes another:
/// two, so that one can be read while the other is processed.
const MAX_IN_FLIGHT: usize = 2;
/// Polls of the source a worker makes at most before it runs the dataflow.
const MAX_POLLS_PER_STEP: usize = 64;

/// The parameters of the memory dataflow's views.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DataflowParams {
    pub hierarchy: HierarchyParams,
    pub skills: SkillParams,
    pub corrections: CorrectionParams,
}

/// How corrections are clustered (SPEC §4.2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CorrectionParams {
    /// Corrections that ask for nothing recognised link at this cosine of their embeddings:
    /// the embedding model's calibrated threshold (its configuration's `correction_link_cosine`).
    pub link_cosine: f64,
}

impl Default for CorrectionParams {
    fn default() -> Self {
        CorrectionParams {
            link_cosine: engram_operators::correction_clusters::LINK_COSINE_THRESHOLD,
        }
    }
}

/// How skill feedback is weighed (SPEC §6).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillParams {
    /// When set, a vote this many days older than a user's latest one (in the same bucket and
    /// skill) weighs half in that user's Thompson posterior: for preferences that drift. Unset
    /// (the default), every vote weighs the same.
    pub feedback_half_life_days: Option<f64>,
}

impl SkillParams {
    /// The half-life in whole seconds (at least one), when discounting is on.
    pub fn half_life_secs(&self) -> Option<u64> {
        self.feedback_half_life_days
            .filter(|d| d.is_finite() && *d > 0.0)
            .map(|d| ((d * 86_400.0).round() as u64).max(1))
    }
}

/// How many members share a preference before their group holds it (SPEC §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HierarchyParams {
    /// Users of a team (k, default 3).
    pub team_min_users: usize,
    /// Teams of a tenant (default 3).
    pub org_min_teams: usize,
}

impl Default for HierarchyParams {
    fn default() -> Self {
        HierarchyParams {
            team_min_users: engram_operators::team_preferences::DEFAULT_TEAM_MIN_USERS,
            org_min_teams: engram_operators::team_preferences::DEFAULT_ORG_MIN_TEAMS,
        }
    }
}

/// The dataflow's input sessions, one per kind of record.
struct Inputs {
    episodes: InputSession<u64, (SessionKey, Episode), isize>,
    facts: InputSession<u64, (FactKey, FactAssertion), isize>,
    votes: InputSession<u64, (MessageKey, FeedbackVote), isize>,
    corrections: InputSession<u64, (UserKey, CorrectionPoint), isize>,
    notes: InputSession<u64, (UserKey, CorrectionNote), isize>,
    assignments: InputSession<u64, (UserKey, TeamAssignment), isize>,
    uses: InputSession<u64, (MessageKey, MemoryUse), isize>,
    summaries: InputSession<u64, (UserKey, SummaryNode), isize>,
}

impl Inputs {
    fn update(&mut self, record: InputRecord, diff: isize) {
        match record {
            InputRecord::Episode(key, episode) => self.episodes.update((key, episode), diff),
            InputRecord::Fact(key, assertion) => self.facts.update((key, assertion), diff),
            InputRecord::Feedback(key, vote) => self.votes.update((key, vote), diff),
            InputRecord::Correction(user, point) => self.corrections.update((user, point), diff),
            InputRecord::CorrectionNote(user, note) => self.notes.update((user, note), diff),
            InputRecord::TeamAssignment(user, a) => self.assignments.update((user, a), diff),
            InputRecord::MemoryUse(message, used) => self.uses.update((message, used), diff),
            InputRecord::Summary(user, summary) => self.summaries.update((user, summary), diff),
        }
    }

    /// Moves every input to `time` (if later than now) and sends what was inserted.
    fn advance_to(&mut self, time: u64) {
        if time > *self.episodes.time() {
            self.episodes.advance_to(time);
            self.facts.advance_to(time);
            self.votes.advance_to(time);
            self.corrections.advance_to(time);
            self.notes.advance_to(time);
            self.assignments.advance_to(time);
            self.uses.advance_to(time);
            self.summaries.advance_to(time);
        }
        self.episodes.flush();
        self.facts.flush();
        self.votes.flush();
        self.corrections.flush();
        self.notes.flush();
        self.assignments.flush();
        self.uses.flush();
        self.summaries.flush();
    }
}

/// Records every update of `collection` as a view update (at its time, with its diff) for
/// [`publish`], and makes the probe wait for it.
fn capture<'scope, D>(
    collection: VecCollection<'scope, u64, D>,
    captured: &Captured,
    probe: &mut Handle<u64>,
    to_update: impl Fn(D) -> ViewUpdate + 'static,
) where
    D: Clone + 'static,
{
    let captured = captured.clone();
    keep_updates(collection, probe, move |updates| {
        let mut captured = captured.lock().unwrap();
        for (d, t, r) in updates.drain(..) {
            captured.push(to_update(d), t, r);
        }
    });
}

/// Hands every batch of `collection`'s updates `(data, time, diff)` to `keep`, which takes them
/// out (nothing is copied, and a lock is taken once a batch, not once an update), and makes
/// the probe wait for it: once the probe has passed a time, every update at an earlier time
/// has been kept.
fn keep_updates<'scope, D>(
    collection: VecCollection<'scope, u64, D>,
    probe: &mut Handle<u64>,
    mut keep: impl FnMut(&mut Vec<(D, u64, isize)>) + 'static,
) where
    D: Clone + 'static,
{
    // The operator holds no capability, so its (empty) output's frontier passes a time only
    // after it has consumed every update at that time.
    collection
        .inner
        .unary::<CapacityContainerBuilder<Vec<()>>, _, _, _>(Pipeline, "KeepUpdates", |_, _| {
            move |input, _output| {
                input.for_each(|_, updates| keep(updates));
            }
        })
        .probe_with(probe);
}

/// How far the two dataflows have got: everything before these times is final.
#[derive(Debug, Clone, Copy)]
struct Frontiers {
    /// Input-log offset: the memory dataflow.
    log: u64,
    /// Engine time, seconds: the lifecycle dataflow.
    engine_time: u64,
}

/// Everything the dataflows' outputs capture for publication.
struct CapturedOutputs {
    views: Captured,
    episodes: CapturedEpisodes,
    facts: CapturedFacts,
    summaries: CapturedSummaries,
    states: CapturedStates,
}

/// The publisher thread: publishes up to each frontiers it is sent (up to the latest of those
/// waiting, when several are) and then sets `as_of`, until the sender is dropped.
fn publish_until_closed(
    frontiers_in: std::sync::mpsc::Receiver<Frontiers>,
    captured: &CapturedOutputs,
    views: &SharedViews,
    out: &Sender<EpisodeBatch>,
    as_of: &AtomicU64,
) {
    while let Ok(mut frontiers) = frontiers_in.recv() {
        // frontiers only advance: the last one sent covers those before it
        while let Ok(later) = frontiers_in.try_recv() {
            frontiers = later;
        }
        publish(frontiers, captured, views, out);
        as_of.store(frontiers.log, Ordering::Release);
    }
}

/// Applies the captured updates at times before the frontiers, in time order, under one lock.
fn publish(
    frontiers: Frontiers,
    captured: &CapturedOutputs,
    views: &SharedViews,
    out: &Sender<EpisodeBatch>,
) {
    let frontier = frontiers.log;
    let ready = captured.views.lock().unwrap().take_before(frontier);
    let episodes = captured.episodes.lock().unwrap().take_before(frontier);
    let facts = captured.facts.lock().unwrap().take_before(frontier);
    let summaries = captured.summaries.lock().unwrap().take_before(frontier);
    let states = captured
        .states
        .lock()
        .unwrap()
        .take_before(frontiers.engine_time);
    let episodes: Vec<_> = in_time_order(episodes).collect();
    // Session sizes are counts: one update per session with its net change, not one (and a
    // copy of the session's key) per episode.
    let mut per_session: HashMap<&SessionKey, isize, foldhash::fast::RandomState> =
        HashMap::default();
    for ((key, _), diff) in &episodes {
        *per_session.entry(key).or_default() += diff;
    }
    let session_episodes = per_session
        .into_iter()
        .filter(|(_, diff)| *diff != 0)
        .map(|(key, diff)| (ViewUpdate::SessionEpisode(key.clone()), diff));
    // Scheduled transitions of a trace and the retraction of the rest of its schedule (when
    // it is reinforced) arrive as separate updates at one time: apply their sum, removals
    // first, so the order they came in does not matter.
    let mut net: BTreeMap<(PreferenceKey, LifecycleState), isize> = BTreeMap::new();
    for (record, diff) in in_time_order(states) {
        *net.entry(record).or_insert(0) += diff;
    }
    let (removed, added): (Vec<_>, Vec<_>) = net
        .into_iter()
        .filter(|(_, d)| *d != 0)
        .partition(|(_, d)| *d < 0);
    let states = removed
        .into_iter()
        .chain(added)
        .map(|((key, state), diff)| (ViewUpdate::PreferenceState(key, state), diff));
    // the lifecycle views hold the states as of the last second before the frontier
    let engine_time = (frontiers.engine_time > 0 && frontiers.engine_time < u64::MAX)
        .then(|| frontiers.engine_time - 1);
    views.apply_batch(
        in_time_order(ready).chain(session_episodes).chain(states),
        frontier,
        engine_time,
    );
    let mut episodes = episodes;
    episodes.retain(|(_, d)| *d > 0);
    episodes.sort_by_key(|((_, e), _)| e.log_offset);
    let mut facts: Vec<_> = in_time_order(facts).filter(|(_, d)| *d > 0).collect();
    facts.sort_by(|((ka, a), _), ((kb, b), _)| (a.log_offset, ka, a).cmp(&(b.log_offset, kb, b)));
    let mut summaries: Vec<_> = in_time_order(summaries).filter(|(_, d)| *d > 0).collect();
    summaries
        .sort_by(|((ka, a), _), ((kb, b), _)| (a.log_offset, ka, a).cmp(&(b.log_offset, kb, b)));
    if !episodes.is_empty() || !facts.is_empty() || !summaries.is_empty() {
        let _ = out.send(EpisodeBatch {
            as_of: frontier,
            episodes: episodes.into_iter().map(|(rec, _)| rec).collect(),
            facts: facts.into_iter().map(|(rec, _)| rec).collect(),
            summaries: summaries.into_iter().map(|(rec, _)| rec).collect(),
        });
    }
}
