//! Tenants and their API keys. Every `/v1` request names its tenant by key; the key decides
//! which tenant's memory the request may read or write, whatever the request body says.
//!
//! The registry is one JSON file in the data folder (`tenants.json`), rewritten atomically. Only
//! SHA-256 digests of keys are stored: a stolen file does not give working keys. The server
//! re-reads the file when it changes on disk, so `engram tenant …` works while it runs.

use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::SystemTime;

/// Keys look like `engram_` followed by 64 hex digits (256 random bits).
pub const KEY_PREFIX: &str = "engram_";

#[derive(Debug, thiserror::Error)]
pub enum TenantError {
    #[error("tenant registry {path}: {reason}")]
    File { path: PathBuf, reason: String },
    #[error("tenant name {name:?}: {reason}")]
    InvalidName { name: String, reason: String },
    #[error("tenant {0:?} already exists")]
    Exists(String),
    #[error("no tenant {0:?}")]
    Unknown(String),
    #[error("tenant {tenant:?} has no key {key_id:?}")]
    UnknownKey { tenant: String, key_id: String },
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KeyRecord {
    /// The first characters of the key: enough to tell keys apart in listings and to revoke
    /// one, too few to use.
    pub id: String,
    pub sha256: String,
    pub created: chrono::DateTime<chrono::Utc>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TenantRecord {
    pub created: chrono::DateTime<chrono::Utc>,
    pub keys: Vec<KeyRecord>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
struct RegistryFile {
    tenants: BTreeMap<String, TenantRecord>,
}

struct Loaded {
    file: RegistryFile,
    /// SHA-256 of a key → its tenant.
    by_digest: HashMap<String, String>,
    modified: Option<Stamp>,
}

pub struct TenantRegistry {
    path: PathBuf,
    loaded: RwLock<Loaded>,
}

fn digest(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// Whether two secrets are equal, comparing their digests so the time taken does not depend
/// on how long a prefix matches.
pub fn same_secret(presented: &str, expected: &str) -> bool {
    let (a, b) = (
        Sha256::digest(presented.as_bytes()),
        Sha256::digest(expected.as_bytes()),
    );
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

fn new_key() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("{KEY_PREFIX}{}", hex::encode(bytes))
}

/// What tells one version of the file from another: every write renames a new file into
/// place, so the inode changes even where mtimes are coarse.
type Stamp = (u64, Option<SystemTime>);

fn modified(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .ok()
        .map(|m| (m.ino(), m.modified().ok()))
}

impl Loaded {
    fn new(file: RegistryFile, modified: Option<Stamp>) -> Self {
        let by_digest = file
            .tenants
            .iter()
            .flat_map(|(name, t)| t.keys.iter().map(move |k| (k.sha256.clone(), name.clone())))
            .collect();
        Loaded {
            file,
            by_digest,
            modified,
        }
    }
}

impl TenantRegistry {
    /// The registry in `data_dir/tenants.json` (empty when the file does not exist yet).
    pub fn open(data_dir: &Path) -> Result<Self, TenantError> {
        let path = data_dir.join("tenants.json");
        let (file, modified) = Self::read(&path)?;
        Ok(TenantRegistry {
            loaded: RwLock::new(Loaded::new(file, modified)),
            path,
        })
    }

    fn read(path: &Path) -> Result<(RegistryFile, Option<Stamp>), TenantError> {
        let err = |reason: String| TenantError::File {
            path: path.to_path_buf(),
            reason,
        };
        let stamp = modified(path);
        match std::fs::read(path) {
            Ok(bytes) => Ok((
                serde_json::from_slice(&bytes).map_err(|e| err(format!("not a registry: {e}")))?,
                stamp,
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Ok((RegistryFile::default(), None))
            }
            Err(e) => Err(err(e.to_string())),
        }
    }

    fn write(&self, file: &RegistryFile) -> Result<Option<Stamp>, TenantError> {
        let err = |reason: String| TenantError::File {
            path: self.path.clone(),
            reason,
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
        }
        let tmp = self.path.with_extension("json.tmp");
        let bytes = serde_json::to_vec_pretty(file).map_err(|e| err(e.to_string()))?;
        std::fs::write(&tmp, bytes).map_err(|e| err(e.to_string()))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600));
        }
        std::fs::File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(|e| err(e.to_string()))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| err(e.to_string()))?;
        Ok(modified(&self.path))
    }

    /// Re-reads the file if another process changed it since it was read.
    fn refresh(&self) -> Result<(), TenantError> {
        let on_disk = modified(&self.path);
        if self
            .loaded
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .modified
            == on_disk
        {
            return Ok(());
        }
        let (file, stamp) = Self::read(&self.path)?;
        *self.loaded.write().unwrap_or_else(|p| p.into_inner()) = Loaded::new(file, stamp);
        Ok(())
    }

    /// Applies `change` to the current file (re-read first, so concurrent CLI edits are kept)
    /// and writes it back.
    fn update<T>(
        &self,
        change: impl FnOnce(&mut RegistryFile) -> Result<T, TenantError>,
    ) -> Result<T, TenantError> {
        let mut loaded = self.loaded.write().unwrap_or_else(|p| p.into_inner());
        let (mut file, _) = Self::read(&self.path)?;
        let out = change(&mut file)?;
        let stamp = self.write(&file)?;
        *loaded = Loaded::new(file, stamp);
        Ok(out)
    }

    /// The tenant a key belongs to, or `None` for an unknown or revoked key.
    pub fn authenticate(&self, key: &str) -> Option<String> {
        if let Err(err) = self.refresh() {
            tracing::error!(%err, "could not re-read the tenant registry; using the last one read");
        }
        let d = digest(key);
        self.loaded
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .by_digest
            .get(&d)
            .cloned()
    }

    /// Creates a tenant and returns its first key (the only time the key is shown).
    pub fn create(&self, name: &str) -> Result<String, TenantError> {
        engram_schemas::validate_name(name).map_err(|reason| TenantError::InvalidName {
            name: name.to_string(),
            reason,
        })?;
        let key = new_key();
        self.update(|file| {
            if file.tenants.contains_key(name) {
                return Err(TenantError::Exists(name.to_string()));
            }
            file.tenants.insert(
                name.to_string(),
                TenantRecord {
                    created: chrono::Utc::now(),
                    keys: vec![key_record(&key)],
                },
            );
            Ok(())
        })?;
        Ok(key)
    }

    /// Adds a key to an existing tenant (for rotation: issue a new key, then revoke the old).
    pub fn issue_key(&self, tenant: &str) -> Result<String, TenantError> {
        let key = new_key();
        self.update(|file| {
            let t = file
                .tenants
                .get_mut(tenant)
                .ok_or_else(|| TenantError::Unknown(tenant.to_string()))?;
            t.keys.push(key_record(&key));
            Ok(())
        })?;
        Ok(key)
    }

    /// Revokes the key of `tenant` whose id (or full key) is `key_id`.
    pub fn revoke_key(&self, tenant: &str, key_id: &str) -> Result<(), TenantError> {
        let wanted = if key_id.len() > 16 {
            key_record(key_id).id
        } else {
            key_id.to_string()
        };
        self.update(|file| {
            let t = file
                .tenants
                .get_mut(tenant)
                .ok_or_else(|| TenantError::Unknown(tenant.to_string()))?;
            let before = t.keys.len();
            t.keys.retain(|k| k.id != wanted);
            if t.keys.len() == before {
                return Err(TenantError::UnknownKey {
                    tenant: tenant.to_string(),
                    key_id: key_id.to_string(),
                });
            }
            Ok(())
        })
    }

    /// Removes a tenant and all its keys (part of erasing a tenant).
    pub fn remove(&self, tenant: &str) -> Result<(), TenantError> {
        self.update(|file| {
            file.tenants
                .remove(tenant)
                .map(|_| ())
                .ok_or_else(|| TenantError::Unknown(tenant.to_string()))
        })
    }

    /// `read` of the registry as on disk now.
    fn current<T>(&self, read: impl FnOnce(&RegistryFile) -> T) -> T {
        if let Err(err) = self.refresh() {
            tracing::error!(%err, "could not re-read the tenant registry; using the last one read");
        }
        read(&self.loaded.read().unwrap_or_else(|p| p.into_inner()).file)
    }

    pub fn contains(&self, tenant: &str) -> bool {
        self.current(|f| f.tenants.contains_key(tenant))
    }

    /// `event` if its tenant exists, else why not (field `tenant`): events of an unknown
    /// tenant are rejected wherever they come from without a tenant's key (Kafka, the admin
    /// API).
    pub fn known(
        &self,
        event: engram_schemas::Event,
    ) -> Result<engram_schemas::Event, engram_schemas::EventError> {
        if self.contains(&event.header.tenant) {
            return Ok(event);
        }
        Err(engram_schemas::EventError::new(
            "tenant",
            format!(
                "unknown tenant {:?}: create it first (`engram tenant create`, or POST /v1/admin/tenants)",
                event.header.tenant
            ),
        ))
    }

    /// Every tenant with its key ids (never the keys).
    pub fn list(&self) -> BTreeMap<String, TenantRecord> {
        self.current(|f| f.tenants.clone())
    }

    /// The key kept in `key_file` for `tenant`, created (with the tenant, if needed) on first
    /// use. For the demo: one well-known local key that survives restarts.
    pub fn ensure_key_file(&self, tenant: &str, key_file: &Path) -> Result<String, TenantError> {
        if let Ok(key) = std::fs::read_to_string(key_file) {
            let key = key.trim().to_string();
            if self.authenticate(&key).as_deref() == Some(tenant) {
                return Ok(key);
            }
        }
        let key = if self.contains(tenant) {
            self.issue_key(tenant)?
        } else {
            self.create(tenant)?
        };
        std::fs::write(key_file, format!("{key}\n")).map_err(|e| TenantError::File {
            path: key_file.to_path_buf(),
            reason: e.to_string(),
        })?;
        Ok(key)
    }
}

/// The id of `key`: its first characters, as listings, revocations and the audit log name it
/// (too few to use the key).
pub fn key_id(key: &str) -> String {
    key.chars().take(KEY_PREFIX.len() + 8).collect()
}

fn key_record(key: &str) -> KeyRecord {
    KeyRecord {
        id: key_id(key),
        sha256: digest(key),
        created: chrono::Utc::now(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_opens_its_own_tenant_only_and_stops_working_when_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let reg = TenantRegistry::open(dir.path()).unwrap();
        let a = reg.create("acme").unwrap();
        let b = reg.create("globex").unwrap();
        assert!(a.starts_with(KEY_PREFIX) && a.len() == KEY_PREFIX.len() + 64);
        assert_ne!(a, b);
        assert_eq!(reg.authenticate(&a).as_deref(), Some("acme"));
        assert_eq!(reg.authenticate(&b).as_deref(), Some("globex"));
        assert_eq!(reg.authenticate("engram_0000").as_deref(), None);
        assert_eq!(reg.authenticate(&a[..a.len() - 1]).as_deref(), None);

        let a2 = reg.issue_key("acme").unwrap();
        reg.revoke_key("acme", &a).unwrap();
        assert_eq!(reg.authenticate(&a), None);
        assert_eq!(reg.authenticate(&a2).as_deref(), Some("acme"));
        assert!(matches!(reg.create("acme"), Err(TenantError::Exists(_))));
        assert!(matches!(
            reg.create("bad name"),
            Err(TenantError::InvalidName { .. })
        ));
    }

    #[test]
    fn the_file_holds_digests_not_keys_and_other_processes_see_changes() {
        let dir = tempfile::tempdir().unwrap();
        let server = TenantRegistry::open(dir.path()).unwrap();
        assert_eq!(server.authenticate("engram_x"), None);
        // a second registry on the same folder stands for `engram tenant create` run alongside
        let cli = TenantRegistry::open(dir.path()).unwrap();
        let key = cli.create("acme").unwrap();
        let text = std::fs::read_to_string(dir.path().join("tenants.json")).unwrap();
        assert!(!text.contains(&key[KEY_PREFIX.len()..]), "{text}");
        let key2 = cli.issue_key("acme").unwrap();
        assert_eq!(server.authenticate(&key).as_deref(), Some("acme"));
        assert_eq!(server.authenticate(&key2).as_deref(), Some("acme"));
        cli.remove("acme").unwrap();
        assert_eq!(server.authenticate(&key), None);
    }

    #[test]
    fn the_demo_key_file_is_reused_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("demo-api-key");
        let k1 = TenantRegistry::open(dir.path())
            .unwrap()
            .ensure_key_file("demo", &file)
            .unwrap();
        let reg = TenantRegistry::open(dir.path()).unwrap();
        assert_eq!(reg.ensure_key_file("demo", &file).unwrap(), k1);
        assert_eq!(reg.authenticate(&k1).as_deref(), Some("demo"));
    }
}
