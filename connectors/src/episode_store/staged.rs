//! Rows embedded and not yet committed: searched by vector and read by id, by session and by
//! user as committed rows are, so an event is recallable as soon as its embedding exists, not
//! only after the Lance commit that follows it (tens of milliseconds, hundreds when the commit
//! also compacts or folds an index; issue 35). The event log already holds their events
//! durably, so nothing is lost with them: after a restart they are embedded again.
//!
//! Readers never miss a row that moves from here into the table, and never see it twice: a
//! commit publishes its version before its rows leave this set, a reader takes its copy of
//! this set before it takes the version, and results are merged by row id (the committed row
//! wins).

use super::*;

/// The staged rows of every user, in staging (log) order. Bounded by the writer: it stages
/// only what it is about to hand to a commit, whose queue is bounded.
#[derive(Default)]
pub(super) struct StagedRows {
    by_user: HashMap<(String, String), Vec<EpisodeRow>>,
}

impl StagedRows {
    /// Drops the rows at or below `watermark` (committed, or skipped by the commit as erased).
    pub(super) fn committed_to(&mut self, watermark: u64) {
        self.by_user.retain(|_, rows| {
            rows.retain(|r| r.log_offset > watermark);
            !rows.is_empty()
        });
    }

    /// Drops every row of `tenant` (`user: None`) or of one of its users from log offsets
    /// below `before` (later rows are stored as `append` stores them).
    pub(super) fn erase(&mut self, tenant: &str, user: Option<&str>, before: u64) {
        self.by_user.retain(|(t, u), rows| {
            if t == tenant && user.is_none_or(|x| x == u) {
                rows.retain(|r| r.log_offset >= before);
            }
            !rows.is_empty()
        });
    }

    /// Drops the rows of the event at log offset `offset`.
    pub(super) fn forget(&mut self, offset: u64) {
        self.by_user.retain(|_, rows| {
            rows.retain(|r| r.log_offset != offset);
            !rows.is_empty()
        });
    }

    pub(super) fn push(&mut self, row: EpisodeRow) {
        self.by_user
            .entry((row.tenant.clone(), row.user.clone()))
            .or_default()
            .push(row);
    }

    /// Rows staged, of all users (at most a few thousand: the writer bounds them).
    pub(super) fn len(&self) -> usize {
        self.by_user.values().map(Vec::len).sum()
    }

    /// One user's staged rows, in staging order.
    fn of(&self, tenant: &str, user: &str) -> &[EpisodeRow] {
        self.by_user
            .get(&(tenant.to_string(), user.to_string()))
            .map_or(&[], Vec::as_slice)
    }
}

impl EpisodeStore {
    /// Makes `rows` visible to readers before their commit ([`EpisodeStore::append`] of the
    /// same rows follows): those above the watermark, with vectors of the table's dimension,
    /// of no erased user and no forgotten event.
    pub fn stage(&self, rows: &[EpisodeRow]) {
        // the erase marks are read under the staged lock: an erase marks first and then
        // clears this set, so a row it covers is either filtered here or cleared there
        let mut staged = self.staged.write().unwrap();
        let watermark = self.watermark();
        for r in rows {
            if self.covered(r)
                || r.vector.len() != self.dim
                || watermark.is_some_and(|w| r.log_offset <= w)
            {
                continue;
            }
            staged.push(r.clone());
        }
    }

    /// Whether an erase or a forget covers `r`: its event was forgotten, or its user or its
    /// tenant was erased after it (at a later log offset).
    pub(super) fn covered(&self, r: &EpisodeRow) -> bool {
        if self.forgotten.read().unwrap().contains(&r.log_offset) {
            return true;
        }
        let erased = self.erased.read().unwrap();
        [r.user.as_str(), ""].iter().any(|u| {
            erased
                .get(&(r.tenant.clone(), u.to_string()))
                .is_some_and(|before| r.log_offset < *before)
        })
    }

    /// The staged rows a reader copied, less those an erase or a forget covered since: called
    /// after the committed read, so an erase that completed meanwhile leaves nothing behind.
    pub(super) fn still_staged(&self, mut rows: Vec<EpisodeRow>) -> Vec<EpisodeRow> {
        rows.retain(|r| !self.covered(r));
        rows
    }

    /// Rows staged and not yet committed, of all users.
    pub fn staged_row_count(&self) -> usize {
        self.staged.read().unwrap().len()
    }

    /// The user's rows, committed and staged, each once: what a reader of the user finds now.
    pub fn user_rows_with_staged(&self, tenant: &str, user: &str) -> usize {
        // the stage first, then the state, as readers do: a row committed in between is
        // counted by the state, whose watermark then covers its staged copy
        let staged: Vec<u64> = (self.staged.read().unwrap().of(tenant, user).iter())
            .map(|r| r.log_offset)
            .collect();
        let st = self.state.read().unwrap();
        let committed = (st.rows_per_user)
            .get(&(tenant.to_string(), user.to_string()))
            .copied()
            .unwrap_or(0);
        let uncommitted = staged
            .iter()
            .filter(|&&o| st.watermark.is_none_or(|w| o > w))
            .count();
        committed + uncommitted
    }

    /// The user's staged rows that `keep` accepts (vectors included).
    pub(super) fn staged_of(
        &self,
        tenant: &str,
        user: &str,
        keep: impl Fn(&EpisodeRow) -> bool,
    ) -> Vec<EpisodeRow> {
        let staged = self.staged.read().unwrap();
        staged
            .of(tenant, user)
            .iter()
            .filter(|r| keep(r))
            .cloned()
            .collect()
    }
}

/// `committed` with the rows of `staged` it does not hold (by id) added, vectors dropped as a
/// read from the table has none.
pub(super) fn with_staged(
    mut committed: Vec<EpisodeRow>,
    staged: Vec<EpisodeRow>,
) -> Vec<EpisodeRow> {
    let unseen = unseen(staged, committed.iter().map(|r| r.id.as_str()));
    committed.extend(unseen.into_iter().map(|mut r| {
        r.vector = Vec::new();
        r
    }));
    committed
}

/// The rows of `staged` whose ids are not among `seen` (the committed rows win).
fn unseen<'a>(staged: Vec<EpisodeRow>, seen: impl Iterator<Item = &'a str>) -> Vec<EpisodeRow> {
    let seen: HashSet<&str> = seen.collect();
    staged
        .into_iter()
        .filter(|r| !seen.contains(r.id.as_str()))
        .collect()
}

/// The `k` best of `committed` hits and `staged` rows scored by cosine to `query`, each row
/// once (the committed hit when both hold it), best first, ties by id; vectors dropped, as a
/// committed hit has none.
pub(super) fn nearest_with_staged(
    committed: Vec<EpisodeHit>,
    staged: Vec<EpisodeRow>,
    query: &[f32],
    k: usize,
) -> Vec<EpisodeHit> {
    let unseen = unseen(staged, committed.iter().map(|h| h.episode.id.as_str()));
    let mut hits: Vec<EpisodeHit> = unseen
        .into_iter()
        .map(|mut r| {
            let score = cosine(query, &r.vector);
            r.vector = Vec::new();
            EpisodeHit { episode: r, score }
        })
        .collect();
    hits.extend(committed);
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.episode.id.cmp(&b.episode.id))
    });
    hits.truncate(k);
    hits
}

/// Whether a row's event time is at or before `as_of` (always without one).
pub(super) fn by(as_of: Option<DateTime<Utc>>) -> impl Fn(&EpisodeRow) -> bool {
    move |r| as_of.is_none_or(|t| r.ts <= t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, user: &str, offset: u64, vector: Vec<f32>) -> EpisodeRow {
        EpisodeRow {
            id: id.into(),
            event_id: id.into(),
            tenant: "t".into(),
            user: user.into(),
            session: Some("s".into()),
            role: "user".into(),
            content: id.into(),
            ts: Utc.timestamp_micros(offset as i64).single().unwrap(),
            turn: None,
            importance: None,
            log_offset: offset,
            vector,
        }
    }

    #[test]
    fn staged_rows_leave_when_committed_erased_or_forgotten() {
        let mut s = StagedRows::default();
        for (id, user, offset) in [("a", "u", 1), ("b", "u", 2), ("c", "v", 3), ("d", "v", 4)] {
            s.push(row(id, user, offset, vec![1.0]));
        }
        assert_eq!(s.len(), 4);
        s.committed_to(1);
        assert_eq!(s.len(), 3);
        s.forget(3);
        assert_eq!(s.len(), 2);
        s.erase("t", Some("u"), 3);
        assert_eq!(s.len(), 1);
        s.erase("other", None, 9);
        assert_eq!(s.len(), 1);
        // rows from the erase's offset on stay
        s.erase("t", None, 4);
        assert_eq!(s.len(), 1);
        s.erase("t", None, 5);
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn a_row_both_staged_and_committed_is_found_once_and_staged_rows_rank_by_cosine() {
        let committed = vec![EpisodeHit {
            episode: row("a", "u", 1, Vec::new()),
            score: 0.5,
        }];
        let staged = vec![
            row("a", "u", 1, vec![1.0, 0.0]),
            row("b", "u", 2, vec![1.0, 0.0]),
            row("c", "u", 3, vec![0.0, 1.0]),
        ];
        let hits = nearest_with_staged(committed, staged, &[1.0, 0.0], 2);
        let got: Vec<(&str, f32)> = hits
            .iter()
            .map(|h| (h.episode.id.as_str(), h.score))
            .collect();
        assert_eq!(got, vec![("b", 1.0), ("a", 0.5)]);
        assert!(hits.iter().all(|h| h.episode.vector.is_empty()));
        let rows = with_staged(
            vec![row("a", "u", 1, Vec::new())],
            vec![row("a", "u", 1, vec![1.0]), row("b", "u", 2, vec![1.0])],
        );
        let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, vec!["a", "b"]);
    }
}
