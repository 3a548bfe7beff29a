//! A timely worker: builds the memory dataflow (input sessions → [`memory_model`] → capture)
//! and the lifecycle dataflow (preference traces → states, in engine time), then feeds them its
//! share of the input until stopped, and tells the publisher how far they have got.

use crate::capture::{capture_model, keep_updates, NewTraces};
use crate::captured::CapturedOutputs;
use crate::clock::EngineTime;
use crate::input::{InputRecord, InputSource};
use crate::model::{memory_model, MemoryInputs};
use crate::params::DataflowParams;
use crate::publish::Frontiers;
use differential_dataflow::input::{Input, InputSession};
use engram_operators::correction_clusters::{CorrectionPoint, UserKey};
use engram_operators::correction_notes::CorrectionNote;
use engram_operators::facts::{FactAssertion, FactKey};
use engram_operators::lifecycle::{lifecycle_states, PreferenceKey, PreferenceTrace};
use engram_operators::math::decay::LifecycleThresholds;
use engram_operators::memories::MemoryId;
use engram_operators::memory_marks::MemoryUse;
use engram_operators::memory_retention::{archived_memories, MemoryTrace};
use engram_operators::relations::RelationNode;
use engram_operators::skill_feedback::{FeedbackVote, MessageKey};
use engram_operators::summaries::SummaryNode;
use engram_operators::team_preferences::TeamAssignment;
use engram_operators::{Episode, SessionKey};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::Duration;
use timely::dataflow::operators::probe::Handle;

/// Input records a worker takes before it gives them one timestamp and runs the dataflow. Each
/// time costs per key it touches, not per record (a user's entities and pairs change once a
/// time, histories replay once a time): 131,072 took a fifth less CPU through a bulk load than
/// 65,536, for the same settled memory.
const INPUT_BATCH: usize = 131_072;
/// Batches a worker has taken and the dataflow not finished, at most, before it takes another:
/// two, so that one can be read while the other is processed.
const MAX_IN_FLIGHT: usize = 2;
/// Polls of the source a worker makes at most before it runs the dataflow.
const MAX_POLLS_PER_STEP: usize = 64;

/// One worker's whole life: builds both dataflows, then runs the loop below until `stop`.
/// Only worker 0 has `frontiers_out`.
pub(crate) fn run_worker(
    worker: &mut timely::worker::Worker,
    mut source: Box<dyn InputSource>,
    captured: &CapturedOutputs,
    engine_time: &EngineTime,
    params: DataflowParams,
    frontiers_out: Option<Sender<Frontiers>>,
    stop: &AtomicBool,
) {
    let mut probe = Handle::new();
    let mut lifecycle_probe = Handle::new();
    // preference traces as the memory dataflow emits them, for the lifecycle dataflow
    let new_traces: NewTraces = Default::default();
    let (cap_states, cap_archived) = (captured.states.clone(), captured.archived.clone());
    let (mut traces_in, mut memory_traces_in) = worker.dataflow::<u64, _, _>(|scope| {
        let (input, traces) = scope.new_collection::<(PreferenceKey, PreferenceTrace), isize>();
        keep_updates(
            lifecycle_states(traces, LifecycleThresholds::default()),
            &mut lifecycle_probe,
            move |updates| cap_states.lock().unwrap().push_all(updates),
        );
        let (memory_input, memories) = scope.new_collection::<(MemoryId, MemoryTrace), isize>();
        keep_updates(
            archived_memories(memories, LifecycleThresholds::default()),
            &mut lifecycle_probe,
            move |updates| cap_archived.lock().unwrap().push_all(updates),
        );
        (input, memory_input)
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
        let (summaries_input, summaries) = scope.new_collection::<(UserKey, SummaryNode), isize>();
        let (relations_input, relations) = scope.new_collection::<(UserKey, RelationNode), isize>();
        let model = memory_model(
            MemoryInputs {
                episodes,
                facts,
                votes,
                corrections,
                notes,
                assignments,
                uses,
                summaries,
                relations,
            },
            params,
        );
        capture_model(model, captured, &mut probe, new_traces.clone());
        Inputs {
            episodes: episodes_input,
            facts: facts_input,
            votes: votes_input,
            corrections: corrections_input,
            notes: notes_input,
            assignments: assignments_input,
            uses: uses_input,
            summaries: summaries_input,
            relations: relations_input,
        }
    });
    let mut published = 0u64;
    let mut published_engine_time = 0u64;
    // the ends of the batches this worker has taken that the dataflow has not finished
    let mut in_flight: VecDeque<u64> = VecDeque::new();
    while !stop.load(Ordering::Acquire) {
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
        while in_flight.len() < MAX_IN_FLIGHT && taken < INPUT_BATCH && polls < MAX_POLLS_PER_STEP {
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
        let (mut new, mut new_memories) = (
            new_traces.preferences.borrow_mut(),
            new_traces.memories.borrow_mut(),
        );
        if !new.is_empty() || !new_memories.is_empty() {
            final_before = final_before.max(*traces_in.time() + 1);
            for (key, trace, diff) in new.drain(..) {
                traces_in.update((key, trace), diff);
            }
            for (id, trace, diff) in new_memories.drain(..) {
                memory_traces_in.update((id, trace), diff);
            }
        }
        drop((new, new_memories));
        // every worker closes the same seconds, or the slowest would hold the others' back
        let final_before = engine_time.close_before(final_before);
        if final_before > *traces_in.time() {
            traces_in.advance_to(final_before);
            memory_traces_in.advance_to(final_before);
        }
        traces_in.flush();
        memory_traces_in.flush();
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
    relations: InputSession<u64, (UserKey, RelationNode), isize>,
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
            InputRecord::Relation(user, relation) => self.relations.update((user, relation), diff),
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
            self.relations.advance_to(time);
        }
        self.episodes.flush();
        self.facts.flush();
        self.votes.flush();
        self.corrections.flush();
        self.notes.flush();
        self.assignments.flush();
        self.uses.flush();
        self.summaries.flush();
        self.relations.flush();
    }
}
