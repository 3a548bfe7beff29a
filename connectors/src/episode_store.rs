//! The Lance `episodes` dataset: one row per interaction with its embedding, a vector (ANN)
//! index, a full-text (inverted, BM25) index and a scalar index on the user.
//!
//! Writes are idempotent by input-log offset: every row carries the offset of the event it came
//! from, the store knows the highest offset it has committed (its watermark), and rows at or
//! below it are skipped. Because the offset lives in the same Lance commit as the row, a crash
//! between the commit and anything else can neither lose nor duplicate a row.
//!
//! Rows appended since the last index build are still searched (Lance scans unindexed
//! fragments); indexes are folded forward in the background as data grows.

use crate::vector_cache::{UserVectors, VectorCache};
use arrow_array::builder::{FixedSizeListBuilder, Float32Builder};
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Float32Array, RecordBatch, RecordBatchIterator,
    StringArray, TimestampMicrosecondArray, UInt32Array, UInt64Array,
};
use chrono::{DateTime, TimeZone, Utc};
use engram_schemas::tables::{episodes as col, episodes_schema};
use futures::{StreamExt, TryStreamExt};
use lance::dataset::optimize::{compact_files, CompactionOptions};
use lance::dataset::{InsertBuilder, WriteMode, WriteParams};
use lance::deps::datafusion::error::DataFusionError;
use lance::deps::datafusion::execution::SendableRecordBatchStream;
use lance::deps::datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use lance::index::DatasetIndexExt;
use lance::Dataset;
use lance_index::optimize::OptimizeOptions;
use lance_index::scalar::{FullTextSearchQuery, InvertedIndexParams, ScalarIndexParams};
use lance_index::IndexType;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, RwLock};
use tokio::sync::Mutex;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("Lance dataset {path}: {op}: {source}")]
    Lance {
        path: String,
        op: &'static str,
        #[source]
        source: lance::Error,
    },
    #[error("Lance dataset {path}: vectors have {found} dimensions, the dataset has {expected}")]
    Dimension {
        path: String,
        expected: usize,
        found: usize,
    },
    #[error("Lance dataset {path}: unexpected column {column}: {reason}")]
    Column {
        path: String,
        column: &'static str,
        reason: String,
    },
    #[error("Lance dataset {path}: starting the runtime its calls run on: {source}")]
    Runtime {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// One episode as stored.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EpisodeRow {
    pub id: String,
    pub event_id: String,
    pub tenant: String,
    pub user: String,
    pub session: Option<String>,
    pub role: String,
    pub content: String,
    pub ts: DateTime<Utc>,
    pub turn: Option<u32>,
    pub importance: Option<f32>,
    pub log_offset: u64,
    #[serde(skip)]
    pub vector: Vec<f32>,
}

/// A search result: the episode and its raw score (cosine similarity for vector search,
/// BM25 for full text).
#[derive(Debug, Clone, serde::Serialize)]
pub struct EpisodeHit {
    pub episode: EpisodeRow,
    pub score: f32,
}

/// When the store (re)builds its indexes.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IndexPolicy {
    /// Build the IVF-PQ vector index once the table has this many rows (below it, exact
    /// search is as fast).
    pub ann_min_rows: usize,
    /// Fold new rows into the indexes once this many are unindexed.
    pub reindex_after_rows: usize,
    /// Once the table reaches `ann_min_rows`, and again each time it has grown by this many
    /// percent since, it is rewritten with each user's rows next to each other and every index
    /// is rebuilt over the new layout (the vector index retrained). Appends interleave users; a
    /// search reads one user's rows, and reading them from a few ranges instead of from every
    /// page of the table made searches at 1M rows 1.6× (vector) and 2.2× (full-text) faster.
    pub relayout_after_growth_percent: usize,
    /// Versions older than this many minutes are removed (with the files only they use) each
    /// time the table is compacted or laid out again; a search in flight holds a version for
    /// milliseconds.
    pub keep_versions_minutes: u32,
    /// Compact small files once the dataset has this many fragments.
    pub compact_after_fragments: usize,
    /// Users with fewer episodes than this are searched exactly; larger ones use the ANN index,
    /// which keeps probing partitions past the first 20 until it has found `k` of the user's
    /// rows. With each user's rows laid out together, exact search costs what the user has, not
    /// what the table has: 4.6 ms for 1,000 of 100,000 rows (ANN 7.4 ms), 13.7 ms for 10,000 of
    /// 1,000,000 (ANN 14.0 ms, finding 0.75 of the true 10 nearest), `recall_latency`.
    pub exact_search_below_user_rows: usize,
    /// Memory for the vectors of users searched exactly, quantised to 8 bits (dimension + 20
    /// bytes a row: 404 MB for a million 384-dimensional rows); 0 turns it off. A user's search
    /// then scans the user's vectors in memory and reads only its best few candidates from
    /// Lance (rescoring them exactly), instead of the user's whole vector column: for 10,000 rows of
    /// 1,000,000, 7.8 ms p50 against Lance's exact search's 11.3 ms in the same run
    /// (`recall_latency`). Users that do not fit (least
    /// recently searched first) are searched through Lance as before.
    pub vector_cache_mib: usize,
    /// Keep a full-text (BM25) index on the content (a table searched only by vector, like
    /// passages, does not need one).
    pub full_text: bool,
    /// Memory Lance may keep for opened indexes (Lance's own default is 6 GiB).
    pub index_cache_mib: usize,
    /// Memory Lance may keep for file and manifest metadata (Lance's default is 1 GiB).
    pub metadata_cache_mib: usize,
}

impl Default for IndexPolicy {
    fn default() -> Self {
        IndexPolicy {
            ann_min_rows: 20_000,
            reindex_after_rows: 5_000,
            relayout_after_growth_percent: 50,
            keep_versions_minutes: 10,
            compact_after_fragments: 48,
            exact_search_below_user_rows: 20_000,
            vector_cache_mib: 512,
            full_text: true,
            index_cache_mib: 512,
            metadata_cache_mib: 128,
        }
    }
}

pub struct EpisodeStore {
    uri: String,
    dim: usize,
    policy: IndexPolicy,
    /// The latest committed version; readers clone the `Arc` and search it unlocked.
    dataset: RwLock<Option<Arc<Dataset>>>,
    /// Serialises writers (appends, index builds, deletes).
    write: Mutex<()>,
    state: RwLock<StoreState>,
    /// Lance's caches, bounded by the policy; every version of the dataset shares them.
    session: Arc<lance::session::Session>,
    /// `(tenant, user)` (user empty: the whole tenant) → rows from offsets below this were
    /// erased, and are dropped if they arrive late.
    erased: RwLock<HashMap<(String, String), u64>>,
    /// Quantised vectors of users searched exactly, for the version in `dataset`
    /// ([`IndexPolicy::vector_cache_mib`]).
    vectors: std::sync::Mutex<VectorCache>,
}

#[derive(Default)]
struct StoreState {
    /// Highest log offset committed, if any row is.
    watermark: Option<u64>,
    rows: usize,
    /// Rows when the table was last laid out by user and its vector index trained.
    rows_at_last_layout: usize,
    unindexed_rows: usize,
    rows_per_user: HashMap<(String, String), usize>,
}

fn quote(s: &str) -> String {
    // Tenant and user names are validated to `[A-Za-z0-9_.:@+-]`; doubling quotes keeps the
    // filter safe for any string regardless.
    format!("'{}'", s.replace('\'', "''"))
}

/// The rows of a search result with their scores (`score(i)` for row `i`), best first. Equal
/// scores are common (short texts, shared words): they are ordered by id, so a ranking does not
/// depend on the order Lance happened to return them in.
fn best_first(batch: &RecordBatch, score: impl Fn(usize) -> f32) -> Vec<EpisodeHit> {
    let mut hits: Vec<EpisodeHit> = rows_of(batch)
        .into_iter()
        .enumerate()
        .map(|(i, episode)| EpisodeHit {
            episode,
            score: score(i),
        })
        .collect();
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.episode.id.cmp(&b.episode.id))
    });
    hits
}

/// The user's rows, and with `as_of` only those whose event time is at or before it (a recall
/// "as of" a past moment sees what had happened by then).
fn scope_filter(tenant: &str, user: &str, as_of: Option<DateTime<Utc>>) -> String {
    match as_of {
        None => user_filter(tenant, user),
        Some(t) => format!(
            "{} AND {} <= TIMESTAMP '{}'",
            user_filter(tenant, user),
            col::TS,
            t.format("%Y-%m-%d %H:%M:%S%.6f")
        ),
    }
}

fn user_filter(tenant: &str, user: &str) -> String {
    format!(
        "{} = {} AND {} = {}",
        col::TENANT,
        quote(tenant),
        col::USER,
        quote(user)
    )
}

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
            vectors: std::sync::Mutex::new(VectorCache::new(cache_bytes)),
            session,
        };
        if dir.join("_versions").exists() {
            let ds = lance::dataset::builder::DatasetBuilder::from_uri(&uri)
                .with_session(store.session.clone())
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

    fn err(&self, op: &'static str, source: lance::Error) -> StoreError {
        StoreError::Lance {
            path: self.uri.clone(),
            op,
            source,
        }
    }

    /// Calls `each(tenant, user, log offset, row id)` for every row of `ds`, reading only those
    /// columns (`what` names the operation in errors).
    async fn for_each_owner(
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
    async fn load_state(&self, ds: &Dataset) -> Result<(), StoreError> {
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
        if indexes
            .iter()
            .any(|i| i.fields.contains(&vector_field_id(ds)))
        {
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

    /// Appends the rows whose offset is above the watermark, in one Lance commit; returns how
    /// many were written. Then folds indexes forward if enough rows are unindexed.
    pub async fn append(&self, rows: Vec<EpisodeRow>) -> Result<usize, StoreError> {
        let _w = self.write.lock().await;
        let watermark = self.watermark();
        let erased = self.erased.read().unwrap();
        let is_erased = |r: &EpisodeRow| {
            [r.user.as_str(), ""].iter().any(|u| {
                erased
                    .get(&(r.tenant.clone(), u.to_string()))
                    .is_some_and(|before| r.log_offset < *before)
            })
        };
        let mut rows: Vec<EpisodeRow> = rows
            .into_iter()
            .filter(|r| watermark.is_none_or(|w| r.log_offset > w))
            .filter(|r| !is_erased(r))
            .collect();
        drop(erased);
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
        *self.dataset.write().unwrap() = Some(Arc::new(ds));
        self.maintain_locked().await?;
        Ok(rows.len())
    }

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
        let Some(ds) = self.snapshot() else {
            return Ok(0);
        };
        let filter = match user {
            Some(u) => user_filter(tenant, u),
            None => format!("{} = {}", col::TENANT, quote(tenant)),
        };
        let mut ds = (*ds).clone();
        let erased = ds
            .count_rows(Some(filter.clone()))
            .await
            .map_err(|e| self.err("count rows to erase", e))?;
        if erased > 0 {
            ds.delete(&filter).await.map_err(|e| self.err("erase", e))?;
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
        // Old versions (and the files only they use) hold the erased rows: remove them all.
        ds.cleanup_old_versions(chrono::TimeDelta::zero(), Some(true), Some(false))
            .await
            .map_err(|e| self.err("erase: remove old versions", e))?;
        {
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
        }
        self.vectors.lock().unwrap().reset(ds.version().version);
        *self.dataset.write().unwrap() = Some(Arc::new(ds));
        Ok(erased)
    }

    /// Whether `ds` has the index `name`.
    async fn has_index(&self, ds: &Dataset, name: &str) -> Result<bool, StoreError> {
        let indexes = ds
            .load_indices()
            .await
            .map_err(|e| self.err("load indexes", e))?;
        Ok(indexes.iter().any(|i| i.name == name))
    }

    /// Builds index `name` (from scratch, replacing any old one) over the current `rows`.
    async fn build_index(
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
    async fn maintain_locked(&self) -> Result<(), StoreError> {
        let Some(ds) = self.snapshot() else {
            return Ok(());
        };
        let mut ds = (*ds).clone();
        let indexes = ds
            .load_indices()
            .await
            .map_err(|e| self.err("load indexes", e))?;
        let has = |name: &str| indexes.iter().any(|i| i.name == name);
        let (rows, unindexed, last_layout) = {
            let st = self.state.read().unwrap();
            (st.rows, st.unindexed_rows, st.rows_at_last_layout)
        };
        let mut changed = false;
        // Lay the table out by user, and (re)train the vector index on it, when the table
        // reaches the threshold and again each time it has grown enough that both the layout
        // and the partitions have drifted from the data.
        let relayout = rows >= self.policy.ann_min_rows
            && (!has(ANN_INDEX)
                || rows * 100 >= last_layout * (100 + self.policy.relayout_after_growth_percent));
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
        if relayout {
            self.build_index(&mut ds, ANN_INDEX, rows).await?;
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
    async fn laid_out_by_user(&self, ds: &Dataset) -> Result<Dataset, StoreError> {
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

    fn to_batch(&self, rows: &[EpisodeRow]) -> RecordBatch {
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

    /// The user's `k` episodes nearest to `query` (cosine), best first; with `as_of`, among
    /// those with event time at or before it.
    pub async fn search_vector(
        &self,
        tenant: &str,
        user: &str,
        query: &[f32],
        k: usize,
        as_of: Option<DateTime<Utc>>,
    ) -> Result<Vec<EpisodeHit>, StoreError> {
        let Some(ds) = self.snapshot() else {
            return Ok(Vec::new());
        };
        if query.len() != self.dim {
            return Err(StoreError::Dimension {
                path: self.uri.clone(),
                expected: self.dim,
                found: query.len(),
            });
        }
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
    async fn search_cached_vectors(
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
    async fn load_user_vectors(
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
    fn follow_append(
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

    /// Every row matching `filter` (`what` names the operation in errors).
    async fn scan_rows(
        &self,
        filter: &str,
        what: &'static str,
    ) -> Result<Vec<EpisodeRow>, StoreError> {
        let Some(ds) = self.snapshot() else {
            return Ok(Vec::new());
        };
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

    /// The user's episodes with these ids (in no particular order; unknown ids are skipped).
    pub async fn episodes_by_id(
        &self,
        tenant: &str,
        user: &str,
        ids: &[String],
    ) -> Result<Vec<EpisodeRow>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list: Vec<String> = ids.iter().map(|i| quote(i)).collect();
        let filter = format!(
            "{} AND {} IN ({})",
            user_filter(tenant, user),
            col::ID,
            list.join(", ")
        );
        self.scan_rows(&filter, "lookup by id").await
    }

    /// The last `limit` episodes of one session of a user, oldest first (with `before`: only
    /// episodes whose event time is earlier).
    pub async fn session_tail(
        &self,
        tenant: &str,
        user: &str,
        session: &str,
        limit: usize,
        before: Option<DateTime<Utc>>,
    ) -> Result<Vec<EpisodeRow>, StoreError> {
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
        let mut rows = self.scan_rows(&filter, "session tail").await?;
        rows.sort_by_key(|r| (r.ts, r.log_offset));
        let skip = rows.len().saturating_sub(limit);
        Ok(rows.split_off(skip))
    }

    /// Every episode of a user, oldest first (exports, tests).
    pub async fn user_episodes(
        &self,
        tenant: &str,
        user: &str,
    ) -> Result<Vec<EpisodeRow>, StoreError> {
        let mut rows = self.scan_rows(&user_filter(tenant, user), "scan").await?;
        rows.sort_by_key(|r| (r.ts, r.log_offset));
        Ok(rows)
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

const FTS_INDEX: &str = "content_fts";
const USER_INDEX: &str = "user_btree";
const TENANT_INDEX: &str = "tenant_bitmap";
/// Index segments kept before they are merged into one (see `maintain_locked`).
const MAX_INDEX_SEGMENTS: usize = 4;
/// Rows read per step of a relayout.
const RELAYOUT_CHUNK_ROWS: usize = 16_384;
const ANN_INDEX: &str = "vector_ivf_pq";

const PROJECTION: [&str; 11] = [
    col::ID,
    col::EVENT_ID,
    col::TENANT,
    col::USER,
    col::SESSION,
    col::ROLE,
    col::CONTENT,
    col::TS,
    col::TURN,
    col::IMPORTANCE,
    col::LOG_OFFSET,
];

fn with_column<'a>(columns: &[&'a str], extra: &'a str) -> Vec<&'a str> {
    let mut v = columns.to_vec();
    v.push(extra);
    v
}

/// PQ sub-vectors: as many as divide the dimension with ≥ 8 dimensions each.
fn pq_sub_vectors(dim: usize) -> usize {
    (1..=dim / 8).rev().find(|s| dim % s == 0).unwrap_or(1)
}

fn vector_field_id(ds: &Dataset) -> i32 {
    ds.schema().field(col::VECTOR).map(|f| f.id).unwrap_or(-1)
}

fn string_col<'a>(batch: &'a RecordBatch, name: &str) -> &'a StringArray {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .unwrap_or_else(|| panic!("column {name} is a string column"))
}

fn vector_col(batch: &RecordBatch) -> &FixedSizeListArray {
    batch
        .column_by_name(col::VECTOR)
        .and_then(|c| c.as_any().downcast_ref::<FixedSizeListArray>())
        .expect("vector column is a fixed-size list")
}

/// Adds the rows of `batch` (vector, ts and row id columns) to `entry`.
fn push_rows(entry: &mut UserVectors, batch: &RecordBatch, dim: usize) {
    let vectors = vector_col(batch);
    let values = vectors
        .values()
        .as_any()
        .downcast_ref::<Float32Array>()
        .expect("vectors of floats");
    let ts = batch
        .column_by_name(col::TS)
        .and_then(|c| c.as_any().downcast_ref::<TimestampMicrosecondArray>())
        .expect("ts column");
    let row_ids = u64_col(batch, lance::dataset::ROW_ID);
    for i in 0..batch.num_rows() {
        let start = (vectors.offset() + i) * dim;
        entry.push(
            row_ids.value(i),
            ts.value(i),
            &values.values()[start..start + dim],
        );
    }
}

/// Cosine similarity (0 when either vector is zero).
fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut aa, mut bb) = (0f32, 0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        aa += x * x;
        bb += y * y;
    }
    let norms = (aa * bb).sqrt();
    if norms > 0.0 {
        dot / norms
    } else {
        0.0
    }
}

fn float_col<'a>(batch: &'a RecordBatch, name: &str) -> &'a Float32Array {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<Float32Array>())
        .unwrap_or_else(|| panic!("column {name} is a float column"))
}

fn u64_col<'a>(batch: &'a RecordBatch, name: &str) -> &'a UInt64Array {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
        .unwrap_or_else(|| panic!("column {name} is an unsigned integer column"))
}

fn rows_of(batch: &RecordBatch) -> Vec<EpisodeRow> {
    let ids = string_col(batch, col::ID);
    let event_ids = string_col(batch, col::EVENT_ID);
    let tenants = string_col(batch, col::TENANT);
    let users = string_col(batch, col::USER);
    let sessions = string_col(batch, col::SESSION);
    let roles = string_col(batch, col::ROLE);
    let contents = string_col(batch, col::CONTENT);
    let ts = batch
        .column_by_name(col::TS)
        .and_then(|c| c.as_any().downcast_ref::<TimestampMicrosecondArray>())
        .expect("ts column");
    let turns = batch
        .column_by_name(col::TURN)
        .and_then(|c| c.as_any().downcast_ref::<UInt32Array>())
        .expect("turn column");
    let importance = float_col(batch, col::IMPORTANCE);
    let offsets = u64_col(batch, col::LOG_OFFSET);
    (0..batch.num_rows())
        .map(|i| EpisodeRow {
            id: ids.value(i).to_string(),
            event_id: event_ids.value(i).to_string(),
            tenant: tenants.value(i).to_string(),
            user: users.value(i).to_string(),
            session: (!sessions.is_null(i)).then(|| sessions.value(i).to_string()),
            role: roles.value(i).to_string(),
            content: contents.value(i).to_string(),
            ts: Utc
                .timestamp_micros(ts.value(i))
                .single()
                .unwrap_or_default(),
            turn: (!turns.is_null(i)).then(|| turns.value(i)),
            importance: (!importance.is_null(i)).then(|| importance.value(i)),
            log_offset: offsets.value(i),
            vector: Vec::new(),
        })
        .collect()
}
