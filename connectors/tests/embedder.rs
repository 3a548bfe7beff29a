mod common;
use engram_connectors::embedder::cosine;
use engram_connectors::{Embedder, EmbedderConfig, EmbedderError};

#[test]
fn paraphrases_score_clearly_above_unrelated_sentences() {
    let e = common::embedder();
    assert_eq!(e.dim(), 384);
    let v = e
        .embed(
            "acme",
            &[
                "The cat is sleeping on the sofa.",
                "A cat naps on the couch.",
                "Quarterly revenue grew by eight percent.",
                "How do I reset my router password?",
                "I forgot the admin password of my wifi router, how can I change it?",
            ],
        )
        .unwrap();
    for x in &v {
        let norm: f32 = x.iter().map(|a| a * a).sum::<f32>().sqrt();
        assert!(
            (norm - 1.0).abs() < 1e-3,
            "vectors are unit length, got {norm}"
        );
    }
    let para1 = cosine(&v[0], &v[1]);
    let para2 = cosine(&v[3], &v[4]);
    let unrelated = cosine(&v[0], &v[2])
        .max(cosine(&v[1], &v[3]))
        .max(cosine(&v[2], &v[4]));
    assert!(para1 > 0.6 && para2 > 0.6, "paraphrases: {para1} {para2}");
    assert!(unrelated < 0.3, "unrelated: {unrelated}");
    assert!(para1.min(para2) > unrelated + 0.3);
}

#[test]
fn batching_and_padding_do_not_change_a_vector() {
    // The shipped model computes in float, so any difference would be padding leaking into
    // the mean.
    let e = common::shipped_embedder();
    let short = "Lisbon";
    let long = "My sister Jana visits from Prague on April 20th and we plan to take tram 28 through Alfama.";
    let alone = e.embed("acme", &[short]).unwrap().remove(0);
    let together = e.embed("acme", &[long, short, long]).unwrap();
    assert!(
        cosine(&alone, &together[1]) > 0.999,
        "padding must be masked out of the mean"
    );
    assert!(cosine(&together[0], &together[2]) > 0.999);
}

const SENTENCES: [&str; 6] = [
    "Lisbon",
    "The cat is sleeping on the sofa.",
    "I forgot the admin password of my wifi router, how can I change it?",
    "My sister Jana visits from Prague on April 20th and we plan to take tram 28 through Alfama.",
    "Quarterly revenue grew by eight percent, mostly from the new subscription plans in Europe.",
    "Hey Mel! Good to see you! How have you been?",
];

#[test]
fn the_prepared_model_embeds_as_the_shipped_one_does() {
    let prepared = common::embedder().embed("acme", &SENTENCES).unwrap();
    let shipped = common::shipped_embedder()
        .embed("acme", &SENTENCES)
        .unwrap();
    for ((text, p), s) in SENTENCES.iter().zip(&prepared).zip(&shipped) {
        let c = cosine(p, s);
        assert!(
            c > 0.97,
            "{text:?}: cosine {c} to the shipped model's vector"
        );
    }
}

#[test]
fn texts_come_back_in_order_whatever_their_token_counts() {
    // embedded in batches of 2 grouped by token count: the longest text goes first here
    let cfg = EmbedderConfig {
        batch_size: 2,
        ..common::shipped_config()
    };
    let e = Embedder::load(&cfg).unwrap();
    let mut texts: Vec<&str> = SENTENCES.to_vec();
    texts.reverse();
    let batched = e.embed("acme", &texts).unwrap();
    for (text, v) in texts.iter().zip(&batched) {
        let alone = e.embed("acme", &[text]).unwrap().remove(0);
        assert!(
            cosine(v, &alone) > 0.999,
            "{text:?} got another text's vector"
        );
    }
    assert_eq!(e.model_texts(), 2 * texts.len() as u64);
    assert!(e.model_seconds() > 0.0, "the time spent is counted");
}

#[test]
fn the_prepared_model_varies_little_with_the_batch_a_text_is_in() {
    // Its activations are quantized per inference call, so the other texts of a batch shift a
    // vector a little (mean cosine 0.990 to the text embedded alone on the benchmark's turns).
    let e = common::embedder();
    let together = e.embed("acme", &SENTENCES).unwrap();
    for (text, v) in SENTENCES.iter().zip(&together) {
        let alone = e.embed("acme", &[text]).unwrap().remove(0);
        let c = cosine(v, &alone);
        assert!(c > 0.97, "{text:?}: cosine {c} alone against in a batch");
    }
}

#[test]
fn the_models_vocabulary_knows_common_words_not_misspellings() {
    let e = Embedder::load(&common::shipped_config()).unwrap();
    for word in ["education", "festival", "house", "caroline", "would"] {
        assert!(e.knows_word(word), "{word}");
    }
    // misspellings are split into pieces
    for word in ["educaton", "fesetival", "funraiser", "duaghter"] {
        assert!(!e.knows_word(word), "{word}");
    }
}

#[test]
fn long_inputs_are_truncated_not_refused() {
    let e = common::embedder();
    let long = "word ".repeat(5000);
    let v = e.embed("acme", &[long.as_str()]).unwrap();
    assert_eq!(v[0].len(), 384);
}

#[test]
fn a_missing_model_is_a_clear_error() {
    common::embedder(); // runtime initialised with the real library
    let mut cfg = EmbedderConfig::from_models_dir(&common::models_dir());
    cfg.model = "/nonexistent/model.onnx".into();
    match Embedder::load(&cfg) {
        Err(EmbedderError::Model { path, reason }) => {
            assert_eq!(path.to_str(), Some("/nonexistent/model.onnx"));
            assert!(reason.contains("not found"), "{reason}");
        }
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("loaded a model that does not exist"),
    }
}

#[test]
fn the_cache_returns_the_same_vectors_and_handles_repeats() {
    // the shipped model: its vectors do not depend on the batch (the cache embeds only the
    // distinct missing texts, so its batches differ from the plain embedder's)
    let mut cfg = common::shipped_config();
    cfg.cache_entries = 3;
    let cached = Embedder::load(&cfg).unwrap();
    let plain = common::shipped_embedder();
    let texts = ["alpha beta", "gamma", "alpha beta", "delta epsilon zeta"];
    let a = cached.embed("acme", &texts).unwrap();
    let b = plain.embed("acme", &texts).unwrap();
    for (x, y) in a.iter().zip(&b) {
        assert!(cosine(x, y) > 0.9999);
    }
    // more distinct texts than the cache holds: it is cleared, answers stay right
    let more = ["one", "two", "three", "four", "gamma"];
    let c = cached.embed("acme", &more).unwrap();
    let d = plain.embed("acme", &more).unwrap();
    for (x, y) in c.iter().zip(&d) {
        assert!(cosine(x, y) > 0.9999);
    }
}

#[test]
fn a_text_one_tenant_embedded_is_not_a_cache_hit_for_another() {
    let mut cfg = EmbedderConfig::from_models_dir(&common::models_dir());
    cfg.cache_entries = 100;
    let e = Embedder::load(&cfg).unwrap();
    let text = "my sister's name is Ingrid";
    let first = e.embed("acme", &[text]).unwrap();
    let (hits, model) = (e.cache_hits(), e.model_texts());
    let other = e.embed("globex", &[text]).unwrap();
    assert_eq!(e.cache_hits(), hits, "globex must not hit acme's entry");
    assert_eq!(
        e.model_texts(),
        model + 1,
        "globex's text runs through the model"
    );
    assert!(cosine(&first[0], &other[0]) > 0.9999);
    e.embed("acme", &[text]).unwrap();
    assert_eq!(e.cache_hits(), hits + 1, "acme hits its own entry");
    // an erase in acme forgets acme's texts only
    e.forget_tenant("acme");
    e.embed("acme", &[text]).unwrap();
    e.embed("globex", &[text]).unwrap();
    assert_eq!(e.cache_hits(), hits + 2, "only globex's entry is left");
    assert_eq!(e.model_texts(), model + 2);
}
