//! A TCP segment as it crosses the wire between two simulated endpoints.
//!
//! Mirrors tcpsim/core/segment.py. Sequence numbers are i64 counted from each side's ISN, as
//! the Python model's unbounded integers (a 35-minute 1 Gbit/s run never wraps). The window
//! field is the raw 16-bit value: the receiver of the segment scales it.

use std::fmt;

pub const SYN: i64 = 0x02;
pub const FIN: i64 = 0x01;
pub const RST: i64 = 0x04;
pub const PSH: i64 = 0x08;
pub const ACK: i64 = 0x10;
pub const URG: i64 = 0x20;
pub const ECE: i64 = 0x40;
pub const CWR: i64 = 0x80;
/// AccECN (RFC 9768): the reserved bit before CWR.
pub const AE: i64 = 0x100;

const FLAG_LETTERS: [(i64, char); 6] = [
    (SYN, 'S'),
    (FIN, 'F'),
    (RST, 'R'),
    (PSH, 'P'),
    (ACK, 'A'),
    (URG, 'U'),
];

/// Render flags the way tcpdump/packetdrill do: "S", "SA", "PA", "FA", ...
pub fn flags_str(flags: i64) -> String {
    let s: String = FLAG_LETTERS
        .iter()
        .filter(|(bit, _)| flags & bit != 0)
        .map(|&(_, letter)| letter)
        .collect();
    if s.is_empty() {
        ".".to_string()
    } else {
        s
    }
}

/// One TCP segment (header fields the model needs, payload as a length).
///
/// `gso_size` > 0 marks a GRO/GSO aggregate of `len / gso_size` wire segments (packetdrill's
/// `--mss` option, or a GRO-enabled ingress device).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub seq: i64,
    pub len: i64,
    pub flags: i64,
    pub ack: i64,
    pub win: i64,
    /// MSS option (SYN only), 0 = absent.
    pub mss: i64,
    /// Window-scale option (SYN only), -1 = absent.
    pub wscale: i64,
    /// SACK-permitted option (SYN only).
    pub sack_ok: bool,
    /// Timestamp option, -1 = absent.
    pub tsval: i64,
    pub tsecr: i64,
    /// SACK blocks (start, end), the first block may be a D-SACK.
    pub sacks: Vec<(i64, i64)>,
    pub gso_size: i64,
    /// Set by the link: when the segment left the sender.
    pub tx_ns: i64,
    /// Set by the sender: tcp_skb_pcount() of the skb this wire segment was sent from (0 = not
    /// from the model's sender). Above 1 the stack segmented a GSO skb in software and the wire
    /// segment is a fresh skb, not a clone of the sender's (see `Device::sender_skb`).
    pub tx_segs: i64,
    /// Set by the sender: the page fragments holding the payload in the sender's memory
    /// (pagefrag.rs); 0 = unknown (`sender_frags()` lays the stream out page after page from
    /// its first byte). An i32 so that it shares the word `sack_ok` pads (a segment is
    /// copied whole along the link).
    pub frags: i32,
}

impl Segment {
    /// A segment with no options, as `Segment(seq, length, flags, ack, win)` in Python.
    pub fn new(seq: i64, len: i64, flags: i64, ack: i64, win: i64) -> Self {
        Segment {
            seq,
            len,
            flags,
            ack,
            win,
            mss: 0,
            wscale: -1,
            sack_ok: false,
            tsval: -1,
            tsecr: -1,
            sacks: Vec::new(),
            gso_size: 0,
            tx_ns: 0,
            tx_segs: 0,
            frags: 0,
        }
    }

    /// seq + payload + one for SYN and one for FIN (TCP_SKB_CB(skb)->end_seq).
    pub fn end_seq(&self) -> i64 {
        self.seq + self.len + (self.flags & SYN) / SYN + (self.flags & FIN)
    }
}

/// The Python `Segment.__repr__`, character for character (traces and test messages use it).
impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut opts: Vec<String> = Vec::new();
        if self.mss != 0 {
            opts.push(format!("mss {}", self.mss));
        }
        if self.wscale >= 0 {
            opts.push(format!("wscale {}", self.wscale));
        }
        if self.sack_ok {
            opts.push("sackOK".to_string());
        }
        if self.tsval >= 0 {
            opts.push(format!("TS val {} ecr {}", self.tsval, self.tsecr));
        }
        for (s, e) in &self.sacks {
            opts.push(format!("sack {s}:{e}"));
        }
        let o = if opts.is_empty() {
            String::new()
        } else {
            format!(" <{}>", opts.join(","))
        };
        write!(
            f,
            "Segment({} {}:{}({}) ack {} win {}{})",
            flags_str(self.flags),
            self.seq,
            self.seq + self.len,
            self.len,
            self.ack,
            self.win,
            o
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_render_like_tcpdump() {
        assert_eq!(flags_str(SYN | ACK), "SA");
        assert_eq!(flags_str(PSH | ACK), "PA");
        assert_eq!(flags_str(FIN | ACK), "FA");
        assert_eq!(flags_str(0), ".");
    }

    #[test]
    fn end_seq_counts_syn_and_fin() {
        assert_eq!(Segment::new(100, 10, ACK, 0, 0).end_seq(), 110);
        assert_eq!(Segment::new(0, 0, SYN, 0, 0).end_seq(), 1);
        assert_eq!(Segment::new(5, 3, FIN | ACK, 0, 0).end_seq(), 9);
    }

    #[test]
    fn display_with_options() {
        let mut s = Segment::new(0, 0, SYN, 0, 65535);
        s.mss = 1460;
        s.wscale = 7;
        s.sack_ok = true;
        s.tsval = 5;
        s.tsecr = 0;
        s.sacks = vec![(10, 20)];
        assert_eq!(
            s.to_string(),
            "Segment(S 0:0(0) ack 0 win 65535 <mss 1460,wscale 7,sackOK,TS val 5 ecr 0,sack 10:20>)"
        );
    }
}
