//! The trace written to Parquet by the native engine itself (tcpsim/trace/native_file.py):
//! the same file tcpsim/trace/recorder.py `ParquetRecorder` writes from the same groups --
//! the same schema, row groups, encodings and footer metadata -- without a Python object,
//! an Arrow array made in Python, or pyarrow in the process.
//!
//! A group of rows taken from the trace (`TraceColumns::take`) is handed to a thread of its
//! own (`TraceFile::put`), which encodes and compresses it while the engine makes the next:
//! one group is written while one is made, as in the Python writer. Its column vectors go
//! back to the trace (`Spare`) once written. The string columns are written as dictionaries
//! whose indices are the rows' codes (each distinct string once per column, the recorder's
//! WRITE_SCHEMA); the Arrow schema in the footer (`ARROW:schema`) is the plain one with the
//! run's metadata, so a reader gets plain string columns and the metadata
//! (`ParquetRecorder.close`).

use std::collections::HashMap;
use std::fs::File;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, DictionaryArray, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_buffer::ScalarBuffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::arrow::{encode_arrow_schema, ArrowWriter};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::schema::types::ColumnPath;

use crate::engine::trace::{Spare, INT_COLUMNS};

/// The string columns of a row, in the order `TraceColumns::take_distinct` gives them.
pub const STR_COLUMNS: usize = 5;

/// One group of rows: the integer columns (`INT_COLUMNS` vectors), the rows' codes, and the
/// string tuples first seen since the last group (`take_distinct`).
pub struct Group {
    pub ints: Vec<Vec<i64>>,
    pub codes: Vec<i32>,
    pub new: Vec<[String; STR_COLUMNS]>,
}

/// The file's columns in schema order (tcpsim/trace/schema.py COLUMNS): each a name and
/// whether it is a string column. The integer columns, in this order, are the trace's
/// `INT_COLUMNS`, the string ones its `STR_COLUMNS` (the caller checks the names).
pub type Columns = Vec<(String, bool)>;

/// A Parquet trace file being written by its thread.
pub struct TraceFile {
    tx: Option<SyncSender<Group>>,
    thread: Option<JoinHandle<Result<Writer, String>>>,
}

struct Writer {
    out: ArrowWriter<File>,
    write_schema: SchemaRef,
    plain: Schema,
    int_pos: Vec<usize>,
    str_pos: Vec<usize>,
    distinct: Vec<[String; STR_COLUMNS]>,
    /// Per string column: its distinct strings, and each tuple code's index into them.
    dicts: Vec<(ArrayRef, Vec<i32>)>,
    spare: Spare,
    groups: usize,
}

/// What `ParquetRecorder` gives pyarrow (recorder.py `_parquet_options`): zstd; the string
/// columns dictionary-encoded; the integers BYTE_STREAM_SPLIT; data pages v2; min/max
/// statistics for t_ns only.
fn properties(columns: &Columns) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_writer_version(WriterVersion::PARQUET_2_0)
        .set_dictionary_enabled(false)
        .set_statistics_enabled(EnabledStatistics::None)
        .set_write_batch_size(1 << 16)
        .set_max_row_group_size(usize::MAX);
    for (name, is_str) in columns {
        let path = ColumnPath::from(name.as_str());
        b = if *is_str {
            b.set_column_dictionary_enabled(path, true)
        } else {
            b.set_column_encoding(path, Encoding::BYTE_STREAM_SPLIT)
        };
    }
    if let Some((name, _)) = columns.first() {
        b = b.set_column_statistics_enabled(ColumnPath::from(name.as_str()), EnabledStatistics::Page);
    }
    b.build()
}

impl TraceFile {
    /// Start writing `path` (created or truncated) with `columns`; the written groups'
    /// vectors go back through `spare`.
    pub fn create(path: &str, columns: &Columns, spare: Spare) -> Result<Self, String> {
        let ints = columns.iter().filter(|c| !c.1).count();
        let strs = columns.len() - ints;
        if ints != INT_COLUMNS || strs != STR_COLUMNS {
            return Err(format!(
                "trace columns: {ints} integer and {strs} string columns given; the engine \
                 makes {INT_COLUMNS} and {STR_COLUMNS}"
            ));
        }
        let field = |(name, is_str): &(String, bool), dict: bool| {
            let t = match (is_str, dict) {
                (false, _) => DataType::Int64,
                (true, false) => DataType::Utf8,
                (true, true) => {
                    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
                }
            };
            Field::new(name.as_str(), t, true)
        };
        let write_schema = Arc::new(Schema::new(
            columns.iter().map(|c| field(c, true)).collect::<Vec<_>>(),
        ));
        let plain = Schema::new(columns.iter().map(|c| field(c, false)).collect::<Vec<_>>());
        let file = File::create(path).map_err(|e| format!("{path}: {e}"))?;
        let options = ArrowWriterOptions::new()
            .with_properties(properties(columns))
            .with_skip_arrow_metadata(true);
        let out = ArrowWriter::try_new_with_options(file, write_schema.clone(), options)
            .map_err(|e| format!("{path}: {e}"))?;
        let mut w = Writer {
            out,
            write_schema,
            plain,
            int_pos: (0..columns.len()).filter(|&i| !columns[i].1).collect(),
            str_pos: (0..columns.len()).filter(|&i| columns[i].1).collect(),
            distinct: Vec::new(),
            dicts: Vec::new(),
            spare,
            groups: 0,
        };
        w.dictionaries();
        let (tx, rx) = sync_channel::<Group>(0);
        let thread = std::thread::Builder::new()
            .name("tcpsim-trace".into())
            .spawn(move || w.run(rx))
            .map_err(|e| format!("trace writer thread: {e}"))?;
        Ok(TraceFile {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    /// Hand a group over; waits until the group before it is written. An error is the
    /// writer's (the file could not be written).
    pub fn put(&mut self, group: Group) -> Result<(), String> {
        let sent = self.tx.as_ref().map(|tx| tx.send(group).is_ok());
        if sent == Some(true) {
            return Ok(());
        }
        // the thread ended: its error
        match self.join() {
            Err(e) => Err(e),
            Ok(_) => Err("the trace file is closed".into()),
        }
    }

    fn join(&mut self) -> Result<Writer, String> {
        self.tx = None;
        match self.thread.take() {
            None => Err("the trace file is closed".into()),
            Some(t) => t
                .join()
                .map_err(|_| "the trace writer panicked".to_string())?,
        }
    }

    /// Write the groups handed over, then the footer with `metadata` (key, JSON text) and
    /// the Arrow schema carrying it, and close the file.
    pub fn finish(&mut self, metadata: &[(String, String)]) -> Result<(), String> {
        let mut w = self.join()?;
        if w.groups == 0 {
            // an empty trace is one empty row group, as pyarrow writes it
            w.write(Group {
                ints: vec![Vec::new(); INT_COLUMNS],
                codes: Vec::new(),
                new: Vec::new(),
            })?;
        }
        let meta: HashMap<String, String> = metadata.iter().cloned().collect();
        let schema = w.plain.clone().with_metadata(meta);
        for (k, v) in metadata {
            w.out.append_key_value_metadata(KeyValue::new(k.clone(), v.clone()));
        }
        w.out.append_key_value_metadata(KeyValue::new(
            "ARROW:schema".to_string(),
            encode_arrow_schema(&schema),
        ));
        w.out.close().map_err(|e| e.to_string())?;
        Ok(())
    }
}

impl Drop for TraceFile {
    fn drop(&mut self) {
        // a run dropped before finish(): stop the thread; the file stays without a footer
        let _ = self.join();
    }
}

impl Writer {
    fn run(mut self, rx: Receiver<Group>) -> Result<Writer, String> {
        while let Ok(group) = rx.recv() {
            self.write(group)?;
        }
        Ok(self)
    }

    /// Per string column: its distinct strings and each tuple's index into them (columns.py
    /// `TraceGroups._dictionaries`: Parquet takes a dictionary as its own only when each
    /// string is in it once).
    fn dictionaries(&mut self) {
        self.dicts = (0..STR_COLUMNS)
            .map(|j| {
                let mut words: HashMap<&str, i32> = HashMap::new();
                let mut list: Vec<&str> = Vec::new();
                let index = self
                    .distinct
                    .iter()
                    .map(|t| {
                        *words.entry(t[j].as_str()).or_insert_with(|| {
                            list.push(t[j].as_str());
                            (list.len() - 1) as i32
                        })
                    })
                    .collect();
                (Arc::new(StringArray::from(list)) as ArrayRef, index)
            })
            .collect();
    }

    fn write(&mut self, group: Group) -> Result<(), String> {
        if !group.new.is_empty() {
            self.distinct.extend(group.new);
            self.dictionaries();
        }
        let n = group.codes.len();
        let mut columns: Vec<Option<ArrayRef>> = vec![None; self.int_pos.len() + STR_COLUMNS];
        let ints: Vec<Int64Array> = group
            .ints
            .into_iter()
            .map(|v| Int64Array::new(ScalarBuffer::from(v), None))
            .collect();
        for (a, &pos) in ints.iter().zip(&self.int_pos) {
            columns[pos] = Some(Arc::new(a.clone()));
        }
        for ((words, index), &pos) in self.dicts.iter().zip(&self.str_pos) {
            let keys: Vec<i32> = group.codes.iter().map(|&c| index[c as usize]).collect();
            // SAFETY-free: the keys index `words` by construction (checked by try_new)
            let dict = DictionaryArray::<Int32Type>::try_new(Int32Array::from(keys), words.clone())
                .map_err(|e| e.to_string())?;
            columns[pos] = Some(Arc::new(dict));
        }
        let columns: Vec<ArrayRef> = columns.into_iter().map(|c| c.expect("every column")).collect();
        let batch = RecordBatch::try_new(self.write_schema.clone(), columns)
            .map_err(|e| e.to_string())?;
        debug_assert_eq!(batch.num_rows(), n);
        self.out.write(&batch).map_err(|e| e.to_string())?;
        self.out.flush().map_err(|e| e.to_string())?;
        drop(batch);
        self.groups += 1;
        for a in ints {
            // the written values' vector, back to the trace for a later group
            if let Ok(v) = a.into_parts().1.into_inner().into_vec::<i64>() {
                self.spare.give(v);
            }
        }
        Ok(())
    }
}
