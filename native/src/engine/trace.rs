//! The trace built as columns (tcpsim/trace/recorder.py `ParquetRecorder.record`, per event):
//! the integer columns of tcpsim/trace/schema.py COLUMNS in schema order, and the row's five
//! strings (sock, event, detail, flags, drop_reason) as a code into the distinct string
//! tuples seen so far. A group of rows is handed over as Arrow buffers (int64 values; int32
//! offsets + UTF-8 data for strings), which Python wraps without touching a Python object
//! per value (tcpsim/trace/columns.py).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::segment::{flags_str, SYN};
use crate::socket::{TraceEvent, STATE_COLUMNS};

/// Integer columns: t_ns, seq, end_seq, len, truesize, ack_seq, win_raw, win_scaled, the
/// socket's state columns, collapse_ns.
pub const INT_COLUMNS: usize = 8 + STATE_COLUMNS + 1;

/// The five strings of a row: sock, event, detail, flags, drop_reason.
pub type Strings = [String; 5];

/// FNV-1a: the distinct-strings lookup runs once per row on short keys, where the
/// standard library's DoS-resistant SipHash costs more than the rest of the row.
#[derive(Default)]
pub struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// A row's strings as looked up: (socket, flags bits, event, detail, drop_reason) -- the
/// event's own strings moved in, nothing allocated per row.
type Key = (u8, u8, String, String, String);

/// A group of rows as Arrow buffers: the integer columns' values, and each string column's
/// (int32 offsets, UTF-8 data).
pub type Buffers = (Vec<Vec<i64>>, Vec<(Vec<i32>, Vec<u8>)>);

/// Rows not yet handed to Python, column by column.
pub struct TraceColumns {
    pub ints: Vec<Vec<i64>>,
    pub codes: Vec<i64>,
    /// Distinct string tuples, in order of first appearance (a row's code indexes this).
    pub distinct: Vec<Strings>,
    index: HashMap<Key, i64, BuildHasherDefault<Fnv>>,
    flags: Vec<String>,
    socks: Vec<String>,
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
            index: HashMap::default(),
            flags: (0..64).map(flags_str).collect(),
            socks: Vec::new(),
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
                let scaled = if f & SYN != 0 {
                    s.win
                } else {
                    s.win << ev.win_scale
                };
                let length = if ev.len < 0 { s.len } else { ev.len };
                (s.seq, end, s.ack, s.win, scaled, (f & 63) as u8 + 1, length)
            }
            None => (-1, -1, -1, -1, -1, 0u8, ev.len),
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
        let sock_id = match self.socks.iter().position(|s| s == sock) {
            Some(i) => i,
            None => {
                self.socks.push(sock.to_string());
                self.socks.len() - 1
            }
        } as u8;
        let key: Key = (sock_id, flags, ev.event, ev.detail, ev.drop_reason);
        let code = match self.index.get(&key) {
            Some(&c) => c,
            None => {
                let c = self.distinct.len() as i64;
                let flags = if flags == 0 {
                    String::new()
                } else {
                    self.flags[usize::from(flags - 1)].clone()
                };
                let (_, _, event, detail, reason) = &key;
                self.distinct.push([
                    sock.to_string(),
                    event.clone(),
                    detail.clone(),
                    flags,
                    reason.clone(),
                ]);
                self.index.insert(key, c);
                c
            }
        };
        self.codes.push(code);
    }

    /// The first `n` rows (all if fewer), taken out as Arrow buffers: the integer columns
    /// (int64 values) and the five string columns, each (int32 offsets, UTF-8 data).
    pub fn take(&mut self, n: usize) -> Buffers {
        let n = n.min(self.rows());
        let ints = self
            .ints
            .iter_mut()
            .map(|c| c.drain(..n).collect())
            .collect();
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
