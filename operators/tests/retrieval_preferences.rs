//! `retrieval_preferences` over `used_memories` in hand-computed cases: an answer using two list
//! memories counts once for the list trait; a retracted use and a memory replaced by another
//! version of it change the tallies as they should; a tenant's domain memory counts for any of
//! its users, and nobody else's memory counts for anyone. (The random-stream check against the
//! definition is in `memory_uses.rs`.)

mod common;

use common::{collect_into, difference, execute, settle, Sink, TEXTS};
use differential_dataflow::input::{Input, InputSession};
use engram_operators::correction_clusters::UserKey;
use engram_operators::memories::{
    owner_key, used_memories, ContentType, JudgedUse, Memory, MemoryId, RetrievalTrait,
};
use engram_operators::retrieval_preferences::{retrieval_preferences, TraitKey, TraitTally};
use timely::dataflow::operators::probe::Handle;

type MemoryRecord = (MemoryId, Memory);
type Output = (TraitKey, TraitTally);

/// When every memory here was made.
const MADE: i64 = 1_700_000_000;

/// An episode of `(tenant, user)` with the traits of `role` saying `text`.
fn episode(owner: (&str, &str), role: &str, text: &str) -> Memory {
    Memory {
        owner: owner_key(owner.0, owner.1),
        created_secs: MADE,
        importance_milli: 500,
        traits: Some(RetrievalTrait::of(role, text, owner.1 == "_domain")),
    }
}

/// A use `(memory, (tenant, user), message, reward, days)`: the answer given `days` after the
/// memories were made.
type Use = (
    MemoryId,
    (&'static str, &'static str),
    &'static str,
    i8,
    i64,
);

/// Updates of memories, updates of uses, and then the tallies `(tenant, user, trait, up,
/// down)` of every user.
type Step = (
    Vec<(MemoryRecord, isize)>,
    Vec<(Use, isize)>,
    Vec<((&'static str, &'static str), RetrievalTrait, u64, u64)>,
);

/// Feeds each step's updates at its own time on one worker, and checks the output after it.
fn replay(steps: Vec<Step>) {
    let sink: Sink<Output> = Default::default();
    execute(1, move |worker, mismatches| {
        let probe = Handle::new();
        let (mut memories_in, mut uses_in): (InputSession<u64, MemoryRecord, isize>, _) = worker
            .dataflow::<u64, _, _>(|scope| {
                let (memories_in, memories) = scope.new_collection();
                let (uses_in, uses) = scope.new_collection();
                retrieval_preferences(used_memories(memories, uses))
                    .inspect(collect_into(&sink))
                    .probe_with(&probe);
                (memories_in, uses_in)
            });
        for (round, (memories, uses, tallies)) in (1..).zip(&steps) {
            for (record, diff) in memories {
                memories_in.update(*record, *diff);
            }
            for ((memory, (tenant, user), message, reward, days), diff) in uses {
                let used = JudgedUse {
                    user: (tenant.to_string(), user.to_string()),
                    message: message.to_string(),
                    at_secs: MADE + days * 86_400,
                    reward: *reward,
                };
                uses_in.update((*memory, used), *diff);
            }
            memories_in.advance_to(round);
            memories_in.flush();
            settle(worker, &probe, &mut uses_in, round);
            let want = (tallies.iter())
                .map(|&((tenant, user), kind, up, down)| {
                    let user: UserKey = (tenant.into(), user.into());
                    ((user, kind), TraitTally { up, down })
                })
                .collect();
            if let Some(d) = difference("preferences", &sink, &want) {
                mismatches.push(format!("step {round}: {d}"));
            }
        }
    });
}

const ANN: (&str, &str) = ("t1", "ann");

/// Two answers to ann, one voted up using two list memories and a prose one, the other voted
/// down using the two list memories; then the down-voted answer's use of one list memory is
/// retracted, and the other list memory is replaced by a version that is prose.
#[test]
fn an_answer_counts_once_for_a_trait_of_several_of_its_memories() {
    use ContentType::{List, Prose};
    use RetrievalTrait::{Assistant, Content, Domain, Recent};
    let (list1, list2, prose1) = (1u128, u128::MAX / 2, u128::MAX);
    let domain = ("t1", "_domain");
    let list2_was = (list2, episode(domain, "assistant", TEXTS[3]));
    let memories = vec![
        ((list1, episode(ANN, "assistant", TEXTS[2])), 1),
        (list2_was, 1),
        ((prose1, episode(ANN, "user", TEXTS[0])), 1),
    ];
    let uses = vec![
        ((list1, ANN, "m1", 1, 0), 1),
        ((list2, ANN, "m1", 1, 0), 1),
        ((prose1, ANN, "m1", 1, 0), 1),
        ((list1, ANN, "m2", -1, 0), 1),
        ((list2, ANN, "m2", -1, 0), 1),
        // neutral: counts for nothing
        ((prose1, ANN, "m3", 0, 0), 1),
    ];
    let list2_now = (list2, episode(domain, "assistant", TEXTS[0]));
    // both answers used assistant memories and a domain one, only m1 a user's one
    let tallies = |list: (u64, u64), prose: (u64, u64), own: (u64, u64)| {
        vec![
            (ANN, Assistant(true), 1, 1),
            (ANN, Assistant(false), 1, 0),
            (ANN, Content(List), list.0, list.1),
            (ANN, Content(Prose), prose.0, prose.1),
            (ANN, Domain(false), own.0, own.1),
            (ANN, Domain(true), 1, 1),
            // both answers came the day the memories were made
            (ANN, Recent(true), 1, 1),
        ]
    };
    let unused = ((list1, ANN, "m2", -1, 0), -1);
    let changed = [(list2_was, -1), (list2_now, 1)];
    replay(vec![
        (memories, uses, tallies((1, 1), (1, 0), (1, 1))),
        // m2 still used list2, but no memory of ann's own any more
        (vec![], vec![unused], tallies((1, 1), (1, 0), (1, 0))),
        // m2 used no list any more, but prose now
        (changed.to_vec(), vec![], tallies((1, 0), (1, 1), (1, 0))),
    ]);
}

/// Ann's memory used in answers to bob (same tenant) and to ann of another tenant counts for
/// neither; the tenant's domain memory counts for bob, not for the other tenant's ann; a use
/// whose multiplicity is negative counts for nothing.
#[test]
fn only_the_owner_and_the_tenant_count_a_memory() {
    use RetrievalTrait::{Assistant, Content, Domain, Recent};
    let (own, shared, list) = (1u128, 2u128, 3u128);
    let (bob, other_ann) = (("t1", "bob"), ("t2", "ann"));
    let memories = vec![
        ((own, episode(ANN, "user", TEXTS[1])), 1),
        (
            (shared, episode(("t1", "_domain"), "assistant", TEXTS[5])),
            1,
        ),
        ((list, episode(ANN, "assistant", TEXTS[2])), 1),
    ];
    let uses = vec![
        ((own, bob, "m1", 1, 0), 1),
        ((own, other_ann, "m2", 1, 0), 1),
        ((shared, bob, "m3", -1, 0), 1),
        ((shared, other_ann, "m4", 1, 0), 1),
        ((list, ANN, "m5", 1, 0), -1),
    ];
    let tallies = vec![
        (bob, Assistant(true), 0, 1),
        (bob, Content(ContentType::Link), 0, 1),
        (bob, Domain(true), 0, 1),
        (bob, Recent(true), 0, 1),
    ];
    replay(vec![(memories, uses, tallies)]);
}

/// A memory counts for the age it had when each answer used it: recent for an answer 3 days
/// after it was made, older for answers 7 and 30 days after; a later vote moves the tally.
#[test]
fn an_answer_counts_for_the_age_its_memories_had() {
    use RetrievalTrait::{Assistant, Content, Domain, Recent};
    let note = 1u128;
    let memories = vec![((note, episode(ANN, "user", TEXTS[0])), 1)];
    let uses = vec![
        ((note, ANN, "m1", 1, 3), 1),
        ((note, ANN, "m2", -1, 7), 1),
        ((note, ANN, "m3", 1, 30), 1),
    ];
    let tallies = |older: (u64, u64)| {
        vec![
            (ANN, Assistant(false), 1 + older.0, older.1),
            (ANN, Content(ContentType::Prose), 1 + older.0, older.1),
            (ANN, Domain(false), 1 + older.0, older.1),
            (ANN, Recent(true), 1, 0),
            (ANN, Recent(false), older.0, older.1),
        ]
    };
    // m2's vote turns from down to up
    let revote = vec![((note, ANN, "m2", -1, 7), -1), ((note, ANN, "m2", 1, 7), 1)];
    replay(vec![
        (memories, uses, tallies((1, 1))),
        (vec![], revote, tallies((2, 0))),
    ]);
}
