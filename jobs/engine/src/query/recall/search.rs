//! The searches recall fuses: episodes (vector, full text, best span with passages), facts
//! and summaries.

use super::learned::LearnedBoosts;
use super::turn_scoring::{known_speakers, speaker_free, TurnWeights};
use super::*;

impl Recall {
    /// The user's facts found by vector and full-text search of the facts table (the top
    /// `candidates` of each; the full-text ranking recomputed among them with their own
    /// statistics, [`text_ranking_among`]; fused by reciprocal rank), as the views hold them: each version
    /// once, those valid at `as_of` (or now) first, then by fused score. With `as_of`, only
    /// facts asserted by then are searched. Empty without a facts table.
    pub async fn fact_hits(
        &self,
        tenant: &str,
        user: &str,
        query: &str,
        vector: Vec<f32>,
        candidates: usize,
        as_of: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Result<Vec<FactHit>, RecallError> {
        let Some((by_vector, by_text)) =
            search_both(&self.facts, tenant, user, query, vector, candidates, as_of).await?
        else {
            return Ok(Vec::new());
        };
        let by_text = text_ranking_among(&by_vector, &by_text, query);
        let views = self.views.read();
        let Some(memory) = views.users.get(&(tenant.to_string(), user.to_string())) else {
            return Ok(Vec::new());
        };
        // the user's fact versions by id (a row's id is its assertion's: a version's own, or
        // that of an assertion which repeated a value and so made no version of its own)
        let versions: HashMap<&str, (&(String, String), &engram_operators::facts::FactVersion)> =
            memory
                .facts
                .iter()
                .flat_map(|(key, versions)| {
                    versions.iter().map(move |v| (v.fact_id.as_str(), (key, v)))
                })
                .collect();
        let version_of = |hit: &EpisodeHit| -> Option<String> {
            if versions.contains_key(hit.episode.id.as_str()) {
                return Some(hit.episode.id.clone());
            }
            // a repeated assertion: the latest version by then with the same text, compared as
            // the dataflow compares values (case and spacing aside)
            versions
                .values()
                .filter(|(k, v)| {
                    let text = crate::pipeline::episode_writer::fact_text(&k.0, &k.1, &v.value);
                    engram_operators::facts::same_fact_value(&text, &hit.episode.content)
                        && v.valid_from <= hit.episode.ts.timestamp_micros()
                })
                .max_by_key(|(_, v)| v.valid_from)
                .map(|(_, v)| v.fact_id.clone())
        };
        // fact version id → (fused score, why): a version counts once per ranking
        let fused = fuse_two(&by_vector, &by_text, self.config.rrf_k, version_of);
        let at = as_of.map(|t| t.timestamp_micros());
        let time =
            |micros: i64| chrono::DateTime::from_timestamp_micros(micros).unwrap_or_default();
        let mut hits: Vec<FactHit> = fused
            .into_iter()
            .filter_map(|(id, (score, why))| {
                let ((subject, attribute), v) = versions.get(id.as_str())?;
                // as of a time, a version closed later still held then
                let valid_to = v.valid_to.filter(|to| at.is_none_or(|t| *to <= t));
                Some(FactHit {
                    fact_id: id,
                    subject: subject.clone(),
                    attribute: attribute.clone(),
                    value: v.value.clone(),
                    valid_from: time(v.valid_from),
                    valid_to: valid_to.map(time),
                    superseded_by: valid_to.and(v.superseded_by.clone()),
                    current: valid_to.is_none(),
                    score,
                    why,
                    domain: false,
                })
            })
            .collect();
        hits.sort_by(FactHit::current_then_best);
        Ok(hits)
    }

    /// The user's summaries found by vector and full-text search of the summaries table (the
    /// top `candidates` of each, the full-text ranking recomputed among them as for facts,
    /// fused by reciprocal rank), best first, each with the episodes
    /// it covers as the views hold them; only summaries present in the views (not erased). With
    /// `as_of`, only summaries written by then are searched. Empty without a summaries table.
    pub async fn summary_hits(
        &self,
        tenant: &str,
        user: &str,
        query: &str,
        vector: Vec<f32>,
        candidates: usize,
        as_of: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Result<Vec<SummaryHit>, RecallError> {
        let Some((by_vector, by_text)) = search_both(
            &self.summaries,
            tenant,
            user,
            query,
            vector,
            candidates,
            as_of,
        )
        .await?
        else {
            return Ok(Vec::new());
        };
        let by_text = text_ranking_among(&by_vector, &by_text, query);
        let views = self.views.read();
        let Some(memory) = views.users.get(&(tenant.to_string(), user.to_string())) else {
            return Ok(Vec::new());
        };
        let fused = fuse_two(&by_vector, &by_text, self.config.rrf_k, |hit| {
            Some(hit.episode.event_id.clone())
        });
        let mut hits: Vec<SummaryHit> = fused
            .into_iter()
            .filter_map(|(event_id, (score, why))| {
                let node = memory.summaries.get(&event_id)?;
                Some(SummaryHit {
                    id: node.id.clone(),
                    event_id: node.event_id.clone(),
                    ts: chrono::DateTime::from_timestamp_micros(node.ts_micros).unwrap_or_default(),
                    content: node.content.clone(),
                    covers: node.covers.clone(),
                    score,
                    why,
                    domain: false,
                })
            })
            .collect();
        hits.sort_by(SummaryHit::best_first);
        Ok(hits)
    }

    /// The user's episodes found by embedding `query`, scored as turns ([`rank_turns`]), best
    /// first (not truncated): all of them when the user has at most `recall.scored_turns`,
    /// else the union of the best `max(candidates, recall.candidate_depth)` of vector search,
    /// full-text search, passage vector search (when passages are kept) and graph expansion,
    /// their BM25 computed among them either way. With `as_of`, only episodes whose event time is at or before it are searched; without,
    /// archived ones are left out.
    pub async fn fused_candidates(
        &self,
        tenant: &str,
        user: &str,
        query: &str,
        candidates: usize,
        as_of: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Result<Vec<RecallHit>, RecallError> {
        let (vector, turn_vector) = self.embed_question(tenant, user, query, as_of).await?;
        let learned = self.learned_boosts(tenant, user);
        self.fused_candidates_for(
            tenant,
            user,
            query,
            vector,
            turn_vector,
            candidates,
            as_of,
            as_of.is_some(),
            &learned,
            &self.config.traversal,
        )
        .await
    }

    /// What `user`'s feedback taught about kinds of memory, at `recall.learned_boost`.
    pub fn learned_boosts(&self, tenant: &str, user: &str) -> LearnedBoosts {
        let views = self.views.read();
        let memory = views.users.get(&(tenant.to_string(), user.to_string()));
        LearnedBoosts::of(memory, self.config.learned_boost)
    }

    /// The question's embedding and, when the user's speakers are known from an earlier
    /// recall (and no `as_of` narrows the turns), the embedding turns are searched with: of the
    /// question without the speakers' names ([`speaker_free`]), made in the same model call.
    pub async fn embed_question(
        &self,
        tenant: &str,
        user: &str,
        query: &str,
        as_of: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Result<(Vec<f32>, Option<Vec<f32>>), RecallError> {
        let rows = self.store.user_rows_with_staged(tenant, user);
        let cached = as_of
            .is_none()
            .then(|| self.speakers.get(tenant, user, rows))
            .flatten();
        let Some(speakers) = cached else {
            return Ok((self.embed_query(tenant, query).await?, None));
        };
        match speaker_free(query, &speakers) {
            None => {
                let vector = self.embed_query(tenant, query).await?;
                Ok((vector.clone(), Some(vector)))
            }
            Some(asked) => {
                let mut vectors = self
                    .embed_texts(tenant, vec![query.to_string(), asked])
                    .await?;
                let turn_vector = vectors.pop();
                Ok((vectors.remove(0), turn_vector))
            }
        }
    }

    /// The query's embedding for `tenant` ([`Recall::embed_texts`]).
    pub async fn embed_query(&self, tenant: &str, query: &str) -> Result<Vec<f32>, RecallError> {
        Ok(self
            .embed_texts(tenant, vec![query.to_string()])
            .await?
            .remove(0))
    }

    /// The embeddings of `texts` for `tenant`, in order: on a blocking thread (the model runs
    /// for milliseconds), once one of the [`EmbeddingCalls`] is free.
    pub async fn embed_texts(
        &self,
        tenant: &str,
        texts: Vec<String>,
    ) -> Result<Vec<Vec<f32>>, engram_connectors::EmbedderError> {
        let _turn = self
            .embedding_calls
            .0
            .acquire()
            .await
            .expect("the semaphore is never closed");
        let embedder = self.embedder.clone();
        let tenant = tenant.to_string();
        tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            embedder.embed(&tenant, &refs)
        })
        .await
        .expect("embedding task")
    }

    /// The user's `depth` turns nearest to `vector` (vector search) and, when passages are kept,
    /// the turns of the `depth` nearest passages (each turn once, at its best passage).
    async fn nearest_turns(
        &self,
        tenant: &str,
        user: &str,
        vector: Vec<f32>,
        depth: usize,
        as_of: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Result<(Vec<EpisodeHit>, Vec<(String, EpisodeHit)>), RecallError> {
        let vector = Arc::new(vector);
        let search = |store: Arc<EpisodeStore>| {
            let (tenant, user, vector) = (tenant.to_string(), user.to_string(), vector.clone());
            tokio::spawn(async move {
                store
                    .search_vector(&tenant, &user, &vector, depth, as_of)
                    .await
            })
        };
        let by_vector = search(self.store.clone());
        let by_passage = self.passages.clone().map(search);
        let by_vector = by_vector.await.expect("vector search task")?;
        let by_passage = match by_passage {
            Some(task) => passage_ranking(task.await.expect("passage search task")?),
            None => Vec::new(),
        };
        Ok((by_vector, by_passage))
    }

    /// [`Recall::fused_candidates`] with the query already embedded ([`Recall::embed_question`]),
    /// and archived turns (issue 33) among the candidates only with `keep_archived`: left out
    /// before scoring, they lend no neighbour or session share and count in no statistics.
    #[allow(clippy::too_many_arguments)]
    pub async fn fused_candidates_for(
        &self,
        tenant: &str,
        user: &str,
        query: &str,
        vector: Vec<f32>,
        turn_vector: Option<Vec<f32>>,
        candidates: usize,
        as_of: Option<chrono::DateTime<chrono::Utc>>,
        keep_archived: bool,
        learned: &LearnedBoosts,
        walk: &crate::config::TraversalConfig,
    ) -> Result<Vec<RecallHit>, RecallError> {
        let rows = self.store.user_rows_with_staged(tenant, user);
        // every turn of the user is within reach of the vector search, or each search's best
        let complete = rows <= self.config.scored_turns;
        let depth = if complete {
            self.config.scored_turns
        } else {
            self.config.candidate_depth
        }
        .max(candidates);
        // Graph expansion: episodes naming what the query's entities are connected to.
        let expansion = {
            let views = self.views.read();
            views
                .users
                .get(&(tenant.to_string(), user.to_string()))
                .map(|m| graph_expansion(m, query, &self.config.graph))
                .unwrap_or_default()
        };
        // Each search is a task of its own: a Lance search does much of its work inside its
        // future's poll, so searches polled together on one task take turns on one core (at
        // 1M episodes, vector and full-text search took their sum, not their maximum).
        let by_text_of = |words: String| {
            let (store, tenant, user) = (self.store.clone(), tenant.to_string(), user.to_string());
            tokio::spawn(async move {
                store
                    .search_text(&tenant, &user, &words, depth, as_of)
                    .await
            })
        };
        // With every turn within reach of the vector search, their BM25 is computed among them
        // (`rank_turns`): the full-text searches would find no other turns.
        let by_text = (!complete).then(|| by_text_of(query.to_string()));
        let by_graph = (!complete && !expansion.is_empty()).then(|| {
            let terms: Vec<&str> = expansion.iter().map(|(e, _)| e.as_str()).collect();
            by_text_of(terms.join(" "))
        });
        // Turns are embedded without their speaker prefix: a question naming a speaker is
        // searched without the name too (the speaker counts through the turns' speakers). The
        // speakers come from the user's turns: known from an earlier recall (`turn_vector`),
        // or found by a first search here.
        let (by_vector, by_passage) = match turn_vector {
            Some(vector) => {
                self.nearest_turns(tenant, user, vector, depth, as_of)
                    .await?
            }
            None => {
                let (by_vector, by_passage) = self
                    .nearest_turns(tenant, user, vector, depth, as_of)
                    .await?;
                let speakers = known_speakers(by_vector.iter().map(|h| h.episode.content.as_str()));
                let asked = speaker_free(query, &speakers);
                if as_of.is_none() && complete {
                    self.speakers.put(tenant, user, rows, speakers);
                }
                match asked {
                    Some(asked) => {
                        let vector = self.embed_query(tenant, &asked).await?;
                        self.nearest_turns(tenant, user, vector, depth, as_of)
                            .await?
                    }
                    None => (by_vector, by_passage),
                }
            }
        };
        let by_text = match by_text {
            Some(task) => task.await.expect("full-text search task")?,
            None => Vec::new(),
        };
        let by_graph = match by_graph {
            Some(task) => task.await.expect("graph expansion search task")?,
            None => Vec::new(),
        };
        // Episodes found only through a passage are read from the episode store.
        let known: std::collections::HashSet<&str> = by_vector
            .iter()
            .chain(&by_text)
            .chain(&by_graph)
            .map(|h| h.episode.id.as_str())
            .collect();
        let missing: Vec<String> = by_passage
            .iter()
            .filter(|(id, _)| !known.contains(id.as_str()))
            .map(|(id, _)| id.clone())
            .collect();
        let found = self.store.episodes_by_id(tenant, user, &missing).await?;
        let mut hits =
            gather_candidates(by_vector, by_text, by_passage, found, by_graph, &expansion);
        // each turn's retention and archived state from one read: a turn kept as not archived
        // is never marked archived
        {
            let views = self.views.read();
            for h in &mut hits {
                h.read_retention(&views, as_of);
            }
        }
        if !keep_archived {
            hits.retain(|h| !h.why.archived);
        }
        self.walk_memory_graph(tenant, user, query, &mut hits, as_of, keep_archived, walk)
            .await?;
        // BM25 among the candidates, with their statistics alone: every turn of a complete
        // user, else the union the searches found. Lance's full-text scores are computed over
        // every tenant's rows, so a score would tell one tenant about another's words.
        // (a large user's candidates change with every question: they are analysed each time,
        // not cached, so they cannot crowd every other user out of the cache)
        let words: Vec<Arc<[String]>> = if complete {
            let turns = hits.iter().map(|h| (h.id.as_str(), h.content.as_str()));
            self.analysed
                .words(tenant, user, turns, super::bm25::analyse)
        } else {
            hits.iter()
                .map(|h| Arc::from(super::bm25::analyse(&h.content)))
                .collect()
        };
        let views = self.views.read();
        let domain = user == super::DOMAIN_USER;
        let at = as_of.map_or(views.engine_time_secs as i64, |t| t.timestamp());
        for h in &mut hits {
            let age = (h.made().0, at);
            h.why.learned = learned.of_turn(&h.role, &h.content, domain, age);
        }
        let neighbours = |id: &str| (views.prev_id(id), views.next_id(id));
        let weights = TurnWeights {
            retention: self.config.retention_weight,
            walk: walk.weight,
            ..TurnWeights::default()
        };
        // misspelled question words, read as the words of these turns they were likely meant to be
        let respelled = super::respelling::respell(query, &words, |w| self.embedder.knows_word(w));
        let in_process = Some(InProcessText {
            words: &words,
            expansion: &expansion,
            respelled: &respelled,
        });
        let asked = as_of.unwrap_or_else(chrono::Utc::now);
        Ok(rank_turns(
            hits, query, asked, in_process, neighbours, &weights,
        ))
    }
}

/// The top `candidates` rows of `user` in `table` by vector and by full-text search (the two
/// run concurrently); `None` without a table or when the user has no rows in it.
pub(super) async fn search_both(
    table: &Option<Arc<EpisodeStore>>,
    tenant: &str,
    user: &str,
    query: &str,
    vector: Vec<f32>,
    candidates: usize,
    as_of: Option<chrono::DateTime<chrono::Utc>>,
) -> Result<Option<(Vec<EpisodeHit>, Vec<EpisodeHit>)>, RecallError> {
    let Some(store) = table.clone() else {
        return Ok(None);
    };
    if store.user_rows_with_staged(tenant, user) == 0 {
        return Ok(None);
    }
    let by_vector = {
        let (store, tenant, user) = (store.clone(), tenant.to_string(), user.to_string());
        tokio::spawn(async move {
            store
                .search_vector(&tenant, &user, &vector, candidates, as_of)
                .await
        })
    };
    let by_text = store
        .search_text(tenant, user, query, candidates, as_of)
        .await?;
    let by_vector = by_vector.await.expect("vector search task")?;
    Ok(Some((by_vector, by_text)))
}
