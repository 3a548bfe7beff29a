//! The words of a user's corrections, as prompts show them: "do X, not Y" instructions for
//! preferences, few-shot examples (original vs corrected), and the corrections of the current
//! session, which take effect in its very next prompt (SPEC §4.1).

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::correction_clusters::UserKey;

/// One correction's text. Field order is the order used to pick one note per correction id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CorrectionNote {
    /// The correction's event id, unique within its `(tenant, user)`.
    pub correction_id: String,
    /// Event time, microseconds since the Unix epoch.
    pub ts_micros: i64,
    /// The session the correction was made in (empty when none).
    pub session: String,
    /// `CONTENT`, `STYLE`, `FORMAT`, `TONE`, `LENGTH` or `OTHER`.
    pub correction_type: String,
    /// The answer that was corrected.
    pub original: String,
    pub corrected: Option<String>,
    pub expected_behavior: Option<String>,
    /// Confidence in thousandths.
    pub confidence_milli: u16,
    /// The context it was made in (e.g. "external client"), trimmed and lowercased; empty
    /// when none.
    pub context: String,
    /// Held for clarification instead of learned from: its confidence was below the floor
    /// (`fusion.clarify_below`) when it was read, so it was never clustered either.
    pub held: bool,
}

impl CorrectionNote {
    /// What the correction asks for: its expected behaviour, else the corrected answer.
    pub fn instruction(&self) -> Option<&str> {
        [&self.expected_behavior, &self.corrected]
            .into_iter()
            .flatten()
            .map(|t| t.trim())
            .find(|t| !t.is_empty())
    }
}

/// The present correction notes.
///
/// Input: `((tenant, user), note)` records. A note is present when its summed multiplicity is
/// positive.
///
/// Output: `((tenant, user), note)` with multiplicity 1 for every correction id with a present
/// note: the least present note of that id (a redelivered correction that differs in nothing
/// but its multiplicity shows once).
pub fn correction_notes<'scope, T>(
    notes: VecCollection<'scope, T, (UserKey, CorrectionNote)>,
) -> VecCollection<'scope, T, (UserKey, CorrectionNote)>
where
    T: Timestamp + Lattice + Ord,
{
    notes
        .map(|(user, note)| ((user, note.correction_id.clone()), note))
        .reduce(|_id, notes, output| {
            // values come sorted: the first present one is the least
            if let Some((note, _)) = notes.iter().find(|(_, m)| *m > 0) {
                output.push(((*note).clone(), 1));
            }
        })
        .map(|((user, _id), note)| (user, note))
}
