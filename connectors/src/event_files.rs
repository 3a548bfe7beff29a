//! Historical event files for `engram replay`: JSON lines in the event format (SPEC §2), or
//! Parquet files whose columns are the same fields (`event_id`, `tenant`, `user`, `ts`, `kind`,
//! `content`, …; nested fields as struct columns).
//!
//! The reader does not validate events: it yields each record as JSON with its position and its
//! original text, so the caller validates it exactly as it validates live input and can send a
//! bad record, with its position, to the reject log.

use arrow::json::writer::{ArrayWriter, JsonArray, WriterBuilder};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use serde_json::Value;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum EventFileError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a readable Parquet file: {source}")]
    Parquet {
        path: PathBuf,
        source: parquet::errors::ParquetError,
    },
    #[error("{path}: row batch {batch}: {reason}")]
    Rows {
        path: PathBuf,
        batch: u64,
        reason: String,
    },
}

/// One record of an event file.
#[derive(Debug, Clone)]
pub struct FileRecord {
    /// `line N` (JSON lines, from 1) or `row N` (Parquet, from 1).
    pub position: String,
    /// The record as JSON, or why it is not JSON.
    pub value: Result<Value, String>,
    /// The record's text as it appeared in the file (for the reject log).
    pub original: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventFileFormat {
    JsonLines,
    Parquet,
}

impl EventFileFormat {
    /// `.parquet` / `.pq` are Parquet; everything else is read as JSON lines.
    pub fn of(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("parquet") || e.eq_ignore_ascii_case("pq") => {
                EventFileFormat::Parquet
            }
            _ => EventFileFormat::JsonLines,
        }
    }
}

enum Source {
    Lines {
        reader: BufReader<File>,
        line: u64,
    },
    Parquet {
        reader: ParquetRecordBatchReader,
        batch: u64,
        row: u64,
        pending: VecDeque<FileRecord>,
    },
}

/// Reads an event file in chunks, in file order.
pub struct EventFile {
    path: PathBuf,
    format: EventFileFormat,
    records: u64,
    source: Source,
}

impl EventFile {
    pub fn open(path: &Path) -> Result<Self, EventFileError> {
        let io = |source| EventFileError::Io {
            path: path.to_path_buf(),
            source,
        };
        let format = EventFileFormat::of(path);
        let file = File::open(path).map_err(io)?;
        let (records, source) = match format {
            EventFileFormat::JsonLines => {
                // One pass to count, so progress can show a total and an ETA.
                let mut records = 0;
                for line in BufReader::new(File::open(path).map_err(io)?).lines() {
                    if !line.map_err(io)?.trim().is_empty() {
                        records += 1;
                    }
                }
                let source = Source::Lines {
                    reader: BufReader::new(file),
                    line: 0,
                };
                (records, source)
            }
            EventFileFormat::Parquet => {
                let pq = |source| EventFileError::Parquet {
                    path: path.to_path_buf(),
                    source,
                };
                let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(pq)?;
                let records = builder.metadata().file_metadata().num_rows().max(0) as u64;
                let reader = builder.with_batch_size(1024).build().map_err(pq)?;
                let source = Source::Parquet {
                    reader,
                    batch: 0,
                    row: 0,
                    pending: VecDeque::new(),
                };
                (records, source)
            }
        };
        Ok(EventFile {
            path: path.to_path_buf(),
            format,
            records,
            source,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn format(&self) -> EventFileFormat {
        self.format
    }

    /// Records in the file (non-empty lines, or Parquet rows).
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Up to `max` next records; an empty vector at the end of the file.
    pub fn next_chunk(&mut self, max: usize) -> Result<Vec<FileRecord>, EventFileError> {
        let mut out = Vec::with_capacity(max.min(4096));
        match &mut self.source {
            Source::Lines { reader, line } => {
                let mut text = String::new();
                while out.len() < max {
                    text.clear();
                    let n = reader
                        .read_line(&mut text)
                        .map_err(|source| EventFileError::Io {
                            path: self.path.clone(),
                            source,
                        })?;
                    if n == 0 {
                        break;
                    }
                    *line += 1;
                    let trimmed = text.trim();
                    if trimmed.is_empty() {
                        continue;
                    }
                    out.push(FileRecord {
                        position: format!("line {line}"),
                        value: serde_json::from_str(trimmed)
                            .map_err(|e| format!("not valid JSON: {e}")),
                        original: trimmed.to_string(),
                    });
                }
            }
            Source::Parquet {
                reader,
                batch,
                row,
                pending,
            } => {
                while out.len() < max {
                    if let Some(r) = pending.pop_front() {
                        out.push(r);
                        continue;
                    }
                    let Some(next) = reader.next() else { break };
                    *batch += 1;
                    let rows_err = |reason: String| EventFileError::Rows {
                        path: self.path.clone(),
                        batch: *batch,
                        reason,
                    };
                    let record_batch = next.map_err(|e| rows_err(e.to_string()))?;
                    for value in parquet_rows_as_json(&record_batch).map_err(rows_err)? {
                        *row += 1;
                        pending.push_back(FileRecord {
                            position: format!("row {row}"),
                            original: value.to_string(),
                            value: Ok(value),
                        });
                    }
                }
            }
        }
        Ok(out)
    }
}

/// The rows of a record batch as JSON objects; null fields are left out, and a `ts` written
/// without a UTC offset (a Parquet timestamp without time zone) is taken as UTC.
fn parquet_rows_as_json(batch: &arrow::record_batch::RecordBatch) -> Result<Vec<Value>, String> {
    let mut writer: ArrayWriter<Vec<u8>> = WriterBuilder::new()
        .with_explicit_nulls(false)
        .build::<_, JsonArray>(Vec::new());
    writer.write(batch).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    let bytes = writer.into_inner();
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<Value> = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    Ok(rows
        .into_iter()
        .map(|mut row| {
            if let Some(Value::String(ts)) = row.get_mut("ts") {
                if !has_utc_offset(ts) {
                    ts.push('Z');
                }
            }
            row
        })
        .collect())
}

/// Whether an RFC 3339-like timestamp ends with `Z` or a `±hh:mm` offset.
fn has_utc_offset(ts: &str) -> bool {
    if ts.ends_with('Z') || ts.ends_with('z') {
        return true;
    }
    let Some(time) = ts.split_once('T').map(|(_, t)| t) else {
        return true; // not a date-time; let validation say what is wrong with it
    };
    time.contains('+') || time.contains('-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{ArrayRef, Int64Array, StringArray, TimestampMicrosecondArray};
    use arrow::record_batch::RecordBatch;
    use std::io::Write;
    use std::sync::Arc;

    #[test]
    fn json_lines_keep_positions_and_report_bad_json() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut f = File::create(&path).unwrap();
        writeln!(f, r#"{{"event_id":"a"}}"#).unwrap();
        writeln!(f).unwrap();
        writeln!(f, "not json").unwrap();
        writeln!(f, r#"{{"event_id":"c"}}"#).unwrap();
        drop(f);
        let mut file = EventFile::open(&path).unwrap();
        assert_eq!(file.format(), EventFileFormat::JsonLines);
        assert_eq!(file.records(), 3);
        let first = file.next_chunk(2).unwrap();
        assert_eq!(first.len(), 2);
        assert_eq!(first[0].position, "line 1");
        assert_eq!(first[0].value.as_ref().unwrap()["event_id"], "a");
        assert_eq!(first[1].position, "line 3");
        assert!(first[1]
            .value
            .as_ref()
            .unwrap_err()
            .contains("not valid JSON"));
        assert_eq!(first[1].original, "not json");
        let rest = file.next_chunk(10).unwrap();
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].position, "line 4");
        assert!(file.next_chunk(10).unwrap().is_empty());
    }

    #[test]
    fn parquet_rows_become_event_json_with_utc_timestamps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.parquet");
        let ts =
            TimestampMicrosecondArray::from(vec![1_700_000_000_000_000, 1_700_000_001_000_000]);
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("event_id", Arc::new(StringArray::from(vec!["e1", "e2"]))),
            ("ts", Arc::new(ts)),
            (
                "session",
                Arc::new(StringArray::from(vec![Some("s"), None])),
            ),
            ("turn", Arc::new(Int64Array::from(vec![0, 1]))),
        ];
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let mut writer = parquet::arrow::ArrowWriter::try_new(
            File::create(&path).unwrap(),
            batch.schema(),
            None,
        )
        .unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();

        let mut file = EventFile::open(&path).unwrap();
        assert_eq!(file.format(), EventFileFormat::Parquet);
        assert_eq!(file.records(), 2);
        let rows = file.next_chunk(10).unwrap();
        assert_eq!(rows.len(), 2);
        let first = rows[0].value.as_ref().unwrap();
        assert_eq!(first["event_id"], "e1");
        assert_eq!(first["turn"], 0);
        assert_eq!(first["session"], "s");
        let parsed: chrono::DateTime<chrono::Utc> = first["ts"].as_str().unwrap().parse().unwrap();
        assert_eq!(parsed.timestamp(), 1_700_000_000);
        let second = rows[1].value.as_ref().unwrap();
        assert!(second.get("session").is_none(), "nulls are left out");
        assert_eq!(rows[1].position, "row 2");
        assert!(file.next_chunk(10).unwrap().is_empty());
    }

    #[test]
    fn offsets_are_recognised() {
        assert!(has_utc_offset("2024-01-01T10:00:00Z"));
        assert!(has_utc_offset("2024-01-01T10:00:00+02:00"));
        assert!(has_utc_offset("2024-01-01T10:00:00-05:00"));
        assert!(!has_utc_offset("2024-01-01T10:00:00"));
        assert!(!has_utc_offset("2024-01-01T10:00:00.123"));
    }
}
