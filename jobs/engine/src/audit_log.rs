//! The audit log: per tenant, which key read, exported, erased, restricted or unrestricted which
//! user, when, and through which route.
//!
//! Each tenant's records are JSON lines appended to `DATA_DIR/audit/<tenant>.jsonl`; when that
//! file would pass [`AuditLimits::max_file_bytes`] it becomes `<tenant>.jsonl.1` (the older
//! ones move up a number) and at most [`AuditLimits::keep_files`] rotated files are kept, the
//! oldest dropped. Records are only ever appended: nothing rewrites them, and an erase of a
//! user leaves the records about that user, the erase's own included, so the log shows that
//! the erase happened. A record holds ids only (tenant, user, key id, route, status): never
//! content, never a key's secret. Records of erasures, exports and restrictions are synced to
//! disk before the answer goes out; the others are written at once but synced with the next
//! synced record (a crash may lose the last few reads, never a record of an erasure).
//!
//! Each record of a tenant carries a sequence number one above the previous one (recovered
//! from the newest file on first use after a start), so a reader pages with `since`.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What a request did to a user's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditAction {
    Recall,
    Memory,
    Prompt,
    Chat,
    DashboardStream,
    Export,
    Erase,
    Restrict,
    Unrestrict,
    /// One memory deleted (`DELETE /v1/memories/{id}`, or a `forget` control event).
    Forget,
    /// One fact rectified (`PATCH /v1/memories/{id}`).
    Rectify,
    /// An answer's stored provenance read (`GET /v1/messages/{id}/provenance`).
    Provenance,
}

impl AuditAction {
    /// Whether the record must be on disk before the answer (the actions that change or hand
    /// out a user's data as a whole).
    pub fn synced(self) -> bool {
        matches!(
            self,
            AuditAction::Export
                | AuditAction::Erase
                | AuditAction::Restrict
                | AuditAction::Unrestrict
                | AuditAction::Forget
                | AuditAction::Rectify
        )
    }
}

/// One audited request. Ids only: no content of the user's data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// One above the tenant's previous record (the first is 1).
    pub seq: u64,
    pub at: chrono::DateTime<chrono::Utc>,
    pub tenant: String,
    /// The id of the tenant key ([`crate::tenants::key_id`]), or `"admin"` for the admin key.
    pub key_id: String,
    pub action: AuditAction,
    /// The user acted on; `None` for a request about the whole tenant (a tenant's dashboard
    /// stream, an erase of the tenant).
    pub user: Option<String>,
    /// Method and path, e.g. `POST /v1/recall`.
    pub route: String,
    /// The HTTP status answered.
    pub status: u16,
}

/// What a caller records; [`AuditLog::append`] adds the sequence number and the time.
#[derive(Debug, Clone)]
pub struct AuditEntry<'a> {
    pub tenant: &'a str,
    pub key_id: &'a str,
    pub action: AuditAction,
    pub user: Option<&'a str>,
    pub route: &'a str,
    pub status: u16,
}

/// When files rotate and how many are kept.
#[derive(Debug, Clone, Copy)]
pub struct AuditLimits {
    /// A tenant's current file rotates before it would pass this size.
    pub max_file_bytes: u64,
    /// Rotated files kept per tenant, besides the current one.
    pub keep_files: usize,
}

impl Default for AuditLimits {
    fn default() -> Self {
        AuditLimits {
            max_file_bytes: 16 << 20,
            keep_files: 8,
        }
    }
}

/// The most records one [`AuditLog::read`] returns.
pub const MAX_READ: usize = 1000;

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("audit log {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The audit logs of every tenant under one folder.
pub struct AuditLog {
    dir: PathBuf,
    limits: AuditLimits,
    /// The last sequence number of each tenant seen since the start.
    last_seq: Mutex<HashMap<String, u64>>,
}

impl AuditLog {
    /// The audit logs in `dir` (the folder is made by the first append).
    pub fn new(dir: &Path, limits: AuditLimits) -> Self {
        AuditLog {
            dir: dir.to_path_buf(),
            limits,
            last_seq: Mutex::new(HashMap::new()),
        }
    }

    /// The current file of `tenant`. A tenant name is letters, digits and `_ . : @ + -`, so
    /// with the suffix it is always one plain file name inside the folder.
    fn current_path(&self, tenant: &str) -> PathBuf {
        self.dir.join(format!("{tenant}.jsonl"))
    }

    /// The `n`th rotated file of `tenant` (1: the most recent).
    fn rotated_path(&self, tenant: &str, n: usize) -> PathBuf {
        self.dir.join(format!("{tenant}.jsonl.{n}"))
    }

    /// Appends a record to `entry.tenant`'s log (synced to disk when its action is
    /// [`AuditAction::synced`]) and returns it.
    pub fn append(&self, entry: AuditEntry<'_>) -> Result<AuditRecord, AuditError> {
        // one lock for every tenant: appends are short, and it orders rotation and numbering
        let mut last_seq = self.last_seq.lock().unwrap_or_else(|p| p.into_inner());
        let seq = match last_seq.get(entry.tenant) {
            Some(seq) => seq + 1,
            None => self.last_record_seq(entry.tenant)? + 1,
        };
        let record = AuditRecord {
            seq,
            at: chrono::Utc::now(),
            tenant: entry.tenant.to_string(),
            key_id: entry.key_id.to_string(),
            action: entry.action,
            user: entry.user.map(str::to_string),
            route: entry.route.to_string(),
            status: entry.status,
        };
        let mut line = serde_json::to_string(&record).expect("a record serialises");
        line.push('\n');
        let path = self.current_path(entry.tenant);
        let io = |source| AuditError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(|source| AuditError::Io {
            path: self.dir.clone(),
            source,
        })?;
        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
        if size > 0 && size + line.len() as u64 > self.limits.max_file_bytes {
            self.rotate(entry.tenant)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io)?;
        file.write_all(line.as_bytes()).map_err(io)?;
        if record.action.synced() {
            file.sync_data().map_err(io)?;
            sync_dir(&self.dir)?;
        }
        last_seq.insert(entry.tenant.to_string(), seq);
        Ok(record)
    }

    /// Moves `<tenant>.jsonl.n` to `.n+1` (dropping the one past `keep_files`) and the current
    /// file to `.1`.
    fn rotate(&self, tenant: &str) -> Result<(), AuditError> {
        let keep = self.limits.keep_files;
        let oldest = self.rotated_path(tenant, keep.max(1));
        if keep == 0 || oldest.exists() {
            let drop = if keep == 0 {
                self.current_path(tenant)
            } else {
                oldest
            };
            std::fs::remove_file(&drop).map_err(|source| AuditError::Io { path: drop, source })?;
            if keep == 0 {
                return Ok(());
            }
        }
        for n in (1..keep).rev() {
            let from = self.rotated_path(tenant, n);
            if from.exists() {
                rename(&from, &self.rotated_path(tenant, n + 1))?;
            }
        }
        rename(&self.current_path(tenant), &self.rotated_path(tenant, 1))?;
        sync_dir(&self.dir)
    }

    /// The files of `tenant`, oldest first.
    fn files(&self, tenant: &str) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = (1..=self.limits.keep_files)
            .rev()
            .map(|n| self.rotated_path(tenant, n))
            .filter(|p| p.exists())
            .collect();
        let current = self.current_path(tenant);
        if current.exists() {
            files.push(current);
        }
        files
    }

    /// The sequence number of `tenant`'s newest record on disk (0 when it has none).
    fn last_record_seq(&self, tenant: &str) -> Result<u64, AuditError> {
        let mut last = 0;
        for path in self.files(tenant).into_iter().rev() {
            for_each_record(&path, |r| last = last.max(r.seq))?;
            if last > 0 {
                break;
            }
        }
        Ok(last)
    }

    /// `tenant`'s records with a sequence number above `since`, oldest first, at most `limit`
    /// of them (and at most [`MAX_READ`]). Rotated-away records are gone.
    pub fn read(
        &self,
        tenant: &str,
        since: u64,
        limit: usize,
    ) -> Result<Vec<AuditRecord>, AuditError> {
        let limit = limit.min(MAX_READ);
        let mut out = Vec::new();
        for path in self.files(tenant) {
            for_each_record(&path, |r| {
                if r.seq > since && out.len() < limit {
                    out.push(r);
                }
            })?;
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }
}

/// Calls `each` with every record of the file at `path`; a line that does not parse (the torn
/// tail of a crash) is skipped.
fn for_each_record(path: &Path, mut each: impl FnMut(AuditRecord)) -> Result<(), AuditError> {
    let io = |source| AuditError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(e)),
    };
    for line in BufReader::new(file).lines() {
        if let Ok(record) = serde_json::from_str::<AuditRecord>(&line.map_err(io)?) {
            each(record);
        }
    }
    Ok(())
}

fn rename(from: &Path, to: &Path) -> Result<(), AuditError> {
    std::fs::rename(from, to).map_err(|source| AuditError::Io {
        path: from.to_path_buf(),
        source,
    })
}

/// Syncs the folder, so a file created or renamed in it survives a power loss.
fn sync_dir(dir: &Path) -> Result<(), AuditError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| AuditError::Io {
            path: dir.to_path_buf(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(tenant: &'a str, user: &'a str, action: AuditAction) -> AuditEntry<'a> {
        AuditEntry {
            tenant,
            key_id: "engram_0123abcd",
            action,
            user: Some(user),
            route: "POST /v1/recall",
            status: 200,
        }
    }

    #[test]
    fn records_are_numbered_per_tenant_and_read_since() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path(), AuditLimits::default());
        for user in ["alice", "bob", "carol"] {
            log.append(entry("acme", user, AuditAction::Recall))
                .unwrap();
        }
        log.append(entry("globex", "alice", AuditAction::Export))
            .unwrap();
        let acme = log.read("acme", 0, 100).unwrap();
        let users: Vec<_> = acme.iter().map(|r| r.user.as_deref().unwrap()).collect();
        assert_eq!(users, ["alice", "bob", "carol"]);
        assert_eq!(acme.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(
            log.read("acme", 1, 1).unwrap()[0].user.as_deref(),
            Some("bob")
        );
        let globex = log.read("globex", 0, 100).unwrap();
        assert_eq!(globex.len(), 1);
        assert_eq!(globex[0].seq, 1);
        assert_eq!(globex[0].action, AuditAction::Export);
    }

    #[test]
    fn numbering_continues_after_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let log = AuditLog::new(dir.path(), AuditLimits::default());
            log.append(entry("acme", "alice", AuditAction::Erase))
                .unwrap();
            log.append(entry("acme", "alice", AuditAction::Recall))
                .unwrap();
        }
        let log = AuditLog::new(dir.path(), AuditLimits::default());
        let r = log
            .append(entry("acme", "bob", AuditAction::Recall))
            .unwrap();
        assert_eq!(r.seq, 3);
        assert_eq!(log.read("acme", 0, 10).unwrap().len(), 3);
    }

    #[test]
    fn files_rotate_at_the_size_limit_and_the_oldest_leave() {
        let dir = tempfile::tempdir().unwrap();
        let one_line = serde_json::to_string(&AuditRecord {
            seq: 1,
            at: chrono::Utc::now(),
            tenant: "acme".into(),
            key_id: "engram_0123abcd".into(),
            action: AuditAction::Recall,
            user: Some("u0".into()),
            route: "POST /v1/recall".into(),
            status: 200,
        })
        .unwrap()
        .len() as u64;
        // two records a file, two rotated files kept besides the current one
        let limits = AuditLimits {
            max_file_bytes: one_line * 2 + 20,
            keep_files: 2,
        };
        let log = AuditLog::new(dir.path(), limits);
        for i in 0..9 {
            let user = format!("u{i}");
            log.append(entry("acme", &user, AuditAction::Recall))
                .unwrap();
        }
        let kept = log.read("acme", 0, 100).unwrap();
        let seqs: Vec<u64> = kept.iter().map(|r| r.seq).collect();
        // files were [1 2] [3 4] [5 6] [7 8] [9]: the two oldest were dropped
        assert_eq!(seqs, [5, 6, 7, 8, 9], "the newest, in order");
        assert!(!dir.path().join("acme.jsonl.3").exists());
        // numbering survives rotation and a reopen
        let log = AuditLog::new(dir.path(), limits);
        assert_eq!(
            log.append(entry("acme", "x", AuditAction::Recall))
                .unwrap()
                .seq,
            10
        );
    }

    #[test]
    fn a_read_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path(), AuditLimits::default());
        for _ in 0..5 {
            log.append(entry("acme", "alice", AuditAction::Memory))
                .unwrap();
        }
        assert_eq!(log.read("acme", 0, 2).unwrap().len(), 2);
        assert_eq!(log.read("acme", 0, usize::MAX).unwrap().len(), 5);
        assert!(log.read("nobody", 0, 10).unwrap().is_empty());
    }
}
