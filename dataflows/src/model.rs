//! The memory model: the views engram maintains, as one function from the input collections
//! to named view collections. Everything else in this crate (the timely workers, the engine
//! clock, capture and publication) only wires this function to the log and to the readers.

use crate::params::DataflowParams;
use differential_dataflow::VecCollection;
use engram_operators::correction_clusters::{
    cluster_measures, correction_clusters, present_corrections, promoted_patterns,
    similarity_links, ClusterMeasure, CorrectionPoint, PatternRecord, UserKey,
};
use engram_operators::correction_notes::{correction_notes, CorrectionNote};
use engram_operators::entities::{
    co_mentions_of, entity_stats_of, episode_entities, mention_edges_of, CoMentionKey, EntityKey,
    EntityStats,
};
use engram_operators::facts::{facts_over_time, FactAssertion, FactKey, FactVersion};
use engram_operators::lifecycle::{preference_traces, PreferenceKey, PreferenceTrace};
use engram_operators::math::decay::LifecycleThresholds;
use engram_operators::memories::{
    owner_key, used_memories, JudgedUse, Memory, MemoryId, RetrievalTrait,
    UNSTATED_IMPORTANCE_MILLI,
};
use engram_operators::memory_marks::{
    judged_uses, marks_of_judged, MemoryKey, MemoryMark, MemoryUse,
};
use engram_operators::memory_retention::{memory_traces, MemoryTrace};
use engram_operators::preference_contradictions::{preference_contradictions, Contradiction};
use engram_operators::relations::{user_relations, RelationNode};
use engram_operators::retrieval_preferences::{retrieval_preferences, TraitKey, TraitTally};
use engram_operators::skill_confidence::{
    discounted_skill_feedback_of, skill_confidences_of, DiscountedTally, SkillConfidence,
    UserSkillKey,
};
use engram_operators::skill_feedback::{
    latest_votes, skill_feedback_of, FeedbackTally, FeedbackVote, MessageKey, PopulationKey,
    SkillKey,
};
use engram_operators::style_preferences::{style_preferences_of, UserStyle};
use engram_operators::summaries::{user_summaries, SummaryNode};
use engram_operators::team_preferences::{
    org_preferences, team_preferences, user_teams, OrgPreference, TeamAssignment, TeamKey,
    TeamPreference,
};
use engram_operators::{episode_key, next_edges, Episode, SessionKey};

/// A collection of the memory dataflow: its timestamps are input-log offsets.
pub type Coll<'scope, D> = VecCollection<'scope, u64, D>;

/// The input collections, one per kind of record the log holds.
pub struct MemoryInputs<'scope> {
    pub episodes: Coll<'scope, (SessionKey, Episode)>,
    pub facts: Coll<'scope, (FactKey, FactAssertion)>,
    pub votes: Coll<'scope, (MessageKey, FeedbackVote)>,
    pub corrections: Coll<'scope, (UserKey, CorrectionPoint)>,
    pub notes: Coll<'scope, (UserKey, CorrectionNote)>,
    pub assignments: Coll<'scope, (UserKey, TeamAssignment)>,
    pub uses: Coll<'scope, (MessageKey, MemoryUse)>,
    pub summaries: Coll<'scope, (UserKey, SummaryNode)>,
    pub relations: Coll<'scope, (UserKey, RelationNode)>,
}

/// The views, by name (each becomes one kind of [`crate::views::ViewUpdate`]), and the inputs
/// the caller stores as they came (episodes and fact assertions).
pub struct MemoryModel<'scope> {
    pub episodes: Coll<'scope, (SessionKey, Episode)>,
    pub facts: Coll<'scope, (FactKey, FactAssertion)>,
    /// `NEXT` edges between a session's episodes.
    pub next_edges: Coll<'scope, (SessionKey, (u128, u128))>,
    pub fact_versions: Coll<'scope, (FactKey, FactVersion)>,
    pub entity_stats: Coll<'scope, (EntityKey, EntityStats)>,
    pub co_mentions: Coll<'scope, (CoMentionKey, u64)>,
    /// `MENTIONS` edges: `((tenant, user, entity), episode key halves)`.
    pub mentions: Coll<'scope, (EntityKey, [u64; 2])>,
    pub summaries: Coll<'scope, (UserKey, SummaryNode)>,
    /// A view only: relations are not memories (recall and retention never see them).
    pub relations: Coll<'scope, (UserKey, RelationNode)>,
    pub memory_marks: Coll<'scope, (MemoryKey, MemoryMark)>,
    /// The traces of memories recalls reinforced (the others' are a closed form of their row),
    /// which the lifecycle dataflow (engine time) turns into archived memories.
    pub memory_traces: Coll<'scope, (MemoryId, MemoryTrace)>,
    pub retrieval_preferences: Coll<'scope, (TraitKey, TraitTally)>,
    pub correction_notes: Coll<'scope, (UserKey, CorrectionNote)>,
    /// `(user, (correction_id, cluster_id))`.
    pub cluster_members: Coll<'scope, (UserKey, (String, String))>,
    pub cluster_measures: Coll<'scope, (UserKey, ClusterMeasure)>,
    pub patterns: Coll<'scope, (UserKey, PatternRecord)>,
    pub contradictions: Coll<'scope, (PreferenceKey, Contradiction)>,
    /// What the lifecycle dataflow (engine time) turns into preference states.
    pub preference_traces: Coll<'scope, (PreferenceKey, PreferenceTrace)>,
    pub user_teams: Coll<'scope, (UserKey, String)>,
    pub team_preferences: Coll<'scope, (TeamKey, TeamPreference)>,
    pub org_preferences: Coll<'scope, (String, OrgPreference)>,
    pub styles: Coll<'scope, (UserKey, UserStyle)>,
    pub skill_confidences: Coll<'scope, (UserSkillKey, SkillConfidence)>,
    /// Only with a feedback half-life ([`crate::SkillParams`]).
    pub discounted_skill_tallies: Option<Coll<'scope, (SkillKey, DiscountedTally)>>,
    pub skill_tallies: Coll<'scope, (SkillKey, FeedbackTally)>,
    pub population_tallies: Coll<'scope, (PopulationKey, FeedbackTally)>,
}

/// The memory model (SPEC §4): every view as a composition of `engram-operators`.
pub fn memory_model<'scope>(
    input: MemoryInputs<'scope>,
    params: DataflowParams,
) -> MemoryModel<'scope> {
    // each message's latest vote, derived once for every view of feedback (each derivation
    // arranges every vote twice)
    let votes = latest_votes(input.votes);
    // one arrangement of the present corrections for every operator that reads them
    let present = present_corrections(input.corrections);
    let links = similarity_links(
        present.clone(),
        params.corrections.link_cosine,
        params.corrections.topic_link_cosine,
    );
    let clusters = correction_clusters(present.clone(), links);
    let measures = cluster_measures(present.clone(), clusters.clone());
    let patterns = promoted_patterns(measures.clone());
    let teams = user_teams(input.assignments);
    let team_prefs = team_preferences(
        measures.clone(),
        teams.clone(),
        params.hierarchy.team_min_users,
    );
    // extracted once for every entity view
    let entities = episode_entities(input.episodes.clone());
    let (skill_tallies, population_tallies) = skill_feedback_of(votes.clone());
    let judged = judged_uses(input.uses, votes.clone());
    let fact_versions = facts_over_time(input.facts.clone());
    let summaries = user_summaries(input.summaries);
    // every memory once, and the uses answers made of them
    let memories = memories_of(
        input.episodes.clone(),
        fact_versions.clone(),
        summaries.clone(),
    );
    let used = used_memories(memories, uses_by_memory(judged.clone()));
    let memory_traces = memory_traces(
        used.clone(),
        params.retention.stability(),
        LifecycleThresholds::default(),
    );
    MemoryModel {
        retrieval_preferences: retrieval_preferences(used),
        next_edges: next_edges(
            input
                .episodes
                .clone()
                .map(|(session, e)| (session, e.node())),
        ),
        fact_versions,
        entity_stats: entity_stats_of(entities.clone()),
        mentions: mention_edges_of(entities.clone()),
        co_mentions: co_mentions_of(entities),
        summaries,
        relations: user_relations(input.relations),
        memory_marks: marks_of_judged(judged),
        memory_traces,
        correction_notes: correction_notes(input.notes),
        contradictions: preference_contradictions(present.clone(), measures.clone()),
        preference_traces: preference_traces(present, clusters.clone(), patterns.clone()),
        cluster_members: clusters,
        cluster_measures: measures,
        patterns,
        org_preferences: org_preferences(team_prefs.clone(), params.hierarchy.org_min_teams),
        team_preferences: team_prefs,
        user_teams: teams,
        styles: style_preferences_of(votes.clone()),
        skill_confidences: skill_confidences_of(votes.clone()),
        discounted_skill_tallies: params
            .skills
            .half_life_secs()
            .map(|half_life| discounted_skill_feedback_of(votes, half_life)),
        skill_tallies,
        population_tallies,
        episodes: input.episodes,
        facts: input.facts,
    }
}

/// Every memory: each episode (with its traits), fact version and summary, made at its event
/// time, with its importance (0.5 when it has none).
fn memories_of<'scope>(
    episodes: Coll<'scope, (SessionKey, Episode)>,
    fact_versions: Coll<'scope, (FactKey, FactVersion)>,
    summaries: Coll<'scope, (UserKey, SummaryNode)>,
) -> Coll<'scope, (MemoryId, Memory)> {
    let memory = |(tenant, user): (&str, &str), micros: i64, importance: Option<u16>| Memory {
        owner: owner_key(tenant, user),
        created_secs: micros.div_euclid(1_000_000),
        importance_milli: importance.unwrap_or(UNSTATED_IMPORTANCE_MILLI),
        traits: None,
    };
    let episodes = episodes.map(move |((tenant, user, _), e)| {
        let domain = user == engram_schemas::DOMAIN_USER;
        let memory = Memory {
            traits: Some(RetrievalTrait::of(&e.role, &e.content, domain)),
            ..memory((&tenant, &user), e.ts_micros, e.importance_milli)
        };
        (episode_key(&e.id), memory)
    });
    let facts = fact_versions.map(move |((tenant, user, _, _), v)| {
        (
            episode_key(&v.fact_id),
            memory((&tenant, &user), v.valid_from, None),
        )
    });
    let summaries = summaries.map(move |((tenant, user), s)| {
        (
            episode_key(&s.id),
            memory((&tenant, &user), s.ts_micros, None),
        )
    });
    episodes.concat(facts).concat(summaries)
}

/// The uses of memories keyed by the memory they name.
fn uses_by_memory<'scope>(
    judged: Coll<'scope, (MemoryKey, (i64, String, i8))>,
) -> Coll<'scope, (MemoryId, JudgedUse)> {
    judged.map(|((tenant, user, id), (micros, message, reward))| {
        let used = JudgedUse {
            user: (tenant, user),
            message,
            at_secs: micros.div_euclid(1_000_000),
            reward,
        };
        (episode_key(&id), used)
    })
}
