//! Appends: rows above the watermark, in one Lance commit with their offsets.

use super::*;

impl EpisodeStore {
    /// Appends the rows whose offset is above the watermark, in one Lance commit; returns how
    /// many were written. Then folds indexes forward if enough rows are unindexed.
    pub async fn append(&self, rows: Vec<EpisodeRow>) -> Result<usize, StoreError> {
        let _w = self.write.lock().await;
        let watermark = self.watermark();
        let mut rows: Vec<EpisodeRow> = rows
            .into_iter()
            .filter(|r| watermark.is_none_or(|w| r.log_offset > w))
            .filter(|r| !self.covered(r))
            .collect();
        if rows.is_empty() {
            return Ok(0);
        }
        // A search reads the user's rows; stored next to each other they are read in a few
        // ranges instead of one row at a time.
        rows.sort_by(|a, b| {
            (&a.tenant, &a.user, a.log_offset).cmp(&(&b.tenant, &b.user, b.log_offset))
        });
        if let Some(bad) = rows.iter().find(|r| r.vector.len() != self.dim) {
            return Err(StoreError::Dimension {
                path: self.uri.clone(),
                expected: self.dim,
                found: bad.vector.len(),
            });
        }
        let batch = self.to_batch(&rows);
        let schema = batch.schema();
        let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
        let existing = self.snapshot();
        let existing_version = existing
            .as_deref()
            .map(|ds| (ds.version().version, ds.fragments().clone()));
        let params = WriteParams {
            mode: if existing.is_some() {
                WriteMode::Append
            } else {
                WriteMode::Create
            },
            session: Some(self.session.clone()),
            commit_handler: Some(self.commits.clone()),
            ..Default::default()
        };
        let ds = match existing {
            Some(ds) => Dataset::write(reader, ds, Some(params)).await,
            None => Dataset::write(reader, self.uri.as_str(), Some(params)).await,
        }
        .map_err(|e| self.err("append", e))?;
        let new_users: HashSet<(String, String)> = {
            let st = self.state.read().unwrap();
            rows.iter()
                .map(|r| (r.tenant.clone(), r.user.clone()))
                .filter(|owner| !st.rows_per_user.contains_key(owner))
                .collect()
        };
        self.follow_append(existing_version, &ds, &rows, &new_users);
        let mut ds = ds;
        if self.policy.full_text && !self.has_index(&ds, FTS_INDEX).await? {
            // Without its full-text index a table is searched with another tokenizer (case
            // matters: "lisbon" misses "Lisbon"), so the first rows become visible only with
            // the index built over them.
            let unindexed = ds.version().version;
            let total = self.state.read().unwrap().rows + rows.len();
            self.build_index(&mut ds, FTS_INDEX, total).await?;
            // an index build leaves every row where it was
            self.vectors
                .lock()
                .unwrap()
                .carry(unindexed, ds.version().version);
        }
        // published before the watermark rises: a reader that finds an offset at or below the
        // watermark finds its row too (the provenance lookup relies on it)
        *self.dataset.write().unwrap() = Some(Arc::new(ds));
        {
            let mut st = self.state.write().unwrap();
            st.watermark = st.watermark.max(rows.iter().map(|r| r.log_offset).max());
            st.rows += rows.len();
            st.unindexed_rows += rows.len();
            for r in &rows {
                *st.rows_per_user
                    .entry((r.tenant.clone(), r.user.clone()))
                    .or_default() += 1;
            }
        }
        // after the version that holds them is published (see `staged.rs`); not under the
        // state lock, which `stage` takes under this one
        if let Some(w) = self.watermark() {
            self.staged.write().unwrap().committed_to(w);
        }
        self.maintain_locked().await?;
        Ok(rows.len())
    }

    pub(super) fn to_batch(&self, rows: &[EpisodeRow]) -> RecordBatch {
        let schema = episodes_schema(self.dim);
        let vector_field = match schema.field_with_name(col::VECTOR).unwrap().data_type() {
            arrow_schema::DataType::FixedSizeList(f, _) => f.clone(),
            _ => unreachable!(),
        };
        let mut vectors = FixedSizeListBuilder::with_capacity(
            Float32Builder::with_capacity(rows.len() * self.dim),
            self.dim as i32,
            rows.len(),
        )
        .with_field(vector_field);
        for r in rows {
            vectors.values().append_slice(&r.vector);
            vectors.append(true);
        }
        let vectors = vectors.finish();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.id))),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| &r.event_id),
            )),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| &r.tenant),
            )),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.user))),
            Arc::new(StringArray::from_iter(
                rows.iter().map(|r| r.session.as_deref()),
            )),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.role))),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| &r.content),
            )),
            Arc::new(
                TimestampMicrosecondArray::from_iter_values(
                    rows.iter().map(|r| r.ts.timestamp_micros()),
                )
                .with_timezone("UTC"),
            ),
            Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.turn))),
            Arc::new(Float32Array::from_iter(rows.iter().map(|r| r.importance))),
            Arc::new(UInt64Array::from_iter_values(
                rows.iter().map(|r| r.log_offset),
            )),
            Arc::new(vectors),
        ];
        RecordBatch::try_new(schema, columns).expect("episode batch matches its schema")
    }
}
