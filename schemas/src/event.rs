//! The event types of the Kafka contract (SPEC §2), in their canonical form.
//!
//! Untrusted input is turned into these types by [`crate::parse_event`], which names the
//! offending field on error; the serde derives here define the canonical JSON that engram
//! itself writes (embedded log, Lance `events` table) and reads back.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Fields every event carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Client-chosen, unique per tenant: the idempotency key.
    pub event_id: String,
    pub tenant: String,
    /// Empty only for tenant-wide control events.
    pub user: String,
    /// When it happened (event time).
    pub ts: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// One validated event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    #[serde(flatten)]
    pub header: Header,
    #[serde(flatten)]
    pub body: Body,
}

impl Event {
    pub fn kind(&self) -> EventKind {
        match &self.body {
            Body::Interaction(_) => EventKind::Interaction,
            Body::Correction(_) => EventKind::Correction,
            Body::Feedback(_) => EventKind::Feedback,
            Body::Fact(_) => EventKind::Fact,
            Body::Summary(_) => EventKind::Summary,
            Body::Relation(_) => EventKind::Relation,
            Body::Control(_) => EventKind::Control,
        }
    }

    /// Whether the event is a control that governs processing (erase, restrict, unrestrict):
    /// such events are acted on, never held, redacted or fed to the views.
    pub fn governs_processing(&self) -> bool {
        matches!(&self.body, Body::Control(c) if c.governs_processing())
    }

    /// The `tenant/user` key under which the event is partitioned and ordered.
    pub fn key(&self) -> String {
        format!("{}/{}", self.header.tenant, self.header.user)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("events always serialize")
    }

    /// Reads the canonical JSON written by [`Event::to_json`].
    pub fn from_canonical_json(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Interaction,
    Correction,
    Feedback,
    Fact,
    Summary,
    Relation,
    Control,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Interaction => "interaction",
            EventKind::Correction => "correction",
            EventKind::Feedback => "feedback",
            EventKind::Fact => "fact",
            EventKind::Summary => "summary",
            EventKind::Relation => "relation",
            EventKind::Control => "control",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "interaction" => EventKind::Interaction,
            "correction" => EventKind::Correction,
            "feedback" => EventKind::Feedback,
            "fact" => EventKind::Fact,
            "summary" => EventKind::Summary,
            "relation" => EventKind::Relation,
            "control" => EventKind::Control,
            _ => return None,
        })
    }

    pub const ALL: [EventKind; 7] = [
        EventKind::Interaction,
        EventKind::Correction,
        EventKind::Feedback,
        EventKind::Fact,
        EventKind::Summary,
        EventKind::Relation,
        EventKind::Control,
    ];

    /// The kind whose topic events of this kind travel on: the enrichment an asynchronous
    /// extractor publishes (facts, summaries, relations) goes with the interactions it was drawn
    /// from.
    pub fn topic_kind(self) -> EventKind {
        match self {
            EventKind::Fact | EventKind::Summary | EventKind::Relation => EventKind::Interaction,
            other => other,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Body {
    Interaction(Interaction),
    Correction(Correction),
    Feedback(Feedback),
    Fact(Fact),
    Summary(Summary),
    Relation(Relation),
    Control(Control),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ => return None,
        })
    }
}

/// A user, assistant or tool message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interaction {
    pub role: Role,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CorrectionType {
    Content,
    Style,
    Format,
    Tone,
    Length,
    Other,
}

impl CorrectionType {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "CONTENT" => CorrectionType::Content,
            "STYLE" => CorrectionType::Style,
            "FORMAT" => CorrectionType::Format,
            "TONE" => CorrectionType::Tone,
            "LENGTH" => CorrectionType::Length,
            "OTHER" => CorrectionType::Other,
            _ => return None,
        })
    }
}

/// One modality's raw signal for confidence fusion (SPEC §4.6).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Signal {
    pub confidence: f32,
    pub agreement: f32,
}

/// The user fixed an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Correction {
    pub target_event_id: String,
    pub original: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrected: Option<String>,
    pub correction_type: CorrectionType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_behavior: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signals: Option<BTreeMap<String, Signal>>,
}

/// The context a feedback was given in; bucketed for Thompson sampling (SPEC §6).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FeedbackContext {
    #[serde(default)]
    pub intent: String,
    #[serde(default)]
    pub sentiment: String,
    #[serde(default)]
    pub time_of_day: String,
}

/// Thumbs up/down on an answer produced with a skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Feedback {
    pub message_id: String,
    pub skill_id: String,
    /// -1, 0 or 1.
    pub reward: i8,
    #[serde(default)]
    pub context: FeedbackContext,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_text: Option<String>,
}

/// What an asynchronous reflection (an LLM, off the ingest path) wrote about a stretch of the
/// user's conversations: the `COVERS` edges go to the episodes it summarises.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub content: String,
    /// Event ids of the interactions it summarises (those of this user).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub covers: Vec<String>,
}

/// A typed edge between two things the user's conversations name ("Caroline — attended →
/// LGBTQ support group, 2023-05-07"), from an extractor (the enrichment job, or the user's
/// client), with the episodes it was read from (`EVIDENCE_FOR`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Relation {
    pub subject: String,
    /// What links them, as a short verb phrase ("attended", "works at", "sister of").
    pub relation: String,
    pub object: String,
    /// When it held or happened, as the evidence says it (an ISO date where one is known,
    /// else the words: "last summer").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// Event ids of the interactions it was read from (this user's), sorted, once each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f32>,
}

/// (subject, attribute, value), from an extractor or the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    pub subject: String,
    pub attribute: String,
    pub value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_event_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlAction {
    /// Remove the user's (or the whole tenant's) data everywhere.
    Erase,
    /// Freeze processing of the user's (or tenant's) events.
    Restrict,
    /// Lift a restriction.
    Unrestrict,
    /// Remove one event of the user (`target_event_id`) and everything derived from it, as
    /// an erase removes all of them: a per-memory deletion.
    Forget,
    /// Put the user in a team (`team`), or out of every team (no `team`): teams share the
    /// preferences enough of their users hold (SPEC §4.4). Data, not a command: it is held
    /// while the user is restricted and erased with the user.
    SetTeam,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlScope {
    User,
    Tenant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Control {
    pub action: ControlAction,
    pub scope: ControlScope,
    /// The team of a `set_team`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    /// The event a `forget` removes (an event of the same tenant and user, earlier in the log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_event_id: Option<String>,
}

impl Control {
    /// Whether this control governs processing (erase, restrict, unrestrict, forget) rather than
    /// carrying the user's data (`set_team`).
    pub fn governs_processing(&self) -> bool {
        self.action != ControlAction::SetTeam
    }
}

/// What an erased event's log record becomes: its tenant and id only, so a redelivery of the
/// event is still recognised as already accepted (and not stored again), while nothing of its
/// content, user or time is left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Redacted {
    pub redacted: bool,
    pub tenant: String,
    pub event_id: String,
}

impl Redacted {
    pub fn new(tenant: &str, event_id: &str) -> Self {
        Redacted {
            redacted: true,
            tenant: tenant.to_string(),
            event_id: event_id.to_string(),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a redaction serializes")
    }

    /// The redaction a log record holds, if it holds one (trailing padding allowed).
    pub fn from_record(bytes: &[u8]) -> Option<Self> {
        if !bytes.starts_with(b"{\"redacted\":true") {
            return None;
        }
        serde_json::from_slice(bytes).ok()
    }
}
