//! Arrow schemas of the Lance tables.

use arrow_schema::{DataType, Field, Schema, TimeUnit};
use std::sync::Arc;

/// Column names of the `episodes` table, shared by writers and readers.
pub mod episodes {
    pub const ID: &str = "id";
    pub const EVENT_ID: &str = "event_id";
    pub const TENANT: &str = "tenant_id";
    pub const USER: &str = "user_id";
    pub const SESSION: &str = "session";
    pub const ROLE: &str = "role";
    pub const CONTENT: &str = "content";
    pub const TS: &str = "ts";
    pub const TURN: &str = "turn";
    pub const IMPORTANCE: &str = "importance";
    /// Offset of the event in the input log: makes writes idempotent across restarts.
    pub const LOG_OFFSET: &str = "log_offset";
    pub const VECTOR: &str = "vector";
}

/// The `episodes` table: one row per interaction, with its embedding of `dim` floats.
pub fn episodes_schema(dim: usize) -> Arc<Schema> {
    use episodes::*;
    Arc::new(Schema::new(vec![
        Field::new(ID, DataType::Utf8, false),
        Field::new(EVENT_ID, DataType::Utf8, false),
        Field::new(TENANT, DataType::Utf8, false),
        Field::new(USER, DataType::Utf8, false),
        Field::new(SESSION, DataType::Utf8, true),
        Field::new(ROLE, DataType::Utf8, false),
        Field::new(CONTENT, DataType::Utf8, false),
        Field::new(
            TS,
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            false,
        ),
        Field::new(TURN, DataType::UInt32, true),
        Field::new(IMPORTANCE, DataType::Float32, true),
        Field::new(LOG_OFFSET, DataType::UInt64, false),
        Field::new(
            VECTOR,
            DataType::FixedSizeList(
                Arc::new(Field::new("item", DataType::Float32, true)),
                dim as i32,
            ),
            false,
        ),
    ]))
}

/// Column names of the `events` table: every accepted event as the log holds it.
pub mod events {
    /// The event's offset in the input log (dense: 0, 1, 2, …); the table's key.
    pub const LOG_OFFSET: &str = "log_offset";
    pub const EVENT_ID: &str = "event_id";
    pub const TENANT: &str = "tenant_id";
    /// Empty for a redacted record.
    pub const USER: &str = "user_id";
    /// `interaction`, `correction`, `feedback`, `fact`, `control`, or `redacted`.
    pub const KIND: &str = "kind";
    /// Event time; null for a redacted record.
    pub const TS: &str = "ts";
    /// Whether an erase of the user removes the record (false for control events that govern
    /// processing, and for records already redacted).
    pub const PERSONAL: &str = "personal";
    /// The record's bytes: the event's canonical JSON, or its redacted stand-in.
    pub const RECORD: &str = "record";
}

/// The `events` table.
pub fn events_schema() -> Arc<Schema> {
    use events::*;
    Arc::new(Schema::new(vec![
        Field::new(LOG_OFFSET, DataType::UInt64, false),
        Field::new(EVENT_ID, DataType::Utf8, false),
        Field::new(TENANT, DataType::Utf8, false),
        Field::new(USER, DataType::Utf8, false),
        Field::new(KIND, DataType::Utf8, false),
        Field::new(
            TS,
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new(PERSONAL, DataType::Boolean, false),
        Field::new(RECORD, DataType::Binary, false),
    ]))
}

/// Column names of the `held` table: events of restricted users, kept unprocessed until the
/// restriction is lifted.
pub mod held {
    /// Order of arrival among the held events.
    pub const POSITION: &str = "position";
    pub const EVENT_ID: &str = "event_id";
    pub const TENANT: &str = "tenant_id";
    pub const USER: &str = "user_id";
    /// The event's canonical JSON.
    pub const RECORD: &str = "record";
}

/// The `held` table.
pub fn held_schema() -> Arc<Schema> {
    use held::*;
    Arc::new(Schema::new(vec![
        Field::new(POSITION, DataType::UInt64, false),
        Field::new(EVENT_ID, DataType::Utf8, false),
        Field::new(TENANT, DataType::Utf8, false),
        Field::new(USER, DataType::Utf8, false),
        Field::new(RECORD, DataType::Binary, false),
    ]))
}
