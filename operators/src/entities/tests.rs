use super::*;
use EntityKind::{Named, NounPhrase};

fn entities(text: &str) -> Vec<(String, EntityKind)> {
    extract_entities(text)
}

fn e(name: &str, kind: EntityKind) -> (String, EntityKind) {
    (name.to_string(), kind)
}

#[test]
fn named_spans_mid_sentence() {
    assert_eq!(
        entities("Yesterday I had lunch with Alice and Bob Smith in San Francisco."),
        vec![
            e("alice", Named),
            e("bob smith", Named),
            e("san francisco", Named)
        ]
    );
    assert_eq!(
        entities("I work for Bank of America now."),
        vec![e("bank of america", Named)]
    );
    assert_eq!(
        entities("We watched The Lord of the Rings on Friday."),
        vec![e("lord of the rings", Named)]
    );
    assert_eq!(
        entities("Then Alice's brother called from Johnson & Johnson."),
        vec![
            e("alice", Named),
            e("brother", NounPhrase),
            e("johnson & johnson", Named)
        ]
    );
    assert_eq!(
        entities("I met Dr. Smith at the clinic."),
        vec![e("dr smith", Named), e("clinic", NounPhrase)]
    );
    // names beyond ASCII, with a curly possessive: lowercased, the possessive cut
    assert_eq!(
        entities("Then ZOË ÅBERG\u{2019}s dog, and Émile Zola."),
        vec![
            e("zoë åberg", Named),
            e("dog", NounPhrase),
            e("émile zola", Named)
        ]
    );
}

#[test]
fn sentence_start_needs_two_capitalised_words() {
    assert_eq!(entities("Paris is lovely in spring."), vec![]);
    assert_eq!(
        entities("New York is lovely in spring."),
        vec![e("new york", Named)]
    );
    assert_eq!(
        entities("Hi Claude, can you help?"),
        vec![e("claude", Named)]
    );
    assert_eq!(
        entities("Microsoft released a new Surface."),
        vec![e("surface", Named)]
    );
    assert_eq!(
        entities("\"Google Maps\" is down again"),
        vec![e("google maps", Named)]
    );
}

#[test]
fn first_person_days_and_months_are_not_names() {
    assert_eq!(
        entities("On Monday I flew to Rome."),
        vec![e("rome", Named)]
    );
    assert_eq!(entities("It is due in March, I think."), vec![]);
    assert_eq!(entities("Alice and I went skiing in January."), vec![]);
}

#[test]
fn noun_phrases_after_determiners() {
    assert_eq!(
        entities("I bought a new laptop for my daughter."),
        vec![e("new laptop", NounPhrase), e("daughter", NounPhrase)]
    );
    assert_eq!(
        entities("My sister's car is red."),
        vec![e("sister", NounPhrase), e("car", NounPhrase)]
    );
    assert_eq!(
        entities("The dog is sick, so I called the vet."),
        vec![e("dog", NounPhrase), e("vet", NounPhrase)]
    );
    assert_eq!(entities("I have a lot of work and a bit of time."), vec![]);
    assert_eq!(
        entities("Our 2 cats are older than the 3."),
        vec![e("2 cats", NounPhrase)]
    );
    assert_eq!(
        entities("We visited the Eiffel Tower with our kids."),
        vec![e("eiffel tower", Named), e("kids", NounPhrase)]
    );
}

#[test]
fn repeated_names_once_named_wins() {
    assert_eq!(
        entities("I love my garden. Garden Club meets here. My garden needs water."),
        vec![e("garden", NounPhrase), e("garden club", Named)]
    );
    assert_eq!(
        entities("the apple pie was great. We met Apple at the apple store"),
        vec![
            e("apple pie", NounPhrase),
            e("apple", Named),
            e("apple store", NounPhrase)
        ]
    );
    assert_eq!(
        entities("I called Maria. Then Maria called back."),
        vec![e("maria", Named)]
    );
    assert_eq!(entities("Ask Maria about it."), vec![e("maria", Named)]);
}

#[test]
fn pairs_share_a_sentence() {
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        sentence_pairs(
            "Yesterday Bob met Alice in Rome. Then Carol called. Then Carol and Bob argued."
        ),
        vec![
            pair("alice", "bob"),
            pair("alice", "rome"),
            pair("bob", "carol"),
            pair("bob", "rome"),
        ]
    );
    // one pair, however often the two appear together
    assert_eq!(
        sentence_pairs("We saw Alice with Bob. Then Bob and Alice left."),
        vec![pair("alice", "bob")]
    );
    assert_eq!(sentence_pairs("I met Alice. I met Bob."), vec![]);
    assert_eq!(sentence_pairs(""), vec![]);
}

#[test]
fn one_episode_mentioning_an_entity_at_two_times_counts_once() {
    let mut state = EntityMentions::default();
    state.update(&([0, 7], 10, Named), 1);
    state.update(&([0, 7], 30, NounPhrase), 1);
    state.update(&([0, 8], 20, NounPhrase), 1);
    let stats = state.stats().unwrap();
    assert_eq!((stats.first_seen_micros, stats.last_seen_micros), (10, 30));
    assert_eq!(stats.mention_count, 2, "episodes 7 and 8");
    assert_eq!(stats.kind, Named);
    // episode 7 stays counted while one of its mentions is present
    state.update(&([0, 7], 10, Named), -1);
    let stats = state.stats().unwrap();
    assert_eq!(
        (stats.first_seen_micros, stats.mention_count, stats.kind),
        (20, 2, NounPhrase)
    );
    state.update(&([0, 7], 30, NounPhrase), -1);
    assert_eq!(state.stats().unwrap().mention_count, 1);
    state.update(&([0, 8], 20, NounPhrase), -1);
    assert_eq!(state.stats(), None);
}

fn episode(key: u64, ts_micros: i64, text: &str) -> EpisodeEntities {
    EpisodeEntities {
        key: [0, key],
        ts_micros,
        found: Arc::new(text_entities(text)),
    }
}

#[test]
fn a_users_fold_pushes_each_entitys_and_pairs_net_change_once_a_run() {
    let (a, b, c) = (
        episode(1, 10, "I met Alice and Bob in Paris."),
        episode(2, 20, "I think Alice called."),
        episode(3, 30, "Then Bob wrote to Alice."),
    );
    let mut entities = UserEntityMentions::default();
    let mut pairs = UserCoMentions::default();
    let (mut entity_out, mut pair_out) = (Vec::new(), Vec::new());
    // one run: alice is met three times but changes once, from nothing
    let updates = [(&a, 1), (&b, 1), (&c, 1)];
    fold_user_entities(&mut entities, &updates, &mut entity_out);
    fold_user_co_mentions(&mut pairs, &updates, &mut pair_out);
    let alice: Vec<_> = entity_out
        .iter()
        .filter(|((n, _), _)| n == "alice")
        .collect();
    assert_eq!(alice.len(), 1, "{entity_out:?}");
    let ((_, stats), diff) = alice[0];
    assert_eq!(*diff, 1);
    assert_eq!(
        (
            stats.first_seen_micros,
            stats.last_seen_micros,
            stats.mention_count
        ),
        (10, 30, 3)
    );
    let alice_bob = (("alice".to_string(), "bob".to_string()), 2);
    assert!(pair_out.contains(&(alice_bob.clone(), 1)), "{pair_out:?}");
    // a second run retracts episode 3: the old values out, the new ones in
    entity_out.clear();
    pair_out.clear();
    fold_user_entities(&mut entities, &[(&c, -1)], &mut entity_out);
    fold_user_co_mentions(&mut pairs, &[(&c, -1)], &mut pair_out);
    let alice: Vec<_> = entity_out
        .iter()
        .filter(|((n, _), _)| n == "alice")
        .collect();
    assert_eq!(alice.len(), 2, "{entity_out:?}");
    assert!(alice
        .iter()
        .any(|((_, s), d)| *d == -1 && s.mention_count == 3));
    assert!(alice
        .iter()
        .any(|((_, s), d)| *d == 1 && s.mention_count == 2));
    let mut expected = vec![
        (alice_bob, -1),
        ((("alice".to_string(), "bob".to_string()), 1), 1),
    ];
    expected.sort();
    pair_out.sort();
    assert_eq!(pair_out, expected);
    // retracting and re-adding an episode in one run changes nothing
    entity_out.clear();
    fold_user_entities(&mut entities, &[(&b, -1), (&b, 1)], &mut entity_out);
    assert_eq!(entity_out, vec![]);
}

#[test]
fn nothing_to_extract() {
    for text in [
        "",
        "ok",
        "How are you?",
        "I think so too.",
        "Thanks!",
        "yes, please do it now",
    ] {
        assert_eq!(entities(text), vec![], "{text:?}");
    }
}
