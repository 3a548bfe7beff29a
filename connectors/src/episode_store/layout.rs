//! Indexes and layout: building and merging indexes, compaction, rewriting rows by user.

use super::*;

impl EpisodeStore {
    /// Whether `ds` has the index `name`.
    pub(super) async fn has_index(&self, ds: &Dataset, name: &str) -> Result<bool, StoreError> {
        let indexes = ds
            .load_indices()
            .await
            .map_err(|e| self.err("load indexes", e))?;
        Ok(indexes.iter().any(|i| i.name == name))
    }

    /// Builds index `name` (from scratch, replacing any old one) over the current `rows`.
    pub(super) async fn build_index(
        &self,
        ds: &mut Dataset,
        name: &str,
        rows: usize,
    ) -> Result<(), StoreError> {
        let result = match name {
            FTS_INDEX => {
                ds.create_index(
                    &[col::CONTENT],
                    IndexType::Inverted,
                    Some(FTS_INDEX.into()),
                    &InvertedIndexParams::default(),
                    true,
                )
                .await
            }
            // Every search filters by tenant as well as user: without an index on the tenant,
            // that half of the filter is evaluated by reading the column (a third of the time of
            // a search at 100,000 rows).
            USER_INDEX | TENANT_INDEX => {
                let (column, kind) = if name == USER_INDEX {
                    (col::USER, IndexType::BTree)
                } else {
                    (col::TENANT, IndexType::Bitmap)
                };
                ds.create_index(
                    &[column],
                    kind,
                    Some(name.into()),
                    &ScalarIndexParams::default(),
                    true,
                )
                .await
            }
            ANN_INDEX => {
                let partitions = (rows / 4096).clamp(1, 1024);
                let sub_vectors = pq_sub_vectors(self.dim);
                tracing::info!(
                    rows,
                    partitions,
                    sub_vectors,
                    "training the episodes vector index"
                );
                let params = lance::index::vector::VectorIndexParams::ivf_pq(
                    partitions,
                    8,
                    sub_vectors,
                    lance_linalg::distance::MetricType::Cosine,
                    50,
                );
                ds.create_index(
                    &[col::VECTOR],
                    IndexType::Vector,
                    Some(ANN_INDEX.into()),
                    &params,
                    true,
                )
                .await
            }
            other => {
                tracing::warn!(index = other, "unknown index left as it is");
                return Ok(());
            }
        };
        result.map(|_| ()).map_err(|e| self.err("build index", e))
    }

    /// Builds missing indexes, folds unindexed rows in and compacts small files, as the
    /// policy says. Called with the write lock held.
    pub(super) async fn maintain_locked(&self) -> Result<(), StoreError> {
        let Some(ds) = self.snapshot() else {
            return Ok(());
        };
        let mut ds = (*ds).clone();
        let indexes = ds
            .load_indices()
            .await
            .map_err(|e| self.err("load indexes", e))?;
        let has = |name: &str| indexes.iter().any(|i| i.name == name);
        let (rows, unindexed, last_layout, largest_user) = {
            let st = self.state.read().unwrap();
            // the most rows one user has, only where it can matter (a scan of every user)
            let largest_user = if st.rows >= self.policy.ann_min_rows {
                st.rows_per_user.values().copied().max().unwrap_or(0)
            } else {
                0
            };
            (
                st.rows,
                st.unindexed_rows,
                st.rows_at_last_layout,
                largest_user,
            )
        };
        let mut changed = false;
        // Lay the table out by user when it reaches the threshold and again each time it has
        // grown enough that the layout has drifted from the data.
        let relayout = rows >= self.policy.ann_min_rows
            && (last_layout == 0
                || rows * 100 >= last_layout * (100 + self.policy.relayout_after_growth_percent));
        // The vector index serves only users with at least `exact_search_below_user_rows` rows
        // (smaller ones are searched exactly), and training it is the costliest step here (50 s
        // of both cores at 20,000 rows, while appends wait): it is trained, on the new layout,
        // only once some user is that large, then again at each layout.
        let wants_ann = rows >= self.policy.ann_min_rows
            && largest_user >= self.policy.exact_search_below_user_rows;
        let train_ann = wants_ann && (relayout || !has(ANN_INDEX));
        if relayout {
            ds = self.laid_out_by_user(&ds).await?;
        }
        if self.policy.full_text && (relayout || !has(FTS_INDEX)) {
            self.build_index(&mut ds, FTS_INDEX, rows).await?;
            changed = true;
        }
        for scalar in [USER_INDEX, TENANT_INDEX] {
            if relayout || !has(scalar) {
                self.build_index(&mut ds, scalar, rows).await?;
                changed = true;
            }
        }
        if train_ann {
            self.build_index(&mut ds, ANN_INDEX, rows).await?;
            changed = true;
        }
        if relayout {
            let mut st = self.state.write().unwrap();
            st.rows_at_last_layout = rows;
            st.unindexed_rows = 0;
            changed = true;
        } else if unindexed >= self.policy.reindex_after_rows {
            ds.optimize_indices(&OptimizeOptions::default())
                .await
                .map_err(|e| self.err("optimize indexes", e))?;
            // Folding rows in adds a delta segment to each index, and a search visits every
            // segment: 1M rows folded in 5,000 at a time left dozens and made a search 5× slower.
            // Past a few, an index's segments are merged into one.
            let mut segments: HashMap<String, usize> = HashMap::new();
            for index in ds
                .load_indices()
                .await
                .map_err(|e| self.err("load indexes", e))?
                .iter()
            {
                *segments.entry(index.name.clone()).or_default() += 1;
            }
            for (name, n) in segments {
                if n > MAX_INDEX_SEGMENTS {
                    let mut merge = OptimizeOptions::merge(n);
                    merge.index_names = Some(vec![name]);
                    ds.optimize_indices(&merge)
                        .await
                        .map_err(|e| self.err("merge index segments", e))?;
                }
            }
            self.state.write().unwrap().unindexed_rows = 0;
            changed = true;
        }
        let compact = ds.count_fragments() >= self.policy.compact_after_fragments;
        if compact {
            compact_files(&mut ds, CompactionOptions::default(), None)
                .await
                .map_err(|e| self.err("compact", e))?;
            changed = true;
        }
        if relayout || compact {
            // Compaction and relayout leave the replaced files to older versions; without this
            // the folder keeps every byte ever written.
            ds.cleanup_old_versions(
                chrono::TimeDelta::minutes(self.policy.keep_versions_minutes.into()),
                Some(false),
                Some(false),
            )
            .await
            .map_err(|e| self.err("remove old versions", e))?;
        }
        if changed {
            let before = self.snapshot();
            let mut vectors = self.vectors.lock().unwrap();
            match before {
                // index builds and index merges leave every row where it was
                Some(b) if b.fragments() == ds.fragments() => {
                    vectors.carry(b.version().version, ds.version().version)
                }
                _ => vectors.reset(ds.version().version),
            }
            drop(vectors);
            *self.dataset.write().unwrap() = Some(Arc::new(ds));
        }
        Ok(())
    }

    /// A new version of `ds` holding the same rows ordered by (tenant, user, log offset), in
    /// one commit (a crash before it leaves the old version current), without indexes. The
    /// rows are read a chunk at a time in that order and streamed to the writer, so memory
    /// holds the sort keys and one chunk, not the table.
    pub(super) async fn laid_out_by_user(&self, ds: &Dataset) -> Result<Dataset, StoreError> {
        let started = std::time::Instant::now();
        let mut keys: Vec<(String, String, u64, u64)> = Vec::with_capacity(self.row_count());
        self.for_each_owner(ds, "relayout", |tenant, user, offset, row_id| {
            keys.push((tenant.to_string(), user.to_string(), offset, row_id))
        })
        .await?;
        keys.sort_unstable();
        let chunks: Vec<Vec<u64>> = keys
            .chunks(RELAYOUT_CHUNK_ROWS)
            .map(|c| c.iter().map(|k| k.3).collect())
            .collect();
        drop(keys);
        let schema = Arc::new(arrow_schema::Schema::from(ds.schema()));
        let source = Arc::new(ds.clone());
        let projection = ds.schema().clone();
        let batches = futures::stream::iter(chunks).then(move |ids| {
            let (source, projection) = (source.clone(), projection.clone());
            async move {
                source
                    .take_rows(&ids, projection)
                    .await
                    .map_err(|e| DataFusionError::External(Box::new(e)))
            }
        });
        let stream: SendableRecordBatchStream =
            Box::pin(RecordBatchStreamAdapter::new(schema, batches));
        let params = WriteParams {
            mode: WriteMode::Overwrite,
            session: Some(self.session.clone()),
            commit_handler: Some(self.commits.clone()),
            ..Default::default()
        };
        let out = InsertBuilder::new(Arc::new(ds.clone()))
            .with_params(&params)
            .execute_stream(stream)
            .await
            .map_err(|e| self.err("relayout", e))?;
        tracing::info!(
            rows = self.row_count(),
            seconds = started.elapsed().as_secs_f64(),
            "episodes laid out by user"
        );
        Ok(out)
    }

    /// Rows per index: `(name, indexed rows)`, and the number of unindexed rows.
    pub async fn index_status(&self) -> Result<(Vec<(String, usize)>, usize), StoreError> {
        let Some(ds) = self.snapshot() else {
            return Ok((Vec::new(), 0));
        };
        let indexes = ds
            .load_indices()
            .await
            .map_err(|e| self.err("load indexes", e))?;
        let mut out = Vec::new();
        for i in indexes.iter() {
            let covered: usize = ds
                .get_fragments()
                .iter()
                .filter(|f| {
                    i.fragment_bitmap
                        .as_ref()
                        .is_some_and(|b| b.contains(f.id() as u32))
                })
                .map(|f| f.metadata().physical_rows.unwrap_or(0))
                .sum();
            out.push((i.name.clone(), covered));
        }
        Ok((out, self.state.read().unwrap().unindexed_rows))
    }
}
