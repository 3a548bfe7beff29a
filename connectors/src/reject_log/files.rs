//! The reject files on disk: naming, loading, appending with rotation, and rewriting.

use super::{FileKey, RejectLog, RejectRecord, Rejection, Segment, Series, UNKNOWN_TENANT_FILE};
use crate::event_log::LogError;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

/// A record of the single reject file kept before per-tenant files.
#[derive(serde::Deserialize)]
struct LegacyRecord {
    source: String,
    field: String,
    reason: String,
    original: String,
    rejected_at: chrono::DateTime<chrono::Utc>,
}

impl RejectLog {
    fn io(&self, path: &Path) -> impl Fn(std::io::Error) -> LogError {
        let path = path.to_path_buf();
        move |source| LogError::Io {
            path: path.clone(),
            source,
        }
    }

    /// The file of `key`: the current one (`n = 0`) or the rotated `.n`.
    pub(super) fn path(&self, key: &FileKey, n: usize) -> PathBuf {
        let base = match key {
            FileKey::Unknown => self.dir.join(format!("{UNKNOWN_TENANT_FILE}.jsonl")),
            FileKey::Tenant(t) => self.dir.join("tenants").join(format!("{t}.jsonl")),
        };
        match n {
            0 => base,
            n => PathBuf::from(format!("{}.{n}", base.display())),
        }
    }

    /// Whose file `name` (in `rejects/` or `rejects/tenants/`) is, and which of its series.
    fn parse_name(name: &str, in_tenants: bool) -> Option<(FileKey, usize)> {
        let (stem, n) = match name.strip_suffix(".jsonl") {
            Some(stem) => (stem, 0),
            None => {
                let (head, n) = name.rsplit_once('.')?;
                (
                    head.strip_suffix(".jsonl")?,
                    n.parse().ok().filter(|n| *n > 0)?,
                )
            }
        };
        match in_tenants {
            true if engram_schemas::validate_name(stem).is_ok() => {
                Some((FileKey::Tenant(stem.to_string()), n))
            }
            false if stem == UNKNOWN_TENANT_FILE => Some((FileKey::Unknown, n)),
            _ => None,
        }
    }

    /// Reads every reject file: counts and indexes its records; deletes rotated files past the
    /// limit.
    pub(super) fn load(&self) -> Result<(), LogError> {
        let tenants_dir = self.dir.join("tenants");
        std::fs::create_dir_all(&tenants_dir).map_err(self.io(&tenants_dir))?;
        let mut series = self.series.lock().unwrap_or_else(|p| p.into_inner());
        for (dir, in_tenants) in [(&self.dir, false), (&tenants_dir, true)] {
            for entry in std::fs::read_dir(dir).map_err(self.io(dir))? {
                let entry = entry.map_err(self.io(dir))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.ends_with(".tmp") {
                    // a rewrite a crash interrupted: the file it was to replace is intact
                    std::fs::remove_file(entry.path()).map_err(self.io(&entry.path()))?;
                    continue;
                }
                let Some((key, n)) = Self::parse_name(&name, in_tenants) else {
                    continue;
                };
                if n > self.limits.keep_files {
                    std::fs::remove_file(entry.path()).map_err(self.io(&entry.path()))?;
                    continue;
                }
                let s = series.entry(key).or_default();
                if s.segments.len() <= n {
                    s.segments.resize_with(n + 1, Segment::default);
                }
                for (record, bytes) in self.read_file(&entry.path())? {
                    s.segments[n].add(&record, bytes);
                    self.count.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        Ok(())
    }

    /// Moves the records of the single reject file of older versions into the per-tenant
    /// files, then deletes it.
    pub(super) fn migrate_single_file(&self, legacy: &Path) -> Result<(), LogError> {
        let text = match std::fs::read_to_string(legacy) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(self.io(legacy)(e)),
        };
        let records: Vec<RejectRecord> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<LegacyRecord>(l).ok())
            .map(|l| {
                RejectRecord::of(&Rejection {
                    source: l.source,
                    field: l.field,
                    reason: l.reason,
                    original: l.original,
                    rejected_at: l.rejected_at,
                })
            })
            .collect();
        self.store(None, &records)?;
        std::fs::remove_file(legacy).map_err(self.io(legacy))?;
        tracing::info!(records = records.len(), from = %legacy.display(), "reject log moved to per-tenant files");
        Ok(())
    }

    /// The records of a file with the bytes of each line (a missing file holds none; lines
    /// that are not records are skipped).
    pub(super) fn read_file(&self, path: &Path) -> Result<Vec<(RejectRecord, u64)>, LogError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.io(path)(e)),
        };
        Ok(text
            .lines()
            .filter_map(|l| Some((serde_json::from_str(l).ok()?, l.len() as u64 + 1)))
            .collect())
    }

    /// Appends `records` to the current file of `key`, rotating it first whenever the next
    /// record would take a non-empty file past the cap; synced before it returns.
    pub(super) fn append(
        &self,
        key: &FileKey,
        series: &mut Series,
        records: &[&RejectRecord],
    ) -> Result<(), LogError> {
        if series.segments.is_empty() {
            series.segments.push(Segment::default());
        }
        let mut buf = String::new();
        for r in records {
            let line = format!("{}\n", serde_json::to_string(r).expect("records serialize"));
            // the current file's bytes, those in `buf` included
            let current = series.segments[0].bytes;
            if current > 0 && current + line.len() as u64 > self.limits.max_bytes {
                self.write_current(key, std::mem::take(&mut buf))?;
                self.rotate(key, series)?;
            }
            buf.push_str(&line);
            series.segments[0].add(r, line.len() as u64);
        }
        self.write_current(key, buf)
    }

    fn write_current(&self, key: &FileKey, buf: String) -> Result<(), LogError> {
        if buf.is_empty() {
            return Ok(());
        }
        let path = self.path(key, 0);
        let io = self.io(&path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(self.io(dir))?;
        }
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(&io)?;
        f.write_all(buf.as_bytes())
            .and_then(|_| f.sync_data())
            .map_err(io)
    }

    /// Deletes the oldest rotated file (the current one with `keep_files = 0`), moves each
    /// other up by one, and starts an empty current file.
    fn rotate(&self, key: &FileKey, series: &mut Series) -> Result<(), LogError> {
        let keep = self.limits.keep_files;
        let remove = |path: PathBuf| match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(self.io(&path)(e)),
            _ => Ok(()),
        };
        remove(self.path(key, keep))?;
        for n in (0..keep).rev() {
            let (from, to) = (self.path(key, n), self.path(key, n + 1));
            match std::fs::rename(&from, &to) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(self.io(&from)(e))
                }
                _ => {}
            }
        }
        series.segments.insert(0, Segment::default());
        series.segments.truncate(keep + 1);
        let dir = self.path(key, 0);
        let dir = dir.parent().unwrap_or(&self.dir);
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(self.io(dir))?;
        tracing::debug!(file = %self.path(key, 0).display(), "reject file rotated");
        Ok(())
    }

    /// Deletes every file of a series; returns how many records they held.
    pub(super) fn delete_series(&self, key: &FileKey, series: &Series) -> Result<usize, LogError> {
        let mut removed = 0;
        for (n, seg) in series.segments.iter().enumerate() {
            let path = self.path(key, n);
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(self.io(&path)(e))
                }
                _ => removed += seg.records as usize,
            }
        }
        Ok(removed)
    }

    /// Rewrites the file `n` of `key` without the records an erase of `tenant` (of `user`
    /// only, when given) covers, replacing it atomically; re-indexes it. Returns how many
    /// were removed.
    pub(super) fn rewrite_without(
        &self,
        key: &FileKey,
        series: &mut Series,
        n: usize,
        tenant: &str,
        user: Option<&str>,
    ) -> Result<usize, LogError> {
        let path = self.path(key, n);
        let io = self.io(&path);
        let records = self.read_file(&path)?;
        let read: u64 = records.iter().map(|(_, b)| b).sum();
        self.erase_bytes_read.fetch_add(read, Ordering::Relaxed);
        let mut kept = String::new();
        let mut segment = Segment::default();
        let mut removed = 0;
        for (r, _) in records {
            if r.erased_by(key.tenant(), tenant, user) {
                removed += 1;
                continue;
            }
            let line = format!(
                "{}\n",
                serde_json::to_string(&r).expect("records serialize")
            );
            segment.add(&r, line.len() as u64);
            kept.push_str(&line);
        }
        if removed > 0 {
            let tmp = PathBuf::from(format!("{}.tmp", path.display()));
            let mut f = File::create(&tmp).map_err(self.io(&tmp))?;
            f.write_all(kept.as_bytes())
                .and_then(|_| f.sync_all())
                .map_err(self.io(&tmp))?;
            std::fs::rename(&tmp, &path).map_err(&io)?;
        }
        series.segments[n] = segment;
        Ok(removed)
    }
}
