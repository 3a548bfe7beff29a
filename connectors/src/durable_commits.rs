//! Lance commits that survive a power loss.
//!
//! Lance writes local datasets through the filesystem and never calls fsync, so a commit that
//! returned can vanish in a power loss, or come back as a manifest whose data files did not.
//! engram acts on commits: the event log drops the records the events table holds, an erase
//! receipt follows the deletions, held events are acknowledged after their rewrite. So every
//! dataset engram writes commits through [`SyncedCommits`], which makes each commit durable in
//! this order:
//! 1. every file of the dataset not synced before (data, deletion, index and transaction
//!    files: all outside `_versions`), then every directory of the dataset;
//! 2. the commit itself, by Lance's own handler for local files;
//! 3. the new manifest, the `_versions` directory and the dataset's directory.
//!
//! A manifest that survives a power loss therefore finds all its files, and a commit that
//! returned survives one. [`sync_directories`] makes removals durable (old versions deleted by
//! an erase).
//!
//! Power-loss test hook: with `ENGRAM_SYNC_JOURNAL` set to a file, each path is appended to it
//! (one absolute path per line) once it is durable. A test deletes every other file of the
//! datasets after a kill -9 to simulate losing what the page cache held.

use lance::io::ObjectStore;
use lance_table::format::{IndexMetadata, Manifest, Transaction};
use lance_table::io::commit::{
    CommitError, CommitHandler, ConditionalPutCommitHandler, ManifestLocation,
    ManifestNamingScheme, ManifestWriter,
};
use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The environment variable naming the power-loss test's journal (see the module docs).
pub const SYNC_JOURNAL_ENV: &str = "ENGRAM_SYNC_JOURNAL";

/// A commit handler for local datasets that syncs before and after Lance's own commit (see
/// the module docs). One per dataset: it remembers which of the dataset's files it synced.
#[derive(Debug)]
pub struct SyncedCommits {
    inner: ConditionalPutCommitHandler,
    /// Files of the dataset known to be durable (pruned to those still present).
    synced: Mutex<HashSet<PathBuf>>,
    journal: Option<PathBuf>,
}

impl SyncedCommits {
    /// A handler with an empty record of synced files: its first commit syncs every file.
    pub fn new() -> Arc<Self> {
        Arc::new(SyncedCommits {
            inner: ConditionalPutCommitHandler,
            synced: Mutex::new(HashSet::new()),
            journal: std::env::var_os(SYNC_JOURNAL_ENV).map(PathBuf::from),
        })
    }

    /// Step 1: every file outside `_versions` not synced before, then every directory.
    /// Returns how many files it synced.
    pub fn sync_data_files(&self, dataset: &Path) -> io::Result<usize> {
        let (files, dirs) = walk(dataset)?;
        let mut synced = self.synced.lock().unwrap_or_else(|e| e.into_inner());
        let fresh: Vec<&PathBuf> = files.iter().filter(|f| !synced.contains(*f)).collect();
        let mut durable = Vec::with_capacity(fresh.len());
        for f in fresh {
            // a temporary file renamed or removed meanwhile is not part of any commit
            if sync_path(f)? {
                durable.push(f.clone());
            }
        }
        for d in &dirs {
            sync_path(d)?;
        }
        synced.retain(|p| files.contains(p));
        synced.extend(durable.iter().cloned());
        self.journal(&durable)?;
        Ok(durable.len())
    }

    /// Step 3: the manifest just committed, `_versions` and the dataset's directory.
    fn sync_manifest(&self, dataset: &Path, manifest: &Path) -> io::Result<()> {
        sync_path(manifest)?;
        sync_path(&dataset.join("_versions"))?;
        sync_path(dataset)?;
        self.journal(&[manifest.to_path_buf()])
    }

    fn journal(&self, durable: &[PathBuf]) -> io::Result<()> {
        let Some(journal) = &self.journal else {
            return Ok(());
        };
        let mut lines = String::new();
        for p in durable {
            lines.push_str(&p.display().to_string());
            lines.push('\n');
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(journal)?
            .write_all(lines.as_bytes())
    }
}

/// fsyncs `path` (a file or a directory); `false` when it no longer exists.
fn sync_path(path: &Path) -> io::Result<bool> {
    match File::open(path).and_then(|f| f.sync_all()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("syncing {}: {e}", path.display()),
        )),
    }
}

/// The files and directories under `dataset`, `_versions` left out; `dataset` itself is among
/// the directories. A dataset not created yet has none.
fn walk(dataset: &Path) -> io::Result<(HashSet<PathBuf>, Vec<PathBuf>)> {
    let mut files = HashSet::new();
    let mut dirs = Vec::new();
    let mut pending = vec![dataset.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let path = entry.path();
            let kind = match entry.file_type() {
                Ok(kind) => kind,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            if kind.is_dir() {
                if dir != dataset || entry.file_name() != "_versions" {
                    pending.push(path);
                }
            } else if kind.is_file() {
                files.insert(path);
            }
        }
        dirs.push(dir);
    }
    Ok((files, dirs))
}

/// Whether `dataset` holds a committed version: a manifest in `_versions`. A crash (or a power
/// loss) during the first commit can leave the folder, even `_versions`, without one: the
/// dataset is then still to be created.
pub fn has_committed_version(dataset: &Path) -> bool {
    std::fs::read_dir(dataset.join("_versions")).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.ends_with(".manifest") && !name.starts_with('.')
        })
    })
}

/// fsyncs every directory of `dataset` (`_versions` included), so that files removed from it
/// stay removed after a power loss.
pub fn sync_directories(dataset: &Path) -> io::Result<()> {
    let (_, dirs) = walk(dataset)?;
    for d in dirs {
        sync_path(&d)?;
    }
    sync_path(&dataset.join("_versions")).map(|_| ())
}

fn local(path: &object_store::path::Path) -> PathBuf {
    PathBuf::from(lance_io::local::to_local_path(path))
}

fn commit_io(e: io::Error) -> CommitError {
    CommitError::OtherError(lance::Error::from(e))
}

#[async_trait::async_trait]
impl CommitHandler for SyncedCommits {
    fn is_version_not_found_definitive(&self) -> bool {
        self.inner.is_version_not_found_definitive()
    }

    fn propagate_commit_error_after_success(&self) -> bool {
        self.inner.propagate_commit_error_after_success()
    }

    async fn commit(
        &self,
        manifest: &mut Manifest,
        indices: Option<Vec<IndexMetadata>>,
        base_path: &object_store::path::Path,
        object_store: &ObjectStore,
        manifest_writer: ManifestWriter,
        naming_scheme: ManifestNamingScheme,
        transaction: Option<Transaction>,
    ) -> Result<ManifestLocation, CommitError> {
        let dataset = local(base_path);
        self.sync_data_files(&dataset).map_err(commit_io)?;
        let location = self
            .inner
            .commit(
                manifest,
                indices,
                base_path,
                object_store,
                manifest_writer,
                naming_scheme,
                transaction,
            )
            .await?;
        self.sync_manifest(&dataset, &local(&location.path))
            .map_err(commit_io)?;
        Ok(location)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_files_are_synced_once_and_versions_left_to_the_commit() {
        let dir = tempfile::tempdir().unwrap();
        let ds = dir.path().join("t.lance");
        std::fs::create_dir_all(ds.join("data")).unwrap();
        std::fs::create_dir_all(ds.join("_versions")).unwrap();
        std::fs::write(ds.join("data/a.lance"), b"a").unwrap();
        std::fs::write(ds.join("_versions/1.manifest"), b"m").unwrap();
        let handler = SyncedCommits::new();
        assert_eq!(handler.sync_data_files(&ds).unwrap(), 1, "data/a only");
        assert_eq!(handler.sync_data_files(&ds).unwrap(), 0, "nothing new");
        std::fs::write(ds.join("data/b.lance"), b"b").unwrap();
        std::fs::remove_file(ds.join("data/a.lance")).unwrap();
        assert_eq!(handler.sync_data_files(&ds).unwrap(), 1, "data/b only");
        let synced = handler.synced.lock().unwrap().clone();
        assert_eq!(synced, HashSet::from([ds.join("data/b.lance")]), "a pruned");
    }

    #[test]
    fn a_versions_folder_without_a_manifest_is_no_committed_version() {
        let dir = tempfile::tempdir().unwrap();
        let ds = dir.path().join("t.lance");
        assert!(!has_committed_version(&ds), "no folder");
        std::fs::create_dir_all(ds.join("_versions")).unwrap();
        assert!(!has_committed_version(&ds), "empty _versions");
        std::fs::write(ds.join("_versions/1.manifest-5b1f0c2e-staging"), b"m").unwrap();
        assert!(!has_committed_version(&ds), "only a staging file");
        std::fs::write(ds.join("_versions/18446744073709551614.manifest"), b"m").unwrap();
        assert!(has_committed_version(&ds));
    }

    #[test]
    fn a_dataset_not_created_yet_has_nothing_to_sync() {
        let dir = tempfile::tempdir().unwrap();
        let handler = SyncedCommits::new();
        assert_eq!(handler.sync_data_files(&dir.path().join("no")).unwrap(), 0);
        sync_directories(&dir.path().join("no")).unwrap();
    }
}
