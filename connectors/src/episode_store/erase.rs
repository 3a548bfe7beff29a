//! Erasure: a user's (or tenant's) rows, or one event's, deleted, the indexes rebuilt and old
//! versions removed.

use super::*;

impl EpisodeStore {
    /// Erases every row of a tenant (`user: None`) or of one of its users, so that nothing of
    /// them is left on disk: the rows are deleted, the fragments that held them rewritten
    /// without them, every index rebuilt over what is left (the full-text index held their
    /// words, the vector index their codes), and every older version removed. Returns the
    /// rows erased. Rows of the same tenant (and user) from log offsets below `before` that
    /// arrive later (still on their way from the dataflow) are dropped, not stored.
    pub async fn erase(
        &self,
        tenant: &str,
        user: Option<&str>,
        before: u64,
    ) -> Result<usize, StoreError> {
        let _w = self.write.lock().await;
        {
            let mut erased = self.erased.write().unwrap();
            let at = erased
                .entry((tenant.to_string(), user.unwrap_or("").to_string()))
                .or_default();
            *at = (*at).max(before);
        }
        self.staged.write().unwrap().erase(tenant, user, before);
        let filter = match user {
            Some(u) => user_filter(tenant, u),
            None => format!("{} = {}", col::TENANT, quote(tenant)),
        };
        let erased = self.remove_rows(&filter).await?;
        let mut st = self.state.write().unwrap();
        let mut removed = 0;
        st.rows_per_user.retain(|(t, u), n| {
            let hit = t == tenant && user.is_none_or(|x| x == u);
            if hit {
                removed += *n;
            }
            !hit
        });
        st.rows = st.rows.saturating_sub(removed);
        Ok(erased)
    }

    /// Erases the rows of one event of `(tenant, user)`, the one at log offset `offset` (an
    /// episode, its passages, the facts it asserted or the summary it is), as [`Self::erase`]
    /// erases a user's: rows deleted, fragments rewritten, indexes rebuilt, old versions
    /// removed; rows of that offset arriving later are dropped. Returns the rows erased.
    pub async fn forget(&self, tenant: &str, user: &str, offset: u64) -> Result<usize, StoreError> {
        let _w = self.write.lock().await;
        self.forgotten.write().unwrap().insert(offset);
        self.staged.write().unwrap().forget(offset);
        let filter = format!(
            "{} AND {} = {offset}",
            user_filter(tenant, user),
            col::LOG_OFFSET
        );
        let erased = self.remove_rows(&filter).await?;
        let mut st = self.state.write().unwrap();
        if let Some(n) = st
            .rows_per_user
            .get_mut(&(tenant.to_string(), user.to_string()))
        {
            *n = n.saturating_sub(erased);
        }
        st.rows = st.rows.saturating_sub(erased);
        Ok(erased)
    }

    /// Deletes the rows `filter` selects so that no file keeps them (the caller holds the write
    /// lock): fragments rewritten, indexes rebuilt, the new version published, every older one
    /// removed, directories synced. Returns the rows deleted.
    async fn remove_rows(&self, filter: &str) -> Result<usize, StoreError> {
        let Some(ds) = self.snapshot() else {
            return Ok(0);
        };
        let mut ds = (*ds).clone();
        let erased = ds
            .count_rows(Some(filter.to_string()))
            .await
            .map_err(|e| self.err("count rows to erase", e))?;
        if erased > 0 {
            ds.delete(filter).await.map_err(|e| self.err("erase", e))?;
            let options = CompactionOptions {
                materialize_deletions: true,
                materialize_deletions_threshold: 0.0,
                ..Default::default()
            };
            compact_files(&mut ds, options, None)
                .await
                .map_err(|e| self.err("erase: rewrite fragments", e))?;
            let indexes = ds
                .load_indices()
                .await
                .map_err(|e| self.err("load indexes", e))?;
            let names: Vec<String> = indexes.iter().map(|i| i.name.clone()).collect();
            let rows = ds
                .count_rows(None)
                .await
                .map_err(|e| self.err("count rows", e))?;
            for name in names {
                if name == ANN_INDEX && rows < 256 {
                    // too few rows left to train on: search is exact below the threshold anyway
                    ds.drop_index(ANN_INDEX)
                        .await
                        .map_err(|e| self.err("erase: drop vector index", e))?;
                    continue;
                }
                self.build_index(&mut ds, &name, rows).await?;
            }
        }
        // Readers move to the new version first, then the old versions (and the files only
        // they use, which hold the erased rows) are removed: a search that took the old
        // version just before retries on the new one (see `search_text`).
        self.vectors.lock().unwrap().reset(ds.version().version);
        let ds = Arc::new(ds);
        *self.dataset.write().unwrap() = Some(ds.clone());
        ds.cleanup_old_versions(chrono::TimeDelta::zero(), Some(true), Some(false))
            .await
            .map_err(|e| self.err("erase: remove old versions", e))?;
        // the receipt that follows promises the removed files stay removed
        crate::durable_commits::sync_directories(std::path::Path::new(&self.uri)).map_err(
            |source| StoreError::Io {
                path: self.uri.clone(),
                op: "erase: sync directories",
                source,
            },
        )?;
        Ok(erased)
    }
}
