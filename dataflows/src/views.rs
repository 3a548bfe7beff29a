//! The maintained views as the serving side reads them: one consistent snapshot at one
//! timestamp (an input-log offset), never a mix of two.

use engram_operators::correction_clusters::{ClusterMeasure, PatternRecord, UserKey};
use engram_operators::correction_notes::CorrectionNote;
use engram_operators::entities::{CoMentionKey, EntityKey, EntityStats};
use engram_operators::facts::{FactKey, FactVersion};
use engram_operators::lifecycle::{PreferenceKey, PreferenceTrace};
use engram_operators::math::decay::{LifecycleState, LifecycleThresholds};
use engram_operators::memories::{MemoryId, RetrievalTrait};
use engram_operators::memory_marks::{MemoryKey, MemoryMark};
use engram_operators::memory_retention::MemoryTrace;
use engram_operators::preference_contradictions::Contradiction;
use engram_operators::relations::RelationNode;
use engram_operators::retrieval_preferences::{TraitKey, TraitTally};
use engram_operators::skill_confidence::{DiscountedTally, SkillConfidence, UserSkillKey};
use engram_operators::skill_feedback::{FeedbackTally, PopulationKey, SkillKey};
use engram_operators::style_preferences::UserStyle;
use engram_operators::summaries::SummaryNode;
use engram_operators::team_preferences::{OrgPreference, TeamKey, TeamPreference};
use engram_operators::SessionKey;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock, RwLockReadGuard};
use tokio::sync::broadcast;

pub use crate::co_mentions::CoMentions;
use crate::keyed_view::set_or_clear;
pub use crate::keyed_view::ViewMap;
pub use crate::mentions::Mentions;
use crate::params::RetentionParams;

/// The per-user maps of the views, ordered by `(tenant, user)` so that one tenant's users are
/// one range ([`MemoryViews::tenant_users`]): a tenant's dashboard or status walks its own
/// users under the views' read lock, not every tenant's.
pub type UserMap<V> = BTreeMap<(String, String), V>;

/// The entries of `tenant` in `map`, by user: one range of the ordered keys.
pub fn tenant_entries<'a, 't, V>(
    map: &'a UserMap<V>,
    tenant: &'t str,
) -> impl Iterator<Item = (&'a String, &'a V)> + use<'a, 't, V> {
    map.range((tenant.to_string(), String::new())..)
        .take_while(move |((t, _), _)| t == tenant)
        .map(|((_, user), value)| (user, value))
}

/// Every view, as of `as_of`: all input below that log offset is reflected, none above.
#[derive(Debug, Clone, Default)]
pub struct MemoryViews {
    pub as_of: u64,
    /// `NEXT` edges: episode → the next episode of its session, both as the 128 bits of their
    /// UUID ids ([`engram_operators::episode_key`]; 32 bytes an edge, not two strings). Read
    /// them by id with [`MemoryViews::next_id`].
    pub next: ViewMap<u128, u128>,
    /// The reverse of `next`.
    pub prev: ViewMap<u128, u128>,
    /// Episodes per session.
    pub session_sizes: ViewMap<SessionKey, usize>,
    /// Episodes per `(tenant, user)`: the sum of their sessions' sizes.
    pub user_episodes: UserMap<usize>,
    /// Facts, entities, co-mentions and skill feedback, per `(tenant, user)`.
    pub users: UserMap<UserMemory>,
    /// Skill feedback per `(tenant, bucket, skill)`, over all of the tenant's users.
    pub population: ViewMap<PopulationKey, FeedbackTally>,
    /// `(tenant, user)` → the user's team.
    pub user_teams: UserMap<String>,
    /// `(tenant, team)` → the preferences the team holds, by id.
    pub team_preferences: BTreeMap<TeamKey, BTreeMap<String, TeamPreference>>,
    /// Tenant → the preferences the organisation holds, by id.
    pub org_preferences: BTreeMap<String, BTreeMap<String, OrgPreference>>,
    /// The decay traces of the memories (episodes, facts, summaries, by [`MemoryId`]) recalls
    /// reinforced; every other memory's is a closed form of its row
    /// ([`MemoryViews::memory_trace`]).
    pub memory_traces: ViewMap<MemoryId, MemoryTrace>,
    /// Those memories archived as of `engine_time_secs` (the others:
    /// [`MemoryViews::is_archived`]).
    pub archived_memories: ViewMap<MemoryId, ()>,
    /// How memories fade: the dataflow's parameters, for the closed forms.
    pub retention: RetentionParams,
    /// Engine time (seconds since the Unix epoch) the preference states and archived memories
    /// are as of.
    pub engine_time_secs: u64,
    /// Batches of updates applied so far: the [`ViewChanges::seq`] of the last one.
    pub seq: u64,
}

/// One user's part of the memory graph.
#[derive(Debug, Clone, Default)]
pub struct UserMemory {
    /// Every version of every `(subject, attribute)`, oldest first: the current one has no
    /// `valid_to`; older ones name the version that superseded them.
    pub facts: BTreeMap<(String, String), BTreeSet<FactVersion>>,
    /// Entity name → its stats. Names are shared with `co_mentions` (an entity is in about
    /// five co-mention edges; a copy of its name in each cost 20-40 bytes an edge). Hash maps,
    /// not ordered ones: these two take most of a bulk load's updates, and an ordered map
    /// compares a dozen names per update where a hash map compares one. (Readers that list
    /// them sort.)
    pub entities: ViewMap<Arc<str>, EntityStats>,
    /// `(entity_a, entity_b)` with a < b → number of episodes mentioning both.
    pub co_mentions: CoMentions,
    /// `MENTIONS`: episode → the entities it names, readable both ways (names shared with
    /// `entities`).
    pub mentions: Mentions,
    /// `(context bucket, skill)` → the user's counted votes.
    pub skills: BTreeMap<(u32, String), FeedbackTally>,
    /// `(context bucket, skill)` → the user's votes with old ones discounted, as of the latest
    /// (only when the dataflow runs with a feedback half-life).
    pub discounted_skills: BTreeMap<(u32, String), DiscountedTally>,
    /// Skill → the user's confidence in it (an EMA of their rewards).
    pub skill_confidence: BTreeMap<String, SkillConfidence>,
    /// Correction id → its cluster (named by the cluster's smallest correction id).
    pub correction_clusters: BTreeMap<String, String>,
    /// Cluster id → its measurements (size, coherence, span), promoted or not.
    pub cluster_measures: BTreeMap<String, ClusterMeasure>,
    /// Cluster id → the pattern it was promoted to, for the clusters that were.
    pub patterns: BTreeMap<String, PatternRecord>,
    /// Cluster id → the decay trace of the preference its pattern yields.
    pub preferences: BTreeMap<String, PreferenceTrace>,
    /// Cluster id → the preference's lifecycle state as of `engine_time_secs`.
    pub preference_states: BTreeMap<String, LifecycleState>,
    /// Cluster id → how later corrections contradicted its preference, for those that were.
    pub contradictions: BTreeMap<String, Contradiction>,
    /// Correction id → its words.
    pub corrections: BTreeMap<String, CorrectionNote>,
    /// The style the user's feedback points to (absent before any feedback).
    pub style: Option<UserStyle>,
    /// Episode id → its MARK state, for the episodes answers were built with.
    pub marks: BTreeMap<String, MemoryMark>,
    /// Trait of a memory → how the user's answers built with such memories were judged.
    pub retrieval: BTreeMap<RetrievalTrait, TraitTally>,
    /// Summary event id → the summary, with its `COVERS` edges.
    pub summaries: BTreeMap<String, SummaryNode>,
    /// Relation event id → the relation, with its `EVIDENCE_FOR` edges.
    pub relations: BTreeMap<String, RelationNode>,
}

/// A change to the views, produced by the dataflow. Values larger than a few words are boxed:
/// updates wait in bulk to be published, and the frequent ones (entities, co-mentions, edges)
/// should not take the space of the largest.
#[derive(Debug, Clone)]
pub enum ViewUpdate {
    NextEdge(SessionKey, (u128, u128)),
    SessionEpisode(SessionKey),
    Fact(FactKey, Box<FactVersion>),
    Entity(EntityKey, EntityStats),
    CoMention(CoMentionKey, u64),
    /// `((tenant, user, entity), episode key halves)`: a `MENTIONS` edge.
    Mention(EntityKey, [u64; 2]),
    SkillTally(SkillKey, FeedbackTally),
    DiscountedSkillTally(SkillKey, Box<DiscountedTally>),
    SkillConfidence(UserSkillKey, SkillConfidence),
    /// `(correction_id, cluster_id)`.
    ClusterMember(UserKey, (String, String)),
    ClusterMeasure(UserKey, Box<ClusterMeasure>),
    Pattern(UserKey, PatternRecord),
    PreferenceTrace(PreferenceKey, PreferenceTrace),
    PreferenceState(PreferenceKey, LifecycleState),
    Contradiction(PreferenceKey, Box<Contradiction>),
    PopulationTally(PopulationKey, FeedbackTally),
    CorrectionNote(UserKey, Box<CorrectionNote>),
    UserTeam(UserKey, String),
    MemoryMark(MemoryKey, Box<MemoryMark>),
    TeamPreference(TeamKey, Box<TeamPreference>),
    OrgPreference(String, Box<OrgPreference>),
    Style(UserKey, Box<UserStyle>),
    Summary(UserKey, Box<SummaryNode>),
    Relation(UserKey, Box<RelationNode>),
    RetrievalPreference(TraitKey, TraitTally),
    /// A memory's decay trace: no owner (a memory id is unique across tenants and users).
    MemoryTrace(MemoryId, MemoryTrace),
    /// A memory archived: no owner.
    MemoryArchived(MemoryId),
}

impl MemoryViews {
    /// The users of `tenant` that any per-user view holds (memory, episodes or a team), in
    /// order; walks only that tenant's keys.
    pub fn tenant_users(&self, tenant: &str) -> BTreeSet<&String> {
        tenant_entries(&self.users, tenant)
            .map(|(user, _)| user)
            .chain(tenant_entries(&self.user_episodes, tenant).map(|(user, _)| user))
            .chain(tenant_entries(&self.user_teams, tenant).map(|(user, _)| user))
            .collect()
    }

    /// The id of the episode after episode `id` in its session. Episode ids are UUIDs (the
    /// engine names every episode so); any other id has no neighbours here.
    pub fn next_id(&self, id: &str) -> Option<String> {
        neighbour(&self.next, id)
    }

    /// The decay trace of memory `id` (an episode, fact or summary id), made at `created_secs`
    /// with importance `importance_milli` (thousandths): the one recalls reinforced, when the
    /// views hold it, else the closed form of a memory no answer recalled.
    pub fn memory_trace(&self, id: &str, created_secs: i64, importance_milli: u16) -> MemoryTrace {
        self.memory_state(id, created_secs, importance_milli).0
    }

    /// Whether memory `id` (as for [`MemoryViews::memory_trace`]) is archived as of the engine
    /// time: a reinforced memory once the lifecycle dataflow has archived it, any other once
    /// engine time has reached the hour its closed-form trace is archived at (the hour the
    /// lifecycle dataflow would have scheduled: its updates at times up to `engine_time_secs`
    /// are applied).
    pub fn is_archived(&self, id: &str, created_secs: i64, importance_milli: u16) -> bool {
        self.memory_state(id, created_secs, importance_milli).1
    }

    /// [`MemoryViews::memory_trace`] and [`MemoryViews::is_archived`] of one memory, its key
    /// hashed and looked up once (recall asks both of every turn).
    pub fn memory_state(
        &self,
        id: &str,
        created_secs: i64,
        importance_milli: u16,
    ) -> (MemoryTrace, bool) {
        let key = engram_operators::episode_key(id);
        let thresholds = LifecycleThresholds::default();
        match self.memory_traces.get(&key) {
            Some(trace) => (*trace, self.archived_memories.contains_key(&key)),
            None => {
                let params = self.retention.stability();
                let trace =
                    MemoryTrace::unrecalled(created_secs, importance_milli, &params, &thresholds);
                let from = trace.archived_from(&thresholds);
                let archived = from.is_some_and(|from| from <= self.engine_time_secs as i64);
                (trace, archived)
            }
        }
    }

    /// The id of the episode before episode `id` in its session (see [`MemoryViews::next_id`]).
    pub fn prev_id(&self, id: &str) -> Option<String> {
        neighbour(&self.prev, id)
    }

    pub(crate) fn apply(&mut self, update: ViewUpdate, diff: isize) {
        match update {
            ViewUpdate::NextEdge(_, (from, to)) => self.apply_next_edge(from, to, diff),
            ViewUpdate::Fact((tenant, user, subject, attribute), version) => {
                let user_memory = self.users.entry((tenant, user)).or_default();
                user_memory.apply_fact(subject, attribute, *version, diff);
            }
            ViewUpdate::Entity((tenant, user, name), stats) => {
                let user_memory = self.users.entry((tenant, user)).or_default();
                user_memory.apply_entity(name, stats, diff);
            }
            ViewUpdate::CoMention((tenant, user, a, b), weight) => {
                let user_memory = self.users.entry((tenant, user)).or_default();
                user_memory.apply_co_mention(a, b, weight, diff);
            }
            ViewUpdate::Mention((tenant, user, name), episode) => {
                let UserMemory {
                    entities, mentions, ..
                } = self.users.entry((tenant, user)).or_default();
                let shared = || match entities.get_key_value(name.as_str()) {
                    Some((held, _)) => held.clone(),
                    None => Arc::from(name.as_str()),
                };
                mentions.apply(&name, episode, diff, shared);
            }
            ViewUpdate::SkillTally((tenant, user, bucket, skill), tally) => {
                let skills = &mut self.users.entry((tenant, user)).or_default().skills;
                set_or_clear(skills, (bucket, skill), tally, diff);
            }
            ViewUpdate::DiscountedSkillTally((tenant, user, bucket, skill), tally) => {
                let skills = &mut self
                    .users
                    .entry((tenant, user))
                    .or_default()
                    .discounted_skills;
                set_or_clear(skills, (bucket, skill), *tally, diff);
            }
            ViewUpdate::SkillConfidence((tenant, user, skill), confidence) => {
                let skills = &mut self
                    .users
                    .entry((tenant, user))
                    .or_default()
                    .skill_confidence;
                set_or_clear(skills, skill, confidence, diff);
            }
            ViewUpdate::ClusterMember(user, (correction, cluster)) => {
                let members = &mut self.users.entry(user).or_default().correction_clusters;
                set_or_clear(members, correction, cluster, diff);
            }
            ViewUpdate::ClusterMeasure(user, measure) => {
                let measures = &mut self.users.entry(user).or_default().cluster_measures;
                set_or_clear(measures, measure.cluster_id.clone(), *measure, diff);
            }
            ViewUpdate::Pattern(user, pattern) => {
                let patterns = &mut self.users.entry(user).or_default().patterns;
                set_or_clear(patterns, pattern.cluster_id.clone(), pattern, diff);
            }
            ViewUpdate::PreferenceTrace((user, cluster), trace) => {
                let preferences = &mut self.users.entry(user).or_default().preferences;
                set_or_clear(preferences, cluster, trace, diff);
            }
            ViewUpdate::PreferenceState((user, cluster), state) => {
                let states = &mut self.users.entry(user).or_default().preference_states;
                set_or_clear(states, cluster, state, diff);
            }
            ViewUpdate::Contradiction((user, cluster), contradiction) => {
                let found = &mut self.users.entry(user).or_default().contradictions;
                set_or_clear(found, cluster, *contradiction, diff);
            }
            ViewUpdate::CorrectionNote(user, note) => {
                let notes = &mut self.users.entry(user).or_default().corrections;
                set_or_clear(notes, note.correction_id.clone(), *note, diff);
            }
            ViewUpdate::Summary(user, summary) => {
                let summaries = &mut self.users.entry(user).or_default().summaries;
                set_or_clear(summaries, summary.event_id.clone(), *summary, diff);
            }
            ViewUpdate::Relation(user, relation) => {
                let relations = &mut self.users.entry(user).or_default().relations;
                set_or_clear(relations, relation.event_id.clone(), *relation, diff);
            }
            ViewUpdate::Style(user, style) => {
                let current = &mut self.users.entry(user).or_default().style;
                if diff > 0 {
                    *current = Some(*style);
                } else if *current == Some(*style) {
                    *current = None;
                }
            }
            ViewUpdate::MemoryMark((tenant, user, episode), mark) => {
                let marks = &mut self.users.entry((tenant, user)).or_default().marks;
                set_or_clear(marks, episode, *mark, diff);
            }
            ViewUpdate::UserTeam(user, team) => {
                set_or_clear(&mut self.user_teams, user, team, diff);
            }
            ViewUpdate::TeamPreference(team, p) => {
                let held = self.team_preferences.entry(team.clone()).or_default();
                set_or_clear(held, p.id.clone(), *p, diff);
                if held.is_empty() {
                    self.team_preferences.remove(&team);
                }
            }
            ViewUpdate::OrgPreference(tenant, p) => {
                let held = self.org_preferences.entry(tenant.clone()).or_default();
                set_or_clear(held, p.id.clone(), *p, diff);
                if held.is_empty() {
                    self.org_preferences.remove(&tenant);
                }
            }
            ViewUpdate::PopulationTally(key, tally) => {
                set_or_clear(&mut self.population, key, tally, diff);
            }
            ViewUpdate::SessionEpisode(key) => self.count_session_episode(key, diff),
            ViewUpdate::RetrievalPreference((user, t), tally) => {
                let learned = &mut self.users.entry(user).or_default().retrieval;
                set_or_clear(learned, t, tally, diff);
            }
            ViewUpdate::MemoryTrace(id, trace) => {
                set_or_clear(&mut self.memory_traces, id, trace, diff)
            }
            ViewUpdate::MemoryArchived(id) => {
                set_or_clear(&mut self.archived_memories, id, (), diff)
            }
        }
    }

    /// Adds (`diff` > 0) or retracts the `NEXT` edge `from` → `to`, and its reverse.
    fn apply_next_edge(&mut self, from: u128, to: u128, diff: isize) {
        if diff > 0 {
            self.next.insert(from, to);
            self.prev.insert(to, from);
        } else {
            // An edge retracted and its replacement inserted at the same time may come
            // in either order: remove only the edge that is being retracted.
            if self.next.get(&from) == Some(&to) {
                self.next.remove(&from);
            }
            if self.prev.get(&to) == Some(&from) {
                self.prev.remove(&to);
            }
        }
    }

    /// Counts an episode of session `key` in (`diff` > 0) or out of its session's size and its
    /// user's episodes, dropping a count that reaches 0.
    fn count_session_episode(&mut self, key: SessionKey, diff: isize) {
        let user = (key.0.clone(), key.1.clone());
        let n = self.session_sizes.entry(key.clone()).or_insert(0);
        *n = (*n as isize + diff).max(0) as usize;
        if *n == 0 {
            self.session_sizes.remove(&key);
        }
        let n = self.user_episodes.entry(user.clone()).or_insert(0);
        *n = (*n as isize + diff).max(0) as usize;
        if *n == 0 {
            self.user_episodes.remove(&user);
        }
    }
}

impl UserMemory {
    /// Adds (`diff` > 0) or retracts a version of `(subject, attribute)`, dropping the pair
    /// when its last version goes.
    fn apply_fact(
        &mut self,
        subject: String,
        attribute: String,
        version: FactVersion,
        diff: isize,
    ) {
        let versions = self
            .facts
            .entry((subject.clone(), attribute.clone()))
            .or_default();
        if diff > 0 {
            versions.insert(version);
        } else {
            versions.remove(&version);
            if versions.is_empty() {
                self.facts.remove(&(subject, attribute));
            }
        }
    }

    /// Sets (`diff` > 0) the stats of entity `name`, or removes the entity if they are `stats`.
    fn apply_entity(&mut self, name: String, stats: EntityStats, diff: isize) {
        let UserMemory {
            entities, mentions, ..
        } = self;
        match entities.get_mut(name.as_str()) {
            // the name already held is kept: co-mention edges share it
            Some(held) if diff > 0 => *held = stats,
            None if diff > 0 => {
                // (a new entity's mentions come before it: the name they hold is shared)
                let held = mentions.held_name(&name).unwrap_or_else(|| Arc::from(name));
                entities.insert(held, stats);
            }
            Some(held) if *held == stats => {
                entities.remove(name.as_str());
            }
            _ => {}
        }
    }

    /// Sets (`diff` > 0) the weight of the co-mention edge between `a` and `b`, or removes it
    /// if it is `weight`; the names are those the entities hold, where they do.
    fn apply_co_mention(&mut self, a: String, b: String, weight: u64, diff: isize) {
        let UserMemory {
            entities,
            co_mentions,
            ..
        } = self;
        let shared = |name: String| match entities.get_key_value(name.as_str()) {
            Some((held, _)) => held.clone(),
            None => Arc::from(name),
        };
        set_or_clear(co_mentions, (shared(a), shared(b)), weight, diff);
    }
}

impl ViewUpdate {
    /// Whether applying `self` (an insertion) makes the state the same whether or not the
    /// retraction `earlier` was applied just before it: both update the same key of a view
    /// that holds one value per key, which an insertion replaces.
    fn overwrites(&self, earlier: &ViewUpdate) -> bool {
        use ViewUpdate as U;
        match (self, earlier) {
            (U::Entity(a, _), U::Entity(b, _)) => a == b,
            (U::CoMention(a, _), U::CoMention(b, _)) => a == b,
            (U::SkillTally(a, _), U::SkillTally(b, _)) => a == b,
            (U::DiscountedSkillTally(a, _), U::DiscountedSkillTally(b, _)) => a == b,
            (U::SkillConfidence(a, _), U::SkillConfidence(b, _)) => a == b,
            (U::PopulationTally(a, _), U::PopulationTally(b, _)) => a == b,
            (U::MemoryMark(a, _), U::MemoryMark(b, _)) => a == b,
            (U::Style(a, _), U::Style(b, _)) => a == b,
            (U::UserTeam(a, _), U::UserTeam(b, _)) => a == b,
            (U::PreferenceTrace(a, _), U::PreferenceTrace(b, _)) => a == b,
            (U::ClusterMeasure(a, x), U::ClusterMeasure(b, y)) => {
                a == b && x.cluster_id == y.cluster_id
            }
            (U::Pattern(a, x), U::Pattern(b, y)) => a == b && x.cluster_id == y.cluster_id,
            (U::ClusterMember(a, (x, _)), U::ClusterMember(b, (y, _))) => a == b && x == y,
            _ => false,
        }
    }

    /// The tenant whose data this update is; `None` for a memory's trace or archiving.
    pub fn tenant(&self) -> Option<&str> {
        self.owner().map(|(tenant, _)| tenant)
    }

    /// The user whose data this update is; `None` for tenant-wide views (population tallies,
    /// team and organisation preferences).
    pub fn user(&self) -> Option<&str> {
        self.owner().and_then(|(_, user)| user)
    }

    fn owner(&self) -> Option<(&str, Option<&str>)> {
        let (tenant, user) = match self {
            ViewUpdate::NextEdge(key, _) | ViewUpdate::SessionEpisode(key) => (&key.0, &key.1),
            ViewUpdate::Fact(key, _) => (&key.0, &key.1),
            ViewUpdate::Entity(key, _) => (&key.0, &key.1),
            ViewUpdate::CoMention(key, _) => (&key.0, &key.1),
            ViewUpdate::Mention(key, _) => (&key.0, &key.1),
            ViewUpdate::SkillTally(key, _) | ViewUpdate::DiscountedSkillTally(key, _) => {
                (&key.0, &key.1)
            }
            ViewUpdate::SkillConfidence(key, _) => (&key.0, &key.1),
            ViewUpdate::MemoryMark(key, _) => (&key.0, &key.1),
            ViewUpdate::ClusterMember(user, _)
            | ViewUpdate::ClusterMeasure(user, _)
            | ViewUpdate::Pattern(user, _)
            | ViewUpdate::CorrectionNote(user, _)
            | ViewUpdate::Summary(user, _)
            | ViewUpdate::Relation(user, _)
            | ViewUpdate::Style(user, _)
            | ViewUpdate::PreferenceTrace((user, _), _)
            | ViewUpdate::PreferenceState((user, _), _)
            | ViewUpdate::Contradiction((user, _), _)
            | ViewUpdate::UserTeam(user, _)
            | ViewUpdate::RetrievalPreference((user, _), _) => (&user.0, &user.1),
            ViewUpdate::PopulationTally(key, _) => return Some((&key.0, None)),
            ViewUpdate::TeamPreference(team, _) => return Some((&team.0, None)),
            ViewUpdate::OrgPreference(tenant, _) => return Some((tenant, None)),
            ViewUpdate::MemoryTrace(..) | ViewUpdate::MemoryArchived(_) => return None,
        };
        Some((tenant, Some(user)))
    }
}

/// The UUID id `edges` (`next` or `prev`) pairs with the UUID id `id`.
fn neighbour(edges: &ViewMap<u128, u128>, id: &str) -> Option<String> {
    let key = engram_operators::uuid_bits(id)?;
    edges.get(&key).map(|&k| engram_operators::uuid_text(k))
}

/// One batch of view updates as the dataflow applied it: the change feed that live readers (the
/// dashboard) follow instead of re-reading the views.
#[derive(Debug)]
pub struct ViewChanges {
    /// 1 for the first batch, then one more per batch: a reader that took a snapshot at
    /// [`MemoryViews::seq`] = s has seen every batch up to s and none after.
    pub seq: u64,
    /// The views' timestamp after the batch.
    pub as_of: u64,
    /// Engine time of the preference states after the batch.
    pub engine_time_secs: u64,
    /// The updates, in the order they were applied, each with its diff.
    pub updates: Vec<(ViewUpdate, isize)>,
}

/// Batches a slow reader may fall behind by before it is told it lagged (and must re-read).
const CHANGE_FEED_CAPACITY: usize = 1024;

/// The views shared between the dataflow and readers. The dataflow applies all updates of a
/// timestamp under one write lock; a reader holds the read guard for its whole request, so it
/// sees every view at one timestamp. Readers that follow changes [`subscribe`](Self::subscribe).
pub struct SharedViews {
    current: RwLock<MemoryViews>,
    changes: broadcast::Sender<Arc<ViewChanges>>,
}

impl Default for SharedViews {
    fn default() -> Self {
        SharedViews {
            current: RwLock::default(),
            changes: broadcast::channel(CHANGE_FEED_CAPACITY).0,
        }
    }
}

impl SharedViews {
    /// Memories fade by `retention` (the dataflow's, for the closed forms).
    pub(crate) fn set_retention(&self, retention: RetentionParams) {
        let mut views = self.current.write().unwrap_or_else(|p| p.into_inner());
        views.retention = retention;
    }

    pub fn read(&self) -> RwLockReadGuard<'_, MemoryViews> {
        self.current.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The views now, and every batch applied after them: the receiver yields exactly the
    /// batches with `seq` > the snapshot's [`MemoryViews::seq`], in order (or `Lagged` when the
    /// reader fell more than 1024 batches behind; it must then take a new snapshot).
    pub fn subscribe(
        &self,
    ) -> (
        RwLockReadGuard<'_, MemoryViews>,
        broadcast::Receiver<Arc<ViewChanges>>,
    ) {
        // Batches are sent under the write lock, so none can slip between the two.
        let views = self.read();
        (views, self.changes.subscribe())
    }

    /// Whether anyone follows the changes (only then are batches copied for them).
    pub(crate) fn followed(&self) -> bool {
        self.changes.receiver_count() > 0
    }

    /// Applies one batch under the write lock and sends it to the followers.
    ///
    /// The updates come as an iterator, taken one at a time: a bulk load publishes millions at
    /// once, and a vector of them all would be a fresh allocation of hundreds of megabytes (and
    /// the kernel zeroing as many fresh pages) on every publication.
    pub(crate) fn apply_batch(
        &self,
        updates: impl IntoIterator<Item = (ViewUpdate, isize)>,
        as_of: u64,
        engine_time_secs: Option<u64>,
    ) {
        let follow = self.followed();
        let mut v = self.current.write().unwrap_or_else(|p| p.into_inner());
        let mut sent = Vec::new();
        let mut updates = updates.into_iter().peekable();
        while let Some((update, diff)) = updates.next() {
            if follow {
                sent.push((update.clone(), diff));
            }
            // A keyed view's value replaced at once (a count, a tally, an entity's stats) comes
            // as the old value's retraction and then the new value: the insertion alone has
            // the same effect, at half the lookups.
            let overwritten = diff < 0
                && updates
                    .peek()
                    .is_some_and(|(next, d)| *d > 0 && next.overwrites(&update));
            if !overwritten {
                v.apply(update, diff);
            }
        }
        v.as_of = as_of;
        if let Some(t) = engine_time_secs {
            v.engine_time_secs = t;
        }
        v.seq += 1;
        if follow {
            // An error only means the last follower left meanwhile.
            let _ = self.changes.send(Arc::new(ViewChanges {
                seq: v.seq,
                as_of,
                engine_time_secs: v.engine_time_secs,
                updates: sent,
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_operators::entities::EntityKind;

    fn stats(count: u64) -> EntityStats {
        EntityStats {
            first_seen_micros: 1,
            last_seen_micros: 2,
            mention_count: count,
            kind: EntityKind::Named,
        }
    }

    fn entity(name: &str, count: u64) -> ViewUpdate {
        ViewUpdate::Entity(("t".into(), "u".into(), name.into()), stats(count))
    }

    fn co_mention(a: &str, b: &str, weight: u64) -> ViewUpdate {
        ViewUpdate::CoMention(("t".into(), "u".into(), a.into(), b.into()), weight)
    }

    #[test]
    fn tenant_users_are_that_tenants_users_of_every_per_user_view_and_no_others() {
        let mut views = MemoryViews::default();
        let key = |t: &str, u: &str| (t.to_string(), u.to_string());
        views.users.insert(key("a", "zed"), UserMemory::default());
        views.user_episodes.insert(key("a", "amy"), 3);
        views.user_teams.insert(key("a", "bob"), "support".into());
        views.user_episodes.insert(key("a", "zed"), 1);
        // a tenant whose name starts with the other's, one before it, one after it
        views.users.insert(key("ab", "carl"), UserMemory::default());
        views.user_episodes.insert(key("", "root"), 1);
        views.user_teams.insert(key("b", "amy"), "sales".into());
        let users: Vec<&str> = views
            .tenant_users("a")
            .into_iter()
            .map(String::as_str)
            .collect();
        assert_eq!(users, ["amy", "bob", "zed"]);
        assert_eq!(views.tenant_users("ab").len(), 1);
        assert!(views.tenant_users("c").is_empty());
    }

    fn user_view(views: &SharedViews) -> UserMemory {
        views
            .read()
            .users
            .get(&("t".to_string(), "u".to_string()))
            .cloned()
            .unwrap_or_default()
    }

    #[test]
    fn a_replaced_value_and_a_plain_retraction_both_end_as_if_applied_one_by_one() {
        let views = SharedViews::default();
        views.apply_batch(
            vec![
                (entity("alice", 1), 1),
                (entity("bob", 1), 1),
                (co_mention("alice", "bob", 1), 1),
            ],
            1,
            None,
        );
        views.apply_batch(
            vec![
                // replaced: retraction, then the new value of the same key
                (entity("alice", 1), -1),
                (entity("alice", 2), 1),
                (co_mention("alice", "bob", 1), -1),
                (co_mention("alice", "bob", 2), 1),
                // retracted, and the next update is another key's insertion
                (entity("bob", 1), -1),
                (entity("carol", 1), 1),
            ],
            2,
            None,
        );
        let user = user_view(&views);
        let mut entities: Vec<(String, u64)> = user
            .entities
            .iter()
            .map(|(name, s)| (name.to_string(), s.mention_count))
            .collect();
        entities.sort();
        assert_eq!(
            entities,
            vec![("alice".to_string(), 2), ("carol".to_string(), 1)]
        );
        let weights: Vec<u64> = user.co_mentions.iter().map(|(_, _, w)| w).collect();
        assert_eq!(weights, vec![2]);
        // a retraction followed by an insertion of another value of another kind of view
        views.apply_batch(
            vec![(co_mention("alice", "bob", 2), -1), (entity("alice", 3), 1)],
            3,
            None,
        );
        let user = user_view(&views);
        assert!(user.co_mentions.is_empty());
        assert_eq!(user.entities["alice"].mention_count, 3);
    }

    #[test]
    fn an_update_is_no_larger_than_a_co_mention() {
        // four strings and a weight, and the tag: the large values are boxed
        assert_eq!(std::mem::size_of::<ViewUpdate>(), 112);
    }
}
