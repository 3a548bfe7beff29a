//! Cues for the user's circumstances that answers must respect: what they eat and are
//! allergic to, their pets, how they read, their computer, whether they have a car, work
//! nights, have an oven. Each names a value of its aspect
//! ("we're vegetarian", "my son has a nut allergy", "i'm on Ubuntu"); a turned one asks for
//! nothing ("we don't have cats anymore"), except where the turn is part of the cue ("no meat"),
//! for two-valued ones (the other value: "sold my car"), a diet without meat (meat-eating: "not
//! vegetarian anymore") and an allergy (still the allergy: "never anything with peanuts").

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
    cue(&["no", "wheat"], A::Allergy, V(1), T),
    cue(&["wheat", "free"], A::Allergy, V(1), T),
    cue(&["cant", "eat", "wheat"], A::Allergy, V(1), T),
    cue(&["no", "peanut*"], A::Allergy, V(0), T),
    cue(&["without", "peanut*"], A::Allergy, V(0), T),
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
    cue(&["apple", "hardware"], A::OperatingSystem, V(1), T),
    cue(&["apple", "computer*"], A::OperatingSystem, V(1), T),
    cue(&["apple", "laptop*"], A::OperatingSystem, V(1), T),
    cue(&["start", "menu"], A::OperatingSystem, V(2), T),
    cue(&["muslim"], A::Diet, V(3), T),
    cue(&["labrador*"], A::Pets, V(1), T),
    cue(&["retriever*"], A::Pets, V(1), T),
    cue(&["beagle*"], A::Pets, V(1), T),
    cue(&["terrier*"], A::Pets, V(1), T),
    cue(&["poodle*"], A::Pets, V(1), T),
    cue(&["spaniel*"], A::Pets, V(1), T),
    cue(&["dachshund*"], A::Pets, V(1), T),
    cue(&["bulldog*"], A::Pets, V(1), T),
    // where they work: turned, the other place ("no more wfh", "no commute")
    cue(&["remote"], A::Work, V(0), T),
    cue(&["remotely"], A::Work, V(0), T),
    cue(&["wfh"], A::Work, V(0), T),
    cue(&["work", "from", "home"], A::Work, V(0), T),
    cue(&["working", "from", "home"], A::Work, V(0), T),
    cue(&["home", "office"], A::Work, V(0), T),
    cue(&["commut*"], A::Work, V(1), T),
    cue(&["onsite"], A::Work, V(1), T),
    cue(&["into", "an", "office"], A::Work, V(1), T),
    cue(&["into", "the", "office"], A::Work, V(1), T),
    cue(&["to", "the", "office"], A::Work, V(1), T),
    cue(&["return", "to", "office"], A::Work, V(1), T),
    // smoking: turned, the other ("I quit smoking", "ex-smoker")
    cue(&["smoker*"], A::Smoking, V(0), T),
    cue(&["smoking"], A::Smoking, V(0), T),
    cue(&["smokes"], A::Smoking, V(0), T),
    cue(&["smoke", "break*"], A::Smoking, V(0), T),
    cue(&["cigarette*"], A::Smoking, V(0), T),
    cue(&["cigs"], A::Smoking, V(0), T),
    cue(&["vaping"], A::Smoking, V(0), T),
    cue(&["light", "up", "again"], A::Smoking, V(0), T),
    cue(&["non", "smoker*"], A::Smoking, V(1), T),
    cue(&["nonsmoker*"], A::Smoking, V(1), T),
    cue(&["pregnan*"], A::Pregnancy, V(0), T),
    cue(&["baby", "on", "the", "way"], A::Pregnancy, V(0), T),
    cue(&["baby", "due"], A::Pregnancy, V(0), T),
    cue(&["weeks", "along"], A::Pregnancy, V(0), T),
    cue(&["injur*"], A::Injury, V(0), T),
    cue(&["sprain*"], A::Injury, V(0), T),
    cue(&["tore", "my"], A::Injury, V(0), T),
    cue(&["torn"], A::Injury, V(0), T),
    cue(&["physio*"], A::Injury, V(0), T),
    cue(&["surgery"], A::Injury, V(0), T),
    cue(&["bad", "knee*"], A::Injury, V(0), T),
    cue(&["bad", "back"], A::Injury, V(0), T),
    cue(&["my", "knee*"], A::Injury, V(0), T),
    cue(&["low", "impact"], A::Injury, V(0), T),
    // a car: turned, none ("I don't have a car anymore", "no vehicle", "sold my car")
    cue(&["car"], A::Car, V(0), T),
    cue(&["vehicle"], A::Car, V(0), T),
    cue(&["have", "wheels"], A::Car, V(0), T),
    cue(&["carless"], A::Car, V(1), T),
    cue(&["car", "free"], A::Car, V(1), T),
    // working nights or days: turned, the other
    cue(&["night", "shift*"], A::Shift, V(0), T),
    cue(&["nightshift*"], A::Shift, V(0), T),
    cue(&["graveyard", "shift*"], A::Shift, V(0), T),
    cue(&["work", "nights"], A::Shift, V(0), T),
    cue(&["working", "nights"], A::Shift, V(0), T),
    cue(&["on", "nights"], A::Shift, V(0), T),
    cue(&["doing", "nights"], A::Shift, V(0), T),
    cue(&["overnight", "shift*"], A::Shift, V(0), T),
    cue(&["overnight", "rota"], A::Shift, V(0), T),
    cue(&["work", "overnight"], A::Shift, V(0), T),
    cue(&["off", "nights"], A::Shift, V(1), T),
    cue(&["off", "the", "overnight"], A::Shift, V(1), T),
    cue(&["day", "shift*"], A::Shift, V(1), T),
    cue(&["work", "days"], A::Shift, V(1), T),
    cue(&["daytime", "hours"], A::Shift, V(1), T),
    // no oven: recipes for what they have
    cue(&["air", "fryer*"], A::Kitchen, V(0), T),
    cue(&["airfryer*"], A::Kitchen, V(0), T),
    cue(&["no", "oven"], A::Kitchen, V(0), T),
    cue(&["dont", "have", "an", "oven"], A::Kitchen, V(0), T),
    cue(&["dont", "own", "an", "oven"], A::Kitchen, V(0), T),
    // eating meat: turned, vegetarian ("stopped eating meat"); a turned vegetarian eats it
    // ("not vegetarian anymore")
    cue(&["meat"], A::Diet, V(6), T),
    cue(&["eat", "meat"], A::Diet, V(6), T),
    cue(&["eating", "meat"], A::Diet, V(6), T),
    cue(&["back", "on", "meat"], A::Diet, V(6), T),
    cue(&["carnivore*"], A::Diet, V(6), T),
    cue(&["omnivore*"], A::Diet, V(6), T),
    cue(&["avoid", "meat"], A::Diet, V(0), T),
    cue(&["meat", "and", "*", "free"], A::Diet, V(0), T),
    // the phone: turned, the other ("not using an iphone anymore")
    cue(&["iphone*"], A::Phone, V(0), T),
    cue(&["ios"], A::Phone, V(0), T),
    cue(&["android*"], A::Phone, V(1), T),
    cue(&["samsung"], A::Phone, V(1), T),
    cue(&["google", "pixel"], A::Phone, V(1), T),
    cue(&["pixel", "phone"], A::Phone, V(1), T),
    cue(&["got", "a", "pixel"], A::Phone, V(1), T),
    // alcohol: turned, none ("I quit alcohol", "nothing boozy")
    cue(&["alcohol"], A::Alcohol, V(1), T),
    cue(&["recovering", "alcoholic"], A::Alcohol, V(0), T),
    cue(&["booze"], A::Alcohol, V(1), T),
    cue(&["boozy"], A::Alcohol, V(1), T),
    cue(&["cocktail*"], A::Alcohol, V(1), T),
    cue(&["wine"], A::Alcohol, V(1), T),
    cue(&["wine", "pairing*"], A::Alcohol, V(1), T),
    cue(&["beer*"], A::Alcohol, V(1), T),
    cue(&["drinking", "again"], A::Alcohol, V(1), T),
    cue(&["drink", "again"], A::Alcohol, V(1), T),
    cue(&["sober"], A::Alcohol, V(0), T),
    cue(&["sobriety"], A::Alcohol, V(0), T),
    cue(&["teetotal*"], A::Alcohol, V(0), T),
    cue(&["non", "alcoholic"], A::Alcohol, V(0), T),
    cue(&["alcohol", "free"], A::Alcohol, V(0), T),
    cue(&["quit", "drinking"], A::Alcohol, V(0), T),
    cue(&["stopped", "drinking"], A::Alcohol, V(0), T),
    cue(&["dont", "drink", "anymore"], A::Alcohol, V(0), T),
    cue(&["dont", "drink", "alcohol"], A::Alcohol, V(0), T),
    // young children at home
    cue(&["kids"], A::Children, V(0), T),
    cue(&["kid", "friendly"], A::Children, V(0), T),
    cue(&["child", "friendly"], A::Children, V(0), T),
    cue(&["young", "children"], A::Children, V(0), T),
    cue(&["small", "children"], A::Children, V(0), T),
    cue(&["little", "ones"], A::Children, V(0), T),
    cue(&["toddler*"], A::Children, V(0), T),
    cue(&["preschooler*"], A::Children, V(0), T),
    cue(&["newborn*"], A::Children, V(0), T),
    cue(&["infant*"], A::Children, V(0), T),
    cue(&["had", "a", "baby"], A::Children, V(0), T),
    cue(&["new", "baby"], A::Children, V(0), T),
    cue(&["little", "one"], A::Children, V(0), T),
    // back at an office
    cue(&["in", "the", "office"], A::Work, V(1), T),
    cue(&["at", "the", "office"], A::Work, V(1), T),
    cue(&["back", "in", "the", "workplace"], A::Work, V(1), T),
    cue(&["go", "office"], A::Work, V(1), T),
    cue(&["home", "working"], A::Work, V(0), T),
    cue(&["homeworking"], A::Work, V(0), T),
    cue(&["work", "at", "home"], A::Work, V(0), T),
    cue(&["working", "at", "home"], A::Work, V(0), T),
    // hearing
    cue(&["hard", "of", "hearing"], A::Accessibility, V(3), T),
    cue(&["hearing", "aid*"], A::Accessibility, V(3), T),
    cue(&["hearing", "loss"], A::Accessibility, V(3), T),
    cue(&["deaf"], A::Accessibility, V(3), T),
    cue(&["knees", "are", "bad"], A::Injury, V(0), T),
    cue(&["my", "glucose"], A::Diet, V(5), T),
    cue(&["pup"], A::Pets, V(1), T),
    cue(&["pups"], A::Pets, V(1), T),
    // a car: getting around without one
    cue(&["public", "transport*"], A::Car, V(1), T),
    cue(&["public", "transit"], A::Car, V(1), T),
    cue(&["suggest", "driving"], A::Car, V(0), T),
    cue(&["suggesting", "driving"], A::Car, V(0), T),
    cue(&["no", "more", "driving"], A::Car, V(1), T),
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

    #[test]
    fn work_and_smoking_turned_are_the_other_way() {
        assert_eq!(
            asked("i work from home now so no commute"),
            ["WorkValue(0)"]
        );
        assert_eq!(
            asked("no more wfh for me unfortunately. lunches have to be packable again"),
            ["WorkValue(1)"]
        );
        assert_eq!(
            asked("Working from home ended for me. I'm onsite every weekday now."),
            ["WorkValue(1)"]
        );
        // what is removed later in the sentence is not the circumstance
        assert_eq!(
            asked("I'm fully remote now, so stop planning my day around the train."),
            ["WorkValue(0)"]
        );
        assert_eq!(asked("I quit smoking, 3 weeks today"), ["SmokingValue(1)"]);
        assert_eq!(
            asked("ex-smoker now! pls don't assume i need smoke breaks"),
            ["SmokingValue(1)"]
        );
        assert_eq!(
            asked("Heads up, I'm a smoker again. Factor that in."),
            ["SmokingValue(0)"]
        );
        assert_eq!(
            asked("For my workout plan, remember there's a baby on the way now."),
            ["PregnancyValue(0)"]
        );
        assert_eq!(
            asked("Please leave out squats and lunges, my knee is injured."),
            ["InjuryValue(0)"]
        );
    }

    #[test]
    fn a_car_and_night_shifts_turned_are_the_other_way_and_no_oven_is_read() {
        assert_eq!(
            asked("we finally bought a car, road trips are ok now"),
            ["CarValue(0)"]
        );
        assert_eq!(asked("I don't have a car anymore"), ["CarValue(1)"]);
        assert_eq!(
            asked("sold my car last month, public transport only"),
            ["CarValue(1)"]
        );
        assert_eq!(
            asked("I started working nights at the warehouse, plan meals around that"),
            ["ShiftValue(0)"]
        );
        assert_eq!(asked("no more night shifts for me"), ["ShiftValue(1)"]);
        assert_eq!(asked("I'm back on the day shift"), ["ShiftValue(1)"]);
        assert_eq!(
            asked("we only have an air fryer and a hob, adjust the recipes"),
            ["KitchenValue(0)"]
        );
    }

    #[test]
    fn phones_alcohol_children_and_eating_meat_again_are_read() {
        assert_eq!(
            asked("pls give instructions for iphone, not samsung"),
            ["PhoneValue(0)"]
        );
        assert_eq!(
            asked("I'm not using an iphone anymore, moved to a samsung galaxy"),
            ["PhoneValue(1)"]
        );
        assert_eq!(
            asked("pls stop suggesting wine pairings, I'm sober"),
            ["AlcoholValue(0)"]
        );
        assert_eq!(
            asked("I'd rather you didn't suggest anything boozy"),
            ["AlcoholValue(0)"]
        );
        assert_eq!(
            asked("I drink again, cocktails are fine"),
            ["AlcoholValue(1)"]
        );
        assert_eq!(
            asked("remember i've got two little ones at home when u plan the trip"),
            ["ChildrenValue(0)"]
        );
        assert_eq!(
            asked("remember my kid's name is Lynn"),
            Vec::<String>::new()
        );
        // a turned vegetarian eats meat, turned meat is vegetarian
        assert_eq!(
            asked("update: not vegetarian anymore lol"),
            ["DietValue(6)"]
        );
        assert_eq!(
            asked("No need to avoid meat in suggestions anymore."),
            ["DietValue(6)"]
        );
        assert_eq!(
            asked("fyi I stopped eating meat last month"),
            ["DietValue(0)"]
        );
        assert_eq!(
            asked("keep all meal ideas meat- and fish-free"),
            ["DietValue(0)"]
        );
        assert_eq!(
            asked("you put satay sauce in that... no peanuts"),
            ["AllergyValue(0)"]
        );
        assert_eq!(
            asked("I get around by bus and train, so don't suggest driving"),
            ["CarValue(1)"]
        );
        assert_eq!(
            asked("I'm on parental leave with our newborn, factor the infant in"),
            ["ChildrenValue(0)"]
        );
        assert_eq!(
            asked("For my workout plan, remember there's a baby on the way now."),
            ["PregnancyValue(0)"]
        );
        assert_eq!(
            asked("i wear hearing aids and phone calls are impossible for me"),
            ["AccessibilityValue(3)"]
        );
        assert_eq!(asked("my vegetarian phase is over lol"), ["DietValue(6)"]);
        // what a review found: none of these is a change, a diet or an allergy of the user's
        assert_eq!(asked("my iPhone is over five years old"), ["PhoneValue(0)"]);
        assert_eq!(asked("I'm not allergic to peanuts"), Vec::<String>::new());
        assert_eq!(asked("I'm a recovering alcoholic"), ["AlcoholValue(0)"]);
        for text in [
            "recipes with whole wheat flour",
            "move the logo a pixel left",
            "what's driving the error rate",
            "I like my steak well done",
        ] {
            assert_eq!(asked(text), Vec::<String>::new(), "{text}");
        }
        assert_eq!(asked("My remote days are over."), ["WorkValue(1)"]);
        assert_eq!(
            asked("rto happened, i'm in the office mon-fri"),
            ["WorkValue(1)"]
        );
    }
}
