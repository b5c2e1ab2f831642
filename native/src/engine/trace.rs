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

    /// Integer column `j`'s first `n` values (Arrow int64 values).
    pub fn int_values(&self, j: usize, n: usize) -> &[i64] {
        &self.ints[j][..n]
    }

    /// String column `j` of the first `n` rows: its Arrow offsets (n + 1 int32,
    /// little-endian) written into `out`, of `4 * (n + 1)` bytes.
    pub fn fill_offsets(&self, j: usize, n: usize, out: &mut [u8]) {
        let mut at = 0i32;
        out[..4].copy_from_slice(&at.to_le_bytes());
        for (i, &code) in self.codes[..n].iter().enumerate() {
            at += self.distinct[code as usize][j].len() as i32;
            out[4 * (i + 1)..4 * (i + 2)].copy_from_slice(&at.to_le_bytes());
        }
    }

    /// String column `j` of the first `n` rows: its UTF-8 data written into `out`, of
    /// `string_data_len(j, n)` bytes.
    pub fn fill_data(&self, j: usize, n: usize, out: &mut [u8]) {
        let mut at = 0usize;
        for &code in &self.codes[..n] {
            let s = self.distinct[code as usize][j].as_bytes();
            out[at..at + s.len()].copy_from_slice(s);
            at += s.len();
        }
    }

    /// Bytes of UTF-8 data in string column `j` of the first `n` rows.
    pub fn string_data_len(&self, j: usize, n: usize) -> usize {
        self.codes[..n]
            .iter()
            .map(|&c| self.distinct[c as usize][j].len())
            .sum()
    }

    /// Drop the first `n` rows (handed over); the columns keep their capacity.
    pub fn discard(&mut self, n: usize) {
        for c in &mut self.ints {
            c.drain(..n);
        }
        self.codes.drain(..n);
    }
}
