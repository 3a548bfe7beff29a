//! The Lance `held` dataset: the events of restricted users, accepted but not processed until
//! the restriction is lifted (or the user is erased).
//!
//! The set is small and changes as a whole (events join it one batch at a time and leave it
//! together when a restriction is lifted or an erase drops them), so each change writes the
//! whole set as a new version and removes every older one: an erased event leaves no file
//! behind. Callers are synchronous (the ingestor), so the table runs its Lance calls on a
//! runtime of its own.

use crate::durable_commits::{sync_directories, SyncedCommits};
use crate::episode_store::StoreError;
use crate::own_runtime::OwnRuntime;
use arrow_array::{
    Array, ArrayRef, BinaryArray, RecordBatch, RecordBatchIterator, StringArray, UInt64Array,
};
use engram_schemas::tables::{held as col, held_schema};
use engram_schemas::Event;
use futures::TryStreamExt;
use lance::dataset::{WriteMode, WriteParams};
use lance::Dataset;
use std::path::Path;
use std::sync::Arc;

pub struct HeldTable {
    uri: String,
    runtime: OwnRuntime,
    /// Held events are acknowledged after a rewrite: it must be durable when it returns.
    commits: Arc<SyncedCommits>,
}

impl HeldTable {
    /// Opens (or prepares to create) the dataset at `dir`; returns it and the records it
    /// holds, in the order they arrived.
    pub fn open(dir: &Path) -> Result<(Self, Vec<Vec<u8>>), StoreError> {
        let uri = dir.display().to_string();
        let runtime = OwnRuntime::new("held-events").map_err(|source| StoreError::Runtime {
            path: uri.clone(),
            source,
        })?;
        let table = HeldTable {
            uri,
            runtime,
            commits: SyncedCommits::new(),
        };
        let records = if table.exists() {
            table.runtime.block_on(table.load())?
        } else {
            Vec::new()
        };
        Ok((table, records))
    }

    /// Whether the dataset has been written (it is created by the first write).
    fn exists(&self) -> bool {
        crate::durable_commits::has_committed_version(Path::new(&self.uri))
    }

    fn err(&self, op: &'static str, source: lance::Error) -> StoreError {
        StoreError::Lance {
            path: self.uri.clone(),
            op,
            source,
        }
    }

    async fn load(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        let ds = Dataset::open(&self.uri)
            .await
            .map_err(|e| self.err("open", e))?;
        let mut scan = ds.scan();
        scan.project(&[col::POSITION, col::RECORD])
            .map_err(|e| self.err("read", e))?;
        let mut stream = scan
            .try_into_stream()
            .await
            .map_err(|e| self.err("read", e))?;
        let mut rows: Vec<(u64, Vec<u8>)> = Vec::new();
        while let Some(batch) = stream.try_next().await.map_err(|e| self.err("read", e))? {
            let positions = batch
                .column_by_name(col::POSITION)
                .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
                .expect("position column");
            let records = batch
                .column_by_name(col::RECORD)
                .and_then(|c| c.as_any().downcast_ref::<BinaryArray>())
                .expect("record column");
            for i in 0..batch.num_rows() {
                rows.push((positions.value(i), records.value(i).to_vec()));
            }
        }
        rows.sort_by_key(|(p, _)| *p);
        Ok(rows.into_iter().map(|(_, r)| r).collect())
    }

    /// Makes `records` (canonical JSON of events, in order) the whole content, durably, and
    /// removes every earlier version with its files.
    pub fn replace(&self, records: &[Vec<u8>]) -> Result<(), StoreError> {
        if records.is_empty() && !self.exists() {
            return Ok(());
        }
        self.runtime.block_on(async {
            let batch = to_batch(records);
            let schema = batch.schema();
            let params = WriteParams {
                mode: WriteMode::Overwrite,
                commit_handler: Some(self.commits.clone()),
                ..Default::default()
            };
            let ds = Dataset::write(
                RecordBatchIterator::new(vec![Ok(batch)], schema),
                self.uri.as_str(),
                Some(params),
            )
            .await
            .map_err(|e| self.err("write", e))?;
            ds.cleanup_old_versions(chrono::TimeDelta::zero(), Some(true), Some(false))
                .await
                .map_err(|e| self.err("remove old versions", e))?;
            // removed versions held erased events: they stay removed
            sync_directories(Path::new(&self.uri)).map_err(|source| StoreError::Io {
                path: self.uri.clone(),
                op: "sync directories",
                source,
            })
        })
    }
}

fn to_batch(records: &[Vec<u8>]) -> RecordBatch {
    // (event id, tenant, user) of each record; the held records are validated events
    let ids: Vec<(String, String, String)> = records
        .iter()
        .map(|r| match Event::from_canonical_json(r) {
            Ok(e) => (e.header.event_id, e.header.tenant, e.header.user),
            Err(_) => Default::default(),
        })
        .collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from_iter_values(0..records.len() as u64)),
        Arc::new(StringArray::from_iter_values(ids.iter().map(|i| &i.0))),
        Arc::new(StringArray::from_iter_values(ids.iter().map(|i| &i.1))),
        Arc::new(StringArray::from_iter_values(ids.iter().map(|i| &i.2))),
        Arc::new(BinaryArray::from_iter_values(records.iter())),
    ];
    RecordBatch::try_new(held_schema(), columns).expect("held batch matches its schema")
}
