//! Aliases among a user's entity names: one person or place named shortly as well as in full
//! ("Caro" for "Caroline", "Mel" for "Melanie", "Maya" for "Maya Lopez"). Read from the names
//! alone, deterministically: a short name is an alias only where exactly one longer name can be
//! what it stands for.

use std::collections::BTreeMap;

/// Letters an alias has at least: "Al" or "Jo" could stand for anyone.
pub const MIN_ALIAS_LETTERS: usize = 3;

/// Whether `alias` may name what `name` names (both lowercase names of named entities):
/// `alias` is one word of at least [`MIN_ALIAS_LETTERS`] letters, and either a proper prefix
/// of `name`'s first word ("caro" of "caroline") or the first word of a longer `name` ("maya"
/// of "maya lopez").
pub fn may_alias(alias: &str, name: &str) -> bool {
    if alias.contains(' ') || alias.chars().count() < MIN_ALIAS_LETTERS || alias == name {
        return false;
    }
    let first = name.split(' ').next().unwrap_or(name);
    (first.len() > alias.len() && first.starts_with(alias))
        || (first == alias && name.len() > first.len())
}

/// The name `alias` stands for among `names`: the one name it [`may_alias`], when there is
/// exactly one; `None` when none or several ("carol" with both "caroline" and "carolyn").
pub fn canonical_of<'a>(alias: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut found = names.into_iter().filter(|n| may_alias(alias, n));
    let one = found.next()?;
    found.next().is_none().then_some(one)
}

/// Every alias among `names` (lowercase names of named entities, any order, each once), with
/// the name it stands for ([`canonical_of`] over `names`): alias → name.
///
/// Cost: a sort, then per one-word name a binary search for the names beginning with it.
pub fn aliases<'a>(names: &[&'a str]) -> BTreeMap<&'a str, &'a str> {
    let mut sorted: Vec<&str> = names.to_vec();
    sorted.sort_unstable();
    let mut out = BTreeMap::new();
    for alias in sorted.iter().copied() {
        if alias.contains(' ') || alias.chars().count() < MIN_ALIAS_LETTERS {
            continue;
        }
        // every name that may be aliased by `alias` begins with it, so sorts right after it
        let from = sorted.partition_point(|n| *n < alias);
        let beginning = sorted[from..]
            .iter()
            .copied()
            .take_while(|n| n.starts_with(alias));
        if let Some(name) = canonical_of(alias, beginning) {
            out.insert(alias, name);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn short_names_alias_the_one_longer_name_they_can_stand_for() {
        let names = [
            "caroline",
            "caro",
            "melanie",
            "mel",
            "maya lopez",
            "maya",
            "jo",
            "joanna",
            "carolyn",
            "carol",
            "lisbon",
            "lis bon",
        ];
        let got = aliases(&names);
        let want: BTreeMap<&str, &str> = [
            ("mel", "melanie"),
            ("maya", "maya lopez"),
            // "lis" is no name here; "lisbon" is a name of its own
        ]
        .into_iter()
        .collect();
        // "caro" and "carol" could each be Caroline or Carolyn: no alias; "jo" is too short
        assert_eq!(got, want);
        assert_eq!(
            canonical_of("caro", ["caroline", "lisbon"]),
            Some("caroline")
        );
        assert_eq!(
            canonical_of("caroline", ["caroline"]),
            None,
            "not its own alias"
        );
        assert!(
            !may_alias("maya lopez", "maya lopez-smith"),
            "an alias is one word"
        );
        assert!(!may_alias("lisbon", "lisbon"));
        assert!(may_alias("lis", "lis bon") && !may_alias("lisb", "lis bon"));
    }

    #[test]
    fn the_sorted_search_equals_the_definition_on_random_names() {
        let syllables = [
            "ca", "ro", "line", "mel", "a", "nie", "ma", "ya", " lo", "pez",
        ];
        for seed in 0..200 {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut names: Vec<String> = (0..rng.gen_range(0..12))
                .map(|_| {
                    let parts = rng.gen_range(1..5);
                    (0..parts)
                        .map(|_| syllables[rng.gen_range(0..syllables.len())])
                        .collect::<String>()
                        .trim()
                        .to_string()
                })
                .filter(|n| !n.is_empty())
                .collect();
            names.sort();
            names.dedup();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let want: BTreeMap<&str, &str> = refs
                .iter()
                .filter_map(|a| Some((*a, canonical_of(a, refs.iter().copied())?)))
                .collect();
            assert_eq!(aliases(&refs), want, "seed {seed}: {refs:?}");
        }
    }
}
