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

mod erase;
mod layout;
mod open;
mod search;
mod staged;
mod write;

use crate::durable_commits::SyncedCommits;
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
    #[error("Lance dataset {path}: {op}: {source}")]
    Io {
        path: String,
        op: &'static str,
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
    /// Lay the table out by user once it has this many rows. The IVF-PQ vector index is
    /// trained then (and at each later layout) only if some user has at least
    /// `exact_search_below_user_rows` rows, or as soon as one has: smaller users are searched
    /// exactly, and training costs most of a layout (50 s of both cores at 20,000 rows).
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
    /// Log offsets of single events erased ([`EpisodeStore::forget`]): their rows are dropped
    /// if they arrive late.
    forgotten: RwLock<std::collections::HashSet<u64>>,
    /// Quantised vectors of users searched exactly, for the version in `dataset`
    /// ([`IndexPolicy::vector_cache_mib`]).
    vectors: std::sync::Mutex<VectorCache>,
    /// Commits are durable when they return (an erase receipt follows them).
    commits: Arc<SyncedCommits>,
    /// Rows embedded and not yet committed, visible to readers (`staged.rs`).
    staged: RwLock<staged::StagedRows>,
}

#[derive(Default)]
struct StoreState {
    /// Highest log offset committed, if any row is.
    watermark: Option<u64>,
    rows: usize,
    /// Rows when the table was last laid out by user (0: not yet).
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
