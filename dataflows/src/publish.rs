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

/// Episodes that entered the views, for the caller to store (Lance), in log order within the
/// batch and across batches: a record is sent once every lower offset is complete.
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
    let mut held = HeldBack::default();
    while let Ok(mut frontiers) = frontiers_in.recv() {
        // frontiers only advance: the last one sent covers those before it
        while let Ok(later) = frontiers_in.try_recv() {
            frontiers = later;
        }
        publish(frontiers, captured, views, out, &mut held);
        as_of.store(frontiers.log, Ordering::Release);
    }
}

/// Episodes, fact assertions and summaries complete before the frontier whose log offsets are
/// not. A worker stamps the records it reads with the time it read from, which is at most
/// their offsets; with several workers reading at their own pace, records at later times can
/// be complete while one at a lower offset, stamped later by another worker, is not yet. The
/// caller stores what it receives in log order and skips offsets it already holds (its
/// watermark), so each is sent once the frontier passes its offset: every record below that
/// offset has been sent by then.
#[derive(Default)]
struct HeldBack {
    episodes: Vec<(SessionKey, Episode)>,
    facts: Vec<(FactKey, FactAssertion)>,
    summaries: Vec<(UserKey, SummaryNode)>,
}

/// The inserted records of `taken` and those `held` from before, split at `frontier`: those
/// below it are returned, sorted by `order`; those at or past it are held for a later frontier.
fn release_in_log_order<R>(
    taken: impl Iterator<Item = (R, isize)>,
    held: &mut Vec<R>,
    frontier: u64,
    offset: impl Fn(&R) -> u64,
    order: impl Fn(&R, &R) -> std::cmp::Ordering,
) -> Vec<R> {
    let inserted = taken.filter(|(_, d)| *d > 0).map(|(rec, _)| rec);
    let (mut now, later): (Vec<R>, Vec<R>) = held
        .drain(..)
        .chain(inserted)
        .partition(|r| offset(r) < frontier);
    *held = later;
    now.sort_by(order);
    now
}

/// Applies the captured updates at times before the frontiers, in time order, under one lock.
fn publish(
    frontiers: Frontiers,
    captured: &CapturedOutputs,
    views: &SharedViews,
    out: &Sender<EpisodeBatch>,
    held: &mut HeldBack,
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
    let episodes = release_in_log_order(
        episodes.into_iter(),
        &mut held.episodes,
        frontier,
        |(_, e)| e.log_offset,
        |(_, a), (_, b)| a.log_offset.cmp(&b.log_offset),
    );
    let facts = release_in_log_order(
        in_time_order(facts),
        &mut held.facts,
        frontier,
        |(_, a)| a.log_offset,
        |(ka, a), (kb, b)| (a.log_offset, ka, a).cmp(&(b.log_offset, kb, b)),
    );
    let summaries = release_in_log_order(
        in_time_order(summaries),
        &mut held.summaries,
        frontier,
        |(_, s)| s.log_offset,
        |(ka, a), (kb, b)| (a.log_offset, ka, a).cmp(&(b.log_offset, kb, b)),
    );
    // sent even when empty: the receiver learns how far the views have got (the engine's
    // writer reports events recallable up to there once it has stored what came before)
    let _ = out.send(EpisodeBatch {
        as_of: frontier,
        episodes,
        facts,
        summaries,
    });
}
