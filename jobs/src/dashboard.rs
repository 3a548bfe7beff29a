//! The consolidation dashboard (SPEC §8): a page at `GET /dashboard` and its live stream at
//! `GET /v1/dashboard/stream` (server-sent events; the format is in `dashboard/PROTOCOL.md`).
//!
//! The stream follows the dataflow's change feed ([`SharedViews::subscribe`]): a snapshot of
//! the tenant's rows first, then, for every batch of view updates that touches the tenant, only
//! the rows those updates touched, re-read from the views (so a row is always a consistent
//! reading, and a slow page gets the latest rows, not a backlog). Pipeline health comes from one
//! sampler per server, once a second. The tenant is the API key's; nothing of another tenant is
//! ever read for a stream.

use crate::engine::Engine;
use crate::prompt::preference_wording;
use crate::server::{
    check_not_restricted, error, lifecycle_name, micros_to_rfc3339, presented_key, AuthTenant,
};
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use engram_dataflows::views::{UserMemory, ViewChanges, ViewUpdate};
use engram_dataflows::MemoryViews;
use engram_operators::math::beta::{discounted_user_posterior, thompson_shares, ShrinkageParams};
use engram_operators::math::decay::{lifecycle_transition_times, LifecycleThresholds};
use engram_operators::math::fusion::PromotionCriteria;
use engram_operators::math::skills::BASE_SKILLS;
use engram_operators::team_preferences::{OrgPreference, TeamPreference};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::{broadcast, watch};

/// The page: one self-contained HTML file (inline script and style, no external assets).
pub const PAGE: &str = include_str!("../dashboard/index.html");

/// Points of a preference's retention curve R(t) in its row.
const CURVE_POINTS: usize = 60;
/// Points of a skill's posterior density in its row (x = 0, 0.01, …, 1).
const DENSITY_POINTS: usize = 101;
/// Cells of the integral behind a skill's Thompson share.
const SHARE_GRID: usize = 1000;
/// Batches merged into one `changes` event at most (a page that falls behind catches up in
/// few events).
const MAX_BATCHES_PER_EVENT: usize = 256;
/// Fact versions, and corrections of a cluster, a row carries at most (the newest).
const ROW_HISTORY: usize = 20;
/// Separates subject and attribute in a fact row's key.
const FACT_KEY_SEPARATOR: char = '\u{1f}';

/// `GET /dashboard`: the page. It holds no data (the stream does), so it needs no key; the
/// policy allows nothing but its own inline code and requests to this server.
pub async fn get_page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                 connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; \
                 frame-ancestors 'none'",
            ),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        PAGE,
    )
        .into_response()
}

#[derive(Debug, Deserialize)]
pub struct StreamQuery {
    /// The user whose details (facts, clusters, preferences, skills) the stream carries; the
    /// tenant's user list and promotions come regardless.
    pub user: Option<String>,
}

/// `GET /v1/dashboard/stream`: the tenant's dashboard rows as server-sent events.
pub async fn get_stream(
    State(engine): State<Arc<Engine>>,
    Extension(auth): Extension<AuthTenant>,
    headers: HeaderMap,
    Query(query): Query<StreamQuery>,
) -> Response {
    let tenant = auth.0;
    // kept to check, once a second, that the key has not been revoked since
    let key = presented_key(&headers).unwrap_or_default().to_string();
    let user = query.user.filter(|u| !u.is_empty());
    if let Some(user) = &user {
        if let Err(reason) = engram_schemas::validate_name(user) {
            return error(StatusCode::BAD_REQUEST, "user", reason);
        }
        if let Err(resp) = check_not_restricted(&engine, &tenant, user) {
            return resp;
        }
    }
    let (snapshot, changes) = {
        let (views, changes) = engine.views.subscribe();
        (snapshot(&engine, &views, &tenant, user.as_deref()), changes)
    };
    let follower = Follower {
        engine: engine.clone(),
        key,
        tenant,
        user,
        last_seq: snapshot.seq,
        pending: Some(snapshot.event),
        changes,
        health: engine.health.subscribe(),
        closing: engine.closing(),
    };
    let events = futures::stream::unfold(follower, |mut f| async move {
        let event = f.next_event().await?;
        Some((Ok::<_, Infallible>(event), f))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// One page's stream: where it is in the change feed and what it shows.
struct Follower {
    engine: Arc<Engine>,
    /// The API key the stream was opened with: the stream ends when it is revoked.
    key: String,
    tenant: String,
    user: Option<String>,
    /// The last batch reflected in what was sent.
    last_seq: u64,
    /// An event to send before waiting for more (the snapshot).
    pending: Option<Event>,
    changes: broadcast::Receiver<Arc<ViewChanges>>,
    health: watch::Receiver<Option<Arc<Value>>>,
    closing: watch::Receiver<bool>,
}

impl Follower {
    /// The next event to send, or `None` when the stream ends (the server is closing).
    async fn next_event(&mut self) -> Option<Event> {
        if let Some(event) = self.pending.take() {
            return Some(event);
        }
        loop {
            if *self.closing.borrow() {
                return None;
            }
            tokio::select! {
                _ = self.closing.changed() => return None,
                changed = self.health.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                    let health = self.health.borrow_and_update().clone();
                    if self.engine.tenants.authenticate(&self.key).as_deref()
                        != Some(self.tenant.as_str())
                    {
                        tracing::info!(tenant = %self.tenant, "dashboard stream ended: its key was revoked");
                        return None;
                    }
                    if let Some(health) = health {
                        return Some(Event::default().event("health").data(health.to_string()));
                    }
                }
                received = self.changes.recv() => match received {
                    Ok(first) => {
                        let mut batches = vec![first];
                        while batches.len() < MAX_BATCHES_PER_EVENT {
                            match self.changes.try_recv() {
                                Ok(batch) => batches.push(batch),
                                Err(TryRecvError::Lagged(_)) => return Some(self.resnapshot()),
                                Err(_) => break,
                            }
                        }
                        if let Some(event) = self.changes_event(&batches) {
                            return Some(event);
                        }
                    }
                    Err(RecvError::Lagged(_)) => return Some(self.resnapshot()),
                    Err(RecvError::Closed) => return None,
                },
            }
        }
    }

    /// A new snapshot, for a page whose stream fell too far behind the change feed.
    fn resnapshot(&mut self) -> Event {
        let views = self.engine.views.read();
        let snapshot = snapshot(&self.engine, &views, &self.tenant, self.user.as_deref());
        self.last_seq = snapshot.seq;
        // batches already in the receiver up to this snapshot are skipped by their seq
        snapshot.event
    }

    /// The `changes` event for these batches: the rows their updates of this tenant touched,
    /// as they are in the views now. `None` when they touched nothing shown.
    fn changes_event(&mut self, batches: &[Arc<ViewChanges>]) -> Option<Event> {
        let mut touched = Touched::default();
        for batch in batches.iter().filter(|b| b.seq > self.last_seq) {
            for (update, diff) in &batch.updates {
                if update.tenant() == self.tenant {
                    touched.note(update, *diff, self.user.as_deref());
                }
            }
        }
        let last = batches.last()?;
        self.last_seq = self.last_seq.max(last.seq);
        if touched.is_empty() {
            return None;
        }
        let views = self.engine.views.read();
        let body = touched.rows(&self.engine, &views, &self.tenant, self.user.as_deref());
        Some(Event::default().event("changes").data(body.to_string()))
    }
}

/// The rows (and promotions) a run of view updates touched.
#[derive(Default)]
struct Touched {
    users: BTreeSet<String>,
    facts: BTreeSet<(String, String)>,
    entities: BTreeSet<String>,
    clusters: BTreeSet<String>,
    corrections: BTreeSet<String>,
    preferences: BTreeSet<String>,
    buckets: BTreeSet<u32>,
    population_buckets: BTreeSet<u32>,
    /// `(user, cluster)` → summed diff of its pattern records: +1 is a promotion.
    patterns: BTreeMap<(String, String), isize>,
    /// Team preferences: `(team, preference)` → summed diff.
    team_preferences: BTreeMap<(String, TeamPreference), isize>,
    /// Organisation preferences → summed diff.
    org_preferences: BTreeMap<OrgPreference, isize>,
    /// Teams users joined or left (their rows count the members).
    teams: BTreeSet<String>,
}

impl Touched {
    fn is_empty(&self) -> bool {
        self.users.is_empty()
            && self.buckets.is_empty()
            && self.population_buckets.is_empty()
            && self.patterns.is_empty()
            && self.team_preferences.is_empty()
            && self.org_preferences.is_empty()
    }

    /// Notes what one update of the tenant touches; details only for `selected`.
    fn note(&mut self, update: &ViewUpdate, diff: isize, selected: Option<&str>) {
        match update {
            ViewUpdate::PopulationTally((_, bucket, _), _) => {
                self.population_buckets.insert(*bucket);
                return;
            }
            ViewUpdate::TeamPreference((_, team), p) => {
                *self
                    .team_preferences
                    .entry((team.clone(), (**p).clone()))
                    .or_default() += diff;
                return;
            }
            ViewUpdate::OrgPreference(_, p) => {
                *self.org_preferences.entry((**p).clone()).or_default() += diff;
                return;
            }
            ViewUpdate::UserTeam(_, team) => {
                self.teams.insert(team.clone());
            }
            _ => {}
        }
        let Some(user) = update.user() else { return };
        if let ViewUpdate::Pattern((_, u), p) = update {
            *self
                .patterns
                .entry((u.clone(), p.cluster_id.clone()))
                .or_default() += diff;
        }
        if matches!(update, ViewUpdate::NextEdge(..) | ViewUpdate::CoMention(..)) {
            return; // no row shows them
        }
        self.users.insert(user.to_string());
        if selected != Some(user) {
            return;
        }
        match update {
            ViewUpdate::Fact((_, _, subject, attribute), _) => {
                self.facts.insert((subject.clone(), attribute.clone()));
            }
            ViewUpdate::Entity((_, _, name), _) => {
                self.entities.insert(name.clone());
            }
            ViewUpdate::ClusterMember(_, (correction, cluster)) => {
                self.clusters.insert(cluster.clone());
                self.preferences.insert(cluster.clone());
                self.corrections.insert(correction.clone());
            }
            ViewUpdate::ClusterMeasure(_, m) => {
                self.clusters.insert(m.cluster_id.clone());
            }
            ViewUpdate::Pattern(_, p) => {
                self.clusters.insert(p.cluster_id.clone());
                self.preferences.insert(p.cluster_id.clone());
            }
            ViewUpdate::PreferenceTrace((_, cluster), _)
            | ViewUpdate::PreferenceState((_, cluster), _)
            | ViewUpdate::Contradiction((_, cluster), _) => {
                self.preferences.insert(cluster.clone());
            }
            // the words of a correction show in its cluster's row and its preference's
            ViewUpdate::CorrectionNote(_, note) => {
                self.corrections.insert(note.correction_id.clone());
            }
            ViewUpdate::SkillTally((_, _, bucket, _), _)
            | ViewUpdate::DiscountedSkillTally((_, _, bucket, _), _) => {
                self.buckets.insert(*bucket);
            }
            _ => {}
        }
    }

    /// Team and organisation preferences that appeared, unless they only took over one that
    /// went at the same time with members in common (renamed by a new smallest member).
    fn group_promotions(&self, views: &MemoryViews, tenant: &str) -> Vec<Value> {
        let engine_time = micros_to_rfc3339(views.engine_time_secs as i64 * 1_000_000);
        let mut out = Vec::new();
        for ((team, p), _) in self.team_preferences.iter().filter(|(_, n)| **n > 0) {
            let renamed = self.team_preferences.iter().any(|((t, old), n)| {
                *n < 0 && t == team && old.members.iter().any(|m| p.members.contains(m))
            });
            if !renamed {
                out.push(json!({
                    "level": "team", "team": team, "cluster_id": format!("team/{team}/{}", p.id),
                    "held_by": p.users, "confidence": milli(p.confidence_milli),
                    "text": team_text(views, tenant, p), "views_as_of": views.as_of,
                    "engine_time": engine_time,
                }));
            }
        }
        for (p, _) in self.org_preferences.iter().filter(|(_, n)| **n > 0) {
            let renamed = self
                .org_preferences
                .iter()
                .any(|(old, n)| *n < 0 && old.teams.iter().any(|t| p.teams.contains(t)));
            if !renamed {
                out.push(json!({
                    "level": "org", "cluster_id": format!("org/{}", p.id),
                    "held_by": p.teams, "confidence": milli(p.confidence_milli),
                    "text": org_text(views, tenant, p), "views_as_of": views.as_of,
                    "engine_time": engine_time,
                }));
            }
        }
        out
    }

    /// The `changes` body: the touched rows as they are in `views` now.
    fn rows(
        mut self,
        engine: &Engine,
        views: &MemoryViews,
        tenant: &str,
        selected: Option<&str>,
    ) -> Value {
        let mut upserts = Vec::new();
        let mut deletes = Vec::new();
        let mut put = |table: &str, key: String, value: Option<Value>| match value {
            Some(value) => upserts.push(json!({"table": table, "key": key, "value": value})),
            None => deletes.push(json!({"table": table, "key": key})),
        };
        for user in &self.users {
            let row = (!engine.ingestor.is_restricted(tenant, user))
                .then(|| user_row(views, tenant, user))
                .flatten();
            put("user", user.clone(), row);
        }
        if let Some(user) = selected {
            let empty = UserMemory::default();
            let memory = views
                .users
                .get(&(tenant.to_string(), user.to_string()))
                .unwrap_or(&empty);
            for (subject, attribute) in &self.facts {
                let key = format!("{subject}{FACT_KEY_SEPARATOR}{attribute}");
                put("fact", key, fact_row(memory, subject, attribute));
            }
            for name in &self.entities {
                put("entity", name.clone(), entity_row(memory, name));
            }
            for correction in &self.corrections {
                if let Some(cluster) = memory.correction_clusters.get(correction) {
                    self.clusters.insert(cluster.clone());
                    self.preferences.insert(cluster.clone());
                }
            }
            for cluster in &self.clusters {
                put("cluster", cluster.clone(), cluster_row(memory, cluster));
            }
            for cluster in &self.preferences {
                let row = preference_row(memory, cluster, views.engine_time_secs as i64);
                put("preference", cluster.clone(), row);
            }
            // a tenant-wide change moves the user's prior only in buckets they have votes in
            let own: BTreeSet<u32> = memory.skills.keys().map(|(b, _)| *b).collect();
            let buckets = self
                .buckets
                .iter()
                .chain(self.population_buckets.iter().filter(|b| own.contains(b)));
            for bucket in buckets.collect::<BTreeSet<_>>() {
                let rows = skill_rows(views, tenant, memory, *bucket);
                if rows.is_empty() {
                    for skill in BASE_SKILLS.iter() {
                        put("skill", format!("{bucket}/{}", skill.id), None);
                    }
                }
                for (key, row) in rows {
                    put("skill", key, Some(row));
                }
            }
        }
        // A pattern that appears is a promotion, unless it only took over a pattern that went
        // at the same time: a cluster is named by its smallest member, so a promoted cluster
        // that gains a smaller member is renamed (the old name is now one of its members).
        let retracted: Vec<&(String, String)> = self
            .patterns
            .iter()
            .filter(|(_, net)| **net < 0)
            .map(|(key, _)| key)
            .collect();
        let mut team_keys: BTreeSet<(String, String)> = BTreeSet::new();
        for (team, p) in self.team_preferences.keys() {
            team_keys.insert((team.clone(), p.id.clone()));
        }
        for team in &self.teams {
            let held = views
                .team_preferences
                .get(&(tenant.to_string(), team.clone()));
            for id in held.into_iter().flat_map(|h| h.keys()) {
                team_keys.insert((team.clone(), id.clone()));
            }
        }
        for (team, id) in &team_keys {
            let key = format!("team/{team}/{id}");
            put("team", key, team_row(views, tenant, team, id));
        }
        let mut org_ids: BTreeSet<&String> = self.org_preferences.keys().map(|p| &p.id).collect();
        if !self.teams.is_empty() {
            // the rows count the tenant's teams
            org_ids.extend(
                views
                    .org_preferences
                    .get(tenant)
                    .into_iter()
                    .flat_map(|h| h.keys()),
            );
        }
        for id in org_ids {
            put("team", format!("org/{id}"), org_row(views, tenant, id));
        }
        let mut promotions: Vec<Value> = self
            .patterns
            .iter()
            .filter(|(_, net)| **net > 0)
            .filter_map(|((user, cluster), _)| {
                let memory = views.users.get(&(tenant.to_string(), user.clone()))?;
                let p = memory.patterns.get(cluster)?;
                let renamed = retracted.iter().any(|(u, old)| {
                    u == user && memory.correction_clusters.get(old) == Some(cluster)
                });
                if renamed {
                    return None;
                }
                Some(json!({
                    "level": "user", "user": user, "cluster_id": cluster, "size": p.size,
                    "coherence": milli(p.coherence_milli), "span_days": days(p.span_micros),
                    "confidence": milli(p.confidence_milli), "views_as_of": views.as_of,
                    "engine_time": micros_to_rfc3339(views.engine_time_secs as i64 * 1_000_000),
                }))
            })
            .collect();
        promotions.extend(self.group_promotions(views, tenant));
        json!({
            "seq": views.seq, "views_as_of": views.as_of,
            "engine_time": micros_to_rfc3339(views.engine_time_secs as i64 * 1_000_000),
            "engine_time_secs": views.engine_time_secs,
            "upserts": upserts, "deletes": deletes, "promotions": promotions,
        })
    }
}

struct Snapshot {
    seq: u64,
    event: Event,
}

/// Every row the tenant's page shows: all its users, and the details of `selected`.
fn snapshot(
    engine: &Engine,
    views: &MemoryViews,
    tenant: &str,
    selected: Option<&str>,
) -> Snapshot {
    let mut rows = Vec::new();
    let users: BTreeSet<&String> = views
        .users
        .keys()
        .chain(views.user_episodes.keys())
        .chain(views.user_teams.keys())
        .filter(|(t, _)| t == tenant)
        .map(|(_, u)| u)
        .collect();
    for user in users {
        if engine.ingestor.is_restricted(tenant, user) {
            continue;
        }
        if let Some(row) = user_row(views, tenant, user) {
            rows.push(json!({"table": "user", "key": user, "value": row}));
        }
    }
    if let Some(memory) = selected.and_then(|u| views.users.get(&(tenant.to_string(), u.into()))) {
        for (subject, attribute) in memory.facts.keys() {
            if let Some(row) = fact_row(memory, subject, attribute) {
                let key = format!("{subject}{FACT_KEY_SEPARATOR}{attribute}");
                rows.push(json!({"table": "fact", "key": key, "value": row}));
            }
        }
        let mut names: Vec<_> = memory.entities.keys().collect();
        names.sort_unstable();
        for name in names {
            if let Some(row) = entity_row(memory, name) {
                rows.push(json!({"table": "entity", "key": &**name, "value": row}));
            }
        }
        let clusters: BTreeSet<&String> = memory.correction_clusters.values().collect();
        for cluster in clusters {
            if let Some(row) = cluster_row(memory, cluster) {
                rows.push(json!({"table": "cluster", "key": cluster, "value": row}));
            }
        }
        for cluster in memory.preferences.keys() {
            if let Some(row) = preference_row(memory, cluster, views.engine_time_secs as i64) {
                rows.push(json!({"table": "preference", "key": cluster, "value": row}));
            }
        }
        let buckets: BTreeSet<u32> = memory.skills.keys().map(|(b, _)| *b).collect();
        for bucket in buckets {
            for (key, row) in skill_rows(views, tenant, memory, bucket) {
                rows.push(json!({"table": "skill", "key": key, "value": row}));
            }
        }
    }
    let thresholds = LifecycleThresholds::default();
    let criteria = PromotionCriteria::default();
    let body = json!({
        "seq": views.seq, "tenant": tenant, "user": selected, "views_as_of": views.as_of,
        "engine_time": micros_to_rfc3339(views.engine_time_secs as i64 * 1_000_000),
        "engine_time_secs": views.engine_time_secs,
        "thresholds": {"inactive_below": thresholds.inactive_below,
            "archived_below": thresholds.archived_below},
        "promotion": {"min_size": criteria.min_corrections,
            "min_coherence": criteria.min_coherence,
            "min_span_days": criteria.min_span_secs / 86_400.0},
        "hierarchy": {"team_min_users": engine.config.hierarchy.team_min_users,
            "org_min_teams": engine.config.hierarchy.org_min_teams},
        "rows": rows,
    });
    Snapshot {
        seq: views.seq,
        event: Event::default().event("snapshot").data(body.to_string()),
    }
}

fn milli(x: u16) -> f64 {
    f64::from(x) / 1000.0
}

fn days(micros: i64) -> f64 {
    micros as f64 / 86_400e6
}

/// A user's counts, or `None` when the views hold nothing of them.
fn user_row(views: &MemoryViews, tenant: &str, user: &str) -> Option<Value> {
    let key = (tenant.to_string(), user.to_string());
    let episodes = views.user_episodes.get(&key).copied().unwrap_or(0);
    let memory = views.users.get(&key);
    let team = views.user_teams.get(&key);
    if episodes == 0 && memory.is_none() && team.is_none() {
        return None;
    }
    let empty = UserMemory::default();
    let m = memory.unwrap_or(&empty);
    let versions = m.facts.values().map(|v| v.len()).sum::<usize>();
    let current = m
        .facts
        .values()
        .flat_map(|v| v.iter())
        .filter(|v| v.valid_to.is_none())
        .count();
    let mut states: BTreeMap<&str, usize> =
        [("active", 0), ("inactive", 0), ("archived", 0)].into();
    for state in m.preference_states.values() {
        *states.entry(lifecycle_name(*state)).or_default() += 1;
    }
    let clusters: BTreeSet<&String> = m.correction_clusters.values().collect();
    Some(json!({
        "user": user, "team": team,
        "episodes": episodes, "entities": m.entities.len(), "facts": versions,
        "current_facts": current, "superseded_facts": versions - current,
        "corrections": m.corrections.len(), "clusters": clusters.len(),
        "patterns": m.patterns.len(), "preferences": states,
    }))
}

/// How a team preference is worded (by the first member whose correction says what it wants).
fn team_text(views: &MemoryViews, tenant: &str, p: &TeamPreference) -> Option<String> {
    p.members
        .iter()
        .find_map(|(user, cluster)| preference_wording(views, tenant, user, cluster))
}

fn org_text(views: &MemoryViews, tenant: &str, p: &OrgPreference) -> Option<String> {
    p.members.iter().find_map(|(team, id)| {
        let held = views
            .team_preferences
            .get(&(tenant.to_string(), team.clone()))?;
        team_text(views, tenant, held.get(id)?)
    })
}

/// A preference team `team` holds, or `None` when it holds no preference `id`.
fn team_row(views: &MemoryViews, tenant: &str, team: &str, id: &str) -> Option<Value> {
    let p = views
        .team_preferences
        .get(&(tenant.to_string(), team.to_string()))?
        .get(id)?;
    let members = views
        .user_teams
        .iter()
        .filter(|((t, _), tm)| t == tenant && tm.as_str() == team)
        .count();
    Some(json!({
        "level": "team", "team": team, "id": id, "text": team_text(views, tenant, p),
        "held_by": p.users, "of": members, "patterns": p.members.len(),
        "confidence": milli(p.confidence_milli),
    }))
}

/// A preference the organisation holds, or `None`.
fn org_row(views: &MemoryViews, tenant: &str, id: &str) -> Option<Value> {
    let p = views.org_preferences.get(tenant)?.get(id)?;
    let teams: BTreeSet<&String> = views
        .user_teams
        .iter()
        .filter(|((t, _), _)| t == tenant)
        .map(|(_, team)| team)
        .collect();
    Some(json!({
        "level": "org", "team": null, "id": id, "text": org_text(views, tenant, p),
        "held_by": p.teams, "of": teams.len(), "patterns": p.members.len(),
        "confidence": milli(p.confidence_milli),
    }))
}

/// The latest [`ROW_HISTORY`] versions of one `(subject, attribute)`, oldest first, and how
/// many there are (a row is re-sent whenever a version is added: it must stay small).
fn fact_row(memory: &UserMemory, subject: &str, attribute: &str) -> Option<Value> {
    let versions = memory
        .facts
        .get(&(subject.to_string(), attribute.to_string()))?;
    let total = versions.len();
    let mut versions: Vec<_> = versions.iter().collect();
    versions.sort_by_key(|v| (v.valid_from, v.fact_id.clone()));
    let versions: Vec<Value> = versions
        .into_iter()
        .skip(total.saturating_sub(ROW_HISTORY))
        .map(|v| {
            json!({"id": v.fact_id, "value": v.value,
                "valid_from": micros_to_rfc3339(v.valid_from),
                "valid_to": v.valid_to.map(micros_to_rfc3339),
                "superseded_by": v.superseded_by})
        })
        .collect();
    Some(
        json!({"subject": subject, "attribute": attribute, "versions": versions,
        "versions_total": total}),
    )
}

fn entity_row(memory: &UserMemory, name: &str) -> Option<Value> {
    let s = memory.entities.get(name)?;
    Some(json!({
        "name": name, "kind": format!("{:?}", s.kind).to_lowercase(),
        "mentions": s.mention_count,
        "first_seen": micros_to_rfc3339(s.first_seen_micros),
        "last_seen": micros_to_rfc3339(s.last_seen_micros),
    }))
}

/// A correction's words as the dashboard shows them: what it asks for, else the original.
fn correction_text(memory: &UserMemory, id: &str) -> Option<String> {
    let note = memory.corrections.get(id)?;
    Some(note.instruction().unwrap_or(&note.original).to_string())
}

/// A cluster's measurements and members, or `None` when it has no members.
fn cluster_row(memory: &UserMemory, cluster: &str) -> Option<Value> {
    let members: Vec<&String> = memory
        .correction_clusters
        .iter()
        .filter(|(_, c)| c.as_str() == cluster)
        .map(|(id, _)| id)
        .collect();
    if members.is_empty() {
        return None;
    }
    // the newest few: the row is re-sent whenever the cluster changes
    let mut newest: Vec<(&String, i64)> = members
        .iter()
        .map(|id| {
            (
                *id,
                memory
                    .corrections
                    .get(*id)
                    .map_or(i64::MIN, |n| n.ts_micros),
            )
        })
        .collect();
    newest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let corrections: Vec<Value> = newest
        .iter()
        .take(ROW_HISTORY)
        .map(|(id, _)| {
            let ts = memory
                .corrections
                .get(*id)
                .map(|n| micros_to_rfc3339(n.ts_micros));
            json!({"id": id, "ts": ts, "text": correction_text(memory, id)})
        })
        .collect();
    let m = memory.cluster_measures.get(cluster);
    Some(json!({
        "cluster_id": cluster,
        "size": m.map_or(members.len() as u32, |m| m.size),
        "coherence": m.map(|m| milli(m.coherence_milli)),
        "span_days": m.map(|m| days(m.span_micros)),
        "confidence": m.map(|m| milli(m.confidence_milli)),
        "promoted": memory.patterns.contains_key(cluster),
        "corrections": corrections,
    }))
}

/// A preference's lifecycle with its retention curve, or `None` when the cluster has none.
fn preference_row(memory: &UserMemory, cluster: &str, now: i64) -> Option<Value> {
    let trace = memory.preferences.get(cluster)?;
    let thresholds = LifecycleThresholds::default();
    let (inactive_after, archived_after) =
        lifecycle_transition_times(trace.stability_secs as f64, &thresholds);
    let start = trace.last_activation_secs;
    let at = |after: f64| after.is_finite().then(|| start + after.round() as i64);
    let (inactive_at, archived_at) = (at(inactive_after), at(archived_after));
    // from the last activation until a little past archival (or now, if later)
    let end = archived_at.unwrap_or(start + 90 * 86_400).max(now);
    let end = start + ((end - start) as f64 * 1.15).ceil() as i64 + 1;
    let curve: Vec<[f64; 2]> = (0..CURVE_POINTS)
        .map(|i| {
            let t = start + (end - start) * i as i64 / (CURVE_POINTS as i64 - 1);
            [t as f64, trace.retention_at(t)]
        })
        .collect();
    let next = trace.changes_after(now, &thresholds).first().map(|(at, to)| {
        json!({"to": lifecycle_name(*to), "at": micros_to_rfc3339(at * 1_000_000), "at_secs": at})
    });
    Some(json!({
        "cluster_id": cluster,
        "text": correction_text(memory, cluster),
        "state": memory.preference_states.get(cluster).map(|s| lifecycle_name(*s)),
        "retention": trace.retention_at(now),
        "stability_days": trace.stability_secs as f64 / 86_400.0,
        "last_activation": micros_to_rfc3339(start * 1_000_000),
        "last_activation_secs": start,
        "activations": trace.activations,
        "confidence": memory.patterns.get(cluster).map(|p| milli(p.confidence_milli)),
        "inactive_at_secs": inactive_at, "archived_at_secs": archived_at,
        "next_transition": next, "curve": curve,
        "contradiction": memory.contradictions.get(cluster),
    }))
}

/// One row per base skill in `bucket`: the user's posterior (their votes, shrunk towards the
/// tenant's other users, as skill selection draws from it), its density, and its Thompson
/// share among the ten. Empty when the user has no votes in the bucket.
fn skill_rows(
    views: &MemoryViews,
    tenant: &str,
    memory: &UserMemory,
    bucket: u32,
) -> Vec<(String, Value)> {
    if !memory.skills.keys().any(|(b, _)| *b == bucket) {
        return Vec::new();
    }
    let shrinkage = ShrinkageParams::default();
    let rows: Vec<_> = BASE_SKILLS
        .iter()
        .map(|skill| {
            let own = memory
                .skills
                .get(&(bucket, skill.id.to_string()))
                .copied()
                .unwrap_or_default();
            let population = views
                .population
                .get(&(tenant.to_string(), bucket, skill.id.to_string()))
                .copied()
                .unwrap_or(own);
            // as skill selection draws from it: discounted votes where that is on
            let weighted = memory
                .discounted_skills
                .get(&(bucket, skill.id.to_string()))
                .map_or(own.counts(), |d| d.at(views.engine_time_secs as i64));
            let posterior =
                discounted_user_posterior(own.counts(), weighted, population.counts(), &shrinkage);
            (skill, own, population, posterior)
        })
        .collect();
    let posteriors: Vec<_> = rows.iter().map(|(_, _, _, p)| *p).collect();
    let shares = thompson_shares(&posteriors, SHARE_GRID);
    rows.into_iter()
        .zip(shares)
        .map(|((skill, own, population, posterior), share)| {
            let (low, high) = posterior.credible_interval(0.95);
            let density: Vec<f64> = (0..DENSITY_POINTS)
                .map(|i| posterior.density(i as f64 / (DENSITY_POINTS - 1) as f64))
                .map(|d| if d.is_finite() { d } else { 0.0 })
                .collect();
            (
                format!("{bucket}/{}", skill.id),
                json!({
                    "bucket": bucket, "skill_id": skill.id, "name": skill.name,
                    "successes": own.successes, "failures": own.failures, "neutral": own.neutral,
                    "population": {"successes": population.successes,
                        "failures": population.failures},
                    "alpha": posterior.alpha, "beta": posterior.beta, "mean": posterior.mean(),
                    "ci95": [low, high], "density": density, "thompson_share": share,
                }),
            )
        })
        .collect()
}

/// Starts the once-a-second pipeline health sampler of `engine` (it ends with the engine or
/// when the server closes). A sample reads Lance only while some page follows it.
pub fn spawn_health_sampler(engine: &Arc<Engine>) {
    let weak = Arc::downgrade(engine);
    let mut closing = engine.closing();
    tokio::spawn(async move {
        let mut sampler = HealthSampler::default();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = closing.changed() => return,
            }
            let Some(engine) = weak.upgrade() else { return };
            let followed = engine.health.receiver_count() > 0;
            let sample = sampler.sample(&engine, followed).await;
            if let Some(sample) = sample {
                engine.health.send_replace(Some(Arc::new(sample)));
            }
        }
    });
}

/// Keeps what the health figures are computed from: the log end over the last minutes.
#[derive(Default)]
struct HealthSampler {
    /// `(when, log end)`, oldest first, at most [`HEALTH_HISTORY`] long.
    history: VecDeque<(Instant, u64)>,
}

/// Samples kept for the lag in seconds: ten minutes at one a second.
const HEALTH_HISTORY: usize = 600;

impl HealthSampler {
    /// Records the log end now; returns the health event body when `followed`.
    async fn sample(&mut self, engine: &Engine, followed: bool) -> Option<Value> {
        let progress = engine.progress();
        let now = Instant::now();
        let rate = self.history.back().map(|(at, end)| {
            let secs = now.duration_since(*at).as_secs_f64().max(1e-3);
            progress.log_end.saturating_sub(*end) as f64 / secs
        });
        self.history.push_back((now, progress.log_end));
        if self.history.len() > HEALTH_HISTORY {
            self.history.pop_front();
        }
        if !followed {
            return None;
        }
        // The oldest event not yet in the views was appended before the first sample that saw
        // the log end past it: the views have lagged at least since then.
        let lag_seconds = if progress.views_as_of >= progress.log_end {
            0.0
        } else {
            self.history
                .iter()
                .find(|(_, end)| *end > progress.views_as_of)
                .map_or(0.0, |(at, _)| now.duration_since(*at).as_secs_f64())
        };
        let (indexes, unindexed_rows) = engine.store.index_status().await.unwrap_or_default();
        let passages = engine.recall.passages.as_ref().map(|p| p.row_count());
        let engine_time_secs = engine.views.read().engine_time_secs;
        Some(json!({
            "at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "log_end": progress.log_end, "views_as_of": progress.views_as_of,
            "lag_events": progress.log_end.saturating_sub(progress.views_as_of),
            "lag_seconds": lag_seconds, "events_per_sec": rate.unwrap_or(0.0),
            "rejected": engine.ingestor.rejects().count(),
            "episodes": progress.episodes, "pending_episodes": progress.pending_episodes,
            "passages": passages, "unindexed_rows": unindexed_rows,
            "indexes": indexes.into_iter()
                .map(|(name, rows)| json!({"name": name, "indexed_rows": rows}))
                .collect::<Vec<_>>(),
            "lance_watermark": progress.lance_watermark,
            "engine_time": micros_to_rfc3339(engine_time_secs as i64 * 1_000_000),
            "engine_time_secs": engine_time_secs,
        }))
    }
}
