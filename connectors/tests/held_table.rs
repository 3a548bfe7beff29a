mod common;

use common::any_file_contains;
use engram_connectors::HeldTable;
use serde_json::json;

fn event(n: usize, user: &str) -> Vec<u8> {
    json!({"event_id": format!("h{n}"), "tenant": "t1", "user": user,
           "ts": "2025-03-01T10:00:00Z", "kind": "interaction", "role": "user",
           "content": format!("held-secret-{user}-{n}")})
    .to_string()
    .into_bytes()
}

#[test]
fn held_events_survive_reopening_in_order_and_those_let_go_leave_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("held.lance");
    let records = vec![event(0, "a"), event(1, "b"), event(2, "a")];
    {
        let (table, held) = HeldTable::open(&path).unwrap();
        assert!(held.is_empty());
        // nothing to write yet: no dataset is created
        table.replace(&[]).unwrap();
        assert!(!path.exists());
        table.replace(&records[..2]).unwrap();
        table.replace(&records).unwrap();
    }
    let (table, held) = HeldTable::open(&path).unwrap();
    assert_eq!(held, records);
    assert!(any_file_contains(&path, b"held-secret-b-1"));
    // b's restriction is lifted (or b erased): only a's stay, in their order
    table
        .replace(&[records[0].clone(), records[2].clone()])
        .unwrap();
    assert!(
        !any_file_contains(&path, b"held-secret-b-1"),
        "an old version keeps it"
    );
    assert_eq!(
        HeldTable::open(&path).unwrap().1,
        vec![records[0].clone(), records[2].clone()]
    );
    table.replace(&[]).unwrap();
    assert!(!any_file_contains(&path, b"held-secret-a"));
    assert!(HeldTable::open(&path).unwrap().1.is_empty());
}

#[tokio::test]
async fn the_held_table_can_be_used_from_inside_an_async_task() {
    let dir = tempfile::tempdir().unwrap();
    let (table, _) = HeldTable::open(&dir.path().join("held.lance")).unwrap();
    table.replace(&[event(7, "c")]).unwrap();
    assert_eq!(
        HeldTable::open(&dir.path().join("held.lance")).unwrap().1,
        vec![event(7, "c")]
    );
}
