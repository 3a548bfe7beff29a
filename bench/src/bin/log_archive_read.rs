//! How long a restart takes to read the event log back when the records come from the Lance
//! `events` table (the log file has dropped them) rather than from the log file, in one run.
//!
//!     cargo run --release -p engram-bench --bin log_archive_read -- [events] [users]
//!
//! Writes `events` synthetic interactions (default 200,000) to a log and to the table, reads
//! them all as the ingestor and each timely worker do on a restart (chunks of 512), then drops
//! the file's records and reads them again from the table. Prints both rates and their ratio.

use engram_bench::{numeric_args, sentence};
use engram_connectors::{EventLog, EventTable, TableArchive};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::Instant;

/// Reads every record of `log` in chunks of 512; returns the bytes read.
fn read_all(log: &EventLog) -> anyhow::Result<u64> {
    let (mut at, mut bytes) = (0, 0);
    while at < log.end_offset() {
        let chunk = log.read(at, 512)?;
        at += chunk.len() as u64;
        bytes += chunk.iter().map(|(_, b)| b.len() as u64).sum::<u64>();
    }
    Ok(bytes)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = numeric_args();
    let events = args.first().copied().unwrap_or(200_000);
    let users = args.get(1).copied().unwrap_or(1_000);
    let dir = tempfile::tempdir()?;
    let log = EventLog::open(&dir.path().join("log"))?;
    let table = Arc::new(EventTable::open(&dir.path().join("events.lance")).await?);
    let mut rng = StdRng::seed_from_u64(11);
    let start_ts = chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap();
    for first in (0..events).step_by(8192) {
        let batch: Vec<Vec<u8>> = (first..events.min(first + 8192))
            .map(|i| {
                serde_json::json!({
                    "event_id": format!("ev-{i}"), "tenant": "acme",
                    "user": format!("user{}", rng.gen_range(0..users)),
                    "ts": (start_ts + chrono::TimeDelta::seconds(i as i64)).to_rfc3339(),
                    "kind": "interaction", "role": "user", "content": sentence(&mut rng),
                })
                .to_string()
                .into_bytes()
            })
            .collect();
        log.append(&batch)?;
        table.append(first as u64, &batch).await?;
    }
    let file_bytes = log.file_bytes();
    log.set_archive(Arc::new(TableArchive::new(table.clone())?));

    let started = Instant::now();
    let bytes = read_all(&log)?;
    let from_file = started.elapsed().as_secs_f64();
    log.discard_below(events as u64)?;
    let started = Instant::now();
    let again = read_all(&log)?;
    let from_table = started.elapsed().as_secs_f64();
    assert_eq!(bytes, again, "the table gave back other records");

    println!(
        "{events} events, {:.1} MiB in the log file",
        file_bytes as f64 / (1 << 20) as f64
    );
    println!(
        "read from the log file:   {:.3} s ({:.0} events/s)",
        from_file,
        events as f64 / from_file
    );
    println!(
        "read from the Lance table: {:.3} s ({:.0} events/s)",
        from_table,
        events as f64 / from_table
    );
    println!("table / file time: {:.1}x", from_table / from_file);
    Ok(())
}
