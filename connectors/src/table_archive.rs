//! The Lance `events` table as the archive of the embedded log: reads below the log's base
//! ([`ArchivedRecords`]) come here, from any thread, async or not.
//!
//! Readers of the archived prefix go through it in order (on restart the ingestor, then each
//! timely worker; an erase or an export scans it too), a few hundred records per call. Each
//! call would be a filtered scan of the table, so it reads blocks of [`BLOCK`] records and
//! keeps the last few; a block read before an erase is read again after it.

use crate::event_log::ArchivedRecords;
use crate::event_table::EventTable;
use crate::own_runtime::OwnRuntime;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// Records read from the table together.
pub const BLOCK: u64 = 16_384;
/// Blocks kept: enough for several readers at nearby offsets.
const KEEP_BLOCKS: usize = 4;

struct Block {
    first: u64,
    /// [`EventTable::erasures`] when it was read.
    erasures: u64,
    records: Arc<Vec<Vec<u8>>>,
}

pub struct TableArchive {
    table: Arc<EventTable>,
    /// A reader may be a timely worker or a task of another runtime.
    runtime: OwnRuntime,
    blocks: Mutex<VecDeque<Block>>,
}

impl TableArchive {
    pub fn new(table: Arc<EventTable>) -> std::io::Result<Self> {
        Ok(TableArchive {
            table,
            runtime: OwnRuntime::new("events-archive")?,
            blocks: Mutex::new(VecDeque::new()),
        })
    }

    /// The records of the block that starts at `first` (fewer than [`BLOCK`] at the table's
    /// end), from the kept blocks or the table.
    fn block(&self, first: u64) -> Result<Arc<Vec<Vec<u8>>>, String> {
        let erasures = self.table.erasures();
        {
            let blocks = self.blocks.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(b) = blocks
                .iter()
                .find(|b| b.first == first && b.erasures == erasures)
            {
                return Ok(b.records.clone());
            }
        }
        let read = self
            .runtime
            .block_on(self.table.read(first, first + BLOCK))
            .map_err(|e| e.to_string())?;
        if let Some(i) = read
            .iter()
            .enumerate()
            .position(|(i, (o, _))| *o != first + i as u64)
        {
            return Err(format!(
                "the events table has no record at offset {}",
                first + i as u64
            ));
        }
        let records: Arc<Vec<Vec<u8>>> = Arc::new(read.into_iter().map(|(_, r)| r).collect());
        if records.len() as u64 == BLOCK {
            let mut blocks = self.blocks.lock().unwrap_or_else(|p| p.into_inner());
            blocks.retain(|b| b.first != first);
            if blocks.len() == KEEP_BLOCKS {
                blocks.pop_front();
            }
            blocks.push_back(Block {
                first,
                erasures,
                records: records.clone(),
            });
        }
        Ok(records)
    }
}

impl ArchivedRecords for TableArchive {
    fn read(&self, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>, String> {
        let mut out = Vec::with_capacity(to.saturating_sub(from) as usize);
        let mut at = from;
        while at < to {
            let first = at - at % BLOCK;
            let block = self.block(first)?;
            let until = to.min(first + block.len() as u64);
            if until <= at {
                return Err(format!(
                    "the events table ends at {}, before offset {at}",
                    first + block.len() as u64
                ));
            }
            out.extend((at..until).map(|o| (o, block[(o - first) as usize].clone())));
            at = until;
        }
        Ok(out)
    }
}
