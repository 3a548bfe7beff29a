//! The views the running memory dataflow publishes (NEXT edges, facts over time, entities,
//! co-mentions, skill feedback per user and per population, summaries, relations) equal a from-scratch computation over all input so far, after every chunk of a
//! random stream with out-of-order timestamps, with one and with two workers (each reading the
//! log at its own pace); and the episodes sent for storage come once each, in log order.

use chrono::{TimeZone, Utc};
use engram_dataflows::{
    run_memory_dataflow, DataflowParams, EngineClock, EpisodeBatch, HierarchyParams, InputRecord,
    InputSource, SharedViews, SkillParams,
};
use engram_operators::entities::{extract_entities, sentence_pairs, EntityKind};
use engram_operators::facts::{fact_versions, FactAssertion, FactVersion};
use engram_operators::math::beta::context_bucket;
use engram_operators::skill_feedback::FeedbackTally;
use engram_operators::{episode_key, Episode};
use engram_schemas::{
    Body, Control, ControlAction, ControlScope, Correction, CorrectionType, Event, Feedback,
    FeedbackContext, Header, Interaction, Relation, Role, Summary,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Log = Arc<Mutex<Vec<Event>>>;

struct VecSource {
    log: Log,
    cursor: usize,
    worker: usize,
    peers: usize,
    /// How much of what is there each poll reads: workers read at their own pace, as they do
    /// from a log others append to, so one stamps records at times the others have passed.
    pace: StdRng,
}

impl InputSource for VecSource {
    fn poll(&mut self) -> Option<(Vec<(u64, InputRecord, isize)>, u64)> {
        let log = self.log.lock().unwrap();
        // a worker finds the log's end later, and reads only part of what it finds
        if log.len() <= self.cursor || self.pace.gen_bool(0.5) {
            return None;
        }
        let end = self.cursor + self.pace.gen_range(1..=log.len() - self.cursor);
        let mut out = Vec::new();
        for (offset, e) in log.iter().enumerate().take(end).skip(self.cursor) {
            let owner = e.header.user.bytes().map(|b| b as usize).sum::<usize>() % self.peers;
            if owner == self.worker {
                if let Some(text) = engram_dataflows::clustered_text(e) {
                    let vector = topic_vector(text);
                    out.extend(InputRecord::correction(e, &vector).map(|r| (offset as u64, r, 1)));
                }
                out.extend(
                    InputRecord::from_event(e, offset as u64)
                        .into_iter()
                        .map(|r| (offset as u64, r, 1)),
                );
            }
        }
        self.cursor = end;
        Some((out, end as u64))
    }
}

const CITIES: [&str; 4] = ["Lisbon", "Porto", "Berlin", "Oslo"];
const PEOPLE: [&str; 3] = ["Jana Novak", "Rui", "Miso"];
const COLORS: [&str; 3] = ["green", "blue", "red"];

/// What corrections ask for; each has its own direction in [`topic_vector`].
const TOPICS: [&str; 3] = [
    "answer in bullet points",
    "quote prices in euros",
    "keep it short",
];

/// The test's stand-in embedding: one axis per topic, so corrections of one topic are
/// identical (cosine 1, linked) and of different topics orthogonal (not linked).
fn topic_vector(text: &str) -> Vec<f32> {
    let topic = TOPICS
        .iter()
        .position(|t| *t == text)
        .expect("a known topic");
    (0..TOPICS.len())
        .map(|axis| if axis == topic { 1.0 } else { 0.0 })
        .collect()
}

fn random_event(rng: &mut StdRng, i: usize) -> Event {
    let user = format!("u{}", rng.gen_range(0..2));
    let header = Header {
        event_id: format!("e{i}"),
        tenant: "t".into(),
        user,
        // few distinct times, arriving out of order
        ts: Utc
            .timestamp_opt(1_700_000_000 + rng.gen_range(0..30) * 60, 0)
            .unwrap(),
        session: Some(format!("s{}", rng.gen_range(0..2))),
    };
    if rng.gen_bool(0.25) {
        // spread over days, so clusters can span the day a pattern needs
        let header = Header {
            ts: Utc
                .timestamp_opt(1_700_000_000 + rng.gen_range(0..4) * 86_400, 0)
                .unwrap(),
            ..header
        };
        let body = Body::Correction(Correction {
            target_event_id: "e0".into(),
            original: "a long paragraph".into(),
            corrected: None,
            correction_type: CorrectionType::Format,
            expected_behavior: Some(TOPICS[rng.gen_range(0..TOPICS.len())].into()),
            context: None,
            domain: None,
            // now and then one too unsure to learn from: noted, never clustered
            confidence: rng.gen_bool(0.15).then_some(0.1),
            signals: None,
        });
        return Event { header, body };
    }
    if rng.gen_bool(0.1) {
        // mostly one team, so both users often share it
        let team = ["red", "red", "red", "blue"]
            .get(rng.gen_range(0..5))
            .map(|t| t.to_string());
        let body = Body::Control(Control {
            action: ControlAction::SetTeam,
            scope: ControlScope::User,
            team,
            target_event_id: None,
        });
        return Event { header, body };
    }
    if rng.gen_bool(0.05) {
        // a reflection's summary of some earlier events (not all of them this user's)
        let covers = (0..rng.gen_range(0..4))
            .map(|_| format!("e{}", rng.gen_range(0..i.max(1))))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let body = Body::Summary(Summary {
            content: format!("summary {i} of the laptop talk"),
            covers,
        });
        return Event { header, body };
    }
    if rng.gen_bool(0.05) {
        // an extractor's relation read from some earlier events (not all of them this user's)
        let evidence = (0..rng.gen_range(0..4))
            .map(|_| format!("e{}", rng.gen_range(0..i.max(1))))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let body = Body::Relation(Relation {
            subject: PEOPLE[rng.gen_range(0..3)].into(),
            relation: ["visited", "moved to"][rng.gen_range(0..2)].into(),
            object: CITIES[rng.gen_range(0..4)].into(),
            time: rng.gen_bool(0.5).then(|| "last summer".to_string()),
            evidence,
            confidence: rng.gen_bool(0.5).then_some(0.75),
        });
        return Event { header, body };
    }
    if rng.gen_bool(0.2) {
        // a vote on one of a few answers: later votes on the same answer replace earlier ones
        let body = Body::Feedback(Feedback {
            message_id: format!("m{}", rng.gen_range(0..3)),
            skill_id: ["concise", "detailed"][rng.gen_range(0..2)].into(),
            reward: rng.gen_range(-1..=1),
            context: FeedbackContext {
                intent: ["debug", "plan"][rng.gen_range(0..2)].into(),
                sentiment: "neutral".into(),
                time_of_day: "morning".into(),
            },
            reason: None,
            // words that ask for something make the vote a correction of that topic too;
            // "meh" asks for nothing
            free_text: match rng.gen_range(0..4) {
                0 => Some(TOPICS[rng.gen_range(0..TOPICS.len())].into()),
                1 => Some("meh".into()),
                _ => None,
            },
        });
        return Event { header, body };
    }
    let content = match rng.gen_range(0..5) {
        0 => format!("I moved to {}.", CITIES[rng.gen_range(0..4)]),
        1 => format!("My favorite color is {}.", COLORS[rng.gen_range(0..3)]),
        2 => format!(
            "Yesterday I met {} in {}.",
            PEOPLE[rng.gen_range(0..3)],
            CITIES[rng.gen_range(0..4)]
        ),
        3 => format!(
            "We talked about the new laptop and {}.",
            PEOPLE[rng.gen_range(0..3)]
        ),
        _ => "ok, thanks!".to_string(),
    };
    let role = if rng.gen_bool(0.8) {
        Role::User
    } else {
        Role::Assistant
    };
    // an answer names the memories it was built with (a few ids, sometimes repeated)
    let meta = (role == Role::Assistant && rng.gen_bool(0.7)).then(|| {
        let used: Vec<String> = (0..rng.gen_range(1..4))
            .map(|_| format!("mem{}", rng.gen_range(0..3)))
            .collect();
        let mut meta = serde_json::Map::new();
        meta.insert("memories".into(), serde_json::json!(used));
        meta
    });
    Event {
        header,
        body: Body::Interaction(Interaction {
            role,
            content,
            turn: None,
            importance: None,
            skill_id: None,
            meta,
        }),
    }
}

#[derive(Debug, PartialEq)]
struct Expected {
    next: HashMap<u128, u128>,
    facts: BTreeMap<(String, String, String, String), BTreeSet<FactVersion>>,
    entities: BTreeMap<(String, String, String), (i64, i64, u64, EntityKind)>,
    co_mentions: BTreeMap<(String, String, String, String), u64>,
    /// `MENTIONS` as `(tenant, user, entity, episode key)`.
    mentions: BTreeSet<(String, String, String, u128)>,
    skills: BTreeMap<(String, String, u32, String), FeedbackTally>,
    population: BTreeMap<(String, u32, String), FeedbackTally>,
    /// `(tenant, user, correction_id)` → cluster id.
    clusters: BTreeMap<(String, String, String), String>,
    /// `(tenant, user, cluster_id)` → size of the pattern it was promoted to.
    patterns: BTreeMap<(String, String, String), u32>,
    /// `(tenant, user, cluster_id)` → (size, span in microseconds, promoted) of every cluster.
    measures: BTreeMap<(String, String, String), (u32, i64, bool)>,
    /// `(tenant, user, correction_id)` → what the correction asks for.
    notes: BTreeMap<(String, String, String), String>,
    /// `(tenant, user)` → answers voted on (the style view's feedback count).
    voted: BTreeMap<(String, String), u64>,
    /// `(tenant, user)` → episodes.
    user_episodes: BTreeMap<(String, String), usize>,
    /// `(tenant, user)` → team.
    user_teams: BTreeMap<(String, String), String>,
    /// `(tenant, user, episode)` → answers built with it (no vote here names an answer).
    recalls: BTreeMap<(String, String, String), u64>,
    /// The users holding each team preference.
    team_preferences: BTreeSet<((String, String), Vec<String>)>,
    /// The teams holding each organisation preference.
    org_preferences: BTreeSet<(String, Vec<String>)>,
    /// `(tenant, user, summary event id)` → (content, node ids of the episodes it covers).
    summaries: BTreeMap<(String, String, String), (String, Vec<String>)>,
    /// `(tenant, user, relation event id)` → ((subject, relation, object, time), node ids of
    /// the episodes it was read from).
    relations: BTreeMap<(String, String, String), (RelationTriple, Vec<String>)>,
}

/// A relation's subject, relation, object and time.
type RelationTriple = (String, String, String, Option<String>);

/// The node ids of the episodes events `event_ids` of `tenant` make, sorted.
fn episode_ids(tenant: &str, event_ids: &[String]) -> Vec<String> {
    let mut ids: Vec<String> = event_ids
        .iter()
        .map(|id| engram_schemas::node_id(tenant, id).to_string())
        .collect();
    ids.sort();
    ids
}

/// The topic an event asks for as a correction: a correction's `expected_behavior`, or a
/// feedback's free text when it is one of [`TOPICS`] (which all ask for something).
fn asked_topic(e: &Event) -> Option<String> {
    match &e.body {
        Body::Correction(c) => c.expected_behavior.clone(),
        Body::Feedback(f) => f.free_text.clone().filter(|t| TOPICS.contains(&t.as_str())),
        _ => None,
    }
}

/// Clusters (every correction of one user and topic, named by the least event id) and the
/// patterns among them (at least 3 corrections over at least a day).
fn cluster_corrections(
    log: &[Event],
    expected: &mut Expected,
) -> BTreeMap<(String, String), BTreeSet<String>> {
    let mut promoted_topics: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    // (tenant, user, topic) -> (event id, ts)
    let mut by_topic: BTreeMap<(String, String, String), Vec<(String, i64)>> = BTreeMap::new();
    for e in log {
        let h = &e.header;
        let Some(topic) = asked_topic(e) else {
            continue;
        };
        // one stated below the clarification floor is noted, not learned from
        if let Body::Correction(c) = &e.body {
            if c.confidence
                .is_some_and(|x| f64::from(x) < engram_dataflows::input::DEFAULT_CLARIFY_BELOW)
            {
                continue;
            }
        }
        by_topic
            .entry((h.tenant.clone(), h.user.clone(), topic))
            .or_default()
            .push((h.event_id.clone(), h.ts.timestamp_micros()));
    }
    for ((tenant, user, topic), members) in by_topic {
        let cluster = members.iter().map(|(id, _)| id).min().unwrap().clone();
        for (id, _) in &members {
            expected
                .clusters
                .insert((tenant.clone(), user.clone(), id.clone()), cluster.clone());
        }
        let times = members.iter().map(|(_, ts)| *ts);
        let span = times.clone().max().unwrap() - times.min().unwrap();
        let promoted = members.len() >= 3 && span >= 86_400_000_000;
        expected.measures.insert(
            (tenant.clone(), user.clone(), cluster.clone()),
            (members.len() as u32, span, promoted),
        );
        if promoted {
            promoted_topics
                .entry((tenant.clone(), user.clone()))
                .or_default()
                .insert(topic);
            expected
                .patterns
                .insert((tenant, user, cluster), members.len() as u32);
        }
    }
    promoted_topics
}

/// Teams (the latest assignment by time, then log offset), the preferences held by at least
/// [`HIERARCHY`]'s users of a team (one per topic, the topics being orthogonal) and by at least
/// its teams of the tenant.
fn hierarchy(
    log: &[Event],
    promoted_topics: &BTreeMap<(String, String), BTreeSet<String>>,
    expected: &mut Expected,
) {
    let mut latest: BTreeMap<(String, String), (i64, usize, Option<String>)> = BTreeMap::new();
    for (offset, e) in log.iter().enumerate() {
        if let Body::Control(c) = &e.body {
            let at = (e.header.ts.timestamp_micros(), offset, c.team.clone());
            let user = (e.header.tenant.clone(), e.header.user.clone());
            if latest.get(&user).is_none_or(|seen| *seen < at) {
                latest.insert(user, at);
            }
        }
    }
    expected.user_teams = latest
        .into_iter()
        .filter_map(|(user, (_, _, team))| Some((user, team?)))
        .collect();
    // (tenant, team, topic) -> users
    let mut holders: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
    for ((tenant, user), team) in &expected.user_teams {
        for topic in promoted_topics
            .get(&(tenant.clone(), user.clone()))
            .into_iter()
            .flatten()
        {
            holders
                .entry((tenant.clone(), team.clone(), topic.clone()))
                .or_default()
                .push(user.clone());
        }
    }
    let mut teams_by_topic: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for ((tenant, team, topic), users) in holders {
        if users.len() >= HIERARCHY.team_min_users {
            expected
                .team_preferences
                .insert(((tenant.clone(), team.clone()), users));
            teams_by_topic
                .entry((tenant, topic))
                .or_default()
                .push(team);
        }
    }
    for ((tenant, _), teams) in teams_by_topic {
        if teams.len() >= HIERARCHY.org_min_teams {
            expected.org_preferences.insert((tenant, teams));
        }
    }
}

/// Per (tenant, user, message) the latest vote (by time, then event id), tallied.
fn tally_votes(log: &[Event], expected: &mut Expected) {
    let mut latest: BTreeMap<(String, String, String), (i64, String, u32, String, i8)> =
        BTreeMap::new();
    for e in log {
        let (h, Body::Feedback(f)) = (&e.header, &e.body) else {
            continue;
        };
        let c = &f.context;
        let vote = (
            h.ts.timestamp_micros(),
            h.event_id.clone(),
            context_bucket(&c.intent, &c.sentiment, &c.time_of_day),
            f.skill_id.clone(),
            f.reward,
        );
        let key = (h.tenant.clone(), h.user.clone(), f.message_id.clone());
        if latest.get(&key).is_none_or(|seen| *seen < vote) {
            latest.insert(key, vote);
        }
    }
    for ((tenant, user, _), (_, _, bucket, skill, reward)) in latest {
        *expected
            .voted
            .entry((tenant.clone(), user.clone()))
            .or_default() += 1;
        let user_key = (tenant.clone(), user, bucket, skill.clone());
        for tally in [
            expected.skills.entry(user_key).or_default(),
            expected
                .population
                .entry((tenant, bucket, skill))
                .or_default(),
        ] {
            match reward {
                1 => tally.successes += 1,
                -1 => tally.failures += 1,
                _ => tally.neutral += 1,
            }
        }
    }
}

fn from_scratch(log: &[Event]) -> Expected {
    let mut sessions: BTreeMap<(String, String, String), Vec<Episode>> = BTreeMap::new();
    let mut assertions: BTreeMap<(String, String, String, String), Vec<FactAssertion>> =
        BTreeMap::new();
    let mut recalls = BTreeMap::new();
    for (offset, e) in log.iter().enumerate() {
        for r in InputRecord::from_event(e, offset as u64) {
            match r {
                InputRecord::Episode(k, ep) => sessions.entry(k).or_default().push(ep),
                InputRecord::Fact(k, a) => assertions.entry(k).or_default().push(a),
                InputRecord::Feedback(..) | InputRecord::Correction(..) => {}
                InputRecord::CorrectionNote(..) | InputRecord::TeamAssignment(..) => {}
                InputRecord::Summary(..) | InputRecord::Relation(..) => {}
                InputRecord::MemoryUse((t, u, _), used) => {
                    *recalls.entry((t, u, used.episode_id)).or_insert(0) += 1;
                }
            }
        }
    }
    let mut next = HashMap::new();
    let mut entities: BTreeMap<(String, String, String), (i64, i64, u64, EntityKind)> =
        BTreeMap::new();
    let mut co_mentions = BTreeMap::new();
    let mut mentions = BTreeSet::new();
    let mut user_episodes = BTreeMap::new();
    for ((tenant, user, _), mut eps) in sessions {
        eps.sort();
        for w in eps.windows(2) {
            next.insert(episode_key(&w[0].id), episode_key(&w[1].id));
        }
        *user_episodes
            .entry((tenant.clone(), user.clone()))
            .or_default() += eps.len();
        for ep in &eps {
            let found = extract_entities(&ep.content);
            for (name, kind) in &found {
                mentions.insert((
                    tenant.clone(),
                    user.clone(),
                    name.clone(),
                    episode_key(&ep.id),
                ));
                let e = entities
                    .entry((tenant.clone(), user.clone(), name.clone()))
                    .or_insert((i64::MAX, i64::MIN, 0, EntityKind::NounPhrase));
                e.0 = e.0.min(ep.ts_micros);
                e.1 = e.1.max(ep.ts_micros);
                e.2 += 1;
                e.3 = e.3.min(*kind);
            }
            for (a, b) in sentence_pairs(&ep.content) {
                *co_mentions
                    .entry((tenant.clone(), user.clone(), a, b))
                    .or_insert(0) += 1;
            }
        }
    }
    let facts = assertions
        .into_iter()
        .map(|(k, a)| (k, fact_versions(&a).into_iter().collect()))
        .collect();
    let mut expected = Expected {
        next,
        facts,
        entities,
        co_mentions,
        mentions,
        skills: BTreeMap::new(),
        population: BTreeMap::new(),
        clusters: BTreeMap::new(),
        patterns: BTreeMap::new(),
        measures: BTreeMap::new(),
        notes: log
            .iter()
            .filter_map(|e| {
                let h = &e.header;
                let key = (h.tenant.clone(), h.user.clone(), h.event_id.clone());
                asked_topic(e).map(|topic| (key, topic))
            })
            .collect(),
        voted: BTreeMap::new(),
        user_episodes,
        user_teams: BTreeMap::new(),
        recalls,
        team_preferences: BTreeSet::new(),
        org_preferences: BTreeSet::new(),
        summaries: log
            .iter()
            .filter_map(|e| match &e.body {
                Body::Summary(s) => {
                    let h = &e.header;
                    Some((
                        (h.tenant.clone(), h.user.clone(), h.event_id.clone()),
                        (s.content.clone(), episode_ids(&h.tenant, &s.covers)),
                    ))
                }
                _ => None,
            })
            .collect(),
        relations: log
            .iter()
            .filter_map(|e| match &e.body {
                Body::Relation(r) => {
                    let h = &e.header;
                    let triple = (
                        r.subject.clone(),
                        r.relation.clone(),
                        r.object.clone(),
                        r.time.clone(),
                    );
                    Some((
                        (h.tenant.clone(), h.user.clone(), h.event_id.clone()),
                        (triple, episode_ids(&h.tenant, &r.evidence)),
                    ))
                }
                _ => None,
            })
            .chain(log.iter().flat_map(reported_relations))
            .collect(),
    };
    tally_votes(log, &mut expected);
    let promoted_topics = cluster_corrections(log, &mut expected);
    hierarchy(log, &promoted_topics, &mut expected);
    expected
}

type RelationEntry = (
    (String, String, String),
    ((String, String, String, Option<String>), Vec<String>),
);

/// The relations a user's turn reports, read at ingest: `<event id>#rel<n>`, the turn its
/// evidence.
fn reported_relations(e: &Event) -> Vec<RelationEntry> {
    let h = &e.header;
    let Body::Interaction(i) = &e.body else {
        return Vec::new();
    };
    if i.role != Role::User {
        return Vec::new();
    }
    let meta = i
        .meta
        .as_ref()
        .and_then(|m| m.get("speaker"))
        .and_then(|s| s.as_str());
    let (speaker, text) = engram_operators::turn_text::speaker_and_body(&i.content, meta);
    engram_operators::relation_extraction::extract_relations(speaker, text, h.ts)
        .into_iter()
        .enumerate()
        .map(|(n, r)| {
            let id = format!("{}#rel{n}", h.event_id);
            (
                (h.tenant.clone(), h.user.clone(), id),
                (
                    (r.subject, r.relation, r.object, r.time),
                    episode_ids(&h.tenant, std::slice::from_ref(&h.event_id)),
                ),
            )
        })
        .collect()
}

fn published(views: &SharedViews) -> Expected {
    let v = views.read();
    let mut facts = BTreeMap::new();
    let mut entities = BTreeMap::new();
    let mut co_mentions = BTreeMap::new();
    let mut mentions = BTreeSet::new();
    let mut skills = BTreeMap::new();
    let mut clusters = BTreeMap::new();
    let mut patterns = BTreeMap::new();
    let mut measures = BTreeMap::new();
    let mut notes = BTreeMap::new();
    let mut voted = BTreeMap::new();
    let mut summaries = BTreeMap::new();
    let mut relations = BTreeMap::new();
    for ((tenant, user), m) in &v.users {
        for (event_id, r) in &m.relations {
            assert_eq!(event_id, &r.event_id);
            let triple = (
                r.subject.clone(),
                r.relation.clone(),
                r.object.clone(),
                r.time.clone(),
            );
            relations.insert(
                (tenant.clone(), user.clone(), event_id.clone()),
                (triple, r.evidence.clone()),
            );
        }
        for (event_id, s) in &m.summaries {
            assert_eq!(event_id, &s.event_id);
            summaries.insert(
                (tenant.clone(), user.clone(), event_id.clone()),
                (s.content.clone(), s.covers.clone()),
            );
        }
        for (id, note) in &m.corrections {
            assert_eq!(id, &note.correction_id);
            notes.insert(
                (tenant.clone(), user.clone(), id.clone()),
                note.instruction().unwrap_or(&note.original).to_string(),
            );
        }
        if let Some(style) = m.style {
            voted.insert((tenant.clone(), user.clone()), style.feedback_count);
        }
        for (id, cluster) in &m.correction_clusters {
            clusters.insert((tenant.clone(), user.clone(), id.clone()), cluster.clone());
        }
        for (cluster, p) in &m.patterns {
            patterns.insert((tenant.clone(), user.clone(), cluster.clone()), p.size);
        }
        for (cluster, c) in &m.cluster_measures {
            measures.insert(
                (tenant.clone(), user.clone(), cluster.clone()),
                (c.size, c.span_micros, c.promoted),
            );
        }
        // The confidence and discounted views count the same votes as the tallies: uses per
        // skill are its votes over all buckets, and discounting keeps every (bucket, skill).
        let mut uses: BTreeMap<&String, u64> = BTreeMap::new();
        for ((_, skill), tally) in &m.skills {
            *uses.entry(skill).or_default() += tally.votes();
        }
        let confidence_uses: BTreeMap<&String, u64> = m
            .skill_confidence
            .iter()
            .map(|(s, c)| (s, c.uses))
            .collect();
        assert_eq!(
            confidence_uses, uses,
            "skill confidences of {tenant}/{user}"
        );
        for c in m.skill_confidence.values() {
            assert!((0.2..=0.9).contains(&c.confidence()), "{c:?}");
        }
        assert!(
            m.discounted_skills.keys().eq(m.skills.keys()),
            "discounted tallies of {tenant}/{user}"
        );
        for ((bucket, skill), tally) in &m.skills {
            skills.insert(
                (tenant.clone(), user.clone(), *bucket, skill.clone()),
                *tally,
            );
        }
        for ((subject, attribute), versions) in &m.facts {
            facts.insert(
                (
                    tenant.clone(),
                    user.clone(),
                    subject.clone(),
                    attribute.clone(),
                ),
                versions.clone(),
            );
        }
        for (name, s) in &m.entities {
            entities.insert(
                (tenant.clone(), user.clone(), name.to_string()),
                (
                    s.first_seen_micros,
                    s.last_seen_micros,
                    s.mention_count,
                    s.kind,
                ),
            );
        }
        for (a, b, w) in m.co_mentions.iter() {
            co_mentions.insert(
                (tenant.clone(), user.clone(), a.to_string(), b.to_string()),
                w,
            );
        }
        for (entity, episode) in m.mentions.iter() {
            // read the other way, the edge is there too
            assert!(
                m.mentions.entities_of(episode).contains(entity),
                "{entity} is among the entities of an episode mentioning it"
            );
            mentions.insert((tenant.clone(), user.clone(), entity.to_string(), episode));
        }
    }
    Expected {
        next: v.next.clone().into_iter().collect(),
        facts,
        entities,
        co_mentions,
        mentions,
        skills,
        population: v.population.clone().into_iter().collect(),
        clusters,
        patterns,
        measures,
        notes,
        voted,
        user_episodes: v.user_episodes.clone().into_iter().collect(),
        user_teams: v.user_teams.clone().into_iter().collect(),
        recalls: v
            .users
            .iter()
            .flat_map(|((t, u), m)| {
                m.marks.iter().map(move |(episode, mark)| {
                    assert_eq!(mark.correct + mark.incorrect, 0, "no vote names an answer");
                    ((t.clone(), u.clone(), episode.clone()), mark.recalls)
                })
            })
            .collect(),
        team_preferences: v
            .team_preferences
            .iter()
            .flat_map(|(team, held)| held.values().map(|p| (team.clone(), p.users.clone())))
            .collect(),
        org_preferences: v
            .org_preferences
            .iter()
            .flat_map(|(tenant, held)| held.values().map(|p| (tenant.clone(), p.teams.clone())))
            .collect(),
        summaries,
        relations,
    }
}

/// Two users are enough for a team here (the stream has two), one team for the organisation.
const HIERARCHY: HierarchyParams = HierarchyParams {
    team_min_users: 2,
    org_min_teams: 1,
};

/// Runs one random stream; returns how many patterns the final views hold and how many team
/// preferences the checked views held (so the tests can check that the streams exercise
/// promotion and the hierarchy at all).
fn run(workers: usize, seed: u64) -> (usize, usize) {
    let log: Log = Default::default();
    let views = Arc::new(SharedViews::default());
    let (tx, rx) = std::sync::mpsc::channel();
    let source_log = log.clone();
    let handle = run_memory_dataflow(
        workers,
        move |worker, peers| {
            Box::new(VecSource {
                log: source_log.clone(),
                cursor: 0,
                worker,
                peers,
                pace: StdRng::seed_from_u64(seed * 1000 + worker as u64),
            }) as Box<dyn InputSource>
        },
        EngineClock::Events,
        DataflowParams {
            hierarchy: HIERARCHY,
            skills: SkillParams {
                feedback_half_life_days: Some(1.0),
            },
            ..DataflowParams::default()
        },
        views.clone(),
        tx,
    )
    .unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut stored = Stored::default();
    let mut patterns = 0;
    let mut team_preferences = 0;
    for chunk in 0..8 {
        {
            let mut l = log.lock().unwrap();
            for _ in 0..rng.gen_range(1..12) {
                let i = l.len();
                l.push(random_event(&mut rng, i));
            }
        }
        let end = log.lock().unwrap().len() as u64;
        let start = Instant::now();
        while handle.as_of() < end {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "dataflow stuck below {end}"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let want = from_scratch(&log.lock().unwrap());
        let got = published(&views);
        patterns = got.patterns.len();
        team_preferences += got.team_preferences.len();
        assert_eq!(got, want, "seed {seed}, chunk {chunk}, {workers} worker(s)");
        while let Ok(batch) = rx.try_recv() {
            take_in_log_order(&batch, &mut stored, seed);
        }
    }
    handle.stop();
    while let Ok(batch) = rx.try_recv() {
        take_in_log_order(&batch, &mut stored, seed);
    }
    let stored_episodes = stored.episodes.len();
    let interactions = log
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e.body, Body::Interaction(_)))
        .count();
    assert_eq!(
        stored_episodes, interactions,
        "each episode is emitted for storage once"
    );
    (patterns, team_preferences)
}

/// What came for storage so far: each episode's offset, and the offset of the last fact and
/// summary.
#[derive(Default)]
struct Stored {
    episodes: Vec<u64>,
    last_fact: Option<u64>,
    last_summary: Option<u64>,
}

/// Adds the batch to `stored`, checking that it comes in log order across batches too: the
/// writer stores what it receives in that order and skips offsets at or below the highest it
/// holds, so a record sent after a later one would never be stored. (Facts and summaries of
/// one event share its offset, and come in one batch.)
fn take_in_log_order(batch: &EpisodeBatch, stored: &mut Stored, seed: u64) {
    let mut after = |last: &mut Option<u64>, offsets: Vec<u64>, what: &str| {
        let from = last.map_or(0, |l| l + 1);
        assert!(
            offsets.is_sorted() && offsets.first().is_none_or(|&o| o >= from),
            "seed {seed}: {what} at offsets {offsets:?} sent after offset {last:?}"
        );
        if let Some(&o) = offsets.last() {
            *last = Some(o);
        }
    };
    let facts = batch.facts.iter().map(|(_, a)| a.log_offset).collect();
    after(&mut stored.last_fact, facts, "facts");
    let summaries = batch.summaries.iter().map(|(_, s)| s.log_offset).collect();
    after(&mut stored.last_summary, summaries, "summaries");
    for (_, e) in &batch.episodes {
        assert!(
            stored
                .episodes
                .last()
                .is_none_or(|&last| last < e.log_offset),
            "seed {seed}: episode at offset {} sent after offset {:?}",
            e.log_offset,
            stored.episodes.last()
        );
        stored.episodes.push(e.log_offset);
    }
}

#[test]
fn published_views_equal_from_scratch_one_worker() {
    let (patterns, teams): (Vec<usize>, Vec<usize>) = (0..24).map(|seed| run(1, seed)).unzip();
    assert!(
        patterns.iter().sum::<usize>() > 0,
        "no stream promoted a pattern"
    );
    assert!(
        teams.iter().sum::<usize>() > 0,
        "no team ever held a preference"
    );
}

#[test]
fn published_views_equal_from_scratch_two_workers() {
    let patterns: usize = (100..106).map(|seed| run(2, seed).0).sum();
    assert!(patterns > 0, "no stream promoted a pattern");
}
