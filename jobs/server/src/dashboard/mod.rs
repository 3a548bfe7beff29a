//! The consolidation dashboard (SPEC §8): a page at `GET /dashboard` and its live stream at
//! `GET /v1/dashboard/stream` (server-sent events; the format is in `jobs/server/dashboard/PROTOCOL.md`).
//!
//! The stream follows the dataflow's change feed ([`SharedViews::subscribe`]): a snapshot of
//! the tenant's rows first, then, for every batch of view updates that touches the tenant, only
//! the rows those updates touched, re-read from the views (so a row is always a consistent
//! reading, and a slow page gets the latest rows, not a backlog). Pipeline health comes from one
//! sampler per server, once a second. The tenant is the API key's; nothing of another tenant is
//! ever read for a stream.

mod rows;

use crate::auth::{check_not_restricted, presented_key, AuthTenant};
use crate::error::{error, too_many_requests};
use crate::stream_slots::{StreamSlot, StreamSlots};
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use engram_dataflows::views::{UserMemory, ViewChanges, ViewUpdate};
use engram_dataflows::MemoryViews;
use engram_engine::read_model::micros_to_rfc3339;
use engram_engine::Engine;
use engram_operators::math::decay::LifecycleThresholds;
use engram_operators::math::fusion::PromotionCriteria;
use engram_operators::math::skills::BASE_SKILLS;
use engram_operators::team_preferences::{OrgPreference, TeamPreference};
use rows::{
    cluster_row, days, entity_row, fact_row, milli, org_row, org_text, preference_row, skill_rows,
    team_row, team_text, user_row,
};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::{broadcast, watch};

/// The page: one self-contained HTML file (inline script and style, no external assets).
pub const PAGE: &str = include_str!("../../dashboard/index.html");

/// Batches merged into one `changes` event at most (a page that falls behind catches up in
/// few events).
const MAX_BATCHES_PER_EVENT: usize = 256;
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

/// `GET /v1/dashboard/stream`: the tenant's dashboard rows as server-sent events; `429` when
/// the tenant, or the server, has as many streams open as `[limits]` allows.
pub async fn get_stream(
    State(engine): State<Arc<Engine>>,
    Extension(auth): Extension<AuthTenant>,
    Extension(slots): Extension<Arc<StreamSlots>>,
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
    let slot = match slots.try_open(&tenant) {
        Ok(slot) => slot,
        // a place frees when any stream ends: no better wait to offer than the least
        Err(reached) => return too_many_requests(reached, 1),
    };
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
        _slot: slot,
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
    /// This stream's place under the caps on streams, freed when the stream ends.
    _slot: StreamSlot,
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
                if update.tenant() == Some(self.tenant.as_str()) {
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
        if matches!(
            update,
            ViewUpdate::NextEdge(..) | ViewUpdate::CoMention(..) | ViewUpdate::Mention(..)
        ) {
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
                put("entity", name.clone(), entity_row(memory, tenant, name));
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
    for user in views.tenant_users(tenant) {
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
            if let Some(row) = entity_row(memory, tenant, name) {
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
