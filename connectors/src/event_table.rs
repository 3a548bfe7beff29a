//! The Lance `events` dataset: every accepted event, keyed by its offset in the input log.
//!
//! This table is the durable store of record; the embedded log is the write-ahead buffer in
//! front of it. Records reach the table in log order, in batches that are each one Lance
//! commit, and the table knows the offset after the last one it holds ([`EventTable::end`]).
//! Appends skip offsets below that end, so a batch written again after a crash (or a
//! redelivered Kafka message, which the ingestor has already mapped to the offset it got the
//! first time) is stored once: an `event_id` has one offset, and an offset one row.
//!
//! Kafka offsets are committed once [`EventTable::end`] passes the batch. The log reads below
//! its base from the table ([`crate::TableArchive`]), and a log that is behind the table on
//! start (lost, or cut short) continues at the table's end, so the views are rebuilt from
//! Lance.
//!
//! An erase replaces the erased records by their redacted stand-ins (tenant and event id only,
//! so a redelivery is still recognised), rewrites the files that held them and removes every
//! old version.

use crate::durable_commits::{sync_directories, SyncedCommits};
use crate::episode_store::StoreError;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, RecordBatch, RecordBatchIterator, StringArray,
    TimestampMicrosecondArray, UInt64Array,
};
use engram_schemas::tables::{events as col, events_schema};
use engram_schemas::{Event, Redacted};
use futures::TryStreamExt;
use lance::dataset::optimize::{compact_files, CompactionOptions};
use lance::dataset::{WriteMode, WriteParams};
use lance::Dataset;
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::{watch, Mutex};

/// Compact the table's small files once it has this many fragments (one per append).
const COMPACT_AFTER_FRAGMENTS: usize = 64;
/// Versions older than this are removed after a compaction (an erase removes all of them).
const KEEP_VERSIONS_FOR: chrono::TimeDelta = chrono::TimeDelta::minutes(10);

pub struct EventTable {
    uri: String,
    /// The latest committed version.
    dataset: RwLock<Option<Arc<Dataset>>>,
    /// Serialises writers (appends, compactions, erasures).
    write: Mutex<()>,
    /// The offset after the last record held.
    end: watch::Sender<u64>,
    session: Arc<lance::session::Session>,
    /// Erases completed: a copy of records read before one may hold what it removed.
    erasures: std::sync::atomic::AtomicU64,
    /// Every commit is durable when it returns: the log drops what the table holds.
    commits: Arc<SyncedCommits>,
}

/// One record's columns, from its bytes.
struct Columns {
    event_id: String,
    tenant: String,
    user: String,
    kind: &'static str,
    ts: Option<i64>,
    personal: bool,
}

fn columns(bytes: &[u8]) -> Columns {
    if let Some(r) = Redacted::from_record(bytes) {
        return Columns {
            event_id: r.event_id,
            tenant: r.tenant,
            user: String::new(),
            kind: "redacted",
            ts: None,
            personal: false,
        };
    }
    match Event::from_canonical_json(bytes) {
        Ok(e) => Columns {
            personal: !e.governs_processing(),
            kind: e.kind().as_str(),
            ts: Some(e.header.ts.timestamp_micros()),
            event_id: e.header.event_id,
            tenant: e.header.tenant,
            user: e.header.user,
        },
        // The log only holds validated events; keep an unreadable record as it is, ownerless.
        Err(_) => Columns {
            event_id: String::new(),
            tenant: String::new(),
            user: String::new(),
            kind: "unreadable",
            ts: None,
            personal: false,
        },
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

impl EventTable {
    /// Opens the dataset at `dir` if it exists, else prepares to create it on the first append.
    pub async fn open(dir: &Path) -> Result<Self, StoreError> {
        let uri = dir.display().to_string();
        let table = EventTable {
            uri: uri.clone(),
            dataset: RwLock::new(None),
            write: Mutex::new(()),
            end: watch::channel(0).0,
            session: Arc::new(lance::session::Session::new(
                16 << 20,
                32 << 20,
                Default::default(),
            )),
            erasures: Default::default(),
            commits: SyncedCommits::new(),
        };
        if crate::durable_commits::has_committed_version(dir) {
            let ds = lance::dataset::builder::DatasetBuilder::from_uri(&uri)
                .with_session(table.session.clone())
                .with_commit_handler(table.commits.clone())
                .load()
                .await
                .map_err(|e| table.err("open", e))?;
            if ds.schema().field(col::RECORD).is_none() {
                return Err(StoreError::Column {
                    path: uri,
                    column: col::RECORD,
                    reason: "missing: this is not an events table".into(),
                });
            }
            let end = table.scan_end(&ds).await?;
            table.end.send_replace(end);
            *table.dataset.write().unwrap() = Some(Arc::new(ds));
        }
        Ok(table)
    }

    fn err(&self, op: &'static str, source: lance::Error) -> StoreError {
        StoreError::Lance {
            path: self.uri.clone(),
            op,
            source,
        }
    }

    async fn scan_end(&self, ds: &Dataset) -> Result<u64, StoreError> {
        let mut scan = ds.scan();
        scan.project(&[col::LOG_OFFSET])
            .map_err(|e| self.err("scan offsets", e))?;
        let mut stream = scan
            .try_into_stream()
            .await
            .map_err(|e| self.err("scan offsets", e))?;
        let mut end = 0;
        while let Some(batch) = stream
            .try_next()
            .await
            .map_err(|e| self.err("scan offsets", e))?
        {
            let offsets = u64_col(&batch, col::LOG_OFFSET);
            if let Some(max) = arrow::compute::max(offsets) {
                end = end.max(max + 1);
            }
        }
        Ok(end)
    }

    fn snapshot(&self) -> Option<Arc<Dataset>> {
        self.dataset.read().unwrap().clone()
    }

    /// The offset after the last record the table holds (0 when empty).
    pub fn end(&self) -> u64 {
        *self.end.borrow()
    }

    /// Follows [`EventTable::end`].
    pub fn watch_end(&self) -> watch::Receiver<u64> {
        self.end.subscribe()
    }

    /// Waits until the table holds every record below `offset`; false if `timeout` passes
    /// first.
    pub async fn wait_for(&self, offset: u64, timeout: Duration) -> bool {
        let mut rx = self.watch_end();
        tokio::time::timeout(timeout, rx.wait_for(|end| *end >= offset))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Stores the records at offsets `first, first + 1, …` in one commit, skipping those the
    /// table already holds; returns how many were written. The records must continue the
    /// table: `first` may not be past [`EventTable::end`].
    pub async fn append(&self, first: u64, records: &[Vec<u8>]) -> Result<usize, StoreError> {
        let _w = self.write.lock().await;
        let end = self.end();
        if first > end {
            return Err(StoreError::Column {
                path: self.uri.clone(),
                column: col::LOG_OFFSET,
                reason: format!("records from offset {first} would leave a gap after {end}"),
            });
        }
        let skip = ((end - first) as usize).min(records.len());
        let fresh = &records[skip..];
        if fresh.is_empty() {
            return Ok(0);
        }
        let batch = to_batch(end, fresh);
        let schema = batch.schema();
        let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
        let existing = self.snapshot();
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
        let mut ds = match existing {
            Some(ds) => Dataset::write(reader, ds, Some(params)).await,
            None => Dataset::write(reader, self.uri.as_str(), Some(params)).await,
        }
        .map_err(|e| self.err("append", e))?;
        self.end.send_replace(end + fresh.len() as u64);
        if ds.count_fragments() >= COMPACT_AFTER_FRAGMENTS {
            // A failed compaction leaves the (committed) data as it was: log it, go on.
            match compact_files(&mut ds, CompactionOptions::default(), None).await {
                Ok(_) => {
                    if let Err(err) = ds
                        .cleanup_old_versions(KEEP_VERSIONS_FOR, Some(false), Some(false))
                        .await
                    {
                        tracing::warn!(path = %self.uri, %err, "removing old versions of the events table failed");
                    }
                }
                Err(err) => {
                    tracing::warn!(path = %self.uri, %err, "compacting the events table failed")
                }
            }
        }
        *self.dataset.write().unwrap() = Some(Arc::new(ds));
        Ok(fresh.len())
    }

    /// The records at offsets `from..to` the table holds, in offset order.
    pub async fn read(&self, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let Some(ds) = self.snapshot() else {
            return Ok(Vec::new());
        };
        if from >= to {
            return Ok(Vec::new());
        }
        let mut scan = ds.scan();
        scan.project(&[col::LOG_OFFSET, col::PERSONAL, col::RECORD])
            .and_then(|s| {
                s.filter(&format!(
                    "{o} >= {from} AND {o} < {to}",
                    o = col::LOG_OFFSET
                ))
            })
            .map_err(|e| self.err("read", e))?;
        let mut stream = scan
            .try_into_stream()
            .await
            .map_err(|e| self.err("read", e))?;
        // (offset, personal, bytes)
        let mut rows: Vec<(u64, bool, Vec<u8>)> = Vec::new();
        while let Some(batch) = stream.try_next().await.map_err(|e| self.err("read", e))? {
            let offsets = u64_col(&batch, col::LOG_OFFSET);
            let personal = batch
                .column_by_name(col::PERSONAL)
                .and_then(|c| c.as_any().downcast_ref::<BooleanArray>())
                .expect("personal column");
            let records = batch
                .column_by_name(col::RECORD)
                .and_then(|c| c.as_any().downcast_ref::<BinaryArray>())
                .expect("record column");
            for i in 0..batch.num_rows() {
                rows.push((
                    offsets.value(i),
                    personal.value(i),
                    records.value(i).to_vec(),
                ));
            }
        }
        // Files are not in offset order after an erase. An erase interrupted between storing
        // the redacted records and deleting the originals leaves both: the redaction wins.
        rows.sort_by_key(|(o, personal, _)| (*o, *personal));
        rows.dedup_by_key(|(o, _, _)| *o);
        Ok(rows.into_iter().map(|(o, _, bytes)| (o, bytes)).collect())
    }

    /// Replaces every personal record of `tenant` (of its `user` only, when given) below
    /// offset `before` by `redact(tenant, event_id)`, rewrites the files that held them and
    /// removes every old version, so no file keeps them. Returns how many were redacted.
    /// Idempotent: run again after a crash, it finishes what was left.
    pub async fn erase(
        &self,
        tenant: &str,
        user: Option<&str>,
        before: u64,
    ) -> Result<usize, StoreError> {
        let mut filter = format!(
            "{} = {} AND {} AND {} < {before}",
            col::TENANT,
            quote(tenant),
            col::PERSONAL,
            col::LOG_OFFSET
        );
        if let Some(u) = user {
            filter.push_str(&format!(" AND {} = {}", col::USER, quote(u)));
        }
        self.redact_where(tenant, &filter).await
    }

    /// Like [`Self::erase`] for the one record at log offset `offset`, if it is a personal
    /// record of `(tenant, user)` (a forgotten event). Returns 1 if it was redacted, else 0.
    pub async fn forget(&self, tenant: &str, user: &str, offset: u64) -> Result<usize, StoreError> {
        let filter = format!(
            "{} = {} AND {} = {} AND {} AND {} = {offset}",
            col::TENANT,
            quote(tenant),
            col::USER,
            quote(user),
            col::PERSONAL,
            col::LOG_OFFSET
        );
        self.redact_where(tenant, &filter).await
    }

    /// Replaces the records of `tenant` that `filter` selects by their redacted stand-ins,
    /// rewrites the files that held them and removes every old version.
    async fn redact_where(&self, tenant: &str, filter: &str) -> Result<usize, StoreError> {
        let _w = self.write.lock().await;
        let Some(ds) = self.snapshot() else {
            return Ok(0);
        };
        let mut scan = ds.scan();
        scan.project(&[col::LOG_OFFSET, col::EVENT_ID])
            .and_then(|s| s.filter(filter))
            .map_err(|e| self.err("erase: find records", e))?;
        let batches: Vec<RecordBatch> = scan
            .try_into_stream()
            .await
            .map_err(|e| self.err("erase: find records", e))?
            .try_collect()
            .await
            .map_err(|e| self.err("erase: find records", e))?;
        let mut redacted: Vec<(u64, Vec<u8>)> = Vec::new();
        for batch in &batches {
            let offsets = u64_col(batch, col::LOG_OFFSET);
            let ids = batch
                .column_by_name(col::EVENT_ID)
                .and_then(|c| c.as_any().downcast_ref::<StringArray>())
                .expect("event_id column");
            for i in 0..batch.num_rows() {
                let stand_in = Redacted::new(tenant, ids.value(i)).to_json().into_bytes();
                redacted.push((offsets.value(i), stand_in));
            }
        }
        let mut ds = (*ds).clone();
        if !redacted.is_empty() {
            redacted.sort_by_key(|(o, _)| *o);
            // The stand-ins first, then the originals go: a crash in between leaves both, and
            // readers take the stand-in; the next run deletes the originals.
            let batch = to_batch_at(&redacted);
            let schema = batch.schema();
            let params = WriteParams {
                mode: WriteMode::Append,
                session: Some(self.session.clone()),
                commit_handler: Some(self.commits.clone()),
                ..Default::default()
            };
            ds = Dataset::write(
                RecordBatchIterator::new(vec![Ok(batch)], schema),
                Arc::new(ds),
                Some(params),
            )
            .await
            .map_err(|e| self.err("erase: store redactions", e))?;
            ds.delete(filter)
                .await
                .map_err(|e| self.err("erase: delete records", e))?;
            let options = CompactionOptions {
                materialize_deletions: true,
                materialize_deletions_threshold: 0.0,
                ..Default::default()
            };
            compact_files(&mut ds, options, None)
                .await
                .map_err(|e| self.err("erase: rewrite files", e))?;
        }
        // readers move to the new version before the old versions' files are removed
        let ds = Arc::new(ds);
        *self.dataset.write().unwrap() = Some(ds.clone());
        ds.cleanup_old_versions(chrono::TimeDelta::zero(), Some(true), Some(false))
            .await
            .map_err(|e| self.err("erase: remove old versions", e))?;
        // the receipt that follows promises the removed files stay removed
        sync_directories(Path::new(&self.uri)).map_err(|source| StoreError::Io {
            path: self.uri.clone(),
            op: "erase: sync directories",
            source,
        })?;
        self.erasures
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Ok(redacted.len())
    }

    /// How many erases have completed: a copy of records taken when this was lower may hold
    /// records an erase has since redacted.
    pub fn erasures(&self) -> u64 {
        self.erasures.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Rows in the table (records, once an interrupted erase is finished).
    pub async fn row_count(&self) -> Result<usize, StoreError> {
        match self.snapshot() {
            Some(ds) => ds
                .count_rows(None)
                .await
                .map_err(|e| self.err("count rows", e)),
            None => Ok(0),
        }
    }
}

fn u64_col<'a>(batch: &'a RecordBatch, name: &str) -> &'a UInt64Array {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
        .unwrap_or_else(|| panic!("column {name} is a u64 column"))
}

fn to_batch(first: u64, records: &[Vec<u8>]) -> RecordBatch {
    let rows: Vec<(u64, &[u8])> = records
        .iter()
        .enumerate()
        .map(|(i, r)| (first + i as u64, r.as_slice()))
        .collect();
    batch_of(&rows)
}

fn to_batch_at(records: &[(u64, Vec<u8>)]) -> RecordBatch {
    let rows: Vec<(u64, &[u8])> = records.iter().map(|(o, r)| (*o, r.as_slice())).collect();
    batch_of(&rows)
}

fn batch_of(rows: &[(u64, &[u8])]) -> RecordBatch {
    let cols: Vec<Columns> = rows.iter().map(|(_, r)| columns(r)).collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(|(o, _)| *o))),
        Arc::new(StringArray::from_iter_values(
            cols.iter().map(|c| &c.event_id),
        )),
        Arc::new(StringArray::from_iter_values(
            cols.iter().map(|c| &c.tenant),
        )),
        Arc::new(StringArray::from_iter_values(cols.iter().map(|c| &c.user))),
        Arc::new(StringArray::from_iter_values(cols.iter().map(|c| c.kind))),
        Arc::new(
            TimestampMicrosecondArray::from_iter(cols.iter().map(|c| c.ts)).with_timezone("UTC"),
        ),
        Arc::new(BooleanArray::from_iter(
            cols.iter().map(|c| Some(c.personal)),
        )),
        Arc::new(BinaryArray::from_iter_values(rows.iter().map(|(_, r)| *r))),
    ];
    RecordBatch::try_new(events_schema(), columns).expect("event batch matches its schema")
}
