//! The reading's unit tests: texts as people type them, and what they ask for.

use super::asked;

#[test]
fn hedging_and_whole_code_are_their_own_aspects() {
    assert_eq!(
        asked("so wishy-washy. just commit to an answer"),
        ["HedgingLess"]
    );
    assert_eq!(
        asked("tell me if you're uncertain about something"),
        ["HedgingMore"]
    );
    assert_eq!(
        asked("send the entire file, not just the changes"),
        ["WholeCodeMore"]
    );
    assert_eq!(asked("only show the diff"), ["WholeCodeLess"]);
}

#[test]
fn bluntness_naming_and_tests_are_their_own_aspects() {
    assert_eq!(asked("don't sugarcoat it"), ["BluntnessMore"]);
    assert_eq!(
        asked("be honest even if it's harsh, I can take it"),
        ["BluntnessMore"]
    );
    assert_eq!(
        asked("That was really harsh to read. Please soften how you deliver criticism."),
        ["BluntnessLess"]
    );
    // "to be honest" is a filler
    assert_eq!(asked("to be honest, way too long"), ["LengthLess"]);
    assert_eq!(
        asked("use snake_case for variable names"),
        ["NamingValue(0)"]
    );
    assert_eq!(
        asked("can you write a few unit tests along with the function?"),
        ["TestsMore"]
    );
}

#[test]
fn a_complaint_in_the_clause_after_turns_away_what_it_points_back_to() {
    assert_eq!(asked("emojis everywhere, it's distracting"), ["EmojiLess"]);
    // already turned: the complaint does not turn it back
    assert_eq!(asked("lose the emoji, its unprofessional"), ["EmojiLess"]);
    // a clause that does not point back says nothing of the cue
    assert_eq!(asked("use more emojis, my boss is annoying"), ["EmojiMore"]);
}

#[test]
fn than_after_rather_and_words_that_only_look_like_cues() {
    assert_eq!(
        asked("i'd rather see several choices than be told what to do"),
        ["OptionsMore"]
    );
    assert_eq!(
        asked("Give me macOS shortcuts please, I switched from a PC."),
        ["OperatingSystemValue(1)"]
    );
    assert!(asked("I'd prefer you not comment on my weight.").is_empty());
    assert_eq!(asked("Heads up, I'm a smoker again."), ["SmokingValue(0)"]);
    // a language being learnt is not one to answer in (a beginner wants plain words)
    assert_eq!(
        asked("i'm a beginner in spanish, so explain the rules in english pls"),
        ["TechnicalLess", "LanguageValue(0)"]
    );
    assert!(asked("i'm learning japanese").is_empty());
}

#[test]
fn clock_times_said_both_ways_ask_for_a_time_format() {
    assert_eq!(
        asked("please write 18:30 rather than 6:30pm"),
        ["TimeFormatValue(0)"]
    );
    assert_eq!(
        asked("Please write times as 3 PM rather than 15:00."),
        ["TimeFormatValue(1)"]
    );
    assert_eq!(asked("im european, 18:00 not 6pm"), ["TimeFormatValue(0)"]);
    // times that only say when something happens
    assert!(asked("schedule stuff for evenings pls, i work 10pm-8am").is_empty());
}

#[test]
fn things_kept_free_of_are_turned_away() {
    assert_eq!(
        asked("keep the answers free of emojis please"),
        ["EmojiLess"]
    );
}

#[test]
fn a_negated_excess_still_asks_for_less() {
    assert_eq!(asked("Don't be so concise with me"), ["LengthMore"]);
    assert_eq!(asked("don't be too formal"), ["FormalityLess"]);
    assert_eq!(asked("not too formal please"), ["FormalityLess"]);
    assert_eq!(asked("stop being so formal"), ["FormalityLess"]);
    assert_eq!(asked("don't use too many emojis"), ["EmojiLess"]);
    assert_eq!(asked("not so formal please"), ["FormalityLess"]);
}

#[test]
fn could_you_keep_asks_and_you_keep_complains() {
    assert_eq!(
        asked("Could you keep your answers shorter, please?"),
        ["LengthLess"]
    );
    assert_eq!(asked("can u keep it brief"), ["LengthLess"]);
    assert_eq!(asked("you keep giving me bullet points"), ["BulletsLess"]);
}

#[test]
fn emoji_named_are_emojis_and_the_others_end_a_clause() {
    assert_eq!(asked("more \u{1f602}\u{1f525}\u{2728} pls"), ["EmojiMore"]);
    assert_eq!(
        asked("stop with the \u{1f389}\u{1f525} stuff, it's annoying"),
        ["EmojiLess"]
    );
    assert_eq!(asked("ugh the \u{1f680} again?? cut it out"), ["EmojiLess"]);
    // a face after a request is punctuation, not a request for emoji
    assert_eq!(
        asked("pls use bullet points, easier to scan \u{1f64f}"),
        ["BulletsMore"]
    );
    assert_eq!(
        asked("just the number isn't helpful \u{1f914} show me the steps"),
        ["StepsMore"]
    );
    assert_eq!(
        asked("no need for the \u{26a0}\u{fe0f} stuff every time"),
        ["DisclaimersLess"]
    );
}

#[test]
fn complaints_and_wishes_about_length_point_the_same_way() {
    for text in [
        "Too long. Keep it short.",
        "way too wordy, cut it down",
        "Please be more concise.",
        "This is a wall of text!!",
        "TL;DR please",
        "not so long next time",
        "brief answers only!!",
        "answer briefly",
    ] {
        assert_eq!(asked(text), ["LengthLess"], "{text:?}");
    }
    for text in [
        "That's too brief, I need more detail.",
        "Go into more depth please",
        "not a one-liner",
    ] {
        assert_eq!(asked(text), ["LengthMore"], "{text:?}");
    }
}

#[test]
fn negations_turn_things_away_wherever_they_are_said() {
    for text in [
        "Don't use bullet points.",
        "No bullet points please",
        "I hate bulleted lists",
        "Enough with the bullet points",
        "stop making everything a list",
        "write it in full paragraphs instead of bullets",
    ] {
        assert_eq!(asked(text), ["BulletsLess"], "{text:?}");
    }
    assert_eq!(asked("Use bullet points."), ["BulletsMore"]);
    assert_eq!(
        asked("bullets please, not a big paragraph"),
        ["BulletsMore"]
    );
    assert_eq!(
        asked("emojis are unprofessional, remove them"),
        ["EmojiLess"]
    );
    assert_eq!(asked("emojis are annoying"), ["EmojiLess"]);
    assert_eq!(asked("Add some emojis!"), ["EmojiMore"]);
    assert_eq!(asked("This isn't the place for jokes"), ["HumourLess"]);
    assert_eq!(asked("Keep the humor out of it"), ["HumourLess"]);
    assert_eq!(
        asked("Leave out the caveats and hedging"),
        ["DisclaimersLess"]
    );
    assert_eq!(
        asked("Stop asking me follow-up questions"),
        ["FollowUpsLess"]
    );
    assert_eq!(
        asked("Ask me clarifying questions first"),
        ["QuestionsMore"]
    );
    assert_eq!(
        asked("add some practice questions at the end"),
        ["QuizMore"]
    );
    assert_eq!(
        asked("Use bullet points and no emojis"),
        ["BulletsMore", "EmojiLess"]
    );
    assert_eq!(
        asked("why is everything a BULLET LIST?? write it out"),
        ["BulletsLess"]
    );
    assert_eq!(asked("too much jargon"), ["TechnicalLess"]);
    assert_eq!(asked("clean code without comments"), ["CodeCommentsLess"]);
    assert_eq!(asked("prices in \u{20ac} please"), ["CurrencyValue(0)"]);
}

#[test]
fn reasoning_is_asked_for_or_away_and_explain_alone_is_not_it() {
    for text in [
        "show your work please",
        "can you tell me the thought process behind it",
        "explain how you got there, not just the result",
    ] {
        assert_eq!(asked(text), ["ReasoningMore"], "{text:?}");
    }
    for text in [
        "just the answer, no explanation",
        "skip the reasoning",
        "Please omit the working and justification.",
        "dont explain how u got there",
    ] {
        assert_eq!(asked(text), ["ReasoningLess"], "{text:?}");
    }
    assert!(!asked("explain it simply")
        .iter()
        .any(|r| r.starts_with("Reasoning")));
}

#[test]
fn negations_that_ask_all_the_same_turn_nothing() {
    for (text, want) in [
        ("don't forget the sources", "SourcesMore"),
        ("I wouldn't mind a few emojis", "EmojiMore"),
        (
            "don't hesitate to ask me clarifying questions",
            "QuestionsMore",
        ),
        ("not enough examples", "ExamplesMore"),
        ("dont be shy with the jokes", "HumourMore"),
        ("it wouldn't hurt to add a table", "TableMore"),
        ("why no examples?", "ExamplesMore"),
        ("why is there no summary??", "SummaryMore"),
    ] {
        assert_eq!(asked(text), [want], "{text:?}");
    }
}

#[test]
fn disapproval_after_a_cue_and_far_negated_wishes_turn_it() {
    for (text, want) in [
        ("the jokes aren't landing", "HumourLess"),
        (
            "the humor doesn't land, just give me the info",
            "HumourLess",
        ),
        (
            "tabular layouts are a nightmare on my screen reader",
            "TableLess",
        ),
        ("why does a 3 paragraph answer need headers", "HeadingsLess"),
        (
            "my teacher marks me down for american spellings, so pls dont",
            "SpellingValue(0)",
        ),
        ("sources are not really needed", "SourcesLess"),
        ("the emojis are too much", "EmojiLess"),
        ("ENOUGH bullet points", "BulletsLess"),
        (
            "Enough sorry sorry sorry. It's fine, move on.",
            "ApologiesLess",
        ),
        (
            "i dont need you to tell me every possible thing that could go wrong",
            "DisclaimersLess",
        ),
    ] {
        assert_eq!(asked(text), [want], "{text:?}");
    }
    // a clause break ends the negation, and "enough" inside a clause is no complaint
    assert_eq!(
        asked("I don't need much, just bullet points"),
        ["BulletsMore"]
    );
    assert_eq!(asked("is that enough detail?"), ["LengthMore"]);
    // what follows "just" or "only" is asked for, whatever was negated before it
    assert_eq!(
        asked("I don't want a lecture just the code"),
        ["CodeExplanationLess"]
    );
    assert_eq!(
        asked("no fluff only bullet points"),
        ["BulletsMore", "DirectnessMore"]
    );
}

#[test]
fn assuming_something_named_is_a_fact_not_a_request_about_questions() {
    assert!(asked("for email how-tos assume Outlook desktop").is_empty());
    assert!(asked("Stop assuming im training to be a doctor").is_empty());
    assert_eq!(
        asked("make reasonable assumptions and go"),
        ["QuestionsLess"]
    );
    assert_eq!(asked("just assume and proceed"), ["QuestionsLess"]);
    assert_eq!(asked("don't assume!! clarify"), ["QuestionsMore"]);
}

#[test]
fn combined_requests_keep_every_part_and_phrases_that_only_look_like_cues_ask_nothing() {
    assert_eq!(
        asked("Too long, keep it to three bullet points."),
        ["LengthLess", "BulletsMore"]
    );
    assert_eq!(
        asked("for example, my question was about Lisbon"),
        Vec::<String>::new()
    );
    assert_eq!(
        asked("Don't repeat my question back to me."),
        ["RestatingLess"]
    );
    assert_eq!(
        asked("The capital of Australia is Canberra"),
        Vec::<String>::new()
    );
}

#[test]
fn what_a_text_concedes_asks_nothing() {
    // the wish comes after "but"; the conceded "I don't hate emojis" is no wish for them
    assert_eq!(
        asked("It's not that I hate emojis, but I really don't need three of them in every paragraph. Please leave them out."),
        Vec::<String>::new()
    );
    assert_eq!(
        asked("it's not that I want a novel, but you're being way too brief"),
        ["LengthMore"]
    );
    assert_eq!(
        asked("i'm not saying paragraphs are bad but for stuff like this bullet points would be way easier"),
        ["BulletsMore"]
    );
    // a concession ends at its clause break
    assert_eq!(
        asked("it's not that I don't trust your pick, I just want the alternatives"),
        ["OptionsMore"]
    );
    // "it's not like …" without a "but" is what the user says
    assert_eq!(
        asked("it's not like I need a pat on the back for asking how to unzip a file"),
        ["FlatteryLess"]
    );
    // conceded in a sentence of its own, the wish in the next
    assert_eq!(
        asked("It's not that I dislike emojis. Just fewer emojis please."),
        ["EmojiLess"]
    );
}

#[test]
fn a_habit_asked_about_complains_without_its_question_mark() {
    assert_eq!(
        asked("why does every answer turn into a bulleted list lol"),
        ["BulletsLess"]
    );
    assert_eq!(asked("why do you always add emojis"), ["EmojiLess"]);
    assert_eq!(asked("why does it keep adding emojis"), ["EmojiLess"]);
}

#[test]
fn the_users_own_background_is_not_the_answers() {
    assert_eq!(
        asked("Please assume I have no programming background."),
        Vec::<String>::new()
    );
    assert_eq!(asked("skip the background"), ["DirectnessMore"]);
}

#[test]
fn what_the_user_left_or_lost_and_openers_ask_nothing() {
    // the value after "switched from" is the one left behind
    assert_eq!(
        asked("Can you give me Mac shortcuts instead? I switched from Windows last week."),
        ["OperatingSystemValue(1)"]
    );
    assert_eq!(
        asked("update: switched back from macOS, keep that in mind"),
        Vec::<String>::new()
    );
    assert_eq!(asked("I use a Mac now"), ["OperatingSystemValue(1)"]);
    // a pet that is gone is no pet to plan around
    assert_eq!(
        asked("It's been hard, but our dog is gone now, so you don't need to factor a pet into anything."),
        Vec::<String>::new()
    );
    // "a heads up that …" and "dangerous for me" tell of the user, not of warnings
    assert_eq!(
        asked("Just a heads up that I found out I react badly to groundnuts, so keep them out of meal suggestions."),
        Vec::<String>::new()
    );
    assert_eq!(
        asked("peanut is dangerous for me, allergy, do not suggest"),
        ["AllergyValue(0)"]
    );
    assert_eq!(
        asked("warn me when something is dangerous"),
        ["DisclaimersMore"]
    );
    assert_eq!(asked("just answer, no questions"), ["QuestionsLess"]);
    assert_eq!(
        asked("no questions asked, I'll take it"),
        Vec::<String>::new()
    );
}

#[test]
fn words_quoted_are_the_assistants_own_complained_of() {
    assert_eq!(
        asked("'I apologize for the confusion' x4... lol"),
        ["ApologiesLess"]
    );
    assert_eq!(
        asked("half the answer was 'it depends' and 'I'm not a lawyer'... lol"),
        ["HedgingLess"]
    );
    // a quote across a sentence mark is one quote
    assert_eq!(
        asked("Every answer ends with 'Let me know if you want more!' and it's annoying"),
        ["FollowUpsLess"]
    );
    assert_eq!(
        asked("no 'let me know if you need anything else!' pls"),
        ["FollowUpsLess"]
    );
    // a quote asked for
    assert_eq!(
        asked(
            "Could you finish with a short 'in summary' line? Helps me remember the main takeaway."
        ),
        ["SummaryMore"]
    );
    assert_eq!(
        asked("I wouldn't mind an 'I can also help with X' at the end."),
        ["FollowUpsMore"]
    );
    // double quotes, straight or curly, quote as single ones do
    assert_eq!(
        asked("\"I apologize for the confusion\" again and again..."),
        ["ApologiesLess"]
    );
    assert_eq!(
        asked("\u{201c}Great question!\u{201d} every single time"),
        ["FlatteryLess"]
    );
    // apostrophes in words and unpaired ones quote nothing
    assert_eq!(asked("don't apologize so much"), ["ApologiesLess"]);
    assert_eq!(asked("the users' data needs a summary"), ["SummaryMore"]);
}

#[test]
fn one_option_or_several_said_other_ways() {
    assert_eq!(
        asked("pls dont list alternatives, what is best one"),
        ["OptionsLess"]
    );
    assert_eq!(
        asked("stop giving me a menu lol, i need a decision"),
        ["OptionsLess"]
    );
    assert_eq!(asked("just the top choice please"), ["OptionsLess"]);
    assert_eq!(asked("what are the alternatives?"), ["OptionsMore"]);
}

#[test]
fn sarcasm_over_a_count_and_a_downside_missed() {
    assert_eq!(
        asked("oh cool, 14 bullet points with 3 words each. super readable."),
        ["BulletsLess"]
    );
    assert_eq!(
        asked("oh great, three paragraphs of disclaimers"),
        ["DisclaimersLess"]
    );
    assert_eq!(
        asked("so there's no downside at all? really? tell me the catch next time"),
        ["DisclaimersMore"]
    );
    // a count asked for is no sarcasm
    assert_eq!(asked("give me 3 bullet points"), ["BulletsMore"]);
}

#[test]
fn a_quote_with_a_clause_break_inside_is_read_whole() {
    // the quote begins before the clause its cue is in
    assert_eq!(
        asked("stop opening with 'Sure, happy to help! Great question!'"),
        ["FlatteryLess", "FollowUpsLess"]
    );
    assert_eq!(
        asked("'Certainly, here is a summary' every time..."),
        ["SummaryLess"]
    );
}

/// Texts put together at random from the pieces the reading treats specially (quotes and
/// apostrophes, clause breaks, concessions, habits, sarcasm, counts, values left behind, emoji)
/// never make it panic: a panic here stops consolidation for every user.
#[test]
fn random_texts_of_tricky_pieces_are_read_without_panicking() {
    const PIECES: &[&str] = &[
        "'",
        "'sure,",
        "happy",
        "to",
        "help!'",
        "it's",
        "not",
        "that",
        "like",
        "but",
        ",",
        ".",
        "?",
        "!",
        "no",
        "why",
        "does",
        "every",
        "do",
        "you",
        "keep",
        "oh",
        "cool,",
        "14",
        "three",
        "bullet",
        "points",
        "emojis",
        "🎉",
        "switched",
        "from",
        "windows",
        "mac",
        "i'm",
        "saying",
        "shorter",
        "more",
        "detail",
        "'it",
        "depends'",
        "say",
        "give",
        "me",
        "a",
        "summary",
        "don't",
        "mind",
        "wouldn't",
        "there's",
        "downside",
        "at",
        "all",
        "analogies",
        "metaphors",
        "literal",
        "explanation",
        "users'",
        "data",
        "tl;dr",
        "first",
        "just",
        "only",
        "code",
        "the",
        "dog",
        "is",
        "gone",
        "heads",
        "up",
        "dangerous",
        "for",
        "questions",
        "alternatives",
        "menu",
        "decision",
        "\"",
        "—",
        "(",
        ")",
        ":",
        ";",
        "x4...",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    for _ in 0..20_000 {
        let len = 1 + next(24);
        let text: Vec<&str> = (0..len).map(|_| PIECES[next(PIECES.len())]).collect();
        let text = text.join(if next(3) == 0 { "" } else { " " });
        let _ = super::reading::read_requests(&text);
    }
}

#[test]
fn going_easier_on_a_thing_and_zero_of_it_questioned() {
    assert_eq!(asked("maybe go easier on the bold text"), ["BoldLess"]);
    assert_eq!(asked("ease up on the emojis pls"), ["EmojiLess"]);
    assert_eq!(
        asked("zero comments in 80 lines, really?"),
        ["CodeCommentsMore"]
    );
    assert_eq!(asked("zero emojis please"), ["EmojiLess"]);
}

#[test]
fn mock_praise_turns_what_it_is_about() {
    assert_eq!(
        asked("Great, one sentence. Super helpful for a 2000-word assignment."),
        ["LengthMore"]
    );
    assert_eq!(
        asked("Ah, a 7-column table. Very readable on a 5-inch screen."),
        ["TableLess"]
    );
    assert_eq!(
        asked("Love how you assumed everything instead of asking one single question."),
        ["QuestionsMore"]
    );
    // real thanks, and what is asked after the praise, stay as they are
    assert_eq!(
        asked("Very helpful, thanks! Can you add more examples next time?"),
        ["ExamplesMore"]
    );
    assert_eq!(
        asked("That table was very helpful. Use a table again next time."),
        ["TableMore"]
    );
    assert_eq!(
        asked("the bullet points were very helpful, keep doing that"),
        ["BulletsMore"]
    );
}

#[test]
fn an_assumption_quoted_back_and_what_the_user_is_getting() {
    // the user's circumstance quoted is the assistant's assumption, turned
    assert_eq!(
        asked("\"Since you don't have a car...\" I do now, picked one up yesterday"),
        ["CarValue(0)"]
    );
    // one turned away is not disputed
    assert_eq!(
        asked("please, no wine pairings and no 'grab a beer' ideas"),
        ["AlcoholValue(0)"]
    );
    // a value quoted is only named
    assert_eq!(
        asked("it's 'colour' not 'color' lol, I'm in the UK"),
        ["SpellingValue(0)"]
    );
    assert_eq!(
        asked("why am I getting British English, I'm American"),
        ["SpellingValue(1)"]
    );
}

#[test]
fn what_the_review_of_quotes_concessions_and_mockery_found() {
    // a double-quoted thing asked for, as a single-quoted one
    assert_eq!(asked("add a \"summary\" section"), ["SummaryMore"]);
    assert_eq!(asked("add a 'summary' section"), ["SummaryMore"]);
    assert_eq!(asked("start with a 'summary'"), ["SummaryMore"]);
    // curly single quotes quote too
    assert_eq!(
        asked("half the answer was \u{2018}it depends\u{2019}... lol"),
        ["HedgingLess"]
    );
    // mockery or sarcasm never turns the user's own circumstances
    assert_eq!(
        asked("I'm vegetarian. Very helpful answer."),
        ["DietValue(0)"]
    );
    assert_eq!(
        asked("oh great, 3 steak recipes and i'm vegetarian"),
        ["DietValue(0)"]
    );
    // praise of what its own sentence names is praise
    assert_eq!(asked("The examples were very helpful."), ["ExamplesMore"]);
    // "not that many" concedes nothing
    assert_eq!(
        asked("not that formal, it's for friends"),
        ["FormalityLess"]
    );
}

#[test]
fn a_healed_injury_and_a_workplace_are_read() {
    assert_eq!(asked("hurt my knee, no running"), ["InjuryValue(0)"]);
    assert_eq!(
        asked("my knee's been fine for weeks, I'm not made of glass"),
        Vec::<String>::new()
    );
    assert_eq!(
        asked("Why is it still all low-impact stuff? I told you my knee's recovered."),
        Vec::<String>::new()
    );
    assert_eq!(
        asked("I sprained my ankle and it hasn't healed yet"),
        ["InjuryValue(0)"]
    );
    assert_eq!(
        asked("my knee hurts and I don't want to wait until it has healed"),
        ["InjuryValue(0)"]
    );
    assert_eq!(asked("back at the office full time"), ["WorkValue(1)"]);
    assert_eq!(
        asked("tips for stress in the workplace please"),
        Vec::<String>::new()
    );
    assert_eq!(
        asked("my job is from home now i dont go office anymore please remember"),
        ["WorkValue(0)"]
    );
}

#[test]
fn a_why_question_leaves_a_complaint_as_it_points() {
    assert_eq!(asked("why is it always so wordy?"), ["LengthLess"]);
    assert_eq!(
        asked("Why are your replies always so thin? I keep having to ask follow-ups."),
        ["LengthMore"]
    );
    assert_eq!(asked("why so stiff? talk like a person"), ["FormalityLess"]);
}
