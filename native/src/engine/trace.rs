//! The trace built as columns (tcpsim/trace/recorder.py `ParquetRecorder.record`, per event):
//! the integer columns of tcpsim/trace/schema.py COLUMNS in schema order, and the row's five
//! strings (sock, event, detail, flags, drop_reason) as a code into the distinct string
//! tuples seen so far. A group of rows is handed over as Arrow buffers (int64 values; int32
//! offsets + UTF-8 data for strings), which Python wraps without touching a Python object
//! per value (tcpsim/trace/columns.py).

use std::collections::HashMap;

use crate::segment::{flags_str, SYN};
use crate::socket::{TraceEvent, STATE_COLUMNS};

/// Integer columns: t_ns, seq, end_seq, len, truesize, ack_seq, win_raw, win_scaled, the
/// socket's state columns, collapse_ns.
pub const INT_COLUMNS: usize = 8 + STATE_COLUMNS + 1;

/// The five strings of a row: sock, event, detail, flags, drop_reason.
pub type Strings = [String; 5];

/// Rows not yet handed to Python, column by column.
pub struct TraceColumns {
    pub ints: Vec<Vec<i64>>,
    pub codes: Vec<i64>,
    /// Distinct string tuples, in order of first appearance (a row's code indexes this).
    pub distinct: Vec<Strings>,
    index: HashMap<Strings, i64>,
    flags: Vec<String>,
}

impl Default for TraceColumns {
    fn default() -> Self {
        Self::new()
    }
}

impl TraceColumns {
    pub fn new() -> Self {
        TraceColumns {
            ints: vec![Vec::new(); INT_COLUMNS],
            codes: Vec::new(),
            distinct: Vec::new(),
            index: HashMap::new(),
            flags: (0..64).map(flags_str).collect(),
        }
    }

    /// Rows buffered.
    pub fn rows(&self) -> usize {
        self.codes.len()
    }

    /// One row from one event of socket `sock` (the recorder's `record`).
    pub fn push(&mut self, sock: &str, ev: TraceEvent) {
        let (seq, end_seq, ack, win, win_scaled, flags, length) = match &ev.seg {
            Some(s) => {
                let f = s.flags;
                let end = s.seq + s.len + i64::from(f & 0x03 != 0);
                let scaled = if f & SYN != 0 { s.win } else { s.win << ev.win_scale };
                let length = if ev.len < 0 { s.len } else { ev.len };
                let flags = self.flags[(f & 63) as usize].clone();
                (s.seq, end, s.ack, s.win, scaled, flags, length)
            }
            None => (-1, -1, -1, -1, -1, String::new(), ev.len),
        };
        let head = [
            ev.t_ns,
            seq,
            end_seq,
            length,
            ev.truesize,
            ack,
            win,
            win_scaled,
        ];
        for (col, v) in self.ints.iter_mut().zip(
            head.iter()
                .chain(ev.state.iter())
                .chain(std::iter::once(&ev.collapse_ns)),
        ) {
            col.push(*v);
        }
        let key: Strings = [sock.to_string(), ev.event, ev.detail, flags, ev.drop_reason];
        let code = match self.index.get(&key) {
            Some(&c) => c,
            None => {
                let c = self.distinct.len() as i64;
                self.distinct.push(key.clone());
                self.index.insert(key, c);
                c
            }
        };
        self.codes.push(code);
    }

    /// The first `n` rows (all if fewer), taken out as Arrow buffers: the integer columns
    /// (int64 values) and the five string columns, each (int32 offsets, UTF-8 data).
    pub fn take(&mut self, n: usize) -> (Vec<Vec<i64>>, Vec<(Vec<i32>, Vec<u8>)>) {
        let n = n.min(self.rows());
        let ints = self.ints.iter_mut().map(|c| c.drain(..n).collect()).collect();
        let mut strs: Vec<(Vec<i32>, Vec<u8>)> = (0..5)
            .map(|_| (Vec::with_capacity(n + 1), Vec::new()))
            .collect();
        for (j, (offsets, data)) in strs.iter_mut().enumerate() {
            offsets.push(0);
            for &code in &self.codes[..n] {
                data.extend_from_slice(self.distinct[code as usize][j].as_bytes());
                offsets.push(data.len() as i32);
            }
        }
        self.codes.drain(..n);
        (ints, strs)
    }
}
