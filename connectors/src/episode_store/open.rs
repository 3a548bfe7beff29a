//! Opening a store: the latest version, its watermark, row counts and erased owners.

use super::*;

impl EpisodeStore {
    /// Opens the dataset at `dir` if it exists (checking its vector dimension), else prepares
    /// to create it on the first append.
    pub async fn open(dir: &Path, dim: usize, policy: IndexPolicy) -> Result<Self, StoreError> {
        let uri = dir.display().to_string();
        let session = Arc::new(lance::session::Session::new(
            policy.index_cache_mib << 20,
            policy.metadata_cache_mib << 20,
            Default::default(),
        ));
        let cache_bytes = policy.vector_cache_mib << 20;
        let store = EpisodeStore {
            uri: uri.clone(),
            dim,
            policy,
            dataset: RwLock::new(None),
            write: Mutex::new(()),
            state: RwLock::new(StoreState::default()),
            erased: RwLock::new(HashMap::new()),
            forgotten: RwLock::new(Default::default()),
            staged: RwLock::new(Default::default()),
            vectors: std::sync::Mutex::new(VectorCache::new(cache_bytes)),
            session,
            commits: SyncedCommits::new(),
        };
        if crate::durable_commits::has_committed_version(dir) {
            let ds = lance::dataset::builder::DatasetBuilder::from_uri(&uri)
                .with_session(store.session.clone())
                .with_commit_handler(store.commits.clone())
                .load()
                .await
                .map_err(|e| store.err("open", e))?;
            let found = match ds.schema().field(col::VECTOR).map(|f| f.data_type()) {
                Some(arrow_schema::DataType::FixedSizeList(_, n)) => n as usize,
                other => {
                    return Err(StoreError::Column {
                        path: uri,
                        column: col::VECTOR,
                        reason: format!("expected a fixed-size list of floats, found {other:?}"),
                    })
                }
            };
            if found != dim {
                return Err(StoreError::Dimension {
                    path: uri,
                    expected: found,
                    found: dim,
                });
            }
            store.load_state(&ds).await?;
            store.vectors.lock().unwrap().reset(ds.version().version);
            *store.dataset.write().unwrap() = Some(Arc::new(ds));
        }
        Ok(store)
    }

    pub(super) fn err(&self, op: &'static str, source: lance::Error) -> StoreError {
        StoreError::Lance {
            path: self.uri.clone(),
            op,
            source,
        }
    }

    /// Calls `each(tenant, user, log offset, row id)` for every row of `ds`, reading only those
    /// columns (`what` names the operation in errors).
    pub(super) async fn for_each_owner(
        &self,
        ds: &Dataset,
        what: &'static str,
        mut each: impl FnMut(&str, &str, u64, u64),
    ) -> Result<(), StoreError> {
        let mut scan = ds.scan();
        scan.project(&[col::TENANT, col::USER, col::LOG_OFFSET])
            .map_err(|e| self.err(what, e))?
            .with_row_id();
        let mut stream = scan
            .try_into_stream()
            .await
            .map_err(|e| self.err(what, e))?;
        while let Some(batch) = stream.try_next().await.map_err(|e| self.err(what, e))? {
            let tenants = string_col(&batch, col::TENANT);
            let users = string_col(&batch, col::USER);
            let offsets = u64_col(&batch, col::LOG_OFFSET);
            let row_ids = u64_col(&batch, lance::dataset::ROW_ID);
            for i in 0..batch.num_rows() {
                each(
                    tenants.value(i),
                    users.value(i),
                    offsets.value(i),
                    row_ids.value(i),
                );
            }
        }
        Ok(())
    }

    /// Rebuilds the in-memory bookkeeping from the committed rows (offsets and owners only).
    pub(super) async fn load_state(&self, ds: &Dataset) -> Result<(), StoreError> {
        let mut st = StoreState::default();
        self.for_each_owner(ds, "scan", |tenant, user, offset, _| {
            st.watermark = st.watermark.max(Some(offset));
            *st.rows_per_user
                .entry((tenant.to_string(), user.to_string()))
                .or_default() += 1;
            st.rows += 1;
        })
        .await?;
        let indexes = ds
            .load_indices()
            .await
            .map_err(|e| self.err("load indexes", e))?;
        // A table is laid out on the append that takes it to `ann_min_rows` (its vector index
        // trained then only if a user is large enough to need it); the user index is built on
        // the first append.
        let has = |name: &str| indexes.iter().any(|i| i.name == name);
        let vector_index = indexes
            .iter()
            .any(|i| i.fields.contains(&vector_field_id(ds)));
        if vector_index || (st.rows >= self.policy.ann_min_rows && has(USER_INDEX)) {
            st.rows_at_last_layout = st.rows;
        }
        st.unindexed_rows = self.policy.reindex_after_rows; // fold anything pending on next write
        *self.state.write().unwrap() = st;
        Ok(())
    }

    /// Highest input-log offset this store has committed.
    pub fn watermark(&self) -> Option<u64> {
        self.state.read().unwrap().watermark
    }

    pub fn row_count(&self) -> usize {
        self.state.read().unwrap().rows
    }

    pub fn user_row_count(&self, tenant: &str, user: &str) -> usize {
        self.state
            .read()
            .unwrap()
            .rows_per_user
            .get(&(tenant.to_string(), user.to_string()))
            .copied()
            .unwrap_or(0)
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The latest committed dataset version, if any.
    pub fn snapshot(&self) -> Option<Arc<Dataset>> {
        self.dataset.read().unwrap().clone()
    }
}
