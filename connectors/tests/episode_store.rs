mod common;
use chrono::{TimeZone, Utc};
use engram_connectors::{EpisodeRow, EpisodeStore, IndexPolicy};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn row(tenant: &str, user: &str, offset: u64, content: &str, vector: Vec<f32>) -> EpisodeRow {
    EpisodeRow {
        id: format!("{tenant}-{user}-{offset}"),
        event_id: format!("e{offset}"),
        tenant: tenant.into(),
        user: user.into(),
        session: Some("s1".into()),
        role: "user".into(),
        content: content.into(),
        ts: Utc.timestamp_opt(1_700_000_000 + offset as i64, 0).unwrap(),
        turn: Some(offset as u32),
        importance: None,
        log_offset: offset,
        vector,
    }
}

fn random_unit(rng: &mut StdRng, dim: usize) -> Vec<f32> {
    let v: Vec<f32> = (0..dim).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vector_and_full_text_recall_stay_inside_the_user() {
    let e = common::embedder();
    let dir = tempfile::tempdir().unwrap();
    let store = EpisodeStore::open(
        &dir.path().join("episodes.lance"),
        e.dim(),
        IndexPolicy::default(),
    )
    .await
    .unwrap();
    let texts = [
        (
            "acme",
            "alice",
            "I adopted a grey cat called Miso last spring.",
        ),
        (
            "acme",
            "alice",
            "My favourite pastry is the pastel de nata.",
        ),
        ("acme", "alice", "The quarterly report is due on Friday."),
        ("acme", "bob", "My cat Tigre sleeps all day."),
        ("other", "alice", "I have a cat named Luna."),
    ];
    let vectors = e.embed("acme", &texts.map(|t| t.2)).unwrap();
    let rows = texts
        .iter()
        .zip(vectors)
        .enumerate()
        .map(|(i, ((t, u, c), v))| row(t, u, i as u64, c, v))
        .collect();
    assert_eq!(store.append(rows).await.unwrap(), 5);

    let q = e
        .embed("acme", &["what is the name of my pet?"])
        .unwrap()
        .remove(0);
    let hits = store
        .search_vector("acme", "alice", &q, 10, None)
        .await
        .unwrap();
    assert_eq!(hits.len(), 3, "only alice@acme's three episodes");
    assert!(hits
        .iter()
        .all(|h| h.episode.tenant == "acme" && h.episode.user == "alice"));
    assert!(
        hits[0].episode.content.contains("Miso"),
        "{:?}",
        hits[0].episode.content
    );
    assert!(hits[0].score >= hits[1].score);

    let text = store
        .search_text("acme", "alice", "cat", 10, None)
        .await
        .unwrap();
    assert_eq!(text.len(), 1, "{text:?}");
    assert!(text[0].episode.content.contains("Miso"));
    assert!(text[0].score > 0.0);
    let bob = store
        .search_text("acme", "bob", "cat Miso", 10, None)
        .await
        .unwrap();
    assert!(bob.iter().all(|h| h.episode.user == "bob"));
    assert_eq!(bob.len(), 1);
    assert!(store
        .search_text("acme", "nobody", "cat", 10, None)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recall_as_of_a_time_sees_only_what_had_happened_by_then() {
    let dir = tempfile::tempdir().unwrap();
    let dim = 8;
    let store = EpisodeStore::open(&dir.path().join("e.lance"), dim, IndexPolicy::default())
        .await
        .unwrap();
    let mut rng = StdRng::seed_from_u64(3);
    // offsets 0..6 are 1 s apart (row's ts = 1_700_000_000 + offset)
    let rows = (0..6)
        .map(|i| {
            let content = format!("note number {i} about the garden");
            row("t", "u", i, &content, random_unit(&mut rng, dim))
        })
        .collect();
    store.append(rows).await.unwrap();
    let q = random_unit(&mut rng, dim);
    let offsets = |hits: &[engram_connectors::EpisodeHit]| {
        let mut o: Vec<u64> = hits.iter().map(|h| h.episode.log_offset).collect();
        o.sort();
        o
    };
    // at or before offset 2's time (+ half a second): offsets 0, 1, 2
    let as_of = Utc.timestamp_opt(1_700_000_002, 500_000_000).unwrap();
    let by_vector = store
        .search_vector("t", "u", &q, 10, Some(as_of))
        .await
        .unwrap();
    assert_eq!(offsets(&by_vector), vec![0, 1, 2]);
    let by_text = store
        .search_text("t", "u", "garden", 10, Some(as_of))
        .await
        .unwrap();
    assert_eq!(offsets(&by_text), vec![0, 1, 2]);
    // exactly offset 3's time: it is included
    let exact = Utc.timestamp_opt(1_700_000_003, 0).unwrap();
    let by_vector = store
        .search_vector("t", "u", &q, 10, Some(exact))
        .await
        .unwrap();
    assert_eq!(offsets(&by_vector), vec![0, 1, 2, 3]);
    let all = store.search_vector("t", "u", &q, 10, None).await.unwrap();
    assert_eq!(offsets(&all), vec![0, 1, 2, 3, 4, 5]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_are_idempotent_by_log_offset_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("episodes.lance");
    let mut rng = StdRng::seed_from_u64(7);
    let dim = 16;
    {
        let store = EpisodeStore::open(&path, dim, IndexPolicy::default())
            .await
            .unwrap();
        assert_eq!(store.watermark(), None);
        let rows: Vec<_> = (0..10)
            .map(|i| row("t", "u", i, "hello", random_unit(&mut rng, dim)))
            .collect();
        assert_eq!(store.append(rows.clone()).await.unwrap(), 10);
        assert_eq!(
            store.append(rows).await.unwrap(),
            0,
            "a redelivery writes nothing"
        );
        assert_eq!(store.watermark(), Some(9));
    }
    let store = EpisodeStore::open(&path, dim, IndexPolicy::default())
        .await
        .unwrap();
    assert_eq!(store.watermark(), Some(9));
    assert_eq!(store.row_count(), 10);
    let rows: Vec<_> = (5..15)
        .map(|i| row("t", "u", i, "hello", random_unit(&mut rng, dim)))
        .collect();
    assert_eq!(
        store.append(rows).await.unwrap(),
        5,
        "only offsets 10..15 are new"
    );
    let all = store.user_episodes("t", "u").await.unwrap();
    let offsets: Vec<u64> = all.iter().map(|r| r.log_offset).collect();
    assert_eq!(offsets, (0..15).collect::<Vec<_>>());
    assert!(
        EpisodeStore::open(&path, dim + 1, IndexPolicy::default())
            .await
            .is_err(),
        "dimension mismatch is refused"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_written_after_the_index_build_are_still_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("episodes.lance");
    let dim = 32;
    let policy = IndexPolicy {
        ann_min_rows: 600,
        reindex_after_rows: 100_000,
        compact_after_fragments: 1000,
        exact_search_below_user_rows: 0, // always go through the vector index
        ..IndexPolicy::default()
    };
    let store = EpisodeStore::open(&path, dim, policy).await.unwrap();
    let mut rng = StdRng::seed_from_u64(1);
    let mut offset = 0;
    for _ in 0..3 {
        let rows: Vec<_> = (0..250)
            .map(|_| {
                offset += 1;
                row(
                    "t",
                    "u",
                    offset,
                    &format!("filler message number {offset}"),
                    random_unit(&mut rng, dim),
                )
            })
            .collect();
        store.append(rows).await.unwrap();
    }
    let (indexes, _) = store.index_status().await.unwrap();
    let names: Vec<&str> = indexes.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"vector_ivf_pq"), "{names:?}");
    assert!(names.contains(&"content_fts"), "{names:?}");

    // written after every index build: only in unindexed fragments
    let fresh = random_unit(&mut rng, dim);
    offset += 1;
    store
        .append(vec![row(
            "t",
            "u",
            offset,
            "zebra crossing near the harbour",
            fresh.clone(),
        )])
        .await
        .unwrap();
    let (_, unindexed) = store.index_status().await.unwrap();
    assert!(unindexed >= 1);
    let hits = store
        .search_vector("t", "u", &fresh, 5, None)
        .await
        .unwrap();
    assert_eq!(
        hits[0].episode.log_offset, offset,
        "ANN search also scans unindexed rows"
    );
    assert!(hits[0].score > 0.99);
    let text = store
        .search_text("t", "u", "zebra harbour", 5, None)
        .await
        .unwrap();
    assert_eq!(text.first().map(|h| h.episode.log_offset), Some(offset));
}

/// The ANN index serves users whose rows are a small slice of the table: the search keeps
/// probing partitions until it has `k` of the user's rows, finds the row a query copies, and
/// never returns another user's or another tenant's row (the same user name lives in two
/// tenants here, so only the tenant half of the filter tells them apart).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_user_among_many_is_searched_through_the_index_completely() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("episodes.lance");
    let dim = 32;
    let policy = IndexPolicy {
        ann_min_rows: 1_000,
        reindex_after_rows: 100_000,
        compact_after_fragments: 1000,
        exact_search_below_user_rows: 0,
        ..IndexPolicy::default()
    };
    let store = EpisodeStore::open(&path, dim, policy).await.unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    let mut rows = Vec::new();
    let mut vectors = std::collections::HashMap::new();
    for offset in 0..1_600u64 {
        let tenant = if offset % 2 == 0 { "t1" } else { "t2" };
        let user = format!("u{}", offset % 40);
        let v = random_unit(&mut rng, dim);
        vectors.insert(offset, v.clone());
        rows.push(row(tenant, &user, offset, &format!("note {offset}"), v));
    }
    store.append(rows).await.unwrap();
    let (indexes, _) = store.index_status().await.unwrap();
    let names: Vec<&str> = indexes.iter().map(|(n, _)| n.as_str()).collect();
    for index in ["vector_ivf_pq", "user_btree", "tenant_bitmap"] {
        assert!(names.contains(&index), "{index} missing from {names:?}");
    }
    // users u0, u2, … live only in t1 and u1, u3, … only in t2; ask each tenant for a user
    // name of the other tenant's parity too, which must find nothing
    for offset in [0u64, 41, 402, 1_203, 1_599] {
        let tenant = if offset % 2 == 0 { "t1" } else { "t2" };
        let user = format!("u{}", offset % 40);
        let hits = store
            .search_vector(tenant, &user, &vectors[&offset], 10, None)
            .await
            .unwrap();
        assert_eq!(
            hits.len(),
            10,
            "{tenant}/{user} has 40 rows: 10 must come back"
        );
        assert_eq!(
            hits[0].episode.log_offset, offset,
            "the copied row comes first"
        );
        assert!(hits
            .iter()
            .all(|h| h.episode.tenant == tenant && h.episode.user == user));
        let other = if tenant == "t1" { "t2" } else { "t1" };
        let none = store
            .search_vector(other, &user, &vectors[&offset], 10, None)
            .await
            .unwrap();
        assert!(none.is_empty(), "{other}/{user} has no rows: {none:?}");
    }
}

/// The vector index serves only users with `exact_search_below_user_rows` rows or more, and
/// training it is the costliest maintenance step: a table past `ann_min_rows` whose users are
/// all smaller is laid out by user (with its full-text and scalar indexes) but not trained, and
/// once a user grows past the threshold the index is trained and that user is found through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vector_index_waits_for_a_user_large_enough_to_need_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("episodes.lance");
    let dim = 16;
    let policy = IndexPolicy {
        ann_min_rows: 300,
        relayout_after_growth_percent: 50,
        keep_versions_minutes: 0,
        reindex_after_rows: 100_000,
        compact_after_fragments: 1000,
        exact_search_below_user_rows: 200,
        ..IndexPolicy::default()
    };
    let store = EpisodeStore::open(&path, dim, policy).await.unwrap();
    let mut rng = StdRng::seed_from_u64(11);
    let mut vectors = std::collections::HashMap::new();
    let mut rows_of = |offsets: std::ops::Range<u64>, user: &dyn Fn(u64) -> String| {
        offsets
            .map(|offset| {
                let v = random_unit(&mut rng, dim);
                vectors.insert(offset, v.clone());
                row("t1", &user(offset), offset, &format!("note w{offset}x"), v)
            })
            .collect::<Vec<EpisodeRow>>()
    };
    // 320 rows of 5 users (64 each): laid out, not trained
    let first = rows_of(0..320, &|offset| format!("u{}", offset % 5));
    assert_eq!(store.append(first).await.unwrap(), 320);
    let names = |indexes: Vec<(String, usize)>| -> Vec<String> {
        indexes.into_iter().map(|(n, _)| n).collect()
    };
    let built = names(store.index_status().await.unwrap().0);
    for index in ["content_fts", "user_btree", "tenant_bitmap"] {
        assert!(
            built.iter().any(|n| n == index),
            "{index} missing from {built:?}"
        );
    }
    assert!(
        !built.iter().any(|n| n == "vector_ivf_pq"),
        "no user needs the vector index yet: {built:?}"
    );
    let ds = store.snapshot().unwrap();
    let mut scan = ds.scan();
    scan.project(&["user_id"]).unwrap();
    let batch = scan.try_into_batch().await.unwrap();
    let users = batch
        .column_by_name("user_id")
        .unwrap()
        .as_any()
        .downcast_ref::<arrow_array::StringArray>()
        .unwrap()
        .iter()
        .map(|u| u.unwrap().to_string())
        .collect::<Vec<String>>();
    let mut sorted = users.clone();
    sorted.sort();
    assert_eq!(users, sorted, "laid out by user all the same");
    // u0 grows to 64 + 140 = 204 rows: the index is trained, and u0 is searched through it
    let more = rows_of(320..460, &|_| "u0".to_string());
    assert_eq!(store.append(more).await.unwrap(), 140);
    let built = names(store.index_status().await.unwrap().0);
    assert!(
        built.iter().any(|n| n == "vector_ivf_pq"),
        "u0 needs the vector index: {built:?}"
    );
    for offset in [0u64, 5, 335, 459] {
        let hits = store
            .search_vector("t1", "u0", &vectors[&offset], 5, None)
            .await
            .unwrap();
        assert_eq!(hits[0].episode.log_offset, offset, "the copied row first");
        assert!(hits.iter().all(|h| h.episode.user == "u0"));
    }
}

/// Appends interleave users; once the table reaches the ANN threshold, and again each time it
/// has grown by half, it is rewritten with each user's rows next to each other. The rewrite
/// keeps every row exactly once (offsets, vectors and words still found, the watermark the
/// same after reopening), rebuilds the indexes, and removes the versions it replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_growing_table_is_laid_out_by_user_and_keeps_every_row_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("episodes.lance");
    let dim = 16;
    let policy = IndexPolicy {
        ann_min_rows: 400,
        relayout_after_growth_percent: 50,
        keep_versions_minutes: 0,
        reindex_after_rows: 100_000,
        compact_after_fragments: 1000,
        exact_search_below_user_rows: 0,
        ..IndexPolicy::default()
    };
    let store = EpisodeStore::open(&path, dim, policy.clone())
        .await
        .unwrap();
    let mut rng = StdRng::seed_from_u64(3);
    let owner = |offset: u64| {
        (
            if offset % 2 == 0 { "t1" } else { "t2" },
            format!("u{}", offset % 5),
        )
    };
    let mut vectors = std::collections::HashMap::new();
    let mut batches = Vec::new();
    for b in 0..6u64 {
        let rows: Vec<EpisodeRow> = (b * 150..(b + 1) * 150)
            .map(|offset| {
                let (tenant, user) = owner(offset);
                let v = random_unit(&mut rng, dim);
                vectors.insert(offset, v.clone());
                row(tenant, &user, offset, &format!("note w{offset}x"), v)
            })
            .collect();
        batches.push(rows);
    }
    // 450 rows: the first layout; 750 (≥ 1.5 × 450): the second; 900: none
    let mut before_second = None;
    for (b, rows) in batches.iter().enumerate() {
        if b == 4 {
            before_second = Some(Utc::now());
        }
        assert_eq!(store.append(rows.clone()).await.unwrap(), 150);
    }
    let ds = store.snapshot().unwrap();
    let mut scan = ds.scan();
    scan.project(&["tenant_id", "user_id", "log_offset"])
        .unwrap();
    let batch = scan.try_into_batch().await.unwrap();
    let col = |name: &str| batch.column_by_name(name).unwrap().clone();
    let (tenants, users, offsets) = (col("tenant_id"), col("user_id"), col("log_offset"));
    let tenants = tenants
        .as_any()
        .downcast_ref::<arrow_array::StringArray>()
        .unwrap();
    let users = users
        .as_any()
        .downcast_ref::<arrow_array::StringArray>()
        .unwrap();
    let offsets = offsets
        .as_any()
        .downcast_ref::<arrow_array::UInt64Array>()
        .unwrap();
    let stored: Vec<(String, String, u64)> = (0..batch.num_rows())
        .map(|i| {
            (
                tenants.value(i).to_string(),
                users.value(i).to_string(),
                offsets.value(i),
            )
        })
        .collect();
    assert_eq!(stored.len(), 900, "every row once");
    let mut seen: Vec<u64> = stored.iter().map(|r| r.2).collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        (0..900).collect::<Vec<u64>>(),
        "no row lost or doubled"
    );
    // the first 750 rows (laid out at 750) are in (tenant, user, offset) order
    let mut laid_out = stored[..750].to_vec();
    laid_out.sort();
    assert_eq!(stored[..750], laid_out[..], "laid out by user");
    for r in &stored {
        assert_eq!(
            (r.0.as_str(), r.1.clone()),
            owner(r.2),
            "row kept its owner"
        );
    }
    // versions from before the second layout are gone
    let versions = ds.versions().await.unwrap();
    assert!(
        versions
            .iter()
            .all(|v| v.timestamp >= before_second.unwrap()),
        "{versions:?}"
    );
    let (indexes, _) = store.index_status().await.unwrap();
    let names: Vec<&str> = indexes.iter().map(|(n, _)| n.as_str()).collect();
    for index in [
        "vector_ivf_pq",
        "content_fts",
        "user_btree",
        "tenant_bitmap",
    ] {
        assert!(names.contains(&index), "{index} missing from {names:?}");
    }
    for offset in [0u64, 333, 612, 749, 899] {
        let (tenant, user) = owner(offset);
        let hits = store
            .search_vector(tenant, &user, &vectors[&offset], 5, None)
            .await
            .unwrap();
        assert_eq!(hits[0].episode.log_offset, offset, "the copied row first");
        assert!(hits
            .iter()
            .all(|h| h.episode.tenant == tenant && h.episode.user == user));
        let text = store
            .search_text(tenant, &user, &format!("w{offset}x"), 5, None)
            .await
            .unwrap();
        assert_eq!(text.first().map(|h| h.episode.log_offset), Some(offset));
    }
    drop(store);
    let store = EpisodeStore::open(&path, dim, policy).await.unwrap();
    assert_eq!(store.watermark(), Some(899));
    assert_eq!(store.row_count(), 900);
    for rows in batches {
        assert_eq!(store.append(rows).await.unwrap(), 0, "nothing twice");
    }
}

/// The in-memory quantised vectors change how an exact search is computed, not what it
/// returns: through appends (new and old users, both tenants using the same user names),
/// layouts by user, compactions, an erase and a reopen, every search of the cached store
/// returns the same rows with the same scores as a store of the same rows without the cache
/// (Lance's own exact search), with and without a time bound, and only the searched owner's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_vectors_return_what_lances_exact_search_returns() {
    let dim = 24;
    let policy = IndexPolicy {
        ann_min_rows: 300,
        relayout_after_growth_percent: 50,
        keep_versions_minutes: 0,
        reindex_after_rows: 90,
        compact_after_fragments: 6,
        exact_search_below_user_rows: usize::MAX,
        full_text: false,
        ..IndexPolicy::default()
    };
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let cached_path = dirs.0.path().join("episodes.lance");
    let open = |path: std::path::PathBuf, mib: usize| {
        let policy = IndexPolicy {
            vector_cache_mib: mib,
            ..policy.clone()
        };
        async move { EpisodeStore::open(&path, dim, policy).await.unwrap() }
    };
    let mut cached = open(cached_path.clone(), 64).await;
    let plain = open(dirs.1.path().join("episodes.lance"), 0).await;
    let mut rng = StdRng::seed_from_u64(17);
    let owners: Vec<(&str, String)> = ["t1", "t2"]
        .iter()
        .flat_map(|t| (0..4).map(move |u| (*t, format!("u{u}"))))
        .collect();
    let mut offset = 0u64;
    let mut searches = 0;
    for round in 0..14 {
        // later rounds bring users that had no rows before
        let active = (4 + round / 2).min(owners.len());
        let rows: Vec<EpisodeRow> = (0..rng.gen_range(20..90))
            .map(|_| {
                let (tenant, user) = &owners[rng.gen_range(0..active)];
                offset += 1;
                row(
                    tenant,
                    user,
                    offset,
                    &format!("note {offset}"),
                    random_unit(&mut rng, dim),
                )
            })
            .collect();
        let n = rows.len();
        assert_eq!(cached.append(rows.clone()).await.unwrap(), n);
        assert_eq!(plain.append(rows).await.unwrap(), n);
        if round == 7 {
            let (t, u) = &owners[1];
            let a = cached.erase(t, Some(u), offset + 1).await.unwrap();
            assert_eq!(plain.erase(t, Some(u), offset + 1).await.unwrap(), a);
            assert!(a > 0);
        }
        if round == 10 {
            // a restart: the cache starts empty and loads from the reopened table
            drop(cached);
            cached = open(cached_path.clone(), 64).await;
        }
        if round == 12 {
            assert!(cached.warm_vector_cache().await.unwrap() > 0);
        }
        for _ in 0..6 {
            let (tenant, user) = &owners[rng.gen_range(0..owners.len())];
            let q = random_unit(&mut rng, dim);
            let k = rng.gen_range(1..12);
            let as_of = rng.gen_bool(0.3).then(|| {
                Utc.timestamp_opt(1_700_000_000 + rng.gen_range(0..=offset) as i64, 0)
                    .unwrap()
            });
            let got = cached
                .search_vector(tenant, user, &q, k, as_of)
                .await
                .unwrap();
            let want = plain
                .search_vector(tenant, user, &q, k, as_of)
                .await
                .unwrap();
            let ids = |hits: &[engram_connectors::EpisodeHit]| {
                hits.iter()
                    .map(|h| h.episode.id.clone())
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                ids(&got),
                ids(&want),
                "round {round}, {tenant}/{user}, k {k}, as_of {as_of:?}"
            );
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (g.score - w.score).abs() < 1e-4,
                    "{} vs {}",
                    g.score,
                    w.score
                );
                assert_eq!(
                    (g.episode.tenant.as_str(), &g.episode.user),
                    (*tenant, user)
                );
                assert_eq!(
                    g.episode.vector.len(),
                    0,
                    "rows come back without their vectors"
                );
            }
            searches += !want.is_empty() as usize;
        }
    }
    assert!(searches > 40, "only {searches} searches found something");
}
