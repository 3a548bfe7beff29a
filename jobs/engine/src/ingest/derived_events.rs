//! Events engram derives from what users said (the enrichment job's), and the guard that keeps
//! an erase from being undone by them: an erase that arrives while a model reads a user's turns
//! wins over what the model then writes.

use super::{IngestError, IngestReport, Ingestor};
use engram_schemas::Event;

impl Ingestor {
    /// Whether an event `event_id` of `tenant` was accepted (it may since have been erased).
    pub fn has_accepted(&self, tenant: &str, event_id: &str) -> bool {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.contains(&(tenant.to_string(), event_id.to_string()))
    }

    /// Ingests events engram derived from turns at or after log offset `read_from` (the
    /// enrichment job's): each is dropped (counted in [`IngestReport::erased`]) when its user,
    /// or tenant, was erased after `read_from`, so that an erase that arrives while the model is reading the turns
    /// is not undone by what it writes.
    pub fn ingest_derived(
        &self,
        source: &str,
        events: Vec<Event>,
        read_from: u64,
    ) -> Result<IngestReport, IngestError> {
        let originals: Vec<String> = events.iter().map(Event::to_json).collect();
        let parsed = events.into_iter().map(Ok).collect();
        self.ingest_with(source, None, parsed, &originals, false, Some(read_from))
    }

    /// Whether `event` is derived from turns read from `read_from` on and its user or tenant
    /// was erased after that (see [`Ingestor::ingest_derived`]).
    pub(super) fn erased_since(&self, event: &Event, read_from: Option<u64>) -> bool {
        read_from
            .is_some_and(|from| self.erased_after(&event.header.tenant, &event.header.user, from))
    }

    /// Whether `user` of `tenant`, or the whole tenant, was erased at log offset `offset` or
    /// later.
    pub fn erased_after(&self, tenant: &str, user: &str, offset: u64) -> bool {
        let erased_at = self.erased_at.lock().unwrap_or_else(|p| p.into_inner());
        [user, ""].into_iter().any(|u| {
            erased_at
                .get(&(tenant.to_string(), u.to_string()))
                .is_some_and(|at| *at >= offset)
        })
    }
}
