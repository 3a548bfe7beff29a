//! Rows staged before their commit (`EpisodeStore::stage`): found by every read as committed
//! rows are, never twice, never lost in the hand-over to the table, and gone with an erase or a
//! forget, through the real Lance store on disk.

use chrono::{DateTime, TimeZone, Utc};
use engram_connectors::{EpisodeRow, EpisodeStore, IndexPolicy};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashSet;
use std::sync::Arc;

const DIM: usize = 8;

fn ts(offset: u64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + offset as i64, 0).unwrap()
}

fn row(user: &str, offset: u64, vector: Vec<f32>) -> EpisodeRow {
    EpisodeRow {
        id: format!("acme-{user}-{offset}"),
        event_id: format!("e{offset}"),
        tenant: "acme".into(),
        user: user.into(),
        session: Some("s1".into()),
        role: "user".into(),
        content: format!("message {offset} of {user}"),
        ts: ts(offset),
        turn: Some(offset as u32),
        importance: None,
        log_offset: offset,
        vector,
    }
}

fn unit(rng: &mut StdRng) -> Vec<f32> {
    let v: Vec<f32> = (0..DIM).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

async fn open(dir: &tempfile::TempDir) -> EpisodeStore {
    EpisodeStore::open(
        &dir.path().join("episodes.lance"),
        DIM,
        IndexPolicy::default(),
    )
    .await
    .unwrap()
}

fn ids<'a>(rows: impl IntoIterator<Item = &'a EpisodeRow>) -> Vec<String> {
    let mut ids: Vec<String> = rows.into_iter().map(|r| r.id.clone()).collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staged_rows_are_read_before_their_commit_and_once_after() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let mut rng = StdRng::seed_from_u64(7);
    let rows: Vec<EpisodeRow> = [("alice", 1), ("alice", 2), ("alice", 3), ("bob", 4)]
        .into_iter()
        .map(|(u, o)| row(u, o, unit(&mut rng)))
        .collect();
    store.stage(&rows);
    assert_eq!(store.staged_row_count(), 4);
    assert_eq!(store.user_rows_with_staged("acme", "alice"), 3);
    assert_eq!(
        store.user_row_count("acme", "alice"),
        0,
        "none committed yet"
    );

    for committed in [false, true] {
        let hits = store
            .search_vector("acme", "alice", &rows[1].vector, 10, None)
            .await
            .unwrap();
        let found: Vec<&str> = hits.iter().map(|h| h.episode.id.as_str()).collect();
        assert_eq!(found.len(), 3, "committed {committed}: {found:?}");
        assert_eq!(found[0], "acme-alice-2", "the query's own row first");
        assert!((hits[0].score - 1.0).abs() < 1e-4, "{}", hits[0].score);
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        // as of the first row's time, only it
        let early = store
            .search_vector("acme", "alice", &rows[1].vector, 10, Some(ts(1)))
            .await
            .unwrap();
        assert_eq!(ids(early.iter().map(|h| &h.episode)), vec!["acme-alice-1"]);
        let by_id = store
            .episodes_by_id(
                "acme",
                "alice",
                &["acme-alice-3".into(), "acme-bob-4".into()],
            )
            .await
            .unwrap();
        assert_eq!(
            ids(&by_id),
            vec!["acme-alice-3"],
            "another user's id is not read"
        );
        let tail = store
            .session_tail("acme", "alice", "s1", 2, None)
            .await
            .unwrap();
        let tail: Vec<u64> = tail.iter().map(|r| r.log_offset).collect();
        assert_eq!(tail, vec![2, 3]);
        let all = store.user_episodes("acme", "bob").await.unwrap();
        assert_eq!(ids(&all), vec!["acme-bob-4"]);
        if !committed {
            assert_eq!(store.append(rows.clone()).await.unwrap(), 4);
            assert_eq!(
                store.staged_row_count(),
                0,
                "committed rows leave the stage"
            );
            assert_eq!(store.user_rows_with_staged("acme", "alice"), 3);
        }
    }
    // rows at or below the watermark are never staged again (a replay after a restart)
    store.stage(&rows);
    assert_eq!(store.staged_row_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_erase_or_a_forget_removes_staged_rows_and_those_staged_late() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let mut rng = StdRng::seed_from_u64(8);
    let first: Vec<EpisodeRow> = [
        ("alice", 1),
        ("alice", 2),
        ("bob", 3),
        ("bob", 4),
        ("alice", 12),
    ]
    .into_iter()
    .map(|(u, o)| row(u, o, unit(&mut rng)))
    .collect();
    store.stage(&first);
    // the erase at offset 10 takes alice's rows before it; her row from after it stays, as
    // the commit will store it
    store.erase("acme", Some("alice"), 10).await.unwrap();
    let q = unit(&mut rng);
    let alice = store
        .search_vector("acme", "alice", &q, 10, None)
        .await
        .unwrap();
    assert_eq!(ids(alice.iter().map(|h| &h.episode)), vec!["acme-alice-12"]);
    assert_eq!(
        ids(&store.user_episodes("acme", "alice").await.unwrap()),
        vec!["acme-alice-12"]
    );
    // a row of the erased user from before the erase, on its way from the dataflow, is dropped;
    // one from after it is kept
    let late = vec![
        row("alice", 5, unit(&mut rng)),
        row("alice", 11, unit(&mut rng)),
    ];
    store.stage(&late);
    assert_eq!(
        ids(&store.user_episodes("acme", "alice").await.unwrap()),
        vec!["acme-alice-11", "acme-alice-12"]
    );
    store.forget("acme", "bob", 3).await.unwrap();
    assert_eq!(
        ids(&store.user_episodes("acme", "bob").await.unwrap()),
        vec!["acme-bob-4"]
    );
    // the commit that follows stores none of what was erased or forgotten
    let mut all = first.clone();
    all.extend(late);
    store.append(all).await.unwrap();
    assert_eq!(store.staged_row_count(), 0);
    assert_eq!(
        ids(&store.user_episodes("acme", "alice").await.unwrap()),
        vec!["acme-alice-11", "acme-alice-12"]
    );
    assert_eq!(
        ids(&store.user_episodes("acme", "bob").await.unwrap()),
        vec!["acme-bob-4"]
    );
}

/// While a writer stages and then commits batch after batch, a reader searching all the while
/// sees every row once, and never loses one it saw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_read_misses_or_repeats_a_row_while_it_moves_from_the_stage_to_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(&dir).await);
    let mut rng = StdRng::seed_from_u64(9);
    let batches: Vec<Vec<EpisodeRow>> = (0..16u64)
        .map(|b| {
            (0..4)
                .map(|i| row("alice", 1 + b * 4 + i, unit(&mut rng)))
                .collect()
        })
        .collect();
    let total: usize = batches.iter().map(Vec::len).sum();
    let writer = {
        let store = store.clone();
        tokio::spawn(async move {
            for batch in batches {
                store.stage(&batch);
                store.append(batch).await.unwrap();
            }
        })
    };
    let q = unit(&mut rng);
    let (mut seen, mut reads) = (HashSet::new(), 0);
    loop {
        let done = writer.is_finished();
        let by_vector = store
            .search_vector("acme", "alice", &q, 1000, None)
            .await
            .unwrap();
        let by_scan = store.user_episodes("acme", "alice").await.unwrap();
        for found in [ids(by_vector.iter().map(|h| &h.episode)), ids(&by_scan)] {
            let distinct: HashSet<&String> = found.iter().collect();
            assert_eq!(distinct.len(), found.len(), "a row read twice: {found:?}");
            let now: HashSet<String> = found.into_iter().collect();
            assert!(seen.is_subset(&now), "a row seen before is missing");
            seen = now;
        }
        reads += 1;
        if done {
            break;
        }
    }
    writer.await.unwrap();
    assert_eq!(seen.len(), total);
    assert!(
        reads > 2,
        "the reader ran alongside the writer ({reads} reads)"
    );
}
