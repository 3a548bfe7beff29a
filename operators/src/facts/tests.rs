use super::*;

fn fact(attribute: &str, value: &str) -> (String, String) {
    (attribute.to_string(), value.to_string())
}

fn extracted(text: &str) -> Vec<(String, String)> {
    extract_facts(text)
        .into_iter()
        .map(|f| (f.attribute, f.value))
        .collect()
}

#[test]
fn my_x_is_y() {
    assert_eq!(extracted("My name is Sarah."), vec![fact("name", "Sarah")]);
    assert_eq!(
        extracted("my name is bob lee"),
        vec![fact("name", "bob lee")]
    );
    assert_eq!(
        extracted("Hi! My name's Tom Baker, nice to meet you."),
        vec![fact("name", "Tom Baker")]
    );
    assert_eq!(
        extracted("my favorite color is blue"),
        vec![fact("favorite_color", "blue")]
    );
    assert_eq!(
        extracted("My dog's name is Rex and he is 3."),
        vec![fact("dog_name", "Rex")]
    );
    assert_eq!(
        extracted("I think my wife's birthday is on March 3rd"),
        vec![fact("wife_birthday", "March 3rd")]
    );
    assert_eq!(
        extracted("My new address is 12 Baker Street."),
        vec![fact("address", "12 Baker Street")]
    );
    assert_eq!(
        extracted("My office is in Berlin near the station."),
        vec![fact("office", "Berlin")]
    );
    // chat fillers end a value: "I live in Berlin lol"
    assert_eq!(
        extracted("Also, pls use celsius, I live in Berlin lol"),
        extracted("I live in Berlin.")
    );
    assert!(!extracted("I live in Berlin.").is_empty());
    assert_eq!(
        extracted("My cat is called Luna."),
        vec![fact("cat_name", "Luna")]
    );
    assert_eq!(
        extracted("My job is a software engineer at Acme"),
        vec![fact("job", "software engineer at Acme")]
    );
    assert_eq!(
        extracted("My goal is to run a marathon, which is hard."),
        vec![fact("goal", "to run a marathon")]
    );
}

#[test]
fn first_person_verbs() {
    assert_eq!(
        extracted("I moved to Denver last year."),
        vec![fact("lives_in", "Denver")]
    );
    assert_eq!(
        extracted("I've just moved to San Francisco!"),
        vec![fact("lives_in", "San Francisco")]
    );
    assert_eq!(
        extracted("I live in Portland with my wife"),
        vec![fact("lives_in", "Portland")]
    );
    assert_eq!(
        extracted("I'm currently living in the Netherlands"),
        vec![fact("lives_in", "Netherlands")]
    );
    assert_eq!(
        extracted("I work at Google as a data scientist."),
        vec![fact("works_at", "Google")]
    );
    assert_eq!(
        extracted("I work for Bank of America."),
        vec![fact("works_at", "Bank of America")]
    );
    assert_eq!(
        extracted("I work as a nurse at the hospital."),
        vec![fact("occupation", "nurse")]
    );
    assert_eq!(
        extracted("I'm from Germany originally."),
        vec![fact("origin", "Germany")]
    );
    assert_eq!(
        extracted("I was born in 1990."),
        vec![fact("birth_year", "1990")]
    );
    assert_eq!(
        extracted("I was born in Lyon."),
        vec![fact("birthplace", "Lyon")]
    );
    assert_eq!(extracted("I am 34 years old."), vec![fact("age", "34")]);
    assert_eq!(extracted("I just turned 40"), vec![fact("age", "40")]);
    assert_eq!(
        extracted("I'm allergic to peanuts and shellfish"),
        vec![fact("allergic_to", "peanuts")]
    );
    assert_eq!(
        extracted("I prefer concise answers with code examples."),
        vec![fact("prefers", "concise answers with code examples")]
    );
    assert_eq!(
        extracted("I'd prefer tea over coffee"),
        vec![fact("prefers", "tea")]
    );
    assert_eq!(
        extracted("I really like jazz a lot."),
        vec![fact("likes", "jazz")]
    );
    assert_eq!(
        extracted("I love hiking in the mountains"),
        vec![fact("likes", "hiking in the mountains")]
    );
    assert_eq!(
        extracted("I don't like spicy food"),
        vec![fact("dislikes", "spicy food")]
    );
    assert_eq!(
        extracted("Honestly I can't stand cilantro."),
        vec![fact("dislikes", "cilantro")]
    );
    assert_eq!(
        extracted("I have a golden retriever named Max."),
        vec![fact("golden_retriever_name", "Max")]
    );
    assert_eq!(extracted("Please call me Liz."), vec![fact("name", "Liz")]);
    assert_eq!(extracted("I go by Sam at work"), vec![fact("name", "Sam")]);
}

#[test]
fn several_facts_in_one_message() {
    assert_eq!(
        extracted("My name is Ana; I live in Lisbon, and I work at Feedzai. I like surfing"),
        vec![
            fact("name", "Ana"),
            fact("lives_in", "Lisbon"),
            fact("works_at", "Feedzai"),
            fact("likes", "surfing")
        ]
    );
    // curly apostrophes and line breaks
    assert_eq!(
        extracted("I\u{2019}m 29 years old\nmy sister\u{2019}s name is Mia"),
        vec![fact("age", "29"), fact("sister_name", "Mia")]
    );
    // the same fact twice is reported once
    assert_eq!(
        extracted("I live in Oslo. I live in Oslo."),
        vec![fact("lives_in", "Oslo")]
    );
}

#[test]
fn statements_that_are_not_facts() {
    let not_facts = [
        "What is my name?",
        "Do you remember where I live in?",
        "Can you tell me if I work at Google?",
        "If I moved to Paris, would I need a visa?",
        "If I moved to Paris I would learn French.",
        "I would love to visit Japan.",
        "I like it.",
        "I like that idea!",
        "I like how you explained it.",
        "I like to think of it as a graph.",
        "My question is whether this works.",
        "My point is simple.",
        "My name is not Bob.",
        "It's not true that my name is Bob.",
        "I used to live in Paris.",
        "I lived in Paris for years.",
        "I no longer work at Google.",
        "I don't live in Berlin anymore.",
        "I am 5 minutes late.",
        "I'm not allergic to anything.",
        "Call me back tomorrow.",
        "Call me when you can.",
        "Maybe I live in the wrong city.",
        "You live in Berlin.",
        "The weather is nice today.",
        "Let's say I work at a bank.",
        "I moved.",
        "My",
        "",
    ];
    for text in not_facts {
        assert_eq!(extracted(text), vec![], "{text:?}");
    }
}

#[test]
fn subject_and_cardinality() {
    let facts = extract_facts("I live in Rome and I like opera.");
    assert_eq!(
        facts,
        vec![
            ExtractedFact {
                subject: "user".into(),
                attribute: "lives_in".into(),
                value: "Rome".into(),
                cardinality: Cardinality::One,
            },
            ExtractedFact {
                subject: "user".into(),
                attribute: "likes".into(),
                value: "opera".into(),
                cardinality: Cardinality::Many,
            },
        ]
    );
    assert_eq!(facts[0].key_attribute(), "lives_in");
    assert_eq!(facts[1].key_attribute(), "likes:opera");
}

#[test]
fn attribute_normalisation() {
    assert_eq!(normalise_attribute("Favorite  Color"), "favorite_color");
    assert_eq!(normalise_attribute("dog's name"), "dog_name");
    assert_eq!(normalise_attribute("Dog\u{2019}s Name"), "dog_name");
    assert_eq!(normalise_attribute(" e-mail address! "), "e_mail_address");
    assert_eq!(normalise_attribute("lives_in"), "lives_in");
}

#[test]
fn words_take_curly_apostrophes_as_straight_ones_and_keep_other_letters() {
    let split = sentences("Zoë\u{2019}s café \u{2019}quoted\u{2019} Ærø");
    let words: Vec<&str> = split[0]
        .tokens
        .iter()
        .filter_map(|t| match t {
            Token::Word(w) => Some(w.text.as_str()),
            Token::Punct(_) => None,
        })
        .collect();
    // a curly apostrophe inside a word joins it; one at a word's edge is punctuation
    assert_eq!(words, vec!["Zoë's", "café", "quoted", "Ærø"]);
    let Token::Word(first) = &split[0].tokens[0] else {
        panic!("a word first")
    };
    assert_eq!(first.lower, "zoë's");
    assert!(first.is_possessive());
}

#[test]
fn sentences_split_at_terminators_but_not_abbreviations() {
    let split = sentences("Dr. Smith lives in St. Louis. Is it 3.5 km? Yes!\nOk");
    let words: Vec<Vec<String>> = split
        .iter()
        .map(|s| {
            s.tokens
                .iter()
                .filter_map(|t| match t {
                    Token::Word(w) => Some(w.text.clone()),
                    Token::Punct(_) => None,
                })
                .collect()
        })
        .collect();
    assert_eq!(
        words,
        vec![
            vec!["Dr", "Smith", "lives", "in", "St", "Louis"],
            vec!["Is", "it", "3.5", "km"],
            vec!["Yes"],
            vec!["Ok"],
        ]
    );
    assert_eq!(
        split.iter().map(|s| s.is_question).collect::<Vec<_>>(),
        vec![false, true, false, false]
    );
}

fn assertion(valid_from: i64, offset: u64, id: &str, value: &str) -> FactAssertion {
    FactAssertion {
        valid_from_micros: valid_from,
        log_offset: offset,
        fact_id: id.into(),
        value: value.into(),
        evidence: format!("message-{id}"),
    }
}

fn version(id: &str, value: &str, from: i64, to: Option<i64>, by: Option<&str>) -> FactVersion {
    FactVersion {
        fact_id: id.into(),
        value: value.into(),
        valid_from: from,
        valid_to: to,
        superseded_by: by.map(Into::into),
        evidence: format!("message-{id}"),
    }
}

#[test]
fn versions_supersede_and_reinforce() {
    let assertions = [
        assertion(30, 3, "f3", "Paris"),
        assertion(10, 1, "f1", "Berlin"),
        assertion(20, 2, "f2", "berlin "),
        assertion(40, 4, "f4", "Berlin"),
        // same valid-from as f4, learned later: wins
        assertion(40, 5, "f5", "Rome"),
    ];
    assert_eq!(
        fact_versions(&assertions),
        vec![
            version("f1", "Berlin", 10, Some(30), Some("f3")),
            version("f3", "Paris", 30, Some(40), Some("f4")),
            version("f4", "Berlin", 40, Some(40), Some("f5")),
            version("f5", "Rome", 40, None, None),
        ]
    );
}

#[test]
fn as_of() {
    let versions = vec![
        version("f3", "Paris", 30, Some(40), Some("f4")),
        version("f1", "Berlin", 10, Some(30), Some("f3")),
        version("f4", "Berlin", 40, Some(40), Some("f5")),
        version("f5", "Rome", 40, None, None),
    ];
    let value_at = |t| fact_as_of(&versions, t).map(|v| v.fact_id.as_str());
    assert_eq!(value_at(9), None);
    assert_eq!(value_at(10), Some("f1"));
    assert_eq!(value_at(29), Some("f1"));
    assert_eq!(value_at(30), Some("f3"));
    assert_eq!(value_at(40), Some("f5"));
    assert_eq!(value_at(i64::MAX), Some("f5"));
    assert_eq!(fact_as_of(&[], 0), None);
}

#[test]
fn people_named_beside_my_are_who_they_are_to_the_user() {
    assert_eq!(
        extracted("My sister Mara lives in Lisbon."),
        vec![fact("sister", "Mara")]
    );
    assert_eq!(
        extracted("Last saturday my brother Tom visited, we went to the Pergamon museum."),
        vec![fact("brother", "Tom")]
    );
    assert_eq!(
        extracted("my boss Sarah Jones wants the report by Friday"),
        vec![fact("boss", "Sarah Jones")]
    );
    // two sisters are two facts
    let both = extract_facts("My sister Ana and my sister Eva came over.");
    assert_eq!(both.len(), 2);
    assert!(both.iter().all(|f| f.cardinality == Cardinality::Many));
    // no name after the relation, or a question: no such fact ("my sister is …" is the "my X
    // is Y" rule's, one-valued)
    for text in [
        "my sister is sick today",
        "My son I think is tired.",
        "my mom said hi",
        "Is my brother Tom coming?",
    ] {
        let many = extract_facts(text)
            .into_iter()
            .filter(|f| f.cardinality == Cardinality::Many)
            .count();
        assert_eq!(many, 0, "{text:?}: {:?}", extracted(text));
    }
}

#[test]
fn a_many_valued_key_gives_back_its_attribute() {
    let key = |attribute: &str, value: &str, cardinality| {
        let fact = ExtractedFact {
            subject: USER_SUBJECT.into(),
            attribute: attribute.into(),
            value: value.into(),
            cardinality,
        };
        fact.key_attribute()
    };
    assert_eq!(
        attribute_of_key(&key("brother", "Tom", Cardinality::Many)),
        "brother"
    );
    assert_eq!(
        attribute_of_key(&key("likes", "the Beatles", Cardinality::Many)),
        "likes"
    );
    assert_eq!(
        attribute_of_key(&key("lives_in", "Lisbon", Cardinality::One)),
        "lives_in"
    );
    assert_eq!(attribute_of_key("preference: units"), "preference: units");
}
