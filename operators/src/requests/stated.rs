//! Preferences stated in ordinary messages, and the facts that remember them.

use super::chat_clauses::{
    capability, chat_words, elliptical, habitual, mentions_a_thing, names_one_thing, past_lead_ins,
    says_any, someone_else_wants, standing, without_quotes, FROM_NOW_ON, LEAD_INS, ONE_OFF, POLITE,
    WISHES,
};
use super::reading::matches_at;
use super::words::sentence_spans;
use super::{requests_of, value_names, Aspect, Request, RequestSet, Way};

/// Words a request to the assistant starts with (after "please", "ok", "and", …).
const DIRECTIVE_STARTS: &[&str] = &[
    "keep", "be", "use", "answer", "reply", "respond", "write", "give", "make", "stop", "dont",
    "never", "always", "avoid", "skip", "talk", "speak", "call", "address", "switch", "include",
    "add", "put", "format", "explain", "cut", "no", "less", "more", "quit", "drop", "start",
    "lead", "get", "send", "show", "tell", "try", "limit", "stick", "quiz", "warn", "throw",
    "cite", "suggest", "pick", "tone", "go", "check", "ask", "let", "mention", "flag", "assume",
    "spare", "remember", "offer", "end", "number", "list", "leave", "lose", "default", "commit",
    "follow", "paste",
];

/// Phrases that make a statement about the user's own liking: "I prefer …", "I'd like …".
const LIKINGS: &[&[&str]] = &[
    &["i", "prefer"],
    &["id", "prefer"],
    &["i", "would", "prefer"],
    &["id", "rather"],
    &["i", "would", "rather"],
    &["i", "like", "it", "when"],
    &["id", "like"],
    &["i", "would", "like"],
    &["i", "want"],
    &["i", "need"],
    &["i", "like"],
    &["i", "love"],
    &["id", "love"],
    &["i", "would", "love"],
    &["i", "hate"],
    &["i", "dont", "like"],
    &["i", "dont", "want"],
    &["i", "dont", "need"],
    &["can", "you"],
    &["could", "you"],
    &["would", "you"],
    &["will", "you"],
    &["can", "we"],
    &["could", "we"],
];

/// What an ordinary message states as a standing preference about how to be answered: the
/// [`requests_of`] its sentences that ask something of the assistant's answers, read without
/// the clauses that are about something else.
///
/// Pasted text is left out: a quote after punctuation or at the start, or of more than three
/// words ("check this: 'please keep replies short …'"); it ends its sentence. A short quote in
/// the flow of a sentence names a phrase and stays ("stop hedging with 'it depends'"). A
/// sentence about one answer is left out ("just this once", "for this answer", "this time").
/// In what remains, a sentence asks when one of its clauses (split at commas and colons)
/// - is a directive: after lead-ins such as "please", "ok" or "btw", an imperative ("keep",
///   "use", "don't", "throw in", "warn me", …), "can you" / "could u", or when it applies and
///   then an imperative ("when u talk money use pounds", "if something is unclear just check
///   with me"); a question only as "can you …", and not "can you speak Korean?"; a liking of
///   the user's own ("I prefer", "I love", "I don't need") only when its sentence names the
///   answers or the assistant, it is a habit, or it asks for what only ever concerns answers
///   ("I prefer metric units"; not "I love short stories");
/// - or, not in a question, says it wishes something: "… wouldn't hurt", "… are always
///   welcome", "… work best for me", "I'm more of a … person", "feel free to …", "no need to
///   …", "you don't have to …", "I just need …";
/// - or says "please" / "for me" ("British spelling please", "24h clock for me"), or asks for
///   answers without a verb ("shorter answers plz"), and names what it asks for itself (so do
///   verbless directives: "no regrets" asks nothing).
///
/// A clause is left out of the reading when it tells what someone else wants or says ("my
/// boss wants bullet points", "she told me, keep it short"), or names one thing to work on
/// ("keep the report short", "give me a bulleted packing list", "explain black holes like I'm
/// five", "translate it", "I need my CV in German") unless it is habitual ("whenever you
/// explain something", "in every reply", "from now on"); so are the clauses after it in its
/// sentence ("summarise this article, keep it brief"), and those after a colon that follows
/// a thing ("I'm writing a style guide for my team: no emojis, …"). The user's pronouns stand
/// however the user says them ("I use she/her btw"), not someone else's.
///
/// So "Please keep answers short, I read them on my phone.", "can u keep it short pls",
/// "Portuguese please, I'm Brazilian" and "examples help me way more than definitions, so
/// throw one in whenever you explain something" state preferences; "My boss wants short
/// reports", "write a formal complaint letter to my landlord", "for this answer only, use
/// bullet points" and "Is the metric system used in the US?" do not.
pub fn stated_requests(text: &str) -> RequestSet {
    let mut requests = Vec::new();
    // "tl;dr" is one word, not two sentences
    let lower = without_quotes(&text.to_lowercase().replace("tl;dr", "tldr"));
    for sentence in sentence_spans(&lower) {
        // "…, ok?" asks nothing more than the sentence before the tag does
        let question = sentence.trim_end().ends_with('?') && !tag_question(sentence);
        let words = chat_words(sentence);
        // "your last answer was too long, keep them short from now on" stands
        if says_any(&words, ONE_OFF) && !habitual(&words) {
            continue;
        }
        let (mut asks, mut read) = (false, String::new());
        // "in general", "going forward", "whenever …", "in all your replies": a sentence that
        // says its wish stands asks whatever its clauses read, outside a question
        let standing = !question && standing(&words);
        let names_answers = words
            .iter()
            .any(|w| ANSWERS_NAMED.contains(&w.as_str()) || matches!(w.as_str(), "you" | "your"));
        // what the clauses before said: words reporting speech ("my boss says, keep it
        // short"), a thing ("I'm writing a style guide for my team: …"), a colon last; kept
        // as flags, so a sentence of many clauses is read once
        let (mut reported, mut named_thing, mut after_colon) = (false, false, false);
        // after "I'm writing a style guide for my team:" comes the guide, not a wish; after
        // "summarise this article," the rest is about the article ("keep it brief")
        let (mut inside_a_thing, mut one_thing) = (false, false);
        for clause in sentence.split_inclusive([',', ':']) {
            let words = chat_words(clause);
            let head = &words[..words.len().min(HEAD_WORDS)];
            let habit = habitual(&words);
            inside_a_thing |= after_colon && named_thing;
            let thing = names_one_thing(&words);
            let elsewhere = inside_a_thing
                || reported
                || someone_else_wants(&words)
                || ((thing || one_thing) && !habit);
            one_thing |= thing && !habit;
            if !elsewhere {
                let directive = is_directive(head, question) && !capability(head, question);
                // verbless ("shorter answers plz") or merely polite ("… please")
                let wishful = asks_for_answers(head) || says_any(&words, POLITE);
                let own = if directive || wishful || standing {
                    requests_of(clause).0
                } else {
                    Vec::new()
                };
                // "I love short stories": a liking is about answers only when its sentence names
                // them or the assistant, it is a habit ("I don't need a comment on every line
                // of code"), or what it asks for only ever concerns answers ("I prefer metric
                // units")
                let about_answers = !liking_only(head)
                    || names_answers
                    || habit
                    || (!own.is_empty() && own.iter().all(|r| about_answers_only(r.aspect)));
                let directs = directive && about_answers;
                // a verbless or merely polite clause ("no regrets", "… please") must name what
                // it asks for itself; a verb may point at its neighbours ("keep doing that"); a
                // question asks only as "can you …" ("what would be a good short name?")
                asks |= (directs && !elliptical(head))
                    || (!question && says_any(&words, WISHES))
                    || ((directs || wishful || standing) && !own.is_empty());
                read.push_str(clause);
            }
            // ("when I ask about architecture, …" is the user's own asking)
            reported |= (0..words.len()).any(|k| {
                REPORTED.contains(&words[k].as_str())
                    && !(k > 0
                        && words[k - 1] == "i"
                        && matches!(words[k].as_str(), "ask" | "asked"))
            });
            // ("small request for all future replies: …" names no thing the rest belongs to)
            named_thing |= mentions_a_thing(&words) && !habit;
            after_colon = clause.trim_end().ends_with(':');
        }
        // the user's pronouns stand however the user says them ("I use she/her btw"), but
        // not someone else's ("our new manager, Priya (she/her)")
        let own_pronouns = says_any(&words, OWN_PRONOUNS);
        if asks {
            requests.extend(requests_of(&read).0);
        } else if own_pronouns {
            let read = requests_of(&read).0;
            requests.extend(read.into_iter().filter(|r| r.aspect == Aspect::Pronouns));
        }
    }
    // children come up in every other chat ("my kids love dinosaurs, plan a party"): planning
    // around them is read from corrections, where the user says the answer missed them
    requests.retain(|r| r.aspect != Aspect::Children);
    RequestSet::from_requests(requests)
}

/// Words that report someone's speech: a directive in a clause after them was said to someone
/// else.
const REPORTED: &[&str] = &[
    "say", "says", "said", "tell", "tells", "told", "ask", "asks", "asked", "write", "writes",
    "wrote", "text", "texted", "yell", "yelled",
];

/// Comparatives a request without a verb starts with: "shorter answers, please".
const COMPARATIVE_STARTS: &[&str] = &["shorter", "longer", "briefer", "simpler", "clearer"];

/// Whether a clause of words `clause` asks for answers of some kind without a verb: past
/// lead-ins, a comparative, at most one more word, answers, replies or responses, and then
/// only "please" or lead-ins ("shorter answers plz" does; "shorter days make me sad" and
/// "longer answers on the exam got better marks" do not).
fn asks_for_answers(clause: &[String]) -> bool {
    let is = |list: &[&str], w: &String| list.contains(&w.as_str());
    let start = past_lead_ins(clause);
    if !clause.get(start).is_some_and(|w| is(COMPARATIVE_STARTS, w)) {
        return false;
    }
    let within = start + 1..clause.len().min(start + 3);
    let Some(named) = within.into_iter().find(|&i| is(ANSWERS_NAMED, &clause[i])) else {
        return false;
    };
    clause[named + 1..]
        .iter()
        .all(|w| is(LEAD_INS, w) || w == "please")
}

/// Words that name the assistant's answers.
const ANSWERS_NAMED: &[&str] = &["answers", "responses", "replies"];

/// Whether what is asked of `aspect` can only be about answers: the language, units, spelling,
/// formats and currency to answer in, and how to address the user.
fn about_answers_only(aspect: Aspect) -> bool {
    matches!(
        aspect,
        Aspect::Language
            | Aspect::Units
            | Aspect::Spelling
            | Aspect::Titles
            | Aspect::TimeFormat
            | Aspect::DateFormat
            | Aspect::Currency
            | Aspect::Pronouns
    )
}

/// Phrases by which the user says what their own pronouns are.
const OWN_PRONOUNS: &[&[&str]] = &[
    &["i", "use"],
    &["my", "pronouns"],
    &["i", "go", "by"],
    &["call", "me"],
    &["refer", "to", "me"],
];

/// Whether `head` is a directive only by a liking of the user's own ("I love …", "I need …",
/// "I don't want …"), not by an imperative or a request to the assistant ("can you …", "I'd
/// like …").
fn liking_only(head: &[String]) -> bool {
    let start = past_lead_ins(head);
    matches!(head.get(start).map(String::as_str), Some("i"))
        && head.get(start + 1).is_some_and(|w| {
            matches!(
                w.as_str(),
                "like" | "love" | "hate" | "need" | "want" | "dont" | "prefer"
            )
        })
}

/// How many words of a sentence [`is_directive`] looks at.
const HEAD_WORDS: usize = 10;

/// Whether a sentence starting with `head` (lowercase words, apostrophes dropped) is a request
/// to the assistant: past lead-ins ("please", "ok", "thank you", and "from now on" said
/// first), an imperative, or a liking ("I prefer", "can you"; the only form a question may
/// take).
fn is_directive(head: &[String], question: bool) -> bool {
    let mut start = 0;
    while start < head.len() {
        if matches_at(head, start, &["thank", "you"]) {
            start += 2;
        } else if LEAD_INS.contains(&head[start].as_str()) {
            start += 1;
        } else if let Some(p) = FROM_NOW_ON.iter().find(|p| matches_at(head, start, p)) {
            start += p.len();
        } else {
            break;
        }
    }
    let liking = LIKINGS.iter().any(|p| matches_at(head, start, p));
    let imperative = !question
        && head
            .get(start)
            .is_some_and(|w| DIRECTIVE_STARTS.contains(&w.as_str()));
    liking || imperative || (!question && conditional_directive(&head[start..]))
}

/// Whether `sentence` ends in a tag after a comma ("…, ok?", "…, right?"): a statement that
/// asks for agreement, not a question.
fn tag_question(sentence: &str) -> bool {
    let body = sentence.trim_end().trim_end_matches('?').trim_end();
    body.rsplit_once(',').is_some_and(|(_, tag)| {
        matches!(
            tag.trim(),
            "ok" | "okay" | "k" | "right" | "yeah" | "alright" | "yes"
        )
    })
}

/// Whether `head` opens with when it applies and then directs, without a comma: "when u talk
/// money use pounds", "if something is unclear just check with me first". The directive's
/// verb must not follow a subject ("when I use your code it breaks" directs nothing).
fn conditional_directive(head: &[String]) -> bool {
    // "when the kids go to bed I read them short stories" is about someone else
    // "whenever possible include …", "if my question is vague just ask", "for coding
    // exercises give me hints"
    let opens = (head.first().is_some_and(|w| {
        matches!(
            w.as_str(),
            "when" | "whenever" | "if" | "where" | "wherever"
        )
    }) && head.get(1).is_some_and(|w| {
        matches!(
            w.as_str(),
            "you" | "i" | "it" | "something" | "anything" | "theres" | "my" | "possible"
        )
    })) || (head.first().is_some_and(|w| w == "for")
        // ("for dinner tonight no meat" is one meal: a kind is plural, or "any", "every", …)
        && head.get(1..3).is_some_and(|next| {
            next.iter().any(|w| {
                (w.ends_with('s') && !w.ends_with("ss"))
                    || matches!(w.as_str(), "any" | "all" | "every" | "each")
            })
        }));
    opens
        && (2..head.len()).any(|i| {
            DIRECTIVE_STARTS.contains(&head[i].as_str())
                && !matches!(
                    head[i - 1].as_str(),
                    "i" | "you" | "we" | "he" | "she" | "they" | "it" | "to" | "ill" | "youll"
                )
        })
}

impl Request {
    /// The fact attribute a stated preference is remembered under: `preference: <aspect>`, so
    /// that a later statement about the same aspect supersedes it.
    pub fn fact_attribute(&self) -> String {
        format!("{PREFERENCE_ATTRIBUTE_PREFIX}{}", self.aspect.name())
    }

    /// The fact value of the request: "more", "less", or the value's name.
    pub fn fact_value(&self) -> String {
        match self.way {
            Way::More => "more".into(),
            Way::Less => "less".into(),
            Way::Value(i) => value_names(self.aspect)
                .get(usize::from(i))
                .map_or_else(|| "?".into(), |v| v.to_lowercase()),
        }
    }

    /// The request a fact remembers ([`Request::fact_attribute`], [`Request::fact_value`]),
    /// if it is one.
    pub fn from_fact(attribute: &str, value: &str) -> Option<Request> {
        let aspect = attribute.strip_prefix(PREFERENCE_ATTRIBUTE_PREFIX)?;
        let aspect = *Aspect::ALL.iter().find(|a| a.name() == aspect)?;
        let value = value.trim().to_lowercase();
        let way = match value.as_str() {
            "more" => Way::More,
            "less" => Way::Less,
            v => Way::Value(
                value_names(aspect)
                    .iter()
                    .position(|name| name.to_lowercase() == v)? as u8,
            ),
        };
        let valued = !value_names(aspect).is_empty();
        (valued == matches!(way, Way::Value(_))).then_some(Request { aspect, way })
    }
}

/// Attributes of the facts that remember stated preferences begin with this.
pub const PREFERENCE_ATTRIBUTE_PREFIX: &str = "preference: ";

#[cfg(test)]
mod tests {
    use super::*;

    /// What `text` states, as "AspectWay" strings.
    fn stated(text: &str) -> Vec<String> {
        stated_requests(text)
            .0
            .iter()
            .map(|r| format!("{:?}{:?}", r.aspect, r.way))
            .collect()
    }

    #[test]
    fn tags_quantities_openers_and_named_phrases_do_not_hide_a_preference() {
        // a tag question asks nothing more than its statement
        assert_eq!(
            stated("if my question is vague just ask me what i mean instead of guessing, ok?"),
            ["QuestionsMore"]
        );
        assert_eq!(
            stated("can we switch to german for all your answers from now on?"),
            ["LanguageValue(1)"]
        );
        assert_eq!(
            stated("default to python for any code examples unless i say otherwise"),
            ["ProgrammingLanguageValue(0)"]
        );
        assert_eq!(
            stated("whenever possible include a code snippet, i get it faster from code"),
            ["CodeMore"]
        );
        assert_eq!(
            stated("for coding exercises give me hints instead of the full solution"),
            ["HintsMore"]
        );
        // a quantity is not one thing to work on
        assert_eq!(
            stated("give me a few options to choose from instead of just one answer"),
            ["OptionsMore"]
        );
        assert_eq!(
            stated("use British spelling in everything you write for me"),
            ["SpellingValue(0)"]
        );
        // a short phrase named ends no sentence
        assert_eq!(
            stated(
                "can u stop with the 'great question!' stuff and drop the exclamation marks too"
            ),
            ["EnthusiasmLess", "FlatteryLess"]
        );
        assert_eq!(
            stated("show prices in pounds please from now on"),
            ["CurrencyValue(2)"]
        );
        assert_eq!(stated("my weight in pounds please"), ["UnitsValue(1)"]);
        // a sentence that says its wish stands asks whatever it reads
        assert_eq!(
            stated("Small request for all future replies: British spelling, please."),
            ["SpellingValue(0)"]
        );
        assert_eq!(
            stated("Which text editor should I use? And don't list five alternatives, in general just tell me the one you'd pick."),
            ["OptionsLess"]
        );
        assert_eq!(
            stated("When I ask about architecture, fewer code snippets please."),
            ["CodeLess"]
        );
        assert_eq!(
            stated("please be more casual and drop a joke now and then, you're so stiff lol"),
            ["FormalityLess", "HumourMore"]
        );
        assert_eq!(
            stated("Don't filter out paid stuff for me; premium products are totally fine."),
            ["CostMore"]
        );
        assert_eq!(
            stated("Please don't end every message with 'Would you like me to…?' When I want more, I'll ask."),
            ["FollowUpsLess"]
        );
        // "never", "always" and "if you" of the user's own habits are no standing wish
        for text in [
            "I never use bullet points in my own notes",
            "Sorry if you already answered this.",
            "You never give examples",
        ] {
            assert_ne!(stated(text), ["BulletsLess"], "{text}");
            assert_ne!(stated(text), ["ApologiesMore"], "{text}");
            assert_ne!(stated(text), ["ExamplesLess"], "{text}");
        }
        assert_eq!(stated("Keep those jokes coming"), ["HumourMore"]);
        // one task, however it is asked
        for text in [
            "Can you put these in a table? Oslo 709k, Bergen 291k.",
            "Tell me a joke about programmers.",
            "Quiz me on the capitals of South America, 10 questions.",
            "make a checklist for deep cleaning a kitchen",
        ] {
            assert_eq!(stated(text), Vec::<String>::new(), "{text}");
        }
        // what a review found: a standing wish beside the last answer stands, a capability
        // asked politely is no preference, one meal is no diet
        assert_eq!(
            stated("your last answer was too long, keep them short from now on"),
            ["LengthLess"]
        );
        assert_eq!(
            stated("stop calling me buddy, don't do that again"),
            stated("stop calling me buddy")
        );
        assert_eq!(
            stated("can you speak Korean, please?"),
            Vec::<String>::new()
        );
        assert_eq!(
            stated("for dinner tonight no meat please"),
            Vec::<String>::new()
        );
        // the answer just given, and what might be, state nothing
        for text in [
            "shorter version of that pls",
            "Can you make that last answer more formal? It's for a cover letter.",
            "if i wanted answers in french, would you be able to do that?",
            "hypothetically, could you answer only in emojis?",
            "can you explain that again but with an example?",
            "tl;dr this for me: The city council voted on Tuesday to extend bike lanes.",
        ] {
            assert_eq!(stated(text), Vec::<String>::new(), "{text}");
        }
    }

    #[test]
    fn standing_requests_in_ordinary_messages_are_stated_preferences() {
        assert_eq!(
            stated("Please keep answers short, I read them on my phone."),
            ["LengthLess"]
        );
        assert_eq!(stated("I prefer metric units"), ["UnitsValue(0)"]);
        assert_eq!(stated("don't call me Sir"), ["TitlesLess"]);
        assert_eq!(
            stated("Thanks! Answer in German from now on."),
            ["LanguageValue(1)"]
        );
        assert_eq!(stated("Can you always use bullet points?"), ["BulletsMore"]);
        assert_eq!(
            stated("ok so from now on be more casual with me"),
            ["FormalityLess"]
        );
        // a directive after a comma or a colon, standing by the sentence's "answers"
        assert_eq!(
            stated("Hi! Quick thing: I read your answers on my phone, so keep them short please."),
            ["LengthLess"]
        );
        assert_eq!(
            stated("btw, answer in German from now on"),
            ["LanguageValue(1)"]
        );
        assert_eq!(
            stated("Your replies are fine, but skip the emoji"),
            ["EmojiLess"]
        );
        // no verb: a comparative and the answers
        assert_eq!(stated("shorter answers plz, im on mobile"), ["LengthLess"]);
        // chat spellings, wishes without a directive, and a request about whenever
        assert_eq!(stated("can u keep it short pls"), ["LengthLess"]);
        assert_eq!(
            stated("Portuguese please, I'm Brazilian"),
            ["LanguageValue(5)"]
        );
        assert_eq!(
            stated("I'm a visual learner so tables are always welcome"),
            ["TableMore"]
        );
        assert_eq!(
            stated("examples help me more than definitions, so throw one in whenever you explain"),
            ["ExamplesMore"]
        );
        // when it applies, then what to do; how to address the user stands however said
        assert_eq!(
            stated("if something is unclear just check with me first"),
            ["QuestionsMore"]
        );
        assert_eq!(stated("I use she/her btw"), ["PronounsValue(1)"]);
        // pasted text ends its sentence: what follows it still counts
        assert_eq!(
            stated("Fix this sentence: \"I has went there.\" Always use British spelling."),
            ["SpellingValue(0)"]
        );
        // a short quote names a phrase
        assert_eq!(
            stated("skip the 'consult a professional' disclaimers, I'm a nurse"),
            ["DisclaimersLess"]
        );
        assert_eq!(stated("pls simpler replies"), ["TechnicalLess"]);
        for text in [
            "My boss wants short reports.",
            "I read short stories on the train",
            "Is the metric system used in the US?",
            "Keep the report short.",
            "We watched a long movie about German history",
            "Why are bullet points popular?",
            "You never know the difference a kind gesture can make.",
            // a directive in another clause, said to someone else or about something else
            "My boss always says, keep it short",
            "The exam answers were long, so keep studying",
            "I told my son, never call me sir",
            "Shorter days make me sad.",
            "Longer answers on the exam got better marks",
            // pasted or quoted text, one answer or one thing, what the assistant can do
            "is this correct? 'Please respond in English only.'",
            "Check this email: \"Hi all, please keep your replies short going forward.\"",
            "for this answer only, give it to me in bullet points",
            "give me a bulleted packing list for Rome",
            "make that email shorter, it rambles",
            "explain black holes like I'm five",
            "I need my CV in German, can you translate it?",
            "Can you add comments to the script you just sent?",
            "Can you speak Korean?",
            "we switched our codebase to TypeScript, no regrets",
            "I'm writing a style guide for my team: no emojis, short paragraphs.",
            "the client insists on US dollars in all the docs",
            "when I use your code in German projects it breaks",
            // likings of other things, questions, someone else's habits and pronouns, one task
            "I love short stories",
            "I need detailed directions to the airport",
            "What would be a good short name for my cat?",
            "Can you help me plan a casual dinner party?",
            "Is it true that you can speak German?",
            "When the kids go to bed I read them short stories",
            "Explain every step of the proof in detail",
            "Our new manager, Priya (she/her), starts Monday",
            "Summarise this article, keep it brief",
        ] {
            assert_eq!(stated(text), Vec::<String>::new(), "{text:?}");
        }
    }

    #[test]
    fn a_stated_preference_is_remembered_as_a_fact_per_aspect() {
        for text in [
            "keep it short",
            "more detail",
            "answer in German",
            "use imperial units",
            "UK spelling",
        ] {
            let request = requests_of(text).0[0];
            assert_eq!(
                Request::from_fact(&request.fact_attribute(), &request.fact_value()),
                Some(request),
                "{text:?}"
            );
        }
        let short = requests_of("keep it short").0[0];
        assert_eq!(
            (short.fact_attribute().as_str(), short.fact_value().as_str()),
            ("preference: length", "less")
        );
        assert_eq!(Request::from_fact("preference: length", "sideways"), None);
        assert_eq!(Request::from_fact("hometown", "less"), None);
    }
}
