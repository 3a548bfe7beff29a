//! MCP sessions of the streamable HTTP transport: the id handed out in `Mcp-Session-Id` at
//! `initialize`, bound to the tenant whose key opened it and to the negotiated version.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Most sessions kept at once (all tenants): past it, the least recently used goes.
pub const MAX_SESSIONS: usize = 10_000;
/// A session unused this long is ended (its client gets 404 and initializes again).
pub const IDLE_LIMIT: Duration = Duration::from_secs(3600);

struct Session {
    tenant: String,
    version: &'static str,
    last_used: Instant,
}

/// The open sessions; shared by every request to `/mcp`.
#[derive(Default)]
pub struct McpSessions {
    open: Mutex<HashMap<String, Session>>,
}

impl McpSessions {
    /// Opens a session for `tenant` speaking `version`; its id (random, visible ASCII).
    pub fn open(&self, tenant: &str, version: &'static str) -> String {
        let now = Instant::now();
        let mut open = self.open.lock().expect("sessions lock");
        if open.len() >= MAX_SESSIONS {
            open.retain(|_, s| now.duration_since(s.last_used) < IDLE_LIMIT);
        }
        if open.len() >= MAX_SESSIONS {
            let oldest = open
                .iter()
                .min_by_key(|(_, s)| s.last_used)
                .map(|(id, _)| id.clone());
            if let Some(id) = oldest {
                open.remove(&id);
            }
        }
        let id = uuid::Uuid::new_v4().simple().to_string();
        open.insert(
            id.clone(),
            Session {
                tenant: tenant.to_string(),
                version,
                last_used: now,
            },
        );
        id
    }

    /// The version of session `id` when it is open and `tenant`'s (marking it used); `None`
    /// for an unknown, ended or idle session, or another tenant's (which is not told apart).
    pub fn touch(&self, id: &str, tenant: &str) -> Option<&'static str> {
        let now = Instant::now();
        let mut open = self.open.lock().expect("sessions lock");
        let session = open.get_mut(id).filter(|s| s.tenant == tenant)?;
        if now.duration_since(session.last_used) >= IDLE_LIMIT {
            open.remove(id);
            return None;
        }
        session.last_used = now;
        Some(session.version)
    }

    /// Ends session `id` of `tenant`; whether it was open.
    pub fn close(&self, id: &str, tenant: &str) -> bool {
        let mut open = self.open.lock().expect("sessions lock");
        if open.get(id).is_some_and(|s| s.tenant == tenant) {
            open.remove(id);
            true
        } else {
            false
        }
    }

    pub fn len(&self) -> usize {
        self.open.lock().expect("sessions lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_belongs_to_its_tenant_until_closed() {
        let sessions = McpSessions::default();
        let id = sessions.open("acme", "2025-06-18");
        assert!(id.chars().all(|c| c.is_ascii_graphic()));
        assert_eq!(sessions.touch(&id, "acme"), Some("2025-06-18"));
        assert_eq!(sessions.touch(&id, "globex"), None);
        assert!(!sessions.close(&id, "globex"));
        assert!(sessions.close(&id, "acme"));
        assert_eq!(sessions.touch(&id, "acme"), None);
        assert!(sessions.is_empty());
    }

    #[test]
    fn the_least_recently_used_session_goes_when_full() {
        let sessions = McpSessions::default();
        let first = sessions.open("acme", "2025-06-18");
        for _ in 1..MAX_SESSIONS {
            sessions.open("acme", "2025-06-18");
        }
        assert_eq!(sessions.len(), MAX_SESSIONS);
        let newest = sessions.open("acme", "2025-06-18");
        assert_eq!(sessions.len(), MAX_SESSIONS);
        assert_eq!(sessions.touch(&first, "acme"), None);
        assert!(sessions.touch(&newest, "acme").is_some());
    }
}
