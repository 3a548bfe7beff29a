//! The preference hierarchy (SPEC §4.4): individual → team → organisation.
//!
//! - [`user_teams`]: the team each user is in, from their latest team assignment.
//! - [`team_preferences`]: preferences held by at least `min_users` users of one team.
//! - [`org_preferences`]: team preferences held by at least `min_teams` teams of one tenant
//!   (the tenant is the organisation).
//!
//! A user *holds* a preference when one of their correction clusters is a pattern
//! ([`crate::correction_clusters::cluster_measures`] with `promoted`). Two preferences are *the
//! same* when they point the same way (their [`Polarity`]: "use bullet points" is not "don't use
//! bullet points") and the centroids of what their corrections ask for have cosine ≥
//! [`SAME_PREFERENCE_COSINE`], the threshold at which two corrections are linked; a shared
//! preference is a connected component of that relation (within a team, or within a tenant for
//! team preferences), so a chain of close preferences counts as one. Nothing crosses a tenant.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use timely::progress::Timestamp;

use crate::correction_clusters::{ClusterMeasure, Polarity, QuantisedEmbedding, UserKey};
use crate::math::fusion::{centroid, cosine_similarity};

/// Two preferences are the same at this cosine of their centroids or more (SPEC §4.2's link
/// threshold).
pub const SAME_PREFERENCE_COSINE: f64 = 0.85;

/// Users of a team who must hold a preference for the team to hold it (SPEC §4.4: k = 3).
pub const DEFAULT_TEAM_MIN_USERS: usize = 3;

/// Teams of a tenant that must hold a preference for the organisation to hold it.
pub const DEFAULT_ORG_MIN_TEAMS: usize = 3;

/// `(tenant, team)`.
pub type TeamKey = (String, String);

/// A user's assignment to a team (or out of every team) at one moment.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TeamAssignment {
    /// Event time, microseconds since the Unix epoch.
    pub ts_micros: i64,
    /// Input-log offset of the assignment (orders assignments made at the same time).
    pub log_offset: u64,
    /// The team, or `None` for leaving every team.
    pub team: Option<String>,
}

/// The team each user is in.
///
/// Input: `((tenant, user), assignment)` records. Output: `((tenant, user), team)`,
/// multiplicity 1, for each user whose greatest present assignment (by time, then log offset,
/// then team; present = positive summed multiplicity) names a team. Users whose latest
/// assignment leaves every team are in none.
pub fn user_teams<'scope, T>(
    assignments: VecCollection<'scope, T, (UserKey, TeamAssignment)>,
) -> VecCollection<'scope, T, (UserKey, String)>
where
    T: Timestamp + Lattice + Ord,
{
    assignments.reduce(|_user, input, output| {
        let latest = input.iter().rev().find(|(_, m)| *m > 0);
        if let Some((
            TeamAssignment {
                team: Some(team), ..
            },
            _,
        )) = latest
        {
            output.push((team.clone(), 1));
        }
    })
}

/// A preference a team holds: the same preference ([module docs](self)) held by enough of its
/// users.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TeamPreference {
    /// `user/cluster_id` of its smallest member.
    pub id: String,
    /// The distinct users holding it, sorted.
    pub users: Vec<String>,
    /// `(user, cluster_id)` of every member pattern, sorted.
    pub members: Vec<(String, String)>,
    /// Mean of the members' dequantised centroids, quantised.
    pub centroid: QuantisedEmbedding,
    /// Mean of the members' confidences (thousandths), rounded down.
    pub confidence_milli: u16,
    /// The way all its members point.
    pub polarity: Polarity,
}

/// The preferences teams hold.
///
/// Input: cluster measures `((tenant, user), measure)` (only `promoted` ones count; each
/// present once whatever its multiplicity) and user teams `((tenant, user), team)` as
/// [`user_teams`] gives them. Output: `((tenant, team), preference)`, multiplicity 1, for every
/// connected component of the team's patterns of one polarity under centroid cosine ≥
/// [`SAME_PREFERENCE_COSINE`] whose members belong to at least `min_users` distinct users
/// (at least 1), as documented on [`TeamPreference`]. Patterns whose centroids differ in length
/// from another's are never the same preference.
///
/// Cost: a change to one user's patterns or team re-evaluates that team: all pairs of its
/// patterns (teams hold tens of users with a few preferences each).
pub fn team_preferences<'scope, T>(
    measures: VecCollection<'scope, T, (UserKey, ClusterMeasure)>,
    teams: VecCollection<'scope, T, (UserKey, String)>,
    min_users: usize,
) -> VecCollection<'scope, T, (TeamKey, TeamPreference)>
where
    T: Timestamp + Lattice + Ord,
{
    let patterns = measures.filter(|(_, m)| m.promoted).map(|(user, m)| {
        let held = (m.cluster_id, m.centroid, m.confidence_milli);
        (user, (m.polarity, held))
    });
    let teams = teams.threshold(|_, m: &isize| isize::from(*m > 0));
    patterns
        .join_map(
            teams,
            |(tenant, user), (polarity, (cluster, centroid, confidence)), team| {
                (
                    ((tenant.clone(), team.clone()), *polarity),
                    (user.clone(), cluster.clone(), centroid.clone(), *confidence),
                )
            },
        )
        .reduce(move |(_team, polarity), input, output| {
            for shared in shared_preferences(input, min_users) {
                let preference = TeamPreference {
                    id: shared.id,
                    users: shared.holders,
                    members: shared.members,
                    centroid: shared.centroid,
                    confidence_milli: shared.confidence_milli,
                    polarity: *polarity,
                };
                output.push((preference, 1));
            }
        })
        .map(|((team, _polarity), preference)| (team, preference))
}

/// A preference the organisation (the tenant) holds: the same preference held by enough of its
/// teams.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct OrgPreference {
    /// `team/team_preference_id` of its smallest member.
    pub id: String,
    /// The distinct teams holding it, sorted.
    pub teams: Vec<String>,
    /// `(team, team preference id)` of every member, sorted.
    pub members: Vec<(String, String)>,
    /// Mean of the members' dequantised centroids, quantised.
    pub centroid: QuantisedEmbedding,
    /// Mean of the members' confidences (thousandths), rounded down.
    pub confidence_milli: u16,
    /// The way all its members point.
    pub polarity: Polarity,
}

/// The preferences organisations hold.
///
/// Input: team preferences `((tenant, team), preference)` as [`team_preferences`] gives them
/// (each present once whatever its multiplicity). Output: `(tenant, preference)`,
/// multiplicity 1, for every connected component of the tenant's team preferences of one
/// polarity under centroid cosine ≥ [`SAME_PREFERENCE_COSINE`] whose members belong to at least `min_teams`
/// distinct teams (at least 1), as documented on [`OrgPreference`].
///
/// Cost: a change to a team preference re-evaluates its tenant (all pairs of its teams'
/// preferences).
pub fn org_preferences<'scope, T>(
    team_preferences: VecCollection<'scope, T, (TeamKey, TeamPreference)>,
    min_teams: usize,
) -> VecCollection<'scope, T, (String, OrgPreference)>
where
    T: Timestamp + Lattice + Ord,
{
    team_preferences
        .map(|((tenant, team), p)| {
            (
                (tenant, p.polarity),
                (team, p.id, p.centroid, p.confidence_milli),
            )
        })
        .reduce(move |(_tenant, polarity), input, output| {
            for shared in shared_preferences(input, min_teams) {
                let preference = OrgPreference {
                    id: shared.id,
                    teams: shared.holders,
                    members: shared.members,
                    centroid: shared.centroid,
                    confidence_milli: shared.confidence_milli,
                    polarity: *polarity,
                };
                output.push((preference, 1));
            }
        })
        .map(|((tenant, _polarity), preference)| (tenant, preference))
}

/// One preference held by several holders (users of a team, or teams of a tenant).
struct Shared {
    /// `holder/id` of the smallest member.
    id: String,
    /// Distinct holders, sorted.
    holders: Vec<String>,
    /// `(holder, id)` of every member, sorted.
    members: Vec<(String, String)>,
    centroid: QuantisedEmbedding,
    confidence_milli: u16,
}

/// The components of the present members `(holder, id, centroid, confidence)` (sorted, as a
/// reduce hands them over) under "is the same preference" that at least `min_holders` (at
/// least 1) distinct holders hold.
fn shared_preferences(
    input: &[(&(String, String, QuantisedEmbedding, u16), isize)],
    min_holders: usize,
) -> Vec<Shared> {
    let held: Vec<&(String, String, QuantisedEmbedding, u16)> = input
        .iter()
        .filter(|(_, m)| *m > 0)
        .map(|(p, _)| *p)
        .collect();
    let centroids: Vec<Vec<f32>> = held.iter().map(|p| p.2.to_f32()).collect();
    let mut out = Vec::new();
    for component in same_preference_components(&centroids) {
        let members: Vec<&(String, String, QuantisedEmbedding, u16)> =
            component.iter().map(|&i| held[i]).collect();
        let holders: BTreeSet<&String> = members.iter().map(|p| &p.0).collect();
        if holders.len() < min_holders.max(1) {
            continue;
        }
        let vectors: Vec<&Vec<f32>> = component.iter().map(|&i| &centroids[i]).collect();
        let pairs: Vec<(String, String)> =
            members.iter().map(|p| (p.0.clone(), p.1.clone())).collect();
        out.push(Shared {
            id: format!("{}/{}", pairs[0].0, pairs[0].1),
            holders: holders.into_iter().cloned().collect(),
            centroid: mean_direction(&vectors),
            confidence_milli: mean_milli(members.iter().map(|p| p.3)),
            members: pairs,
        });
    }
    out
}

/// Whether two preference centroids are the same preference: same length and cosine ≥
/// [`SAME_PREFERENCE_COSINE`] (an all-zero centroid is the same as nothing).
pub fn same_preference(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && cosine_similarity(a, b) >= SAME_PREFERENCE_COSINE
}

/// The connected components of "is the same preference as" over `centroids`, each a sorted
/// list of indices, in order of their smallest index.
pub fn same_preference_components(centroids: &[Vec<f32>]) -> Vec<Vec<usize>> {
    let n = centroids.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for i in 0..n {
        for j in i + 1..n {
            if same_preference(&centroids[i], &centroids[j]) {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    let mut components: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for i in 0..n {
        let r = root(&mut parent, i);
        components.entry(r).or_default().push(i);
    }
    components.into_values().collect()
}

/// The mean of `vectors` (all one length), quantised; all zeros when there are none.
fn mean_direction(vectors: &[&Vec<f32>]) -> QuantisedEmbedding {
    QuantisedEmbedding::from_f32(&centroid(vectors).unwrap_or_default())
}

fn mean_milli(values: impl Iterator<Item = u16>) -> u16 {
    let (sum, n) = values.fold((0u64, 0u64), |(s, n), v| (s + u64::from(v), n + 1));
    (sum / n.max(1)) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_follow_chains_and_skip_other_lengths() {
        let a = vec![1.0_f32, 0.0, 0.0];
        // 0.9 to a, and 0.9 to c; a and c are at 0.62: one component through b
        let b = vec![0.9_f32, 0.435_889_9, 0.0];
        let c = vec![0.62_f32, 0.784_602, 0.0];
        let far = vec![0.0_f32, 0.0, 1.0];
        let other_length = vec![1.0_f32, 0.0];
        let got = same_preference_components(&[a, far, b, other_length, c]);
        assert_eq!(got, vec![vec![0, 2, 4], vec![1], vec![3]]);
        assert!(same_preference_components(&[]).is_empty());
    }

    #[test]
    fn same_preference_around_the_link_threshold() {
        let a = [1.0_f32, 0.0];
        let at = [0.851_f32, (1.0_f32 - 0.851 * 0.851).sqrt()];
        let below = [0.849_f32, (1.0_f32 - 0.849 * 0.849).sqrt()];
        assert!(same_preference(&a, &at));
        assert!(!same_preference(&a, &below));
        assert!(!same_preference(&a, &[1.0, 0.0, 0.0]));
    }

    #[test]
    fn mean_confidence_rounds_down() {
        assert_eq!(mean_milli([900u16, 801].into_iter()), 850);
        assert_eq!(mean_milli(std::iter::empty()), 0);
    }
}
