//! The trace built as columns (tcpsim/trace/recorder.py `ParquetRecorder.record`, per event):
//! the integer columns of tcpsim/trace/schema.py COLUMNS in schema order, and the row's five
//! strings (sock, event, detail, flags, drop_reason) as a code into the distinct string
//! tuples seen so far. A group of rows is handed over as the column vectors themselves (no
//! copy) plus the codes, which Python wraps as Arrow int64 arrays and as dictionary-encoded
//! string columns (tcpsim/trace/columns.py): no Python object per value, no string per row.
//!
//! Per row the strings cost next to nothing: the model's event, detail and drop-reason
//! strings are literals (`TraceStr::Borrowed`), known by their address after the first
//! time; only a string a Python patch or a formatted detail passed is looked up by its text.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex};

use crate::segment::{flags_str, SYN};
use crate::socket::{TraceEvent, TraceStr, STATE_COLUMNS};

/// Integer columns: t_ns, seq, end_seq, len, truesize, ack_seq, win_raw, win_scaled, the
/// socket's state columns, collapse_ns.
pub const INT_COLUMNS: usize = 8 + STATE_COLUMNS + 1;

/// Rows a group may exceed its requested size by before a column reallocates (one event
/// step adds a few rows after the group is full; a burst of sends adds more, then the
/// vectors grow as usual).
const SLACK: usize = 1024;

/// A multiply-rotate hash (rustc's FxHash) for the per-row lookups, whose keys are a few
/// machine words: the standard library's DoS-resistant SipHash costs more than the rest
/// of the row. Byte strings (the rare text lookups) are hashed with FNV-1a.
#[derive(Default)]
pub struct Fx(u64);

const FX_K: u64 = 0x517c_c1b7_2722_0a95;

impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0 ^ 0xcbf2_9ce4_8422_2325;
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.write_u64(h);
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(FX_K);
    }

    fn write_u128(&mut self, v: u128) {
        self.write_u64(v as u64);
        self.write_u64((v >> 64) as u64);
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }
}

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

/// A row's strings as ids: socket (8 bits), flags (8 bits: 0 no segment, else bits + 1),
/// event, detail, drop_reason (32 bits each, ids of `texts`), packed.
fn key(sock: u8, flags: u8, event: u32, detail: u32, reason: u32) -> u128 {
    u128::from(sock)
        | u128::from(flags) << 8
        | u128::from(event) << 16
        | u128::from(detail) << 48
        | u128::from(reason) << 80
}

/// A row's strings as the model passed them, all literals: the address and length of its
/// event, detail and drop reason, its socket and flags. Equal literals mean equal strings,
/// so a recent row's code is found by comparing six words, without hashing a text.
#[derive(Debug, Clone, Copy, Default)]
struct Literals([usize; 7]);

impl Literals {
    /// Equal words (or-ed differences: a derived `==` on the array called `memcmp` per row).
    fn same(&self, other: &Self) -> bool {
        self.0
            .iter()
            .zip(&other.0)
            .fold(0, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

/// Recent string tuples remembered (`TraceColumns::recent`; a power of two).
const RECENT: usize = 64;

impl Literals {
    fn of(sock: usize, flags: u8, ev: &TraceEvent) -> Option<Self> {
        let (Cow::Borrowed(e), Cow::Borrowed(d), Cow::Borrowed(r)) =
            (&ev.event, &ev.detail, &ev.drop_reason)
        else {
            return None;
        };
        Some(Literals([
            e.as_ptr() as usize,
            e.len(),
            d.as_ptr() as usize,
            d.len(),
            r.as_ptr() as usize,
            r.len(),
            sock << 8 | usize::from(flags),
        ]))
    }

    /// Its place in `TraceColumns::recent`.
    fn slot(&self) -> usize {
        let mut h = Fx::default();
        for &w in &self.0 {
            h.write_usize(w);
        }
        (h.finish() >> 58) as usize % RECENT
    }
}

/// Rows gathered before they are spread into the columns (`TraceColumns::flush`): 1024
/// rows of 224 bytes stay in a core's own cache.
const BATCH: usize = 1024;

/// Rows not yet handed to Python, column by column.
pub struct TraceColumns {
    ints: Vec<Vec<i64>>,
    /// The integer values of the rows not yet in `ints`, row by row: a row is one write
    /// here, where one push into each of 28 column vectors (a length and a capacity read
    /// and written per value) was most of a traced run's cost in the engine; `flush`
    /// spreads a batch into the columns, one column at a time.
    batch: Vec<[i64; INT_COLUMNS]>,
    codes: Vec<i32>,
    /// The flow (connection index in the host plan) of each row: a host's trace of several
    /// connections is split by it (tcpsim/host/outputs.py `ConnectionTraces`).
    flows: Vec<i32>,
    /// Distinct string tuples as (socket, flags, event, detail, drop_reason) ids, in order
    /// of first appearance (a row's code indexes this); `sent` of them handed over.
    distinct: Vec<(u8, u8, u32, u32, u32)>,
    sent: usize,
    index: FxMap<u128, i32>,
    /// Distinct texts (event, detail, drop_reason strings); a literal's id by its address.
    texts: Vec<String>,
    by_text: FxMap<String, u32>,
    by_addr: FxMap<(usize, usize), u32>,
    flags: Vec<String>,
    socks: Vec<String>,
    /// Codes of recent all-literal rows by `Literals::slot` (code -1: empty).
    recent: [(Literals, i32); RECENT],
    spare: Arc<Mutex<Vec<Vec<i64>>>>,
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
            batch: Vec::new(),
            codes: Vec::new(),
            flows: Vec::new(),
            distinct: Vec::new(),
            sent: 0,
            index: FxMap::default(),
            texts: Vec::new(),
            by_text: FxMap::default(),
            by_addr: FxMap::default(),
            flags: (0..64).map(flags_str).collect(),
            socks: Vec::new(),
            recent: [(Literals::default(), -1); RECENT],
            spare: Arc::default(),
        }
    }

    /// Rows buffered.
    pub fn rows(&self) -> usize {
        self.codes.len()
    }

    /// Make room for `rows` rows in all (and a little more), so a group fills its columns
    /// without reallocating them.
    pub fn reserve(&mut self, rows: usize) {
        let more = (rows + SLACK).saturating_sub(self.codes.len());
        for c in &mut self.ints {
            c.reserve(more);
        }
        self.codes.reserve(more);
        self.flows.reserve(more);
    }

    /// The id of a text: a literal by its address (after the first time), else by content.
    fn text_id(&mut self, s: &TraceStr) -> u32 {
        match s {
            Cow::Borrowed(b) => {
                let addr = (b.as_ptr() as usize, b.len());
                if let Some(&id) = self.by_addr.get(&addr) {
                    return id;
                }
                let id = self.intern(b);
                self.by_addr.insert(addr, id);
                id
            }
            Cow::Owned(o) => self.intern(o),
        }
    }

    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.by_text.get(s) {
            return id;
        }
        let id = u32::try_from(self.texts.len()).expect("fewer than 2**32 distinct texts");
        self.texts.push(s.to_string());
        self.by_text.insert(s.to_string(), id);
        id
    }

    /// One row from one event of socket `sock` (the index of its name in the run: 0, 1),
    /// named `name`, of flow `flow` (the recorder's `record`).
    pub fn push(&mut self, flow: i32, sock: usize, name: &str, ev: &TraceEvent) {
        self.flows.push(flow);
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
        let mut row = [0; INT_COLUMNS];
        row[..8].copy_from_slice(&[
            ev.t_ns,
            seq,
            end_seq,
            length,
            ev.truesize,
            ack,
            win,
            win_scaled,
        ]);
        row[8..8 + STATE_COLUMNS].copy_from_slice(&ev.state);
        row[INT_COLUMNS - 1] = ev.collapse_ns;
        if self.batch.capacity() == 0 {
            self.batch.reserve_exact(BATCH);
        }
        self.batch.push(row);
        if self.batch.len() == BATCH {
            self.flush();
        }
        let code = match Literals::of(sock, flags, ev) {
            Some(lit) => {
                let slot = lit.slot();
                match self.recent[slot] {
                    (l, c) if c >= 0 && l.same(&lit) => c,
                    _ => {
                        let c = self.code(sock, name, flags, ev);
                        self.recent[slot] = (lit, c);
                        c
                    }
                }
            }
            None => self.code(sock, name, flags, ev),
        };
        self.codes.push(code);
    }

    /// Spread the batched rows into the columns.
    fn flush(&mut self) {
        for (c, col) in self.ints.iter_mut().enumerate() {
            col.extend(self.batch.iter().map(|row| row[c]));
        }
        self.batch.clear();
    }

    /// The code of a row's string tuple, looked up by the ids of its texts.
    fn code(&mut self, sock: usize, name: &str, flags: u8, ev: &TraceEvent) -> i32 {
        while self.socks.len() <= sock {
            self.socks.push(String::new());
        }
        if self.socks[sock].is_empty() {
            self.socks[sock] = name.to_string();
        }
        let sock = sock as u8;
        let ids = (
            self.text_id(&ev.event),
            self.text_id(&ev.detail),
            self.text_id(&ev.drop_reason),
        );
        let k = key(sock, flags, ids.0, ids.1, ids.2);
        match self.index.get(&k) {
            Some(&c) => c,
            None => {
                let c = i32::try_from(self.distinct.len()).expect("fewer than 2**31 tuples");
                self.distinct.push((sock, flags, ids.0, ids.1, ids.2));
                self.index.insert(k, c);
                c
            }
        }
    }

    /// The distinct string tuples (sock, event, detail, flags, drop_reason) not handed over
    /// yet, in code order (the first has code `sent` before the call).
    pub fn take_distinct(&mut self) -> Vec<[&str; 5]> {
        let new = &self.distinct[self.sent..];
        self.sent = self.distinct.len();
        new.iter()
            .map(|&(sock, flags, event, detail, reason)| {
                let flags = if flags == 0 {
                    ""
                } else {
                    self.flags[usize::from(flags - 1)].as_str()
                };
                [
                    self.socks[usize::from(sock)].as_str(),
                    self.texts[event as usize].as_str(),
                    self.texts[detail as usize].as_str(),
                    flags,
                    self.texts[reason as usize].as_str(),
                ]
            })
            .collect()
    }

    /// The first `n` rows taken out: (the integer columns, the codes, the rows' flows), each
    /// a vector of `n` values; the rows after them stay, in vectors with room for a group of
    /// `n`.
    pub fn take(&mut self, n: usize) -> (Vec<Vec<i64>>, Vec<i32>, Vec<i32>) {
        self.flush();
        let n = n.min(self.rows());
        let mut spare = self
            .spare
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default();
        let ints = self
            .ints
            .iter_mut()
            .map(|c| split_front(c, n, spare.pop().unwrap_or_default()))
            .collect();
        (
            ints,
            split_front(&mut self.codes, n, Vec::new()),
            split_front(&mut self.flows, n, Vec::new()),
        )
    }

    /// Where the vectors of a group handed over come back when Python is done with them
    /// (`Spare::give`), to hold the rows of a later group: memory already faulted in, which
    /// fresh vectors of a few hundred kB each are not (zeroing their pages cost about 40
    /// ns a row).
    pub fn spare(&self) -> Spare {
        Spare(Arc::clone(&self.spare))
    }
}

/// The way back for the column vectors of a group handed over (`TraceColumns::spare`).
#[derive(Clone)]
pub struct Spare(Arc<Mutex<Vec<Vec<i64>>>>);

impl Spare {
    /// Give a vector back, kept if fewer than a group's columns are spare.
    pub fn give(&self, mut v: Vec<i64>) {
        if let Ok(mut p) = self.0.lock() {
            if p.len() < INT_COLUMNS {
                v.clear();
                p.push(v);
            }
        }
    }
}

/// The first `n` values of `v`, taken out; `v` keeps the rest, in `room` (emptied) grown
/// to hold `n` more.
fn split_front<T: Copy>(v: &mut Vec<T>, n: usize, mut room: Vec<T>) -> Vec<T> {
    room.clear();
    room.reserve(v.len() + SLACK); // the rest (v.len() - n) and n more
    room.extend_from_slice(&v[n..]);
    v.truncate(n);
    std::mem::replace(v, room)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::{Segment, ACK};

    fn event(event: TraceStr, detail: TraceStr, seg: Option<Segment>) -> TraceEvent {
        TraceEvent {
            t_ns: 5,
            event,
            detail,
            seg,
            truesize: -1,
            drop_reason: Cow::Borrowed(""),
            len: -1,
            collapse_ns: -1,
            win_scale: 2,
            state: [0; STATE_COLUMNS],
        }
    }

    #[test]
    fn equal_texts_share_a_code_whether_literal_or_owned() {
        let mut t = TraceColumns::new();
        t.push(
            7,
            0,
            "rcv",
            &event(Cow::Borrowed("rx"), Cow::Borrowed("queued"), None),
        );
        t.push(
            7,
            0,
            "rcv",
            &event("rx".to_string().into(), "queued".to_string().into(), None),
        );
        t.push(
            7,
            1,
            "snd",
            &event(Cow::Borrowed("rx"), Cow::Borrowed("queued"), None),
        );
        let seg = Segment::new(1, 10, ACK, 0, 100);
        t.push(
            7,
            0,
            "rcv",
            &event(Cow::Borrowed("tx"), Cow::Borrowed(""), Some(seg)),
        );
        let (ints, codes, flows) = t.take(4);
        assert_eq!(codes, vec![0, 0, 1, 2]);
        assert_eq!(flows, vec![7; 4], "each row keeps its flow");
        assert_eq!(ints[0], vec![5; 4]);
        assert_eq!(ints[7][3], 400, "win_scaled = win << win_scale");
        let d = t.take_distinct();
        assert_eq!(d[0], ["rcv", "rx", "queued", "", ""]);
        assert_eq!(d[1], ["snd", "rx", "queued", "", ""]);
        assert_eq!(d[2], ["rcv", "tx", "", flags_str(ACK).as_str(), ""]);
        assert!(
            t.take_distinct().is_empty(),
            "each tuple is handed over once"
        );
    }

    #[test]
    fn take_keeps_the_rows_after_the_group() {
        let mut t = TraceColumns::new();
        for _ in 0..5 {
            t.push(
                7,
                0,
                "rcv",
                &event(Cow::Borrowed("read"), Cow::Borrowed(""), None),
            );
        }
        let (ints, codes, flows) = t.take(3);
        assert_eq!(
            (ints[0].len(), codes.len(), flows.len(), t.rows()),
            (3, 3, 3, 2)
        );
        assert!(t.ints[0].capacity() >= 3 + SLACK);
    }

    #[test]
    fn vectors_given_back_hold_the_next_group() {
        let mut t = TraceColumns::new();
        t.reserve(4); // as run_some does: room for a group
        let ev = event(Cow::Borrowed("read"), Cow::Borrowed(""), None);
        for _ in 0..4 {
            t.push(7, 0, "rcv", &ev);
        }
        let (ints, _, _) = t.take(2);
        let at = ints[0].as_ptr();
        let spare = t.spare();
        for v in ints {
            spare.give(v);
        }
        let (ints, _, _) = t.take(2);
        assert_eq!(ints[0], vec![5, 5], "the rows kept after the first group");
        assert!(
            t.ints.iter().any(|c| c.as_ptr() == at),
            "a spare vector holds the rows to come"
        );
        for _ in 0..2 {
            t.push(7, 0, "rcv", &ev);
        }
        let (ints, codes, _) = t.take(2);
        assert_eq!((ints[0].clone(), codes), (vec![5, 5], vec![0, 0]));
    }
}
