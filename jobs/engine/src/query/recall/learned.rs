//! Retrieval preferences at the reranking stage (seed 000 §4.3): a candidate turn's score is
//! multiplied by what the asking user's feedback taught about each of its traits
//! ([`engram_operators::retrieval_preferences`]), so kinds of memory that went into answers
//! they voted up rise and those behind answers voted down sink.

use engram_dataflows::views::UserMemory;
use engram_operators::memories::RetrievalTrait;
use std::collections::BTreeMap;

/// One user's boost per trait, as of one read of the views.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LearnedBoosts {
    by_trait: BTreeMap<RetrievalTrait, f64>,
}

impl LearnedBoosts {
    /// The boosts of `memory`'s tallies at `strength` (`recall.learned_boost`;
    /// [`engram_operators::retrieval_preferences::TraitTally::boost`]).
    pub fn of(memory: Option<&UserMemory>, strength: f64) -> LearnedBoosts {
        let by_trait = memory
            .map(|m| {
                let boosts = m
                    .retrieval
                    .iter()
                    .map(|(t, tally)| (*t, tally.boost(strength)));
                boosts.collect()
            })
            .unwrap_or_default();
        LearnedBoosts { by_trait }
    }

    /// The product of the boosts of a turn's traits, its age at the recall's moment (`made`
    /// and `at`, seconds) among them; `None` when the user has none of them.
    pub fn of_turn(
        &self,
        role: &str,
        content: &str,
        domain: bool,
        (made, at): (i64, i64),
    ) -> Option<f64> {
        if self.by_trait.is_empty() {
            return None;
        }
        let age = RetrievalTrait::age(made, at);
        let boosts: Vec<f64> = RetrievalTrait::of(role, content, domain)
            .iter()
            .chain([&age])
            .filter_map(|t| self.by_trait.get(t).copied())
            .collect();
        (!boosts.is_empty()).then(|| boosts.iter().product())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_operators::memories::ContentType;
    use engram_operators::retrieval_preferences::TraitTally;

    #[test]
    fn a_turn_takes_the_product_of_its_traits_boosts() {
        let mut memory = UserMemory::default();
        // lists helped three times, hurt once: 1 + 0.3·2/6 = 1.1; the assistant's turns hurt
        // twice: 1 − 0.3·2/4 = 0.85
        let list = RetrievalTrait::Content(ContentType::List);
        memory.retrieval.insert(list, TraitTally { up: 3, down: 1 });
        let assistant = RetrievalTrait::Assistant(true);
        memory
            .retrieval
            .insert(assistant, TraitTally { up: 0, down: 2 });
        let boosts = LearnedBoosts::of(Some(&memory), 0.3);
        let now = (1_700_000_000, 1_700_000_000);
        let both = boosts.of_turn("assistant", "- a\n- b", false, now).unwrap();
        assert!((both - 1.1 * 0.85).abs() < 1e-12);
        let list_only = boosts.of_turn("user", "- a\n- b", false, now).unwrap();
        assert!((list_only - 1.1).abs() < 1e-12);
        // no trait it has was taught: no boost
        assert_eq!(boosts.of_turn("user", "plain words", true, now), None);
        assert_eq!(
            LearnedBoosts::of(None, 0.3).of_turn("user", "x", false, now),
            None
        );
        // older memories served well twice: 1 + 0.3·2/4 = 1.15 for a turn of 10 days, not
        // for one of 2 days
        memory
            .retrieval
            .insert(RetrievalTrait::Recent(false), TraitTally { up: 2, down: 0 });
        let boosts = LearnedBoosts::of(Some(&memory), 0.3);
        let day = 86_400;
        let old = boosts.of_turn("user", "plain words", true, (0, 10 * day));
        assert!((old.unwrap() - 1.15).abs() < 1e-12);
        assert_eq!(
            boosts.of_turn("user", "plain words", true, (0, 2 * day)),
            None
        );
    }
}
