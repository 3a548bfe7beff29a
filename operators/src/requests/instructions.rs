//! Each request as the instruction a prompt gives the assistant ("Keep answers short.").

use std::fmt;

use super::{value_names, Aspect, Request, Way};

impl fmt::Display for Request {
    /// The request as an instruction to the assistant ("Keep answers short.").
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Aspect::*;
        use Way::*;
        let text = match (self.aspect, self.way) {
            (Length, Less) => "Keep answers short and concise.",
            (Length, More) => "Give detailed, thorough answers.",
            (Formality, More) => "Use a formal, professional tone.",
            (Formality, Less) => "Use a casual, conversational tone.",
            (Bullets, More) => "Use bullet points.",
            (Bullets, Less) => "Write in prose, not bullet points.",
            (Emoji, More) => "Use emojis.",
            (Emoji, Less) => "Do not use emojis.",
            (Technical, More) => "Be technical; use precise terminology.",
            (Technical, Less) => "Use plain language, no jargon.",
            (Code, More) => "Include code examples.",
            (Code, Less) => "Do not include code.",
            (Examples, More) => "Include examples.",
            (Examples, Less) => "Leave out examples.",
            (Table, More) => "Use tables.",
            (Table, Less) => "Do not use tables.",
            (Steps, More) => "Give numbered, step-by-step instructions.",
            (Steps, Less) => "Do not break answers into steps.",
            (Headings, More) => "Use headings.",
            (Headings, Less) => "Do not use headings.",
            (Sources, More) => "Cite sources.",
            (Sources, Less) => "Do not cite sources.",
            (Questions, More) => "Ask clarifying questions when something is unclear.",
            (Questions, Less) => "Do not ask clarifying questions; make a reasonable assumption.",
            (FollowUps, More) => "End by offering further help.",
            (FollowUps, Less) => "Do not end with questions or offers of more help.",
            (Quiz, More) => "Add practice questions.",
            (Quiz, Less) => "No practice questions or quizzes.",
            (Reasoning, More) => "Show the reasoning behind each answer.",
            (Reasoning, Less) => "Give the result alone, without the reasoning.",
            (Hedging, More) => "Say how sure you are, and flag what is uncertain.",
            (Hedging, Less) => "Commit to an answer; do not hedge.",
            (WholeCode, More) => "Give the whole code (the full file or function), not fragments.",
            (WholeCode, Less) => "Show only the lines that change, not the whole code again.",
            (Bluntness, More) => "Say bad news and criticism plainly; do not soften it.",
            (Bluntness, Less) => "Break bad news and criticism gently, with tact.",
            (Tests, More) => "Include tests with code.",
            (Tests, Less) => "Do not add tests to code.",
            (Moralising, More) => "Point out the ethical side of what is asked.",
            (Moralising, Less) => "Do not moralise or lecture; answer what is asked.",
            (Checklist, More) => "Give tasks as a checklist with boxes to tick.",
            (Checklist, Less) => "Do not format tasks as checklists.",
            (CommandFirst, More) => "Give the command or code first, then the explanation.",
            (CommandFirst, Less) => "Explain first, then give the command or code.",
            (Analogies, More) => "Explain with analogies to everyday things.",
            (Analogies, Less) => "Explain literally; no analogies or metaphors.",
            (Apologies, More) => "Apologise when you get something wrong.",
            (Apologies, Less) => "Do not apologise.",
            (Disclaimers, More) => "Add caveats and disclaimers.",
            (Disclaimers, Less) => "Leave out disclaimers and caveats.",
            (Restating, More) => "Restate the question before answering.",
            (Restating, Less) => "Do not restate the question.",
            (Titles, More) => "Address the user formally (sir or madam).",
            (Titles, Less) => "Do not address the user as sir or madam.",
            (Directness, More) => "Get to the point: lead with the answer.",
            (Directness, Less) => "Give background before the answer.",
            (Enthusiasm, More) => "Be enthusiastic and upbeat.",
            (Enthusiasm, Less) => "Keep the tone calm; no exclamation marks.",
            (Humour, More) => "Use humour.",
            (Humour, Less) => "No jokes.",
            (Markdown, More) => "Use Markdown formatting.",
            (Markdown, Less) => "Answer in plain text, no Markdown.",
            (CodeComments, More) => "Comment the code.",
            (CodeComments, Less) => "Leave comments out of the code.",
            (CodeBlocks, More) => "Put code in fenced code blocks.",
            (CodeBlocks, Less) => "Do not use code blocks.",
            (Summary, More) => "Start with a short summary (TL;DR).",
            (Summary, Less) => "Do not add a summary.",
            (Options, More) => "Offer several options.",
            (Options, Less) => "Recommend one option; do not list alternatives.",
            (Flattery, More) => "Be encouraging and complimentary.",
            (Flattery, Less) => "No compliments or flattery.",
            (Bold, More) => "Use bold text for key points.",
            (Bold, Less) => "Do not use bold text.",
            (Empathy, More) => "Acknowledge feelings; be supportive.",
            (Empathy, Less) => "Stick to practical advice, without emotional commentary.",
            (Hints, More) => "Give hints rather than full solutions.",
            (Hints, Less) => "Give the full solution.",
            (Cost, More) => "Premium options are fine.",
            (Cost, Less) => "Suggest free or low-cost options only.",
            (UsingName, More) => "Address the user by name.",
            (UsingName, Less) => "Do not address the user by name.",
            (CodeExplanation, More) => "Explain the code you give: what it does and why.",
            (CodeExplanation, Less) => "Give the code alone, without explaining it.",
            (Diet, Value(6)) => "The user eats meat: dishes with meat are fine.",
            (Accessibility, Value(3)) => {
                "The user has hearing loss: suggest written ways to do things, not calls."
            }
            (Alcohol, Value(0)) => "The user does not drink alcohol: leave it out of suggestions.",
            (Alcohol, Value(1)) => "The user drinks alcohol: drinks are fine in suggestions.",
            (aspect, Value(i)) => {
                let name = value_names(aspect)
                    .get(usize::from(i))
                    .copied()
                    .unwrap_or("?");
                return match aspect {
                    Language => write!(f, "Answer in {name}."),
                    ProgrammingLanguage => write!(f, "Write code in {name}."),
                    Units => write!(f, "Use {name} units."),
                    Spelling => write!(f, "Use {name} spelling."),
                    TimeFormat => write!(f, "Write times in the {name} format."),
                    DateFormat => write!(f, "Write dates as {name}."),
                    Currency => write!(f, "Give prices in {name}."),
                    Pronouns => write!(f, "Refer to the user as {name}."),
                    Diet => write!(f, "Suggest only {name} food."),
                    Allergy => write!(f, "The user is allergic to {name}: leave them out."),
                    Pets => write!(f, "The user has {name}: keep suggestions safe for them."),
                    Accessibility => write!(f, "Write for a reader with {name}."),
                    OperatingSystem => write!(f, "The user runs {name}: give instructions for it."),
                    Naming => write!(f, "Name identifiers in code in {name}."),
                    Work => write!(f, "The user works {name}: plan their days for it."),
                    Smoking => write!(f, "The user is {name}: plan for it."),
                    Pregnancy => write!(
                        f,
                        "The user is {name}: keep food, medicine and activities safe in pregnancy."
                    ),
                    Injury => write!(f, "The user has {name}: suggest only what it allows."),
                    Car => write!(f, "The user has {name}: plan how they get around for it."),
                    Shift => write!(f, "The user works {name}: plan their days around it."),
                    Kitchen => write!(
                        f,
                        "The user has {name}: adapt recipes to what they cook with."
                    ),
                    Phone => write!(f, "The user has {name}: give phone instructions for it."),
                    Children => write!(
                        f,
                        "The user has {name}: keep suggestions suitable for them."
                    ),
                    _ => write!(f, "{name}"),
                };
            }
            (
                Language | Units | Spelling | ProgrammingLanguage | TimeFormat | DateFormat
                | Currency | Pronouns | Diet | Allergy | Pets | Accessibility | OperatingSystem
                | Naming | Work | Smoking | Pregnancy | Injury | Car | Shift | Kitchen | Phone
                | Alcohol | Children,
                _,
            ) => "?",
        };
        f.write_str(text)
    }
}
