//! Checking and repairing the event log file: a corrupt stretch with valid records after it is
//! not a torn tail (a crash during a write damages only the end), so [`EventLog::open`] refuses
//! to start instead of cutting those records off; `engram log check` says what a repair would
//! set aside, and `engram log repair` moves the stretch and everything after it to a quarantine
//! file (nothing is destroyed) and cuts the log there. Records the Lance events table holds
//! come back from it on the next start.
//!
//! [`EventLog::open`]: crate::EventLog::open

use crate::event_log::LogError;
use crate::log_records::{corruption_in, scan_bytes, Corruption};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What `engram log check` reports.
#[derive(Debug, Clone, Serialize)]
pub struct LogCheck {
    pub path: PathBuf,
    /// The log offset of the file's first record.
    pub base: u64,
    /// Records read before the first bad byte.
    pub valid_records: usize,
    /// Bytes from the first bad byte to the end of the file.
    pub bad_bytes: u64,
    /// Present when the bad bytes are not a torn tail.
    pub corruption: Option<Corruption>,
    /// Where `repair` put the bad bytes (`repair` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quarantined_to: Option<PathBuf>,
}

/// Reads `dir/events.log` and reports its bad bytes, changing nothing.
pub fn check(dir: &Path) -> Result<LogCheck, LogError> {
    read_and_check(dir).map(|(report, _)| report)
}

/// [`check`], with the file's bytes.
fn read_and_check(dir: &Path) -> Result<(LogCheck, Vec<u8>), LogError> {
    let path = dir.join("events.log");
    let data = std::fs::read(&path).map_err(|source| LogError::Io {
        path: path.clone(),
        source,
    })?;
    let (base, positions, valid_len) = scan_bytes(&data);
    let corruption = corruption_in(&data, base, positions.len(), valid_len);
    let report = LogCheck {
        path,
        base,
        valid_records: positions.len(),
        bad_bytes: data.len() as u64 - valid_len,
        corruption,
        quarantined_to: None,
    };
    Ok((report, data))
}

/// Moves the bad bytes of `dir/events.log` (a corrupt stretch and everything after it) to
/// `dir/quarantine/events-<byte>-<unix time>.bin`, synced, then cuts the log there, synced.
/// Run it while engram is stopped. A log without bad bytes is left as it is.
pub fn repair(dir: &Path) -> Result<LogCheck, LogError> {
    let (mut report, data) = read_and_check(dir)?;
    if report.bad_bytes == 0 {
        return Ok(report);
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LogError::Io { path, source }
    };
    let from = data.len() - report.bad_bytes as usize;
    let folder = dir.join("quarantine");
    std::fs::create_dir_all(&folder).map_err(io(&folder))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let target = folder.join(format!("events-{from}-{stamp}.bin"));
    let mut out = std::fs::File::create(&target).map_err(io(&target))?;
    out.write_all(&data[from..])
        .and_then(|_| out.sync_all())
        .map_err(io(&target))?;
    std::fs::File::open(&folder)
        .and_then(|d| d.sync_all())
        .map_err(io(&folder))?;
    let log = std::fs::OpenOptions::new()
        .write(true)
        .open(&report.path)
        .map_err(io(&report.path))?;
    log.set_len(from as u64)
        .and_then(|_| log.sync_all())
        .map_err(io(&report.path))?;
    report.quarantined_to = Some(target);
    Ok(report)
}
