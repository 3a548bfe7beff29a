//! Where rejected input goes (beside the Kafka DLQ, and alone when there is no Kafka): one JSON
//! line per rejected input, with the reason, per tenant, each file capped and rotated.
//!
//! Files, under the log folder: `rejects/tenants/<tenant>.jsonl` for each tenant and
//! `rejects/_unknown.jsonl` for input no tenant can be attributed to; rotated copies are
//! `<file>.1` (the newest) to `<file>.<keep_files>`. A rejection is filed under the tenant whose
//! API key submitted it; without a key (Kafka, the admin API, a replayed file) under the tenant
//! it names when that is a valid name of a known tenant ([`RejectLog::set_known_tenants`]),
//! else under `_unknown`. So an input can fill only its submitter's file, and the number of
//! files is bounded by the number of tenants.
//!
//! Bounds: when appending a record would take a file past [`RejectLimits::max_bytes`] (and the
//! file is not empty), the file is rotated: `.keep_files` is deleted, each `.i` becomes `.i+1`,
//! the file becomes `.1`, and a new file begins. A file exceeds the cap only when it holds a
//! single record larger than the cap, so one tenant's rejects take at most
//! `(keep_files + 1) × max(max_bytes, one record)` bytes. Each stored input is cut to
//! [`MAX_ORIGINAL_BYTES`] (at a character boundary), with its length and sha256 kept, so an
//! operator can match it with the input they have.
//!
//! Erasure ([`RejectLog::erase`]) finds, through an index of the tenants and users each file's
//! records name (kept in memory, rebuilt on open), the files that hold a record of the erased,
//! and rewrites only those; an erase of someone no reject names reads no file.

use crate::event_log::LogError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// A stored input is cut to this many bytes.
pub const MAX_ORIGINAL_BYTES: usize = 4096;

/// At most this many distinct tenants, and users, are kept per record; past it the record is
/// marked `names_cut` and an erase of any user of its tenants removes it.
const MAX_NAMES: usize = 64;

/// Inputs up to this size are parsed as JSON to find the names they hold; larger ones (and
/// inputs that are not JSON) are scanned as text for `"tenant": "…"` and `"user": "…"`.
const MAX_PARSED_BYTES: usize = 1 << 20;

/// The file of inputs no tenant can be attributed to.
pub const UNKNOWN_TENANT_FILE: &str = "_unknown";

/// How large the reject files grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RejectLimits {
    /// A file is rotated before a record would take it past this many bytes.
    pub max_bytes: u64,
    /// Rotated files kept per tenant (and for `_unknown`); `0` keeps none.
    pub keep_files: usize,
}

impl Default for RejectLimits {
    fn default() -> Self {
        RejectLimits {
            max_bytes: 16 << 20,
            keep_files: 3,
        }
    }
}

/// One rejected input, as the ingestor hands it over.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rejection {
    /// Where it came from (`http`, a topic name, a file path).
    pub source: String,
    /// The field that is wrong (`$` for the whole input).
    pub field: String,
    pub reason: String,
    /// The input as received (lossy UTF-8), whole.
    pub original: String,
    pub rejected_at: chrono::DateTime<chrono::Utc>,
}

/// One rejected input as stored (a line of a reject file).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RejectRecord {
    pub source: String,
    pub field: String,
    pub reason: String,
    /// The input, cut to [`MAX_ORIGINAL_BYTES`] bytes at a character boundary.
    pub original: String,
    /// Length in bytes of the whole input (as UTF-8, invalid sequences replaced).
    #[serde(default)]
    pub original_bytes: usize,
    /// sha256 (hex) of the whole input (as UTF-8, invalid sequences replaced).
    #[serde(default)]
    pub original_sha256: String,
    /// Whether `original` is cut.
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
    /// The valid tenant names the input names (its `tenant`, or its elements' for an array).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<String>,
    /// The valid user names the input names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<String>,
    /// More than 64 distinct tenants or users were named: an erase of any user of the record's
    /// tenants removes it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub names_cut: bool,
    pub rejected_at: chrono::DateTime<chrono::Utc>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl RejectRecord {
    /// `r` as stored: its input cut, measured, hashed and searched for names.
    pub fn of(r: &Rejection) -> Self {
        let (tenants, users, names_cut) = names_in(&r.original);
        let mut cut = r.original.len().min(MAX_ORIGINAL_BYTES);
        while !r.original.is_char_boundary(cut) {
            cut -= 1;
        }
        RejectRecord {
            source: r.source.clone(),
            field: r.field.clone(),
            reason: r.reason.clone(),
            original: r.original[..cut].to_string(),
            original_bytes: r.original.len(),
            original_sha256: hex::encode(Sha256::digest(r.original.as_bytes())),
            truncated: cut < r.original.len(),
            tenants,
            users,
            names_cut,
            rejected_at: r.rejected_at,
        }
    }

    /// Whether an erase of `tenant` (of `user` only, when given) removes this record, kept in
    /// the file of `file_tenant` (`None`: `_unknown`): it names the tenant, or names none and
    /// is filed under it; and, for a user, it names the user (or more names than were kept).
    pub fn erased_by(&self, file_tenant: Option<&str>, tenant: &str, user: Option<&str>) -> bool {
        let of_tenant = if self.tenants.is_empty() {
            file_tenant == Some(tenant)
        } else {
            self.tenants.iter().any(|t| t == tenant)
        };
        of_tenant && user.is_none_or(|u| self.names_cut || self.users.iter().any(|x| x == u))
    }
}

/// The valid tenant and user names `original` holds (at most [`MAX_NAMES`] of each) and
/// whether there were more: from the parsed JSON (an object's `tenant` and `user`, or its
/// elements' for an array), else from the text.
fn names_in(original: &str) -> (Vec<String>, Vec<String>, bool) {
    let mut tenants = Vec::new();
    let mut users = Vec::new();
    let mut cut = false;
    let mut add = |list: &mut Vec<String>, name: &str| {
        if engram_schemas::validate_name(name).is_err() || list.iter().any(|n| n == name) {
            return;
        }
        if list.len() < MAX_NAMES {
            list.push(name.to_string());
        } else {
            cut = true;
        }
    };
    let parsed = (original.len() <= MAX_PARSED_BYTES)
        .then(|| serde_json::from_str::<Value>(original).ok())
        .flatten();
    match parsed {
        Some(value) => {
            let objects: Vec<&Value> = match &value {
                Value::Array(items) => items.iter().collect(),
                v => vec![v],
            };
            for o in objects {
                if let Some(t) = o.get("tenant").and_then(Value::as_str) {
                    add(&mut tenants, t);
                }
                if let Some(u) = o.get("user").and_then(Value::as_str) {
                    add(&mut users, u);
                }
            }
        }
        None => {
            for t in string_values_of(original, "tenant") {
                add(&mut tenants, t);
            }
            for u in string_values_of(original, "user") {
                add(&mut users, u);
            }
        }
    }
    (tenants, users, cut)
}

/// Every `"key": "value"` in `text` (JSON or not), the value as written (no unescaping: names
/// need none).
fn string_values_of<'a>(text: &'a str, key: &str) -> Vec<&'a str> {
    let quoted = format!("\"{key}\"");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(&quoted) {
        let rest = text[from + at + quoted.len()..].trim_start();
        from += at + quoted.len();
        let Some(rest) = rest.strip_prefix(':').map(str::trim_start) else {
            continue;
        };
        let Some(rest) = rest.strip_prefix('"') else {
            continue;
        };
        if let Some(end) = rest.find('"') {
            out.push(&rest[..end]);
        }
    }
    out
}

/// Whose rejects a file holds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum FileKey {
    Unknown,
    Tenant(String),
}

impl FileKey {
    fn tenant(&self) -> Option<&str> {
        match self {
            FileKey::Unknown => None,
            FileKey::Tenant(t) => Some(t),
        }
    }
}

/// What a record names, as the index keeps it: a named tenant (`None`: none, so the file's)
/// and a user.
type NameKey = (Option<String>, UserKey);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum UserKey {
    /// The record names no user.
    None,
    /// The record names more users than were kept: any.
    Any,
    Name(String),
}

/// One file of a series (the current one or a rotated one), as the index knows it.
#[derive(Debug, Default)]
struct Segment {
    bytes: u64,
    records: u64,
    names: HashSet<NameKey>,
}

impl Segment {
    fn add(&mut self, record: &RejectRecord, line_bytes: u64) {
        self.bytes += line_bytes;
        self.records += 1;
        let tenants: Vec<Option<String>> = if record.tenants.is_empty() {
            vec![None]
        } else {
            record.tenants.iter().cloned().map(Some).collect()
        };
        let mut users: Vec<UserKey> = record.users.iter().cloned().map(UserKey::Name).collect();
        if record.names_cut {
            users.push(UserKey::Any);
        }
        if users.is_empty() {
            users.push(UserKey::None);
        }
        for t in &tenants {
            for u in &users {
                self.names.insert((t.clone(), u.clone()));
            }
        }
    }

    /// Whether a record of this segment (of the file of `file_tenant`) may be erased by an
    /// erase of `tenant` (of `user` only, when given).
    fn may_hold(&self, file_tenant: Option<&str>, tenant: &str, user: Option<&str>) -> bool {
        self.names.iter().any(|(t, u)| {
            t.as_deref().or(file_tenant) == Some(tenant)
                && match (user, u) {
                    (None, _) | (_, UserKey::Any) => true,
                    (Some(x), UserKey::Name(n)) => x == n,
                    (Some(_), UserKey::None) => false,
                }
        })
    }
}

/// A tenant's file and its rotated copies: `segments[0]` is the current file, `segments[i]`
/// the file `.i`.
#[derive(Debug, Default)]
struct Series {
    segments: Vec<Segment>,
}

pub struct RejectLog {
    /// `LOG_DIR/rejects`.
    dir: PathBuf,
    limits: RejectLimits,
    series: Mutex<BTreeMap<FileKey, Series>>,
    count: AtomicU64,
    known_tenants: OnceLock<Box<dyn Fn(&str) -> bool + Send + Sync>>,
    /// Bytes of reject files read by erasures since the log was opened.
    erase_bytes_read: AtomicU64,
}

mod files;

impl RejectLog {
    /// Opens the reject files under `log_dir/rejects` with the default limits.
    pub fn open(log_dir: &Path) -> Result<Self, LogError> {
        Self::open_with(log_dir, RejectLimits::default())
    }

    /// Opens (or creates) the reject files under `log_dir/rejects`: reads every one to count
    /// its records and index the names they hold, deletes rotated files past
    /// `limits.keep_files`, and moves the records of a single `log_dir/rejects.jsonl` (the
    /// layout before per-tenant files) into the per-tenant files, filed by the tenant they
    /// name.
    pub fn open_with(log_dir: &Path, limits: RejectLimits) -> Result<Self, LogError> {
        let dir = log_dir.join("rejects");
        let log = RejectLog {
            series: Mutex::new(BTreeMap::new()),
            count: AtomicU64::new(0),
            known_tenants: OnceLock::new(),
            erase_bytes_read: AtomicU64::new(0),
            limits,
            dir,
        };
        log.load()?;
        log.migrate_single_file(&log_dir.join("rejects.jsonl"))?;
        Ok(log)
    }

    /// The folder of the reject files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Sets which tenants exist: input without a key is filed under the tenant it names only
    /// when `known` says it exists (else under `_unknown`), so no input can create a file.
    /// Once only; false if already set.
    pub fn set_known_tenants(&self, known: Box<dyn Fn(&str) -> bool + Send + Sync>) -> bool {
        self.known_tenants.set(known).is_ok()
    }

    /// Rejections the files held when opened, plus those recorded since, less those erased.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Bytes of reject files read by [`RejectLog::erase`] since the log was opened.
    pub fn erase_bytes_read(&self) -> u64 {
        self.erase_bytes_read.load(Ordering::Relaxed)
    }

    /// The file a rejection goes to: the submitter's, else the tenant's it names (valid and
    /// known), else `_unknown`.
    fn file_for(&self, submitter: Option<&str>, record: &RejectRecord) -> FileKey {
        if let Some(t) = submitter.filter(|t| engram_schemas::validate_name(t).is_ok()) {
            return FileKey::Tenant(t.to_string());
        }
        let known = |t: &str| self.known_tenants.get().is_none_or(|k| k(t));
        match record.tenants.as_slice() {
            [t] if known(t) => FileKey::Tenant(t.clone()),
            _ => FileKey::Unknown,
        }
    }

    /// Stores `rejections` (submitted with the key of `submitter`, when given), synced to disk,
    /// rotating files as they fill.
    pub fn record(
        &self,
        submitter: Option<&str>,
        rejections: &[Rejection],
    ) -> Result<(), LogError> {
        let records: Vec<RejectRecord> = rejections.iter().map(RejectRecord::of).collect();
        self.store(submitter, &records)
    }

    /// Stores records already cut (see [`RejectLog::record`]).
    fn store(&self, submitter: Option<&str>, records: &[RejectRecord]) -> Result<(), LogError> {
        let mut by_file: BTreeMap<FileKey, Vec<&RejectRecord>> = BTreeMap::new();
        for r in records {
            by_file
                .entry(self.file_for(submitter, r))
                .or_default()
                .push(r);
        }
        let mut series = self.series.lock().unwrap_or_else(|p| p.into_inner());
        for (key, records) in by_file {
            let s = series.entry(key.clone()).or_default();
            self.append(&key, s, &records)?;
            self.count
                .fetch_add(records.len() as u64, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Every rejection the files hold: per file, oldest first (rotated files before the
    /// current one).
    pub fn read_all(&self) -> Result<Vec<RejectRecord>, LogError> {
        let series = self.series.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = Vec::new();
        for (key, s) in series.iter() {
            for n in (0..s.segments.len()).rev() {
                out.extend(
                    self.read_file(&self.path(key, n))?
                        .into_iter()
                        .map(|(r, _)| r),
                );
            }
        }
        Ok(out)
    }

    /// Every reject file there is, with its size in bytes.
    pub fn files(&self) -> Vec<(PathBuf, u64)> {
        let series = self.series.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = Vec::new();
        for (key, s) in series.iter() {
            for (n, seg) in s.segments.iter().enumerate() {
                let path = self.path(key, n);
                if path.exists() {
                    out.push((path, seg.bytes));
                }
            }
        }
        out
    }

    /// Removes every rejection an erase of `tenant` (of `user` only, when given) covers (see
    /// [`RejectRecord::erased_by`]); for a whole tenant, its files go, rotated ones included.
    /// Only the files whose index says they may hold such a record are read and rewritten
    /// (each replaced atomically). Returns how many rejections were removed.
    pub fn erase(&self, tenant: &str, user: Option<&str>) -> Result<usize, LogError> {
        let mut series = self.series.lock().unwrap_or_else(|p| p.into_inner());
        let mut removed = 0;
        let own = FileKey::Tenant(tenant.to_string());
        if user.is_none() {
            if let Some(s) = series.remove(&own) {
                removed += self.delete_series(&own, &s)?;
            }
        }
        for (key, s) in series.iter_mut() {
            for n in 0..s.segments.len() {
                if s.segments[n].may_hold(key.tenant(), tenant, user) {
                    removed += self.rewrite_without(key, s, n, tenant, user)?;
                }
            }
        }
        self.count.fetch_sub(removed as u64, Ordering::Relaxed);
        Ok(removed)
    }
}

#[cfg(test)]
mod tests;
