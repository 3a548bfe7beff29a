//! The parameters of the memory model's views.

use serde::{Deserialize, Serialize};

/// The parameters of the memory dataflow's views.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DataflowParams {
    pub hierarchy: HierarchyParams,
    pub skills: SkillParams,
    pub corrections: CorrectionParams,
    pub retention: RetentionParams,
}

/// How memories (episodes, facts, summaries) fade and are archived (issue 33): as preferences
/// do, R = e^(−t/S), archived below R = 0.05, each recall into an answer not voted down
/// doubling S and resetting t.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionParams {
    /// S of a memory of importance 0 that was never recalled, in days; importance 1 doubles
    /// it, and a memory stated without importance counts as 0.5 (default 365: such a memory is
    /// archived after about 4.5 years without a recall, one recalled once after about 9).
    pub stability_days: f64,
}

impl Default for RetentionParams {
    fn default() -> Self {
        RetentionParams {
            stability_days: 365.0,
        }
    }
}

impl RetentionParams {
    /// The stability parameters of memories: these base days, the rest as for preferences.
    pub fn stability(&self) -> engram_operators::math::decay::StabilityParams {
        engram_operators::math::decay::StabilityParams {
            base_secs: self.stability_days * engram_operators::math::decay::SECONDS_PER_DAY,
            ..Default::default()
        }
    }
}

/// How corrections are clustered (SPEC §4.2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CorrectionParams {
    /// Corrections that ask for nothing recognised link at this cosine of their embeddings:
    /// the embedding model's calibrated threshold (its configuration's `correction_link_cosine`).
    pub link_cosine: f64,
    /// Such corrections link to their nearest topic neighbour at this cosine: the model's
    /// calibrated value (its configuration's `correction_topic_link_cosine`).
    pub topic_link_cosine: f64,
}

impl Default for CorrectionParams {
    fn default() -> Self {
        CorrectionParams {
            link_cosine: engram_operators::correction_clusters::LINK_COSINE_THRESHOLD,
            topic_link_cosine: engram_operators::correction_clusters::TOPIC_LINK_COSINE,
        }
    }
}

/// How skill feedback is weighed (SPEC §6).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillParams {
    /// When set, a vote this many days older than a user's latest one (in the same bucket and
    /// skill) weighs half in that user's Thompson posterior: for preferences that drift. Unset
    /// (the default), every vote weighs the same.
    pub feedback_half_life_days: Option<f64>,
}

impl SkillParams {
    /// The half-life in whole seconds (at least one), when discounting is on.
    pub fn half_life_secs(&self) -> Option<u64> {
        self.feedback_half_life_days
            .filter(|d| d.is_finite() && *d > 0.0)
            .map(|d| ((d * 86_400.0).round() as u64).max(1))
    }
}

/// How many members share a preference before their group holds it (SPEC §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HierarchyParams {
    /// Users of a team (k, default 3).
    pub team_min_users: usize,
    /// Teams of a tenant (default 3).
    pub org_min_teams: usize,
}

impl Default for HierarchyParams {
    fn default() -> Self {
        HierarchyParams {
            team_min_users: engram_operators::team_preferences::DEFAULT_TEAM_MIN_USERS,
            org_min_teams: engram_operators::team_preferences::DEFAULT_ORG_MIN_TEAMS,
        }
    }
}
