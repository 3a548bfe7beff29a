//! The typed read model: one user's memory as `/v1/memory` returns it, export and GDPR embed
//! it, and the dashboard's fact and entity rows show it. Each struct serialises to the JSON
//! docs/http-api.md documents (field names are the JSON keys; `None` is `null`, never left out).

use super::{lifecycle_name, micros_to_rfc3339};
use engram_operators::correction_clusters::PatternRecord;
use engram_operators::correction_notes::CorrectionNote;
use engram_operators::entities::EntityStats;
use engram_operators::facts::FactVersion;
use engram_operators::math::decay::LifecycleState;
use engram_operators::memory_marks::MemoryMark;
use engram_operators::preference_contradictions::Contradiction;
use engram_operators::relations::RelationNode;
use engram_operators::summaries::SummaryNode;
use serde::Serialize;
use std::collections::BTreeMap;

/// One user's part of the views, at one timestamp (`/v1/memory`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserMemoryView {
    pub tenant: String,
    pub user: String,
    /// The input-log offset the views are as of.
    pub views_as_of: u64,
    /// Engine time (RFC 3339) preference states and discounted votes are as of.
    pub engine_time: String,
    pub team: Option<String>,
    /// Every version of every fact.
    pub facts: Vec<FactView>,
    /// By name.
    pub entities: Vec<EntityView>,
    /// By `(a, b)`.
    pub co_mentions: Vec<CoMentionView>,
    pub skills: Vec<SkillView>,
    /// Skill → the user's confidence in it.
    pub skill_confidence: BTreeMap<String, SkillConfidenceView>,
    pub correction_clusters: Vec<CorrectionClusterView>,
    pub preferences: Vec<PreferenceView>,
    pub stated_preferences: Vec<StatedPreferenceView>,
    pub corrections: Vec<CorrectionView>,
    /// Ids of the corrections too unsure to learn from (confidence below the clarification
    /// floor), oldest first: never clustered; the next prompt of their session asks about them.
    pub needs_clarification: Vec<String>,
    pub style: Option<StyleView>,
    pub marks: Vec<MarkView>,
    /// How the user's answers built with each kind of memory were judged (the retrieval
    /// preferences recall learns from feedback), by trait.
    pub retrieval_preferences: Vec<RetrievalPreferenceView>,
    pub summaries: Vec<SummaryView>,
    /// By event id.
    pub relations: Vec<RelationView>,
    pub edges: Vec<EdgeView>,
}

/// One version of a fact, as the dashboard's fact rows list them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FactVersionView {
    pub id: String,
    pub value: String,
    pub valid_from: String,
    pub valid_to: Option<String>,
    pub superseded_by: Option<String>,
}

impl FactVersionView {
    pub fn new(v: &FactVersion) -> Self {
        FactVersionView {
            id: v.fact_id.clone(),
            value: v.value.clone(),
            valid_from: micros_to_rfc3339(v.valid_from),
            valid_to: v.valid_to.map(micros_to_rfc3339),
            superseded_by: v.superseded_by.clone(),
        }
    }
}

/// One version of a fact, with what it is about.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FactView {
    pub subject: String,
    pub attribute: String,
    #[serde(flatten)]
    pub version: FactVersionView,
    /// Whether it has no `valid_to`.
    pub current: bool,
    /// The message it was learned from (`None` when unknown).
    pub evidence: Option<String>,
}

impl FactView {
    pub fn new(subject: &str, attribute: &str, v: &FactVersion) -> Self {
        FactView {
            subject: subject.to_string(),
            attribute: attribute.to_string(),
            version: FactVersionView::new(v),
            current: v.valid_to.is_none(),
            evidence: (!v.evidence.is_empty()).then(|| v.evidence.clone()),
        }
    }
}

/// The stable UUID of the entity node `name` (the normalised name the views key it by) of
/// `tenant`: the same name always gives the same id, and never an event's node id (event ids
/// cannot hold the NUL that separates the namespace).
pub fn entity_id(tenant: &str, name: &str) -> String {
    engram_schemas::node_id(tenant, &format!("\0entity\0{name}")).to_string()
}

/// An entity, as `/v1/memory` lists it and the dashboard's entity rows show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntityView {
    /// Stable UUID of the entity node ([`entity_id`]).
    pub id: String,
    pub name: String,
    /// `named` or `nounphrase`.
    pub kind: String,
    pub mentions: u64,
    pub first_seen: String,
    pub last_seen: String,
    /// The entity this name is a short form of, when exactly one can be
    /// ([`engram_operators::entity_aliases`]: "caro" of "caroline").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias_of: Option<String>,
}

impl EntityView {
    pub fn new(tenant: &str, name: &str, s: &EntityStats) -> Self {
        EntityView {
            id: entity_id(tenant, name),
            name: name.to_string(),
            kind: format!("{:?}", s.kind).to_lowercase(),
            mentions: s.mention_count,
            first_seen: micros_to_rfc3339(s.first_seen_micros),
            last_seen: micros_to_rfc3339(s.last_seen_micros),
            alias_of: None,
        }
    }
}

/// A weighted `CO_MENTIONED` edge, `a < b`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoMentionView {
    pub a: String,
    pub b: String,
    pub weight: u64,
}

/// A user's votes for one skill in one context bucket, with their posterior.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillView {
    pub bucket: u32,
    pub skill_id: String,
    pub successes: u64,
    pub failures: u64,
    pub neutral: u64,
    /// The votes discounted by age, when the dataflow discounts them.
    pub discounted: Option<DiscountedVotesView>,
    pub population: PopulationVotesView,
    pub posterior: PosteriorView,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DiscountedVotesView {
    pub successes: f64,
    pub failures: f64,
}

/// The tenant's votes for the skill in the bucket.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PopulationVotesView {
    pub successes: u64,
    pub failures: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PosteriorView {
    pub alpha: f64,
    pub beta: f64,
    pub mean: f64,
    /// The 95% credible interval, `[low, high]`.
    pub ci95: [f64; 2],
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SkillConfidenceView {
    pub confidence: f64,
    pub uses: u64,
}

/// A correction cluster, with its pattern when it was promoted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CorrectionClusterView {
    pub cluster_id: String,
    /// Its members' correction ids.
    pub corrections: Vec<String>,
    pub pattern: Option<PatternView>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PatternView {
    pub size: u32,
    pub coherence: f64,
    pub span_days: f64,
    pub confidence: f64,
}

impl PatternView {
    pub fn new(p: &PatternRecord) -> Self {
        PatternView {
            size: p.size,
            coherence: f64::from(p.coherence_milli) / 1000.0,
            span_days: p.span_micros as f64 / 86_400e6,
            confidence: f64::from(p.confidence_milli) / 1000.0,
        }
    }
}

/// A preference with its lifecycle, as of engine time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PreferenceView {
    pub cluster_id: String,
    /// `active`, `inactive` or `archived`.
    pub state: Option<&'static str>,
    pub retention: f64,
    pub stability_days: f64,
    pub last_activation: String,
    pub activations: u32,
    pub next_transition: Option<TransitionView>,
    /// Later corrections that said the opposite, and what that did to it.
    pub contradiction: Option<Contradiction>,
}

/// The next lifecycle state a preference reaches if nothing activates it, and when.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TransitionView {
    pub to: &'static str,
    pub at: String,
}

impl TransitionView {
    /// `at` in seconds since the Unix epoch.
    pub fn new(at: i64, to: LifecycleState) -> Self {
        TransitionView {
            to: lifecycle_name(to),
            at: micros_to_rfc3339(at * 1_000_000),
        }
    }
}

/// A preference the user stated in an ordinary message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatedPreferenceView {
    pub aspect: &'static str,
    pub value: String,
    /// The instruction it gives.
    pub instruction: String,
    pub fact_id: String,
    /// The message it was said in.
    pub stated_in: String,
    pub since: String,
}

/// A correction's words.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CorrectionView {
    pub id: String,
    pub session: String,
    #[serde(rename = "type")]
    pub correction_type: String,
    pub ts: String,
    pub original: String,
    pub corrected: Option<String>,
    pub expected_behavior: Option<String>,
    pub confidence: f64,
    /// The context it was made in (`None` when none).
    pub context: Option<String>,
}

impl CorrectionView {
    pub fn new(n: &CorrectionNote) -> Self {
        CorrectionView {
            id: n.correction_id.clone(),
            session: n.session.clone(),
            correction_type: n.correction_type.clone(),
            ts: micros_to_rfc3339(n.ts_micros),
            original: n.original.clone(),
            corrected: n.corrected.clone(),
            expected_behavior: n.expected_behavior.clone(),
            confidence: f64::from(n.confidence_milli) / 1000.0,
            context: (!n.context.is_empty()).then(|| n.context.clone()),
        }
    }
}

/// The style the user's feedback points to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StyleView {
    /// Dimension name → value in [0, 1].
    pub vector: BTreeMap<&'static str, f64>,
    pub feedback_count: u64,
}

/// An episode's MARK state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MarkView {
    pub episode_id: String,
    pub recalls: u64,
    pub correct: u64,
    pub incorrect: u64,
    pub trust: f64,
    pub persistence: f64,
    pub retained: bool,
    pub last_recalled: String,
}

impl MarkView {
    pub fn new(episode: &str, m: &MemoryMark) -> Self {
        MarkView {
            episode_id: episode.to_string(),
            recalls: m.recalls,
            correct: m.correct,
            incorrect: m.incorrect,
            trust: m.trust(),
            persistence: m.persistence(),
            retained: m.retained,
            last_recalled: micros_to_rfc3339(m.last_recalled_micros),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryView {
    pub id: String,
    pub event_id: String,
    pub ts: String,
    pub content: String,
    /// The episodes it covers.
    pub covers: Vec<String>,
}

impl SummaryView {
    pub fn new(s: &SummaryNode) -> Self {
        SummaryView {
            id: s.id.clone(),
            event_id: s.event_id.clone(),
            ts: micros_to_rfc3339(s.ts_micros),
            content: s.content.clone(),
            covers: s.covers.clone(),
        }
    }
}

/// A relation an extractor read: `subject —relation→ object`, with the episodes it was read
/// from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RelationView {
    pub id: String,
    pub event_id: String,
    pub ts: String,
    pub subject: String,
    pub relation: String,
    pub object: String,
    /// When it held or happened, as the evidence says it (`None` when it does not).
    pub time: Option<String>,
    /// The extractor's confidence in it (`None` when it stated none).
    pub confidence: Option<f64>,
    /// The episodes it was read from (its `EVIDENCE_FOR` edges).
    pub evidence: Vec<String>,
}

impl RelationView {
    pub fn new(r: &RelationNode) -> Self {
        RelationView {
            id: r.id.clone(),
            event_id: r.event_id.clone(),
            ts: micros_to_rfc3339(r.ts_micros),
            subject: r.subject.clone(),
            relation: r.relation.clone(),
            object: r.object.clone(),
            time: r.time.clone(),
            confidence: r.confidence_milli.map(|c| f64::from(c) / 1000.0),
            evidence: r.evidence.clone(),
        }
    }
}

/// A typed edge of the consolidation graph (SPEC §3).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EdgeView {
    #[serde(rename = "type")]
    pub edge_type: EdgeType,
    pub from: String,
    pub to: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EdgeType {
    /// A promoted cluster's correction → its pattern.
    Corrects,
    /// A pattern → its preference.
    EvolvesTo,
    /// A closed fact version → the version that closed it.
    SupersededBy,
    /// The message a fact was learned from → the fact; an episode a relation was read from →
    /// the relation.
    EvidenceFor,
    /// A summary → an episode it names.
    Covers,
}

impl EdgeView {
    pub fn new(edge_type: EdgeType, from: impl Into<String>, to: impl Into<String>) -> Self {
        EdgeView {
            edge_type,
            from: from.into(),
            to: to.into(),
        }
    }
}

/// A learned retrieval preference: answers built with memories of `trait` voted up and down.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetrievalPreferenceView {
    /// `user`, `assistant`, `own`, `domain` or `content:<prose|question|list|code|link>`.
    #[serde(rename = "trait")]
    pub trait_name: String,
    pub up: u64,
    pub down: u64,
}
