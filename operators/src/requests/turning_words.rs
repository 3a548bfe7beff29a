//! The words around a cue that turn its way, or keep it ("don't forget the sources"), and that
//! complain about what a cue names (see the parent module).

/// Words (or word pairs) that turn the way of a cue after them in the clause.
pub(super) const FLIPS: &[&[&str]] = &[
    &["no"],
    &["not"],
    &["never"],
    &["without"],
    &["free", "of"],
    &["avoid*"],
    &["stop*"],
    &["quit"],
    &["skip*"],
    &["less"],
    &["fewer"],
    &["nothing"],
    &["none"],
    &["instead", "of"],
    &["rather", "than"],
    &["better", "than"],
    &["gave", "up", "on"],
    &["ex"],
    &["give", "up", "on"],
    &["given", "up", "on"],
    &["leave", "out"],
    // "I'd rather you left out …"; "you left out the sources" asks for them
    &["rather", "you", "left", "out"],
    &["cluttered", "with"],
    &["ended"],
    &["gave", "up"],
    &["refrain", "from"],
    // "forget what I said about being vegetarian"
    &["forget", "what", "i", "said"],
    &["leaving", "out"],
    &["cut", "the"],
    &["lose"],
    &["drop*"],
    &["ditch*"],
    &["remove"],
    &["get", "rid", "of"],
    &["got", "rid", "of"],
    &["sold"],
    &["hate*"],
    &["enough", "with"],
    &["tone", "down"],
    // "go easier on the bold text", "ease up on the emojis"
    &["easier", "on"],
    &["easy", "on"],
    &["lighter", "on"],
    &["ease", "up", "on"],
    &["cut", "back", "on"],
    &["calm", "down", "with"],
    &["you", "keep"],
    &["minus"],
    &["cut", "out"],
    &["strip*"],
    &["take", "out"],
    &["zero"],
    &["before"],
    &["nix"],
    &["omit*"],
    &["hold", "the"],
    &["i", "know"],
];

/// Negated words that ask for what follows all the same ("don't forget the sources", "I wouldn't
/// mind some emojis", "not enough examples"): matched before
/// [`FLIPS`] in a cue's window, and turning nothing.
pub(super) const KEEPS: &[&[&str]] = &[
    &["dont", "forget"],
    &["ended", "up"],
    &["dont", "filter", "out"],
    &["dont", "leave", "out"],
    // "drop a joke now and then", "drop a few emojis in"
    &["drop", "a"],
    &["never", "forget"],
    &["do", "not", "forget"],
    &["dont", "hesitate"],
    &["never", "hesitate"],
    &["do", "not", "hesitate"],
    &["dont", "mind"],
    &["wouldnt", "mind"],
    &["would", "not", "mind"],
    &["do", "not", "mind"],
    &["dont", "be", "shy"],
    &["dont", "be", "afraid"],
    &["not", "afraid"],
    &["dont", "hold", "back"],
    &["dont", "skimp"],
    &["wouldnt", "hurt"],
    &["doesnt", "hurt"],
    &["never", "hurts"],
    &["cant", "hurt"],
    &["no", "harm"],
    &["nothing", "wrong", "with"],
    &["not", "against"],
    &["not", "opposed"],
    &["not", "enough"],
    // "could you keep it short" asks; "you keep giving me essays" complains
    &["could", "you", "keep"],
    &["can", "you", "keep"],
    &["would", "you", "keep"],
    &["will", "you", "keep"],
    &["could", "u", "keep"],
    &["can", "u", "keep"],
    &["would", "u", "keep"],
    &["never", "enough"],
];

/// Words that, negated after a cue in its clause, complain about what it names ("the jokes
/// aren't landing", "sources are not needed", "examples don't help").
pub(super) const APPROVALS: &[&str] = &[
    "needed",
    "necessary",
    "helpful",
    "helping",
    "help",
    "useful",
    "required",
    "wanted",
    "welcome",
    "landing",
    "land",
    "lands",
    "vibe",
    "working",
    "appropriate",
    "relevant",
    "funny",
    "cute",
    "ok",
    "okay",
    "fine",
    "appreciated",
    "render",
    "renders",
    "rendering",
    "display",
    "displays",
    "work",
    "works",
];

/// Words that join two cues into one request ("the caveats and hedging").
pub(super) const CONNECTORS: &[&str] = &[
    "and", "or", "nor", "the", "a", "an", "any", "all", "your", "those", "these", "other", "with",
    "me",
];

/// Words that open a fed-up sentence ("ugh, … again").
pub(crate) const FED_UP: &[&str] = &["ugh", "ughh", "argh", "sigh", "omg", "seriously"];

/// Words before a gradable cue that make it a complaint ("too long" asks for shorter).
pub(super) const INTENSIFIERS: &[&str] = &["too", "so", "overly", "excessively", "super"];

/// Words that, after a cue in its clause, complain about it ("emojis are annoying").
pub(super) const COMPLAINTS: &[&str] = &[
    "confusing",
    "confuses",
    "stings",
    "ended",
    "padding",
    "noise",
    "painful",
    "nerves",
    "offputting",
    "cluttering",
    "slowing",
    "messy",
    "cluttered",
    "annoying",
    "annoy",
    "nightmare",
    "unprofessional",
    "unnecessary",
    "distracting",
    "overkill",
    "useless",
    "pointless",
    "weird",
    "cringe",
    "cringy",
    "childish",
    "irritating",
    "choppy",
    "tiring",
    "nobody",
    "excessive",
    "redundant",
    "unhelpful",
    "unneeded",
    "needless",
    "superfluous",
    "obnoxious",
    "tedious",
    "exhausting",
    "grating",
    "jarring",
    "condescending",
    "patronising",
    "patronizing",
    "unreadable",
    "overwhelming",
    "overboard",
    "overdone",
    "overused",
    "noisy",
    "clutter",
    "spammy",
    "tacky",
    "cheesy",
    "gimmicky",
    "bothers",
    "bugs",
    "fake",
    "garbage",
    "loses",
];

/// Words of a question that asks for something rather than questions what it names ("can you
/// …?", "where are the emojis?", "tl;dr next time?").
pub(super) const QUESTION_WORDS: &[&str] = &[
    "can", "could", "would", "will", "you", "u", "where", "what", "how", "pls", "please", "next",
    "maybe", "stick", "use", "give", "try", "just",
];

/// Words by which a sentence says the answer suffered from what it lacked ("impossible to
/// follow", "so bland", "too abstract", "no idea what …").
const LACKING: &[&str] = &[
    "impossible",
    "bland",
    "flat",
    "boring",
    "dry",
    "abstract",
    "bare",
    "useless",
    "idea",
    "hard",
    "confusing",
    "lost",
];

/// Whether the cue at `start` is named as missing from what the user got: "with no", "without",
/// "not a single" or "zero" within the three words before it, in a sentence that complains of
/// the lack or asks to add it ("your answers look so bland with no emojis at all", "too
/// abstract, I have no idea what this looks like without an example"). Such a cue asks for
/// what it names; "code without comments, please" still asks for none.
pub(super) fn describes_absence(sentence: &[String], clause_start: usize, start: usize) -> bool {
    let before = &sentence[clause_start.max(start.saturating_sub(3))..start];
    let missing = before
        .iter()
        .any(|w| matches!(w.as_str(), "without" | "zero"))
        || before
            .windows(2)
            .any(|p| p == ["with", "no"] || p == ["a", "single"]);
    // what it suffered from is said before it; adding it is asked after it ("… without an
    // example, please add them"), not "code without comments, it's hard to maintain them"
    let suffered = sentence[..start]
        .iter()
        .any(|w| LACKING.contains(&w.as_str()));
    let add_asked = sentence[start..].windows(2).any(|p| {
        matches!(p[0].as_str(), "add" | "include")
            && matches!(p[1].as_str(), "them" | "some" | "one" | "it")
    });
    missing && (suffered || add_asked)
}

/// Words that, anywhere after a cue in its sentence, ask to remove it ("…, remove them").
pub(super) const REMOVALS: &[&str] = &[
    "remove", "delete", "drop", "ditch", "stop", "avoid", "strip",
];

/// Whether `word` negates what follows: "not", "never", "no" or a negated verb
/// ([`NEGATED_VERBS`]: "don't", "isn't", …).
pub(super) fn negates(word: &str) -> bool {
    NEGATED_VERBS.contains(&word) || matches!(word, "not" | "never" | "no")
}

/// Contractions and negative words that turn a cue: "don't", "isn't", "can't", ….
pub(crate) const NEGATED_VERBS: &[&str] = &[
    "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "cant", "cannot", "wont",
    "shouldnt", "wouldnt", "couldnt", "aint", "havent", "hasnt", "needent", "neednt",
];

#[cfg(test)]
mod tests {
    use super::super::asked;

    #[test]
    fn complaints_before_a_cue_and_removals_after_it_turn_it_once() {
        assert_eq!(
            asked("everything is a list with you lol, write it out like a human would"),
            ["BulletsLess"]
        );
        assert_eq!(
            asked("i hate when everything is chopped into bullets"),
            ["BulletsLess"]
        );
        assert_eq!(
            asked("too many comments in the code, strip them"),
            ["CodeCommentsLess"]
        );
        assert_eq!(
            asked("the code is cluttered with // comments, strip them out"),
            ["CodeCommentsLess"]
        );
        assert_eq!(
            asked("I'd rather you left out illustrations and 'for instance' bits"),
            ["ExamplesLess"]
        );
        assert_eq!(
            asked("I'd prefer centimetres and litres over inches and gallons"),
            ["UnitsValue(0)"]
        );
        // what a review found read the wrong way round
        assert_eq!(asked("No, could you drop the emojis?"), ["EmojiLess"]);
        assert_eq!(asked("you left out the sources again"), ["SourcesMore"]);
        assert_eq!(
            asked("make sure everything has comments"),
            ["CodeCommentsMore"]
        );
        assert_eq!(
            asked("everything is great so keep the examples coming"),
            ["ExamplesMore"]
        );
        assert_eq!(
            asked("don't give me just the code, explain it"),
            ["CodeExplanationMore"]
        );
        assert_eq!(
            asked("the reply was wordy and a table would be clearer"),
            ["LengthLess", "TableMore"]
        );
        // what is missing from what the user got is asked for; a thing questioned, then why it
        // is wrong for the user, is turned away
        assert_eq!(
            asked("your answers look so bland with no emojis at all"),
            ["EmojiMore"]
        );
        assert_eq!(
            asked("this snippet is impossible to follow, not a single comment in it"),
            ["CodeCommentsMore"]
        );
        assert_eq!(
            asked("Code without comments, please."),
            ["CodeCommentsLess"]
        );
        assert_eq!(
            asked("Fahrenheit? I'm in Germany, that means nothing to me."),
            ["UnitsValue(0)"]
        );
        assert_eq!(
            asked("Commute tips? I haven't been to an office since my job went remote."),
            ["WorkValue(0)"]
        );
        assert_eq!(
            asked("Quit-smoking tips again? I'm back on cigarettes."),
            ["SmokingValue(0)"]
        );
        assert_eq!(
            asked("can you use emojis? makes it more fun to read"),
            ["EmojiMore"]
        );
        assert_eq!(asked("My dog passed away."), Vec::<String>::new());
        assert_eq!(
            asked("half the answer was warnings and caveats, seriously?"),
            ["DisclaimersLess"]
        );
        // what a second review found read the wrong way round
        assert_eq!(
            asked("Why no examples? I learn better with them."),
            ["ExamplesMore"]
        );
        assert_eq!(
            asked("Why so formal? I'm just a student."),
            ["FormalityLess"]
        );
        assert_eq!(
            asked("I'd rather have code without comments, it's hard to maintain them"),
            ["CodeCommentsLess"]
        );
        assert_eq!(asked("Zero emojis please, they're useless"), ["EmojiLess"]);
        assert_eq!(asked("Skipping the examples is annoying"), ["ExamplesMore"]);
        assert_eq!(asked("I don't find the emojis annoying"), ["EmojiMore"]);
        assert_eq!(
            asked("I ended up adding the comments myself"),
            ["CodeCommentsMore"]
        );
        assert_eq!(asked("no sources again, seriously?"), ["SourcesMore"]);
        assert_eq!(
            asked("My iPhone died again, it always does this"),
            ["PhoneValue(0)"]
        );
        // set t: a "why are …" without its "?", markdown and code marks written out, a diet
        // whose change "is done"
        assert_eq!(
            asked("why are there 4 headings in a 3-line answer"),
            ["HeadingsLess"]
        );
        assert_eq!(
            asked("you don't need a ## for every paragraph"),
            ["HeadingsLess"]
        );
        assert_eq!(
            asked("forget what I said about being vegetarian, that's done"),
            ["DietValue(6)"]
        );
        assert_eq!(asked("that pun was not the vibe"), ["HumourLess"]);
        assert_eq!(
            asked("maybe stick to inches? my tape measure doesn't do cm"),
            ["UnitsValue(1)"]
        );
        assert_eq!(asked("no luxury stuff pls im broke"), ["CostLess"]);
        // the negation is in the cue: the complaint after it does not turn it back
        assert_eq!(asked("no tl;dr pls, it's redundant"), ["SummaryLess"]);
        assert_eq!(
            asked("Begin every answer with a brief TLDR."),
            ["SummaryMore"]
        );
    }

    #[test]
    fn too_turns_gradable_cues_but_not_complaints() {
        // "so" joining two clauses is not "so long"
        assert_eq!(
            asked("I'm studying for an exam so expand on everything"),
            ["LengthMore"]
        );
        assert_eq!(asked("your answers are so long"), ["LengthLess"]);
        assert_eq!(asked("too casual"), ["FormalityMore"]);
        assert_eq!(asked("too formal"), ["FormalityLess"]);
        assert_eq!(asked("you sound so stiff"), ["FormalityLess"]);
        assert_eq!(asked("way too verbose"), ["LengthLess"]);
        assert_eq!(asked("too many exclamation marks"), ["EnthusiasmLess"]);
        assert_eq!(asked("too technical, simplify it"), ["TechnicalLess"]);
        assert_eq!(asked("don't oversimplify"), ["TechnicalMore"]);
        assert_eq!(asked("stop oversimplifying"), ["TechnicalMore"]);
        assert_eq!(asked("less rambling, more brevity please"), ["LengthLess"]);
        assert_eq!(asked("Calm down with the excitement"), ["EnthusiasmLess"]);
        assert_eq!(asked("too simplified"), ["TechnicalMore"]);
    }

    #[test]
    fn a_fed_up_sentence_complains_about_what_it_names() {
        assert_eq!(
            asked("ugh, another list of sources nobody asked for"),
            ["SourcesLess"]
        );
        assert_eq!(
            asked("ugh, 'consult an expert' AGAIN? I know the risks"),
            ["DisclaimersLess"]
        );
        // already turned: "ugh" does not turn it back
        assert_eq!(
            asked("ugh I don't need the step-by-step walkthrough again"),
            ["StepsLess"]
        );
        // no "again": asking, not complaining
        assert_eq!(asked("ugh just use bullet points"), ["BulletsMore"]);
        assert_eq!(
            asked("flag any risks or downsides when you suggest things"),
            ["DisclaimersMore"]
        );
    }
}
