//! Cues for the user's circumstances that answers must respect: what they eat and are
//! allergic to, their pets, how they read, their computer. Each names a value of its aspect
//! ("we're vegetarian", "my son has a nut allergy", "i'm on Ubuntu"); a turned one asks for
//! nothing ("we don't have cats anymore"), except where the turn is part of the cue ("no meat").

use super::lexicon::{cue, Cue, CueKind::Thing as T};
use super::Aspect as A;
use super::Way::Value as V;

pub(super) const CIRCUMSTANCE_CUES: &[Cue] = &[
    cue(&["vegetarian*"], A::Diet, V(0), T),
    cue(&["veggie*"], A::Diet, V(0), T),
    cue(&["meatless"], A::Diet, V(0), T),
    cue(&["meat", "free"], A::Diet, V(0), T),
    cue(&["no", "meat"], A::Diet, V(0), T),
    cue(&["dont", "eat", "meat"], A::Diet, V(0), T),
    cue(&["vegan*"], A::Diet, V(1), T),
    cue(&["plant", "based"], A::Diet, V(1), T),
    cue(&["pescatarian*"], A::Diet, V(2), T),
    cue(&["pescetarian*"], A::Diet, V(2), T),
    cue(&["halal"], A::Diet, V(3), T),
    cue(&["kosher"], A::Diet, V(4), T),
    cue(&["diabet*"], A::Diet, V(5), T),
    cue(&["blood", "sugar"], A::Diet, V(5), T),
    cue(&["low", "sugar"], A::Diet, V(5), T),
    cue(&["sugar", "free"], A::Diet, V(5), T),
    cue(&["nut", "allerg*"], A::Allergy, V(0), T),
    cue(&["nut", "free"], A::Allergy, V(0), T),
    cue(&["tree", "nut*"], A::Allergy, V(0), T),
    cue(&["peanut*"], A::Allergy, V(0), T),
    cue(&["allergic", "to", "nuts"], A::Allergy, V(0), T),
    cue(&["no", "nuts"], A::Allergy, V(0), T),
    cue(&["gluten*"], A::Allergy, V(1), T),
    cue(&["no", "gluten"], A::Allergy, V(1), T),
    cue(&["celiac"], A::Allergy, V(1), T),
    cue(&["coeliac"], A::Allergy, V(1), T),
    cue(&["lactose*"], A::Allergy, V(2), T),
    cue(&["dairy", "free"], A::Allergy, V(2), T),
    cue(&["no", "dairy"], A::Allergy, V(2), T),
    cue(&["allergic", "to", "dairy"], A::Allergy, V(2), T),
    cue(&["shellfish"], A::Allergy, V(3), T),
    cue(&["egg", "allerg*"], A::Allergy, V(4), T),
    cue(&["allergic", "to", "eggs"], A::Allergy, V(4), T),
    cue(&["cat"], A::Pets, V(0), T),
    cue(&["cats"], A::Pets, V(0), T),
    cue(&["kitty"], A::Pets, V(0), T),
    cue(&["kitties"], A::Pets, V(0), T),
    cue(&["kitten*"], A::Pets, V(0), T),
    cue(&["feline*"], A::Pets, V(0), T),
    cue(&["dog"], A::Pets, V(1), T),
    cue(&["dogs"], A::Pets, V(1), T),
    cue(&["puppy"], A::Pets, V(1), T),
    cue(&["puppies"], A::Pets, V(1), T),
    cue(&["canine*"], A::Pets, V(1), T),
    cue(&["screen", "reader*"], A::Accessibility, V(0), T),
    cue(&["voiceover"], A::Accessibility, V(0), T),
    cue(&["nvda"], A::Accessibility, V(0), T),
    cue(&["jaws"], A::Accessibility, V(0), T),
    cue(&["blind"], A::Accessibility, V(0), T),
    cue(&["visually", "impaired"], A::Accessibility, V(0), T),
    cue(&["low", "vision"], A::Accessibility, V(0), T),
    cue(&["dyslex*"], A::Accessibility, V(1), T),
    cue(&["colour", "blind*"], A::Accessibility, V(2), T),
    cue(&["color", "blind*"], A::Accessibility, V(2), T),
    cue(&["colourblind*"], A::Accessibility, V(2), T),
    cue(&["colorblind*"], A::Accessibility, V(2), T),
    cue(&["linux"], A::OperatingSystem, V(0), T),
    cue(&["ubuntu"], A::OperatingSystem, V(0), T),
    cue(&["debian"], A::OperatingSystem, V(0), T),
    cue(&["fedora"], A::OperatingSystem, V(0), T),
    cue(&["macos"], A::OperatingSystem, V(1), T),
    cue(&["mac"], A::OperatingSystem, V(1), T),
    cue(&["macbook*"], A::OperatingSystem, V(1), T),
    cue(&["osx"], A::OperatingSystem, V(1), T),
    cue(&["windows"], A::OperatingSystem, V(2), T),
    cue(&["win10"], A::OperatingSystem, V(2), T),
    cue(&["win11"], A::OperatingSystem, V(2), T),
];

#[cfg(test)]
mod tests {
    use super::super::asked;

    #[test]
    fn circumstances_are_read_as_the_value_they_name() {
        assert_eq!(
            asked("we eat vegetarian at home, no chicken ideas please"),
            ["DietValue(0)"]
        );
        assert_eq!(asked("no meat for me thx"), ["DietValue(0)"]);
        assert_eq!(
            asked("my daughter has a peanut allergy"),
            ["AllergyValue(0)"]
        );
        assert_eq!(
            asked("I'm on a MacBook, not Windows"),
            ["OperatingSystemValue(1)"]
        );
        assert_eq!(
            asked("I use a screen reader, so the ascii art is useless to me"),
            ["AccessibilityValue(0)"]
        );
    }

    #[test]
    fn a_turned_circumstance_asks_for_nothing() {
        assert_eq!(asked("we don't have dogs anymore"), Vec::<String>::new());
    }
}
