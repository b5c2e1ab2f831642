//! Socket buffers as the receive path sees them: sequence range, payload, memory layout.
//!
//! Mirrors tcpsim/core/skb.py. Only what changes accounting is modelled: `truesize` (the
//! memory charged), how many page fragments the skb holds (coalescing stops at
//! MAX_SKB_FRAGS), whether the payload sits in a page-fragment head that can be stolen, and
//! the linear tailroom a small segment can be copied into for free. See skb_try_coalesce()
//! [net/core/skbuff.c].

use std::fmt;

/// One queued socket buffer (an skb on sk_receive_queue or the out-of-order queue).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skb {
    pub seq: i64,
    pub end_seq: i64,
    pub len: i64,
    pub truesize: i64,
    /// Size of the linear data area (skb_end_offset).
    pub head: i64,
    /// Payload bytes in the linear head (skb_headlen after pull).
    pub linear: i64,
    /// Page fragments holding payload (skb_shinfo()->nr_frags).
    pub nfrags: i64,
    /// The head is a page fragment that can be stolen.
    pub head_frag: bool,
    /// Free bytes after the linear data (skb_tailroom).
    pub tailroom: i64,
    pub fin: bool,
    /// veth/loopback: the head is shared with the sender's retransmit-queue skb until the
    /// sender frees it on ACK; until the peer has released everything below this sequence
    /// the skb is "cloned" and nothing can be coalesced into it.
    pub cloned_until: i64,
}

/// The layout of a new skb beyond its sequence range and truesize (Python's keyword
/// arguments `head`, `linear`, `nfrags`, `head_frag`, `tailroom`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Layout {
    pub head: i64,
    pub linear: i64,
    pub nfrags: i64,
    pub head_frag: bool,
    pub tailroom: i64,
}

impl Skb {
    /// `Skb(seq, length, truesize, head=..., linear=..., nfrags=..., head_frag=...,
    /// tailroom=..., fin=...)`: end_seq counts the FIN.
    pub fn new(seq: i64, len: i64, truesize: i64, layout: Layout, fin: bool) -> Self {
        Skb {
            seq,
            end_seq: seq + len + i64::from(fin),
            len,
            truesize,
            head: layout.head,
            linear: layout.linear,
            nfrags: layout.nfrags,
            head_frag: layout.head_frag,
            tailroom: layout.tailroom,
            fin,
            cloned_until: 0,
        }
    }
}

/// The Python `Skb.__repr__`, character for character.
impl fmt::Display for Skb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Skb({}:{} len={} truesize={} frags={}",
            self.seq, self.end_seq, self.len, self.truesize, self.nfrags
        )?;
        if self.head_frag {
            write!(f, " headfrag")?;
        }
        if self.tailroom != 0 {
            write!(f, " tailroom={}", self.tailroom)?;
        }
        if self.fin {
            write!(f, " FIN")?;
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_seq_and_display() {
        let lay = Layout {
            head: 1728,
            linear: 100,
            nfrags: 0,
            head_frag: true,
            tailroom: 12,
        };
        let skb = Skb::new(1, 100, 2304, lay, true);
        assert_eq!(skb.end_seq, 102);
        assert_eq!(
            skb.to_string(),
            "Skb(1:102 len=100 truesize=2304 frags=0 headfrag tailroom=12 FIN)"
        );
    }
}
