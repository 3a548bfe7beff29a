//! Searches and reads: vector (exact over cached vectors, or ANN), full text, and rows by id,
//! session or user; the vector cache follows appends.

use super::*;

impl EpisodeStore {
    /// The user's `k` episodes nearest to `query` (cosine), best first; with `as_of`, among
    /// those with event time at or before it. Staged rows (`staged.rs`) are searched too.
    pub async fn search_vector(
        &self,
        tenant: &str,
        user: &str,
        query: &[f32],
        k: usize,
        as_of: Option<DateTime<Utc>>,
    ) -> Result<Vec<EpisodeHit>, StoreError> {
        if query.len() != self.dim {
            return Err(StoreError::Dimension {
                path: self.uri.clone(),
                expected: self.dim,
                found: query.len(),
            });
        }
        // staged rows first, then the version (see `staged.rs`)
        let staged = self.staged_of(tenant, user, staged::by(as_of));
        let committed = self
            .search_committed_vectors(tenant, user, query, k, as_of)
            .await?;
        Ok(staged::nearest_with_staged(
            committed,
            self.still_staged(staged),
            query,
            k,
        ))
    }

    /// [`EpisodeStore::search_vector`] among committed rows.
    async fn search_committed_vectors(
        &self,
        tenant: &str,
        user: &str,
        query: &[f32],
        k: usize,
        as_of: Option<DateTime<Utc>>,
    ) -> Result<Vec<EpisodeHit>, StoreError> {
        // a user with nothing committed (yet) costs no scan
        let Some(ds) = self
            .snapshot()
            .filter(|_| self.user_row_count(tenant, user) > 0)
        else {
            return Ok(Vec::new());
        };
        let q = Float32Array::from(query.to_vec());
        let mut scan = ds.scan();
        scan.filter(&scope_filter(tenant, user, as_of))
            .map_err(|e| self.err("vector search", e))?
            .prefilter(true)
            .nearest(col::VECTOR, &q, k)
            .map_err(|e| self.err("vector search", e))?
            .distance_metric(lance_linalg::distance::MetricType::Cosine)
            .disable_scoring_autoprojection()
            .project(&with_column(&PROJECTION, "_distance"))
            .map_err(|e| self.err("vector search", e))?;
        if self.user_row_count(tenant, user) < self.policy.exact_search_below_user_rows {
            if let Some(hits) = self
                .search_cached_vectors(&ds, tenant, user, query, k, as_of)
                .await?
            {
                return Ok(hits);
            }
            scan.use_index(false);
        } else {
            scan.minimum_nprobes(20).refine(4);
        }
        let batch = scan
            .try_into_batch()
            .await
            .map_err(|e| self.err("vector search", e))?;
        let distances = float_col(&batch, "_distance");
        Ok(best_first(&batch, |i| 1.0 - distances.value(i)))
    }

    /// The exact search of [`EpisodeStore::search_vector`] through the user's quantised vectors
    /// in memory (loaded now if missing): the best `2k + 8` by quantised cosine are read from
    /// `ds` and rescored with their stored vectors. `None` when the cache is off or the user
    /// does not fit in it.
    pub(super) async fn search_cached_vectors(
        &self,
        ds: &Dataset,
        tenant: &str,
        user: &str,
        query: &[f32],
        k: usize,
        as_of: Option<DateTime<Utc>>,
    ) -> Result<Option<Vec<EpisodeHit>>, StoreError> {
        let version = ds.version().version;
        let cached = {
            let mut cache = self.vectors.lock().unwrap();
            let fits = self.user_row_count(tenant, user) * (self.dim + 20)
                <= self.policy.vector_cache_mib << 20;
            if !cache.enabled() || !fits {
                return Ok(None);
            }
            cache.get(version, tenant, user)
        };
        let as_of_micros = as_of.map(|t| t.timestamp_micros());
        let wanted = 2 * k + 8;
        let candidates = match cached {
            Some(entry) => entry.nearest(query, wanted, as_of_micros),
            None => {
                let entry = self.load_user_vectors(ds, tenant, user).await?;
                let candidates = entry.nearest(query, wanted, as_of_micros);
                self.vectors
                    .lock()
                    .unwrap()
                    .insert(version, tenant, user, entry);
                candidates
            }
        };
        if candidates.is_empty() || k == 0 {
            return Ok(Some(Vec::new()));
        }
        let projection = ds
            .schema()
            .project(&with_column(&PROJECTION, col::VECTOR))
            .map_err(|e| self.err("vector search: rescore", e))?;
        let batch = ds
            .take_rows(&candidates, projection)
            .await
            .map_err(|e| self.err("vector search: rescore", e))?;
        let vectors = vector_col(&batch);
        let values = vectors
            .values()
            .as_any()
            .downcast_ref::<Float32Array>()
            .expect("vectors of floats")
            .values();
        let scores: Vec<f32> = values
            .chunks_exact(self.dim)
            .map(|v| cosine(query, v))
            .collect();
        let mut hits = best_first(&batch, |i| scores[i]);
        if hits
            .iter()
            .any(|h| h.episode.tenant != tenant || h.episode.user != user)
        {
            // Only an entry that no longer matches its version could do this; never return
            // another owner's row: drop the cache and search through Lance.
            tracing::error!(
                tenant,
                user,
                version,
                "cached vectors named rows of another owner; cache emptied"
            );
            self.vectors.lock().unwrap().reset(version);
            return Ok(None);
        }
        hits.truncate(k);
        Ok(Some(hits))
    }

    /// Every row of the user in `ds`, quantised.
    pub(super) async fn load_user_vectors(
        &self,
        ds: &Dataset,
        tenant: &str,
        user: &str,
    ) -> Result<UserVectors, StoreError> {
        let mut entry = UserVectors::new(self.dim);
        let mut scan = ds.scan();
        scan.filter(&user_filter(tenant, user))
            .map_err(|e| self.err("load vectors", e))?
            .project(&[col::VECTOR, col::TS])
            .map_err(|e| self.err("load vectors", e))?
            .with_row_id();
        let mut stream = scan
            .try_into_stream()
            .await
            .map_err(|e| self.err("load vectors", e))?;
        while let Some(batch) = stream
            .try_next()
            .await
            .map_err(|e| self.err("load vectors", e))?
        {
            push_rows(&mut entry, &batch, self.dim);
        }
        Ok(entry)
    }

    /// Loads the vectors of every user searched exactly into memory, as far as the budget of
    /// [`IndexPolicy::vector_cache_mib`] goes, in one scan of the table (otherwise each user's
    /// first search loads them). Returns the users loaded.
    pub async fn warm_vector_cache(&self) -> Result<usize, StoreError> {
        let Some(ds) = self.snapshot() else {
            return Ok(0);
        };
        let budget = self.policy.vector_cache_mib << 20;
        if budget == 0 {
            return Ok(0);
        }
        let version = ds.version().version;
        let row_bytes = self.dim + 20;
        let chosen: HashSet<(String, String)> = {
            let st = self.state.read().unwrap();
            let mut owners: Vec<(&(String, String), usize)> = st
                .rows_per_user
                .iter()
                .filter(|(_, n)| **n < self.policy.exact_search_below_user_rows)
                .map(|(owner, n)| (owner, *n))
                .collect();
            owners.sort();
            let mut used = 0;
            owners
                .into_iter()
                .filter(|(_, n)| {
                    used += n * row_bytes;
                    used <= budget
                })
                .map(|(owner, _)| owner.clone())
                .collect()
        };
        let mut entries: HashMap<(String, String), UserVectors> = HashMap::new();
        let mut scan = ds.scan();
        scan.project(&[col::TENANT, col::USER, col::VECTOR, col::TS])
            .map_err(|e| self.err("warm vectors", e))?
            .with_row_id();
        let mut stream = scan
            .try_into_stream()
            .await
            .map_err(|e| self.err("warm vectors", e))?;
        while let Some(batch) = stream
            .try_next()
            .await
            .map_err(|e| self.err("warm vectors", e))?
        {
            let (tenants, users) = (
                string_col(&batch, col::TENANT),
                string_col(&batch, col::USER),
            );
            let mut owner: Option<(String, String)> = None;
            let mut start = 0;
            // rows of one owner come in runs (the table is laid out by user): push run by run
            for i in 0..=batch.num_rows() {
                let same = i < batch.num_rows()
                    && owner
                        .as_ref()
                        .is_some_and(|(t, u)| t == tenants.value(i) && u == users.value(i));
                if same {
                    continue;
                }
                if let Some(o) = owner.take() {
                    if chosen.contains(&o) {
                        let entry = entries
                            .entry(o)
                            .or_insert_with(|| UserVectors::new(self.dim));
                        push_rows(entry, &batch.slice(start, i - start), self.dim);
                    }
                }
                if i < batch.num_rows() {
                    owner = Some((tenants.value(i).to_string(), users.value(i).to_string()));
                    start = i;
                }
            }
        }
        let loaded = entries.len();
        let mut cache = self.vectors.lock().unwrap();
        for ((tenant, user), entry) in entries {
            cache.insert(version, &tenant, &user, entry);
        }
        Ok(loaded)
    }

    /// Moves the vector cache from the version before an append (`before`: its version and
    /// fragments) to `ds`, which holds `rows` in new fragments, in that order.
    pub(super) fn follow_append(
        &self,
        before: Option<(u64, Arc<Vec<lance::table::format::Fragment>>)>,
        ds: &Dataset,
        rows: &[EpisodeRow],
        new_users: &HashSet<(String, String)>,
    ) {
        let mut cache = self.vectors.lock().unwrap();
        let version = ds.version().version;
        let fragments = ds.fragments();
        let kept = before.as_ref().map_or(0, |(_, f)| f.len());
        let appended_only = before
            .as_ref()
            .is_none_or(|(_, f)| fragments.len() >= f.len() && fragments[..f.len()] == f[..])
            && !ds.manifest.uses_stable_row_ids();
        let mut addresses = Vec::with_capacity(rows.len());
        for fragment in &fragments[kept.min(fragments.len())..] {
            let n = fragment.physical_rows.unwrap_or(0);
            addresses.extend((0..n as u64).map(|i| (fragment.id << 32) | i));
        }
        if !appended_only || addresses.len() != rows.len() {
            cache.reset(version);
            return;
        }
        cache.extend(
            before.map(|(v, _)| v),
            version,
            self.dim,
            rows.iter().zip(addresses).map(|(r, address)| {
                (
                    r.tenant.as_str(),
                    r.user.as_str(),
                    address,
                    r.ts.timestamp_micros(),
                    r.vector.as_slice(),
                )
            }),
            |tenant, user| new_users.contains(&(tenant.to_string(), user.to_string())),
        );
    }

    /// The user's `k` episodes best matching `query` by BM25, best first; with `as_of`, among
    /// those with event time at or before it.
    pub async fn search_text(
        &self,
        tenant: &str,
        user: &str,
        query: &str,
        k: usize,
        as_of: Option<DateTime<Utc>>,
    ) -> Result<Vec<EpisodeHit>, StoreError> {
        let Some(ds) = self.snapshot() else {
            return Ok(Vec::new());
        };
        if query.split_whitespace().next().is_none() {
            return Ok(Vec::new());
        }
        let result = self
            .search_text_in(&ds, tenant, user, query, k, as_of)
            .await;
        // An erase publishes its version before removing the old one's files: a search that
        // took the old version just before finds a file gone, and runs again on the new one.
        if let Err(StoreError::Lance { source, .. }) = &result {
            let newer = self
                .snapshot()
                .filter(|n| n.version().version != ds.version().version);
            if let (true, Some(newer)) = (file_vanished(source), newer) {
                return self
                    .search_text_in(&newer, tenant, user, query, k, as_of)
                    .await;
            }
        }
        result
    }

    async fn search_text_in(
        &self,
        ds: &Dataset,
        tenant: &str,
        user: &str,
        query: &str,
        k: usize,
        as_of: Option<DateTime<Utc>>,
    ) -> Result<Vec<EpisodeHit>, StoreError> {
        let fts = FullTextSearchQuery::new(query.to_string())
            .with_column(col::CONTENT.to_string())
            .map_err(|e| self.err("full-text search", e))?
            .limit(Some(k as i64));
        let mut scan = ds.scan();
        scan.filter(&scope_filter(tenant, user, as_of))
            .map_err(|e| self.err("full-text search", e))?
            .prefilter(true)
            .full_text_search(fts)
            .map_err(|e| self.err("full-text search", e))?
            .disable_scoring_autoprojection()
            .project(&with_column(&PROJECTION, "_score"))
            .map_err(|e| self.err("full-text search", e))?
            .limit(Some(k as i64), None)
            .map_err(|e| self.err("full-text search", e))?;
        let batch = scan
            .try_into_batch()
            .await
            .map_err(|e| self.err("full-text search", e))?;
        let scores = float_col(&batch, "_score");
        Ok(best_first(&batch, |i| scores.value(i)))
    }

    /// Every row matching `filter` (`what` names the operation in errors); run again on the
    /// newer version when an erase removed a file of the one it took (as [`Self::search_text`]).
    pub(super) async fn scan_rows(
        &self,
        filter: &str,
        what: &'static str,
    ) -> Result<Vec<EpisodeRow>, StoreError> {
        let Some(ds) = self.snapshot() else {
            return Ok(Vec::new());
        };
        let result = self.scan_rows_in(&ds, filter, what).await;
        if let Err(StoreError::Lance { source, .. }) = &result {
            let newer = self
                .snapshot()
                .filter(|n| n.version().version != ds.version().version);
            if let (true, Some(newer)) = (file_vanished(source), newer) {
                return self.scan_rows_in(&newer, filter, what).await;
            }
        }
        result
    }

    async fn scan_rows_in(
        &self,
        ds: &Dataset,
        filter: &str,
        what: &'static str,
    ) -> Result<Vec<EpisodeRow>, StoreError> {
        let mut scan = ds.scan();
        scan.filter(filter)
            .map_err(|e| self.err(what, e))?
            .project(&PROJECTION)
            .map_err(|e| self.err(what, e))?;
        let batches: Vec<RecordBatch> = scan
            .try_into_stream()
            .await
            .map_err(|e| self.err(what, e))?
            .try_collect()
            .await
            .map_err(|e| self.err(what, e))?;
        Ok(batches.iter().flat_map(rows_of).collect())
    }

    /// The user's episodes with these ids, staged ones included (in no particular order;
    /// unknown ids are skipped).
    pub async fn episodes_by_id(
        &self,
        tenant: &str,
        user: &str,
        ids: &[String],
    ) -> Result<Vec<EpisodeRow>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let staged = self.staged_of(tenant, user, |r| ids.contains(&r.id));
        let list: Vec<String> = ids.iter().map(|i| quote(i)).collect();
        let filter = format!(
            "{} AND {} IN ({})",
            user_filter(tenant, user),
            col::ID,
            list.join(", ")
        );
        let committed = self.scan_rows(&filter, "lookup by id").await?;
        Ok(staged::with_staged(committed, self.still_staged(staged)))
    }

    /// The last `limit` episodes of one session of a user, staged ones included, oldest first
    /// (with `before`: only episodes whose event time is earlier).
    pub async fn session_tail(
        &self,
        tenant: &str,
        user: &str,
        session: &str,
        limit: usize,
        before: Option<DateTime<Utc>>,
    ) -> Result<Vec<EpisodeRow>, StoreError> {
        let staged = self.staged_of(tenant, user, |r| {
            r.session.as_deref() == Some(session) && before.is_none_or(|t| r.ts < t)
        });
        let mut filter = format!(
            "{} AND {} = {}",
            user_filter(tenant, user),
            col::SESSION,
            quote(session)
        );
        if let Some(t) = before {
            filter.push_str(&format!(
                " AND {} < TIMESTAMP '{}'",
                col::TS,
                t.format("%Y-%m-%d %H:%M:%S%.6f")
            ));
        }
        let committed = self.scan_rows(&filter, "session tail").await?;
        let mut rows = staged::with_staged(committed, self.still_staged(staged));
        rows.sort_by_key(|r| (r.ts, r.log_offset));
        let skip = rows.len().saturating_sub(limit);
        Ok(rows.split_off(skip))
    }

    /// Every episode of a user, staged ones included, oldest first (exports, tests).
    pub async fn user_episodes(
        &self,
        tenant: &str,
        user: &str,
    ) -> Result<Vec<EpisodeRow>, StoreError> {
        let staged = self.staged_of(tenant, user, |_| true);
        let committed = self.scan_rows(&user_filter(tenant, user), "scan").await?;
        let mut rows = staged::with_staged(committed, self.still_staged(staged));
        rows.sort_by_key(|r| (r.ts, r.log_offset));
        Ok(rows)
    }
}

/// Whether a Lance read failed because a file of its version is gone (removed by an erase
/// that published a newer version).
fn file_vanished(e: &lance::Error) -> bool {
    matches!(e, lance::Error::NotFound { .. }) || e.to_string().contains("Not found")
}
