//! Cues for how an answer speaks to the user and in what order, beyond the plain style words of
//! [`CUES`](super::lexicon::CUES): encouragement, offers at the end, how sure it sounds, the
//! answer before or after its background, the working shown, what a thin answer is called, and
//! what the user can spend, and analogies.
//! Matched with the others, as one list.

use super::lexicon::{
    cue, Cue,
    CueKind::{Complaint as C, Gradable as G, Thing as T},
};
use super::Aspect as A;
use super::Way::{Less as L, More as M, Value as V};

pub(super) const TONE_CUES: &[Cue] = &[
    // analogies ("explain it with an analogy" / "skip the metaphors", "literal explanation only")
    cue(&["analogy"], A::Analogies, M, T),
    cue(&["analogies"], A::Analogies, M, T),
    cue(&["metaphor*"], A::Analogies, M, T),
    cue(&["figurative*"], A::Analogies, M, T),
    cue(&["compare", "it", "to", "something"], A::Analogies, M, T),
    cue(&["real", "world", "comparison*"], A::Analogies, M, T),
    cue(&["real", "life", "comparison*"], A::Analogies, M, T),
    cue(&["everyday", "comparison*"], A::Analogies, M, T),
    cue(&["literal", "explanation*"], A::Analogies, L, T),
    cue(&["explain", "it", "literally"], A::Analogies, L, T),
    // encouragement ("cheer me on", "tell me when I did something right")
    cue(&["encourag*"], A::Flattery, M, G),
    cue(&["positive", "feedback"], A::Flattery, M, T),
    cue(&["cheer", "me", "on"], A::Flattery, M, T),
    cue(&["motivate", "me"], A::Flattery, M, T),
    cue(&["say", "well", "done"], A::Flattery, M, T),
    cue(&["pat", "on", "the", "back"], A::Flattery, M, T),
    cue(&["excellent", "point"], A::Flattery, M, T),
    cue(&["questions", "are", "great"], A::Flattery, M, T),
    cue(&["great", "questions"], A::Flattery, M, T),
    cue(&["supportive"], A::Empathy, M, G),
    cue(&["background", "later"], A::Directness, M, T),
    cue(&["the", "one", "youd", "pick"], A::Options, L, T),
    cue(&["great", "point"], A::Flattery, M, T),
    // one option or several, said other ways ("don't list alternatives", "I need a decision")
    cue(&["list", "alternatives"], A::Options, M, T),
    cue(&["listing", "alternatives"], A::Options, M, T),
    cue(&["the", "alternatives"], A::Options, M, T),
    cue(&["a", "menu"], A::Options, M, T),
    cue(&["need", "a", "decision"], A::Options, L, T),
    cue(&["top", "choice"], A::Options, L, T),
    cue(&["best", "one"], A::Options, L, T),
    cue(&["the", "one", "youd", "choose"], A::Options, L, T),
    // "just answer, no questions"
    cue(&["no", "questions"], A::Questions, L, T),
    // offers and next steps at the end
    cue(&["i", "can", "also", "help"], A::FollowUps, M, T),
    cue(&["offering", "to", "do"], A::FollowUps, M, T),
    cue(&["what", "to", "do", "next"], A::FollowUps, M, T),
    cue(&["look", "at", "next"], A::FollowUps, M, T),
    cue(&["next", "step", "at", "the", "end"], A::FollowUps, M, T),
    // how sure an answer sounds
    cue(&["firm", "answer"], A::Hedging, L, T),
    cue(&["sound", "unsure"], A::Hedging, L, C),
    cue(&["sound", "so", "sure"], A::Hedging, M, C),
    cue(&["when", "youre", "not", "sure"], A::Hedging, M, T),
    cue(&["when", "you", "are", "not", "sure"], A::Hedging, M, T),
    cue(&["if", "youre", "not", "sure"], A::Hedging, M, T),
    cue(&["speculat*"], A::Hedging, M, T),
    cue(&["guessing", "about"], A::Hedging, M, T),
    cue(&["how", "sure", "are", "you"], A::Hedging, M, T),
    // the answer first, or its background first
    cue(&["answer", "up", "front"], A::Directness, M, T),
    cue(&["answer", "upfront"], A::Directness, M, T),
    cue(&["with", "the", "yes", "or", "no"], A::Directness, M, T),
    cue(&["context", "first"], A::Directness, L, T),
    cue(&["background", "first"], A::Directness, L, T),
    cue(&["set", "the", "scene"], A::Directness, L, T),
    cue(&["build", "up", "to"], A::Directness, L, T),
    cue(&["conclusion", "last"], A::Directness, L, T),
    // the working shown
    cue(&["calculation*"], A::Reasoning, M, T),
    cue(&["show", "your", "math*"], A::Reasoning, M, T),
    cue(&["write", "out", "the", "math*"], A::Reasoning, M, T),
    cue(&["step", "by", "step", "math*"], A::Reasoning, M, T),
    cue(&["numbers", "you", "plugged", "in"], A::Reasoning, M, T),
    // a thin answer, and the level it is pitched at
    cue(&["thin"], A::Length, M, C),
    cue(&["full", "picture"], A::Length, M, T),
    cue(&["rushed"], A::Length, M, C),
    cue(&["chatty"], A::Formality, L, G),
    cue(&["define", "any"], A::Technical, L, T),
    cue(&["define", "technical"], A::Technical, L, T),
    cue(&["define", "terms"], A::Technical, L, T),
    cue(&["from", "step", "zero"], A::Technical, L, T),
    // layout words people use
    cue(&["grids"], A::Table, M, T),
    cue(&["inside", "the", "code"], A::CodeComments, M, T),
    cue(&["docstring*"], A::CodeComments, M, T),
    cue(&["flowing"], A::Bullets, L, G),
    cue(&["slide", "deck"], A::Bullets, M, T),
    cue(&["list", "items"], A::Bullets, M, T),
    // how the code given is explained
    cue(&["how", "it", "works"], A::CodeExplanation, M, T),
    cue(&["describe", "the", "logic"], A::CodeExplanation, M, T),
    // the order of an answer ("reasoning first, conclusion last", "answer at the top")
    cue(&["reasoning", "first"], A::Directness, L, T),
    cue(&["details", "after"], A::Directness, M, T),
    cue(
        &["leading", "with", "the", "conclusion"],
        A::Directness,
        M,
        T,
    ),
    cue(&["answer", "at", "the", "top"], A::Directness, M, T),
    cue(&["answer", "at", "the", "end"], A::Directness, L, T),
    cue(&["conclusion", "for", "the", "end"], A::Directness, L, T),
    // sources listed
    cue(&["reference", "list*"], A::Sources, M, T),
    cue(&["qualified", "professional"], A::Disclaimers, M, T),
    // what the user can spend ("my small business has almost no budget")
    cue(&["im", "broke"], A::Cost, L, C),
    cue(&["not", "broke"], A::Cost, M, C),
    cue(&["budget", "no", "issue"], A::Cost, M, T),
    cue(&["money", "is", "not", "problem"], A::Cost, M, T),
    cue(&["money", "is", "not", "a", "problem"], A::Cost, M, T),
    cue(&["money", "isnt", "a", "problem"], A::Cost, M, T),
    cue(&["money", "is", "no", "problem"], A::Cost, M, T),
    cue(&["no", "budget"], A::Cost, L, T),
    cue(&["nearly", "free"], A::Cost, L, T),
    // dates said by example
    cue(&["day", "then", "month"], A::DateFormat, V(1), T),
    cue(&["month", "then", "day"], A::DateFormat, V(2), T),
];

#[cfg(test)]
mod tests {
    use super::super::asked;

    #[test]
    fn analogies_are_asked_for_or_turned_away() {
        for text in [
            "explain it with an analogy, like how a network is a postal system or whatever",
            "maybe a real world comparison would help? I still don't get what a mutex is",
            "this is too abstract. can you compare it to something from everyday life?",
            "use more metaphors, they help me remember",
        ] {
            assert_eq!(asked(text), ["AnalogiesMore"], "{text}");
        }
        for text in [
            "enough with the pizza analogies, just tell me how it actually works",
            "skip the metaphors pls",
            "no more 'think of it as...'. literal explanation only",
            "maybe drop the figurative language? it's making it harder, not easier",
            "the analogies are confusing me",
            "I don't need metaphors",
        ] {
            assert_eq!(asked(text), ["AnalogiesLess"], "{text}");
        }
        // a comparison of things, a translation, a filler: no analogies asked about
        for text in [
            "I literally asked for one thing",
            "give me a literal translation",
            "I think of it as a hobby",
        ] {
            assert!(asked(text).is_empty(), "{text}");
        }
        // technical terms instead of analogies: the analogies are the simplification
        assert_eq!(
            asked("could you use the proper technical terms instead of analogies?"),
            ["TechnicalMore"]
        );
    }

    #[test]
    fn encouragement_offers_sureness_order_and_working_are_read() {
        assert_eq!(
            asked("could you be a bit more encouraging? tell me when I did something right"),
            ["FlatteryMore"]
        );
        assert_eq!(
            asked("i dont need a pat on the back before each answer lol"),
            ["FlatteryLess"]
        );
        assert_eq!(
            asked("enough with the 'I can also help you with X!' lines"),
            ["FollowUpsLess"]
        );
        assert_eq!(
            asked("drop the 'it depends' stuff, give me a firm answer"),
            ["HedgingLess"]
        );
        assert_eq!(asked("tell me when you're not sure"), ["HedgingMore"]);
        // the user's meaning is not the answer's sureness
        assert_eq!(
            asked("please ask questions when you're not sure what I mean"),
            ["QuestionsMore"]
        );
        assert_eq!(asked("Answer up front, then explain."), ["DirectnessMore"]);
        assert_eq!(asked("context first, conclusion last"), ["DirectnessLess"]);
        assert_eq!(
            asked("i have to check it for my homework, so write out the maths step by step"),
            ["ReasoningMore"]
        );
        assert_eq!(asked("I always have to do the math"), Vec::<String>::new());
        assert_eq!(
            asked("Could you go into more depth? Your answers feel really thin."),
            ["LengthMore"]
        );
        assert_eq!(
            asked("too chatty and casual, be more businesslike"),
            ["FormalityMore"]
        );
        assert_eq!(asked("dd.mm.yyyy pls"), ["DateFormatValue(1)"]);
        assert_eq!(
            asked("no comments in the snippet?? document it inside the code please"),
            ["CodeCommentsMore"]
        );
        assert_eq!(
            asked("I write to you in English but please reply always in Spanish"),
            ["LanguageValue(3)"]
        );
        assert_eq!(
            asked("Please keep in mind my small business has almost no budget at the moment."),
            ["CostLess"]
        );
        assert_eq!(
            asked(
                "this is for a client email, I don't want ✨ and 🎉 in anything you write for me"
            ),
            ["EmojiLess"]
        );
        assert_eq!(
            asked("no emojis pls its lowkey cringe when u use them"),
            ["EmojiLess"]
        );
        assert_eq!(
            asked("stop w the links n sources nobody clicks those lol"),
            ["SourcesLess"]
        );
        assert_eq!(
            asked("Would you mind leaving emojis out of your replies going forward?"),
            ["EmojiLess"]
        );
        assert_eq!(
            asked("Reasoning first, conclusion last."),
            ["DirectnessLess"]
        );
        assert_eq!(
            asked("So, long story short, I've gone vegetarian."),
            ["DietValue(0)"]
        );
        assert_eq!(
            asked("got a raise so money isnt a problem anymore"),
            ["CostMore"]
        );
    }
}
