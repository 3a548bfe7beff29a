//! Capture: every view of the [`MemoryModel`] recorded, at its time and with its diff, for the
//! publisher thread, behind one probe that tells when a time is complete.

use crate::captured::{Captured, CapturedOutputs};
use crate::model::MemoryModel;
use crate::views::ViewUpdate;
use differential_dataflow::VecCollection;
use engram_operators::lifecycle::{PreferenceKey, PreferenceTrace};
use engram_operators::memories::MemoryId;
use engram_operators::memory_retention::MemoryTrace;
use std::cell::RefCell;
use std::rc::Rc;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::probe::Handle;
use timely::dataflow::operators::Probe;

/// Preference and memory traces as the memory dataflow emits them, for the worker to feed the
/// lifecycle dataflow: `(key, trace, diff)`.
#[derive(Clone, Default)]
pub(crate) struct NewTraces {
    pub(crate) preferences: Rc<RefCell<Vec<(PreferenceKey, PreferenceTrace, isize)>>>,
    pub(crate) memories: Rc<RefCell<Vec<(MemoryId, MemoryTrace, isize)>>>,
}

/// Captures every view of `model` into `out` as [`ViewUpdate`]s, the episodes, fact
/// assertions and summaries also as they are (for the caller to store), and the preference
/// and memory traces also into `new_traces`; `probe` passes a time once all of them are captured.
pub(crate) fn capture_model(
    model: MemoryModel<'_>,
    out: &CapturedOutputs,
    probe: &mut Handle<u64>,
    new_traces: NewTraces,
) {
    let cap = &out.views;
    let (cap_views, cap_summaries) = (cap.clone(), out.summaries.clone());
    keep_updates(model.summaries, probe, move |updates| {
        let (mut views, mut kept) = (cap_views.lock().unwrap(), cap_summaries.lock().unwrap());
        for ((user, summary), t, d) in updates.drain(..) {
            kept.push((user.clone(), summary.clone()), t, d);
            views.push(ViewUpdate::Summary(user, Box::new(summary)), t, d);
        }
    });
    capture(model.relations, cap, probe, |(user, relation)| {
        ViewUpdate::Relation(user, Box::new(relation))
    });
    capture(model.memory_marks, cap, probe, |(key, mark)| {
        ViewUpdate::MemoryMark(key, Box::new(mark))
    });
    capture(model.retrieval_preferences, cap, probe, |(key, tally)| {
        ViewUpdate::RetrievalPreference(key, tally)
    });
    capture(model.correction_notes, cap, probe, |(user, note)| {
        ViewUpdate::CorrectionNote(user, Box::new(note))
    });
    capture(model.org_preferences, cap, probe, |(tenant, p)| {
        ViewUpdate::OrgPreference(tenant, Box::new(p))
    });
    capture(model.team_preferences, cap, probe, |(team, p)| {
        ViewUpdate::TeamPreference(team, Box::new(p))
    });
    capture(model.user_teams, cap, probe, |(user, team)| {
        ViewUpdate::UserTeam(user, team)
    });
    capture(model.contradictions, cap, probe, |(key, contradiction)| {
        ViewUpdate::Contradiction(key, Box::new(contradiction))
    });
    capture(model.cluster_measures, cap, probe, |(user, measure)| {
        ViewUpdate::ClusterMeasure(user, Box::new(measure))
    });
    let (cap_views, new_memories) = (cap.clone(), new_traces.memories);
    keep_updates(model.memory_traces, probe, move |updates| {
        let mut views = cap_views.lock().unwrap();
        let mut out = new_memories.borrow_mut();
        for ((id, trace), t, d) in updates.drain(..) {
            out.push((id, trace, d));
            views.push(ViewUpdate::MemoryTrace(id, trace), t, d);
        }
    });
    let (cap_views, new_preferences) = (cap.clone(), new_traces.preferences);
    keep_updates(model.preference_traces, probe, move |updates| {
        let mut views = cap_views.lock().unwrap();
        let mut out = new_preferences.borrow_mut();
        for ((key, trace), t, d) in updates.drain(..) {
            out.push((key.clone(), trace, d));
            views.push(ViewUpdate::PreferenceTrace(key, trace), t, d);
        }
    });
    capture(model.patterns, cap, probe, |(user, pattern)| {
        ViewUpdate::Pattern(user, pattern)
    });
    capture(model.cluster_members, cap, probe, |(user, membership)| {
        ViewUpdate::ClusterMember(user, membership)
    });
    capture(model.styles, cap, probe, |(user, style)| {
        ViewUpdate::Style(user, Box::new(style))
    });
    capture(model.skill_confidences, cap, probe, |(key, confidence)| {
        ViewUpdate::SkillConfidence(key, confidence)
    });
    if let Some(discounted) = model.discounted_skill_tallies {
        capture(discounted, cap, probe, |(key, tally)| {
            ViewUpdate::DiscountedSkillTally(key, Box::new(tally))
        });
    }
    capture(model.skill_tallies, cap, probe, |(key, tally)| {
        ViewUpdate::SkillTally(key, tally)
    });
    capture(model.population_tallies, cap, probe, |(key, tally)| {
        ViewUpdate::PopulationTally(key, tally)
    });
    capture(model.next_edges, cap, probe, |(key, edge)| {
        ViewUpdate::NextEdge(key, edge)
    });
    let cap_facts = out.facts.clone();
    keep_updates(model.facts, probe, move |updates| {
        cap_facts.lock().unwrap().push_all(updates)
    });
    capture(model.fact_versions, cap, probe, |(key, version)| {
        ViewUpdate::Fact(key, Box::new(version))
    });
    capture(model.entity_stats, cap, probe, |(key, stats)| {
        ViewUpdate::Entity(key, stats)
    });
    capture(model.co_mentions, cap, probe, |(key, weight)| {
        ViewUpdate::CoMention(key, weight)
    });
    capture(model.mentions, cap, probe, |(key, episode)| {
        ViewUpdate::Mention(key, episode)
    });
    let cap_eps = out.episodes.clone();
    keep_updates(model.episodes, probe, move |updates| {
        cap_eps.lock().unwrap().push_all(updates)
    });
}

/// Records every update of `collection` as a view update (at its time, with its diff) for
/// the publisher, and makes the probe wait for it.
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
pub(crate) fn keep_updates<'scope, D>(
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
