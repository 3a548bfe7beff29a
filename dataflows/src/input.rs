//! What the memory dataflow consumes.

use engram_operators::correction_clusters::{
    topic_terms, CorrectionPoint, Polarity, QuantisedEmbedding, UserKey,
};
use engram_operators::correction_notes::CorrectionNote;
use engram_operators::facts::{
    extract_facts, normalise_attribute, FactAssertion, FactKey, USER_SUBJECT,
};
use engram_operators::math::beta::context_bucket;
use engram_operators::math::fusion::{fuse_confidence, ModalitySignal, ModalityWeights};
use engram_operators::memory_marks::MemoryUse;
use engram_operators::relation_extraction::extract_relations;
use engram_operators::relations::RelationNode;
use engram_operators::requests::{requests_of, stated_requests, RequestSet};
use engram_operators::skill_feedback::{FeedbackVote, MessageKey};
use engram_operators::summaries::SummaryNode;
use engram_operators::team_preferences::TeamAssignment;
use engram_operators::{Episode, SessionKey};
use engram_schemas::{
    node_id, Body, ControlAction, Correction, Event, Feedback, Header, Interaction, Role,
};

/// One input to the dataflow, derived from one accepted event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputRecord {
    /// An interaction became an episode of its session.
    Episode(SessionKey, Episode),
    /// A value asserted for a (subject, attribute): from a `fact` event, or extracted from what
    /// the user said.
    Fact(FactKey, FactAssertion),
    /// A vote on an answer produced with a skill.
    Feedback(MessageKey, FeedbackVote),
    /// A correction, with the embedding of what it asks for ([`InputRecord::correction`]).
    Correction(UserKey, CorrectionPoint),
    /// A correction's words, for prompts.
    CorrectionNote(UserKey, CorrectionNote),
    /// The user was put in a team, or out of every team.
    TeamAssignment(UserKey, TeamAssignment),
    /// An answer (the assistant message, by its event id) was built with this memory.
    MemoryUse(MessageKey, MemoryUse),
    /// A summary an asynchronous reflection wrote, with the episodes it covers.
    Summary(UserKey, SummaryNode),
    /// A relation an extractor read, with the episodes it was read from.
    Relation(UserKey, RelationNode),
}

/// Confidence of a correction that states none and carries no signals to fuse: the user typed
/// it, so it is strong evidence, but not certain (three such corrections make a preference of
/// confidence 0.83, above the 0.75 a prompt requires).
pub const UNSTATED_CORRECTION_CONFIDENCE: f64 = 0.9;

/// The default clarification floor ([`CorrectionConfidence::clarify_below`]). With the
/// default modality weights a voice-only correction passes it when confidence · agreement ≥
/// 0.5, a screen-only one only when nearly certain, a video-only one never.
pub const DEFAULT_CLARIFY_BELOW: f64 = 0.25;

/// How a correction's confidence is reached and what too little of it means (`[fusion]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CorrectionConfidence {
    /// The modality weights raw `signals` are fused with.
    pub weights: ModalityWeights,
    /// A correction whose confidence (stated, or fused from its signals) is below this is not
    /// learned from: it is never clustered, so it makes no pattern or preference, and it does
    /// not act in its session either; it is held as needing clarification (`/v1/memory`'s
    /// `needs_clarification`), and the next prompt of its session asks the user what they
    /// meant.
    pub clarify_below: f64,
}

impl Default for CorrectionConfidence {
    fn default() -> Self {
        CorrectionConfidence {
            weights: ModalityWeights::default(),
            clarify_below: DEFAULT_CLARIFY_BELOW,
        }
    }
}

impl CorrectionConfidence {
    /// Whether a correction of this confidence (in thousandths, as notes and points keep it)
    /// is held for clarification instead of learned from.
    pub fn needs_clarification(&self, confidence_milli: u16) -> bool {
        f64::from(confidence_milli) < self.clarify_below * 1000.0
    }

    /// The confidence of `correction` in thousandths ([`correction_confidence_with`] these
    /// weights), as notes and points keep it.
    pub fn milli_of(&self, correction: &Correction) -> u16 {
        (correction_confidence_with(correction, &self.weights) * 1000.0).round() as u16
    }
}

/// The confidence of a correction stated without one, in thousandths.
fn unstated_confidence_milli() -> u16 {
    (UNSTATED_CORRECTION_CONFIDENCE * 1000.0).round() as u16
}

/// The text a correction is clustered by: what it asks for (`expected_behavior`), else the
/// corrected answer, else the original.
pub fn correction_text(correction: &Correction) -> &str {
    [&correction.expected_behavior, &correction.corrected]
        .into_iter()
        .flatten()
        .map(|text| text.trim())
        .find(|text| !text.is_empty())
        .unwrap_or(correction.original.trim())
}

/// The text an event is clustered by as a correction: a correction's [`correction_text`]; a
/// feedback's free text (else its reason) when it asks for something recognised ("too long, just
/// the steps" asks for shorter answers and for steps), which makes that feedback a correction of
/// the answer it rates ([`feedback_request_text`]). `None` for anything else.
pub fn clustered_text(event: &Event) -> Option<&str> {
    match &event.body {
        Body::Correction(c) => Some(correction_text(c)),
        Body::Feedback(f) => feedback_request_text(f),
        _ => None,
    }
}

/// The words of a feedback that ask for something: its `free_text`, else its `reason`, the
/// first in which [`requests_of`] recognises a request; `None` when neither asks for anything
/// ("meh", "wrong date"): such feedback only votes.
pub fn feedback_request_text(feedback: &Feedback) -> Option<&str> {
    [&feedback.free_text, &feedback.reason]
        .into_iter()
        .flatten()
        .map(|text| text.trim())
        .find(|text| !requests_of(text).is_empty())
}

/// What a correction asks for: the requests of its `expected_behavior` (an answer it corrected
/// to says what is right, not what to do, so it asks for nothing recognised).
pub fn correction_requests(correction: &Correction) -> RequestSet {
    correction
        .expected_behavior
        .as_deref()
        .map(requests_of)
        .unwrap_or_default()
}

/// The context a correction was made in, trimmed and lowercased (empty when none), so that
/// "External client" and "external client " are one context.
pub fn correction_context(correction: &Correction) -> String {
    correction
        .context
        .as_deref()
        .map(|t| t.trim().to_lowercase())
        .unwrap_or_default()
}

/// A correction's confidence: as stated, else fused from its raw signals (SPEC §4.6) with the
/// default [`ModalityWeights`], else [`UNSTATED_CORRECTION_CONFIDENCE`]; clamped to [0, 1].
pub fn correction_confidence(correction: &Correction) -> f64 {
    correction_confidence_with(correction, &ModalityWeights::default())
}

/// [`correction_confidence`] with the signals fused by `weights`.
pub fn correction_confidence_with(correction: &Correction, weights: &ModalityWeights) -> f64 {
    let confidence = match (&correction.confidence, &correction.signals) {
        (Some(c), _) => f64::from(*c),
        (None, Some(signals)) if !signals.is_empty() => {
            let signals: Vec<ModalitySignal<'_>> = signals
                .iter()
                .map(|(modality, s)| ModalitySignal {
                    modality,
                    confidence: f64::from(s.confidence),
                    agreement: f64::from(s.agreement),
                })
                .collect();
            fuse_confidence(&signals, weights)
        }
        _ => UNSTATED_CORRECTION_CONFIDENCE,
    };
    if confidence.is_finite() {
        confidence.clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// The episode node ids of interactions `event_ids` of `tenant`, sorted: the episode an
/// interaction makes has the node id of its event, so a `COVERS` or `EVIDENCE_FOR` edge can
/// name it before it arrives.
fn episode_ids(tenant: &str, event_ids: &[String]) -> Vec<String> {
    let mut ids: Vec<String> = event_ids
        .iter()
        .map(|event_id| node_id(tenant, event_id).to_string())
        .collect();
    ids.sort_unstable();
    ids
}

impl InputRecord {
    /// When the event behind the record happened, microseconds since the Unix epoch.
    pub fn event_time_micros(&self) -> i64 {
        match self {
            InputRecord::Episode(_, episode) => episode.ts_micros,
            InputRecord::Fact(_, assertion) => assertion.valid_from_micros,
            InputRecord::Feedback(_, vote) => vote.ts_micros,
            InputRecord::Correction(_, point) => point.ts_micros,
            InputRecord::CorrectionNote(_, note) => note.ts_micros,
            InputRecord::TeamAssignment(_, a) => a.ts_micros,
            InputRecord::MemoryUse(_, u) => u.ts_micros,
            InputRecord::Summary(_, s) => s.ts_micros,
            InputRecord::Relation(_, r) => r.ts_micros,
        }
    }

    /// The record of a correction event, given the embedding of its [`correction_text`]: the
    /// correction is identified by its event id within its tenant and user. `None` for any
    /// other kind of event.
    ///
    /// A feedback whose words ask for something ([`feedback_request_text`]) is a correction too,
    /// of the confidence of a typed correction, asking what its words ask for, in no context.
    pub fn correction(event: &Event, embedding: &[f32]) -> Option<InputRecord> {
        Self::correction_with(event, embedding, &CorrectionConfidence::default())
    }

    /// [`InputRecord::correction`] with raw signals fused, and the clarification floor, as
    /// `confidence` says.
    pub fn correction_with(
        event: &Event,
        embedding: &[f32],
        confidence: &CorrectionConfidence,
    ) -> Option<InputRecord> {
        let h = &event.header;
        if let Body::Feedback(f) = &event.body {
            let text = feedback_request_text(f)?;
            if confidence.needs_clarification(unstated_confidence_milli()) {
                return None;
            }
            return Some(InputRecord::Correction(
                (h.tenant.clone(), h.user.clone()),
                CorrectionPoint {
                    correction_id: h.event_id.clone(),
                    ts_micros: h.ts.timestamp_micros(),
                    confidence_milli: unstated_confidence_milli(),
                    polarity: Polarity::of_instruction(text),
                    requests: requests_of(text),
                    context: String::new(),
                    embedding: QuantisedEmbedding::from_f32(embedding),
                    topics: Vec::new(),
                },
            ));
        }
        let Body::Correction(c) = &event.body else {
            return None;
        };
        let confidence_milli = confidence.milli_of(c);
        if confidence.needs_clarification(confidence_milli) {
            return None;
        }
        let requests = correction_requests(c);
        let topics = if requests.linked_by_topic() {
            topic_terms(correction_text(c))
        } else {
            Vec::new()
        };
        Some(InputRecord::Correction(
            (h.tenant.clone(), h.user.clone()),
            CorrectionPoint {
                correction_id: h.event_id.clone(),
                ts_micros: h.ts.timestamp_micros(),
                confidence_milli,
                polarity: Polarity::of_instruction(correction_text(c)),
                requests,
                context: correction_context(c),
                embedding: QuantisedEmbedding::from_f32(embedding),
                topics,
            },
        ))
    }

    /// The records an event at `log_offset` contributes (none for kinds not yet maintained).
    /// For a correction (and a feedback whose words ask for something) that is its note only: its clustering record needs an embedding first
    /// ([`InputRecord::correction`]).
    pub fn from_event(event: &Event, log_offset: u64) -> Vec<InputRecord> {
        Self::from_event_with(event, log_offset, &CorrectionConfidence::default())
    }

    /// [`InputRecord::from_event`] with raw signals fused, and the clarification floor, as
    /// `confidence` says.
    pub fn from_event_with(
        event: &Event,
        log_offset: u64,
        confidence: &CorrectionConfidence,
    ) -> Vec<InputRecord> {
        let h = &event.header;
        match &event.body {
            Body::Fact(f) => vec![InputRecord::Fact(
                (
                    h.tenant.clone(),
                    h.user.clone(),
                    f.subject.trim().to_lowercase(),
                    normalise_attribute(&f.attribute),
                ),
                FactAssertion {
                    valid_from_micros: h.ts.timestamp_micros(),
                    log_offset,
                    fact_id: node_id(&h.tenant, &h.event_id).to_string(),
                    value: f.value.trim().to_string(),
                    evidence: f.source_event_id.clone().unwrap_or_default(),
                },
            )],
            Body::Interaction(i) => Self::of_interaction(h, i, log_offset),
            Body::Feedback(f) => {
                let vote = InputRecord::Feedback(
                    (h.tenant.clone(), h.user.clone(), f.message_id.clone()),
                    FeedbackVote {
                        ts_micros: h.ts.timestamp_micros(),
                        event_id: h.event_id.clone(),
                        bucket: context_bucket(
                            &f.context.intent,
                            &f.context.sentiment,
                            &f.context.time_of_day,
                        ),
                        skill_id: f.skill_id.clone(),
                        reward: f.reward,
                    },
                );
                // words that ask for something are a correction: its note, as for one
                let note = feedback_request_text(f).map(|text| {
                    InputRecord::CorrectionNote(
                        (h.tenant.clone(), h.user.clone()),
                        CorrectionNote {
                            correction_id: h.event_id.clone(),
                            ts_micros: h.ts.timestamp_micros(),
                            session: h.session.clone().unwrap_or_default(),
                            correction_type: "FEEDBACK".to_string(),
                            original: text.to_string(),
                            corrected: None,
                            expected_behavior: Some(text.to_string()),
                            confidence_milli: unstated_confidence_milli(),
                            context: String::new(),
                            held: confidence.needs_clarification(unstated_confidence_milli()),
                        },
                    )
                });
                std::iter::once(vote).chain(note).collect()
            }
            Body::Correction(c) => {
                let confidence_milli = confidence.milli_of(c);
                vec![InputRecord::CorrectionNote(
                    (h.tenant.clone(), h.user.clone()),
                    CorrectionNote {
                        correction_id: h.event_id.clone(),
                        ts_micros: h.ts.timestamp_micros(),
                        session: h.session.clone().unwrap_or_default(),
                        correction_type: format!("{:?}", c.correction_type).to_uppercase(),
                        original: c.original.clone(),
                        corrected: c.corrected.clone(),
                        expected_behavior: c.expected_behavior.clone(),
                        confidence_milli,
                        context: correction_context(c),
                        held: confidence.needs_clarification(confidence_milli),
                    },
                )]
            }
            Body::Summary(summary) => vec![InputRecord::Summary(
                (h.tenant.clone(), h.user.clone()),
                SummaryNode {
                    id: node_id(&h.tenant, &h.event_id).to_string(),
                    event_id: h.event_id.clone(),
                    ts_micros: h.ts.timestamp_micros(),
                    log_offset,
                    content: summary.content.clone(),
                    covers: episode_ids(&h.tenant, &summary.covers),
                },
            )],
            Body::Relation(relation) => vec![InputRecord::Relation(
                (h.tenant.clone(), h.user.clone()),
                RelationNode {
                    id: node_id(&h.tenant, &h.event_id).to_string(),
                    event_id: h.event_id.clone(),
                    ts_micros: h.ts.timestamp_micros(),
                    log_offset,
                    subject: relation.subject.clone(),
                    relation: relation.relation.clone(),
                    object: relation.object.clone(),
                    time: relation.time.clone(),
                    evidence: episode_ids(&h.tenant, &relation.evidence),
                    confidence_milli: relation
                        .confidence
                        .map(|c| (f64::from(c).clamp(0.0, 1.0) * 1000.0).round() as u16),
                },
            )],
            Body::Control(c) if c.action == ControlAction::SetTeam => {
                vec![InputRecord::TeamAssignment(
                    (h.tenant.clone(), h.user.clone()),
                    TeamAssignment {
                        ts_micros: h.ts.timestamp_micros(),
                        log_offset,
                        team: c.team.clone(),
                    },
                )]
            }
            _ => Vec::new(),
        }
    }

    /// The records of an interaction: the facts the user states about themselves, the memories
    /// an answer names, and the episode.
    /// The relations the user reports in their turn ("I went to …"), read at ingest
    /// ([`extract_relations`]): one `relation` record each, `<event id>#rel<n>`, with the
    /// turn's episode as its evidence. The speaker is the turn's `meta.speaker`, else its
    /// speaker prefix ("Caroline: …"), else "user". Only the user's turns.
    fn reported_relations(h: &Header, i: &Interaction, log_offset: u64) -> Vec<InputRecord> {
        if i.role != Role::User {
            return Vec::new();
        }
        let meta_speaker = i
            .meta
            .as_ref()
            .and_then(|m| m.get("speaker"))
            .and_then(|s| s.as_str());
        let (speaker, text) =
            engram_operators::turn_text::speaker_and_body(&i.content, meta_speaker);
        extract_relations(speaker, text, h.ts)
            .into_iter()
            .enumerate()
            .map(|(n, r)| {
                let event_id = format!("{}#rel{n}", h.event_id);
                InputRecord::Relation(
                    (h.tenant.clone(), h.user.clone()),
                    RelationNode {
                        id: node_id(&h.tenant, &event_id).to_string(),
                        event_id,
                        ts_micros: h.ts.timestamp_micros(),
                        log_offset,
                        subject: r.subject,
                        relation: r.relation,
                        object: r.object,
                        time: r.time,
                        evidence: vec![node_id(&h.tenant, &h.event_id).to_string()],
                        confidence_milli: None,
                    },
                )
            })
            .collect()
    }

    fn of_interaction(h: &Header, i: &Interaction, log_offset: u64) -> Vec<InputRecord> {
        let key = (
            h.tenant.clone(),
            h.user.clone(),
            h.session.clone().unwrap_or_default(),
        );
        // Only the user speaks about themselves in the first person, and states how
        // they want to be answered ("please keep answers short"): a fact per aspect,
        // so a later statement about the same aspect supersedes it.
        let (facts, stated) = if i.role == Role::User {
            (extract_facts(&i.content), stated_requests(&i.content).0)
        } else {
            (Vec::new(), Vec::new())
        };
        let fact = |n: String, attribute: String, value: String| {
            InputRecord::Fact(
                (
                    h.tenant.clone(),
                    h.user.clone(),
                    USER_SUBJECT.to_string(),
                    attribute,
                ),
                FactAssertion {
                    valid_from_micros: h.ts.timestamp_micros(),
                    log_offset,
                    fact_id: node_id(&h.tenant, &format!("{}#{n}", h.event_id)).to_string(),
                    value,
                    evidence: h.event_id.clone(),
                },
            )
        };
        let stated = stated
            .into_iter()
            .map(|r| fact(r.fact_attribute(), r.fact_attribute(), r.fact_value()));
        let mut records: Vec<InputRecord> = facts
            .into_iter()
            .enumerate()
            .map(|(n, f)| {
                InputRecord::Fact(
                    (
                        h.tenant.clone(),
                        h.user.clone(),
                        f.subject.clone(),
                        f.key_attribute(),
                    ),
                    FactAssertion {
                        valid_from_micros: h.ts.timestamp_micros(),
                        log_offset,
                        fact_id: node_id(&h.tenant, &format!("{}#fact{n}", h.event_id)).to_string(),
                        value: f.value,
                        evidence: h.event_id.clone(),
                    },
                )
            })
            .chain(stated)
            .chain(Self::reported_relations(h, i, log_offset))
            .collect();
        // an answer names the memories it was built with (`meta.memories`: ids of episodes,
        // facts and summaries)
        if i.role == Role::Assistant {
            let used = i.meta.as_ref().and_then(|m| m.get("memories"));
            let ids = used.and_then(|v| v.as_array()).into_iter().flatten();
            let mut ids: Vec<&str> = ids.filter_map(|v| v.as_str()).collect();
            ids.sort_unstable();
            ids.dedup();
            records.extend(ids.into_iter().map(|id| {
                InputRecord::MemoryUse(
                    (h.tenant.clone(), h.user.clone(), h.event_id.clone()),
                    MemoryUse {
                        ts_micros: h.ts.timestamp_micros(),
                        episode_id: id.to_string(),
                    },
                )
            }));
        }
        records.push(InputRecord::Episode(
            key,
            Episode {
                ts_micros: h.ts.timestamp_micros(),
                turn: i.turn,
                log_offset,
                id: node_id(&h.tenant, &h.event_id).to_string(),
                event_id: h.event_id.clone(),
                role: i.role.as_str().to_string(),
                content: i.content.clone(),
                importance_milli: i
                    .importance
                    .map(|x| (x.clamp(0.0, 1.0) * 1000.0).round() as u16),
            },
        ));
        records
    }
}

/// A worker's share of the input. Offsets are positions in the input log; they are the
/// dataflow's timestamps, so views are "as of log offset N".
pub trait InputSource: Send {
    /// Returns, without blocking, the next changes of this worker's share (`(offset, record,
    /// diff)`: +1 adds a record, −1 retracts one added before, e.g. when its user is erased)
    /// and the offset up to which the worker has now read everything (changes at offsets below
    /// it will never come). `None` when nothing new has arrived.
    fn poll(&mut self) -> Option<(Vec<(u64, InputRecord, isize)>, u64)>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_schemas::FeedbackContext;

    fn feedback(free_text: Option<&str>, reason: Option<&str>) -> Feedback {
        Feedback {
            message_id: "m1".into(),
            skill_id: "detailed".into(),
            reward: -1,
            context: FeedbackContext::default(),
            reason: reason.map(Into::into),
            free_text: free_text.map(Into::into),
        }
    }

    #[test]
    fn feedback_words_that_ask_for_something_are_its_request_text() {
        let text = |f: Option<&str>, r: Option<&str>| {
            feedback_request_text(&feedback(f, r)).map(str::to_string)
        };
        assert_eq!(
            text(Some("  Way too long, I only needed the gist. "), None).as_deref(),
            Some("Way too long, I only needed the gist.")
        );
        // the free text comes first; the reason stands in when the free text asks nothing
        assert_eq!(
            text(Some("meh"), Some("too wordy")).as_deref(),
            Some("too wordy")
        );
        assert_eq!(text(Some("meh"), Some("wrong date")), None);
        assert_eq!(text(None, None), None);
        assert_eq!(text(Some(""), None), None);
    }

    #[test]
    fn a_feedback_that_asks_is_a_correction_of_a_typed_corrections_confidence() {
        let event = |f: Feedback| Event {
            header: Header {
                event_id: "f1".into(),
                tenant: "t".into(),
                user: "u".into(),
                ts: chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
                session: Some("s1".into()),
            },
            body: Body::Feedback(f),
        };
        let asks = event(feedback(Some("too long, keep it short"), None));
        let Some(InputRecord::Correction(key, point)) = InputRecord::correction(&asks, &[1.0])
        else {
            panic!("a correction record");
        };
        assert_eq!(key, ("t".to_string(), "u".to_string()));
        assert_eq!(point.correction_id, "f1");
        assert_eq!(point.confidence_milli, 900);
        assert_eq!(point.requests, requests_of("too long, keep it short"));
        assert!(!point.requests.is_empty());
        // its note, beside the vote
        let records = InputRecord::from_event(&asks, 7);
        assert_eq!(records.len(), 2, "{records:?}");
        assert!(matches!(&records[1], InputRecord::CorrectionNote(_, n)
            if n.correction_type == "FEEDBACK" && n.original == "too long, keep it short"));

        let votes_only = event(feedback(Some("meh"), None));
        assert_eq!(InputRecord::correction(&votes_only, &[1.0]), None);
        assert_eq!(InputRecord::from_event(&votes_only, 7).len(), 1);
    }

    #[test]
    fn a_correction_below_the_clarification_floor_is_noted_but_never_clustered() {
        let correction = |confidence: Option<f32>, signals: &[(&str, f32, f32)]| {
            let event: Event = serde_json::from_value(serde_json::json!({
                "kind": "correction", "event_id": "c1", "tenant": "t", "user": "u",
                "session": "s1", "ts": "2026-10-15T09:30:00Z", "target_event_id": "a1",
                "original": "A long answer.", "correction_type": "LENGTH",
                "expected_behavior": "Keep it short.",
            }))
            .unwrap();
            let mut event = event;
            if let Body::Correction(c) = &mut event.body {
                c.confidence = confidence;
                c.signals = (!signals.is_empty()).then(|| {
                    signals
                        .iter()
                        .map(|(m, c, a)| {
                            (
                                m.to_string(),
                                engram_schemas::Signal {
                                    confidence: *c,
                                    agreement: *a,
                                },
                            )
                        })
                        .collect()
                });
            }
            event
        };
        let clustered = |e: &Event| InputRecord::correction(e, &[1.0]).is_some();
        let note = |e: &Event| match &InputRecord::from_event(e, 3)[..] {
            [InputRecord::CorrectionNote(_, n)] => n.clone(),
            other => panic!("one note: {other:?}"),
        };
        let noted_milli = |e: &Event| note(e).confidence_milli;
        // typed without a confidence: 0.9, learned
        let typed = correction(None, &[]);
        assert!(clustered(&typed));
        assert_eq!(noted_milli(&typed), 900);
        // stated 0.2: held, but still noted with its confidence
        let unsure = correction(Some(0.2), &[]);
        assert!(!clustered(&unsure));
        assert_eq!(noted_milli(&unsure), 200);
        assert!(note(&unsure).held && !note(&typed).held);
        // the floor is the operator's: at 0.1, 0.2 is learned; at 0.95, a typed one is held
        let floor = |clarify_below| CorrectionConfidence {
            clarify_below,
            ..CorrectionConfidence::default()
        };
        assert!(InputRecord::correction_with(&unsure, &[1.0], &floor(0.1)).is_some());
        let notes = InputRecord::from_event_with(&unsure, 3, &floor(0.1));
        assert!(matches!(&notes[..], [InputRecord::CorrectionNote(_, n)] if !n.held));
        assert!(InputRecord::correction_with(&typed, &[1.0], &floor(0.95)).is_none());
        let notes = InputRecord::from_event_with(&typed, 3, &floor(0.95));
        assert!(matches!(&notes[..], [InputRecord::CorrectionNote(_, n)] if n.held));
        // fused from signals: voice 0.5 * 0.6 * 0.9 = 0.27 is learned; 0.5 * 0.6 * 0.8 = 0.24
        // is held; video alone (weight 0.2) never reaches the floor
        assert!(clustered(&correction(None, &[("voice", 0.6, 0.9)])));
        let faint = correction(None, &[("voice", 0.6, 0.8)]);
        assert!(!clustered(&faint));
        assert_eq!(noted_milli(&faint), 240);
        assert!(!clustered(&correction(None, &[("video", 1.0, 1.0)])));
        // voice and screen together: 0.5 * 0.9 * 0.9 + 0.3 * 0.9 * 0.9 = 0.648
        assert!(clustered(&correction(
            None,
            &[("voice", 0.9, 0.9), ("screen", 0.9, 0.9)]
        )));
    }
}
