//! Phrases that only look like cues ("for example", "my question").

/// Phrases that contain cue words but ask for nothing: consumed before the cues are matched.
pub(super) const NOT_CUES: &[&[&str]] = &[
    &["for", "example"],
    &["for", "instance"],
    &["long", "story", "short"],
    &["my", "question"],
    &["the", "question"],
    &["source", "code"],
    &["long", "time"],
    &["long", "ago"],
    &["as", "long", "as"],
    &["in", "short"],
    &["short", "term"],
    &["long", "term"],
    &["my", "questions"],
    &["por", "favor"],
    &["kind", "of"],
    &["the", "details"],
    &["the", "detail"],
    &["a", "list", "of"],
    &["feel", "free"],
    &["free", "time"],
    &["for", "free"],
    // a kind of annotation that is not a comment; the user's own essays
    &["type", "annotation*"],
    &["my", "essay*"],
    // "heads up, I'm a smoker again": an opener, not a wish for warnings
    &["heads", "up", ","],
    // a filler, not a wish for bluntness
    &["to", "be", "honest"],
    // "macOS shortcuts", "a shortage": not about length
    &["shortcut*"],
    &["shortage*"],
    &["shortfall*"],
    // "driving is on the table now": an idiom, not tables
    &["on", "the", "table"],
    &["off", "the", "table"],
    // "I no longer eat meat": a change, not a length
    &["no", "longer"],
    &["any", "longer"],
    // "don't comment on my weight": the verb, not comments in code
    &["comment", "on"],
    &["commenting", "on"],
    &["commented", "on"],
    // "just a heads up that I …": an opener; "peanuts are dangerous for me": the user's life
    &["heads", "up", "that"],
    &["dangerous", "for", "me"],
    &["dangerous", "to", "me"],
    &["no", "questions", "asked"],
    // the user's own background ("I have no programming background"), not the answer's
    &["my", "background"],
    &["programming", "background"],
    &["technical", "background"],
    &["coding", "background"],
];
