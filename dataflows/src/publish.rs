//! Publication: the captured updates before the dataflows' frontiers applied to the shared
//! views under one lock, and the new episodes, facts and summaries sent to the caller.

use crate::captured::in_time_order;
use crate::captured::CapturedOutputs;
use crate::views::{SharedViews, ViewUpdate};
use engram_operators::correction_clusters::UserKey;
use engram_operators::facts::{FactAssertion, FactKey};
use engram_operators::lifecycle::PreferenceKey;
use engram_operators::math::decay::LifecycleState;
use engram_operators::summaries::SummaryNode;
use engram_operators::{Episode, SessionKey};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;

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

/// How far the two dataflows have got: everything before these times is final.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frontiers {
    /// Input-log offset: the memory dataflow.
    pub(crate) log: u64,
    /// Engine time, seconds: the lifecycle dataflow.
    pub(crate) engine_time: u64,
}

/// The publisher thread: publishes up to each frontiers it is sent (up to the latest of those
/// waiting, when several are) and then sets `as_of`, until the sender is dropped.
pub(crate) fn publish_until_closed(
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
    let archived = captured
        .archived
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
    // an archiving and its cancellation (the memory reinforced or removed) may meet at one time
    let mut archived_net: HashMap<_, isize, foldhash::fast::RandomState> = HashMap::default();
    for (id, diff) in in_time_order(archived) {
        *archived_net.entry(id).or_insert(0) += diff;
    }
    let archived = archived_net
        .into_iter()
        .filter(|(_, d)| *d != 0)
        .map(|(id, diff)| (ViewUpdate::MemoryArchived(id), diff));
    // the lifecycle views hold the states as of the last second before the frontier
    let engine_time = (frontiers.engine_time > 0 && frontiers.engine_time < u64::MAX)
        .then(|| frontiers.engine_time - 1);
    views.apply_batch(
        in_time_order(ready)
            .chain(session_episodes)
            .chain(states)
            .chain(archived),
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
    // sent even when empty: the receiver learns how far the views have got (the engine's
    // writer reports events recallable up to there once it has stored what came before)
    let _ = out.send(EpisodeBatch {
        as_of: frontier,
        episodes: episodes.into_iter().map(|(rec, _)| rec).collect(),
        facts: facts.into_iter().map(|(rec, _)| rec).collect(),
        summaries: summaries.into_iter().map(|(rec, _)| rec).collect(),
    });
}
