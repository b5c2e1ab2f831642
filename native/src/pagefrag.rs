//! The writer's page frag: where a sender's bytes lie in memory, hence how many page
//! fragments each of its segments holds.
//!
//! Mirrors tcpsim/core/pagefrag.py (read its docstring for the kernel's rules).
//! tcp_sendmsg_locked() [net/ipv4/tcp.c, 6.18] copies a write into the task's page frag chunk
//! by chunk; before each chunk skb_page_frag_refill() [net/core/sock.c, 6.18] reuses a page
//! nothing else references from offset 0, keeps a page with at least 32 bytes left, or takes
//! a new SKB_FRAG_PAGE_SIZE page. On a local pair the receiver's skbs hold the sender's pages
//! until read and freed; a read skb's free waits in skb_attempt_defer_free()
//! [net/core/skbuff.c, 6.18] for the allocating (writer's) CPU's next NET_RX softirq unless
//! reader and writer share a CPU (`reuse`, the device spec's `reuse=on`). Not modelled: the
//! 32-byte rule (a page with fewer than 32 bytes left is not used): where a chunk of a write
//! ends is not known to a capture's replay (pagefrag.py says why).

use std::collections::VecDeque;

use crate::constants::SKB_FRAG_PAGE_SIZE;

/// One writer's page frag (struct page_frag) and the layout of its unacknowledged bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageFrag {
    /// In the current page; -1: no page yet.
    pub offset: i64,
    /// Seqs where a page piece starts, ascending.
    pub breaks: VecDeque<i64>,
    /// The reader's frees are immediate (reader and writer on one CPU).
    pub reuse: bool,
    /// The receiver holds skbs (queued, backlog, out of order).
    pub peer_holds: bool,
    /// When the receiver last let go of all of them.
    pub peer_freed_ns: i64,
}

impl Default for PageFrag {
    fn default() -> Self {
        PageFrag {
            offset: -1,
            breaks: VecDeque::new(),
            reuse: false,
            peer_holds: false,
            peer_freed_ns: -1,
        }
    }
}

impl PageFrag {
    /// skb_page_frag_refill()'s page_ref_count() == 1: nothing but the frag references the
    /// current page -- the sender `idle` (every byte written acknowledged), the receiver
    /// holding no skb, and (unless `reuse`) its last free flushed by a transmission of the
    /// writer's since (`last_tx_ns`).
    pub fn page_free(&self, idle: bool, last_tx_ns: i64) -> bool {
        if self.offset < 0 || !idle || self.peer_holds {
            return false;
        }
        self.reuse || self.peer_freed_ns < last_tx_ns
    }

    /// Lay out one chunk of a write, [seq, seq + n) (what one skb takes of a write). `free`:
    /// the page is free at the chunk's refill (page_free(); only a write's first chunk).
    pub fn copy(&mut self, mut seq: i64, mut n: i64, mut free: bool) {
        let size = SKB_FRAG_PAGE_SIZE;
        while n > 0 {
            if free || self.offset < 0 || self.offset >= size {
                self.offset = 0;
                if self.breaks.back() != Some(&seq) {
                    self.breaks.push_back(seq);
                }
                free = false;
            }
            let c = n.min(size - self.offset);
            self.offset += c;
            seq += c;
            n -= c;
        }
    }

    /// Page fragments of the sender's bytes [seq, seq + length): one, plus one per page piece
    /// starting inside.
    pub fn frags(&self, seq: i64, length: i64) -> i64 {
        if length <= 0 {
            return 0;
        }
        // the breaks are ascending and a new segment lies at the stream's end: walk back from
        // the newest until a break at or before seq (a fast sender keeps a window's worth
        // of pages in flight; only a retransmission walks further)
        let end = seq + length;
        let mut n = 1;
        for &b in self.breaks.iter().rev() {
            if b <= seq {
                break;
            }
            if b < end {
                n += 1;
            }
        }
        n
    }

    /// Forget breaks no unacknowledged segment can start after (at or below snd_una; the
    /// newest is kept: the current page's).
    pub fn release(&mut self, una: i64) {
        while self.breaks.len() > 1 && self.breaks[1] <= una {
            self.breaks.pop_front();
        }
    }

    /// The receiver's queues went from empty to holding skbs or back (`now`: when).
    pub fn on_peer(&mut self, holds: bool, now: i64) {
        if self.peer_holds && !holds {
            self.peer_freed_ns = now;
        }
        self.peer_holds = holds;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_laid_out_page_after_page() {
        let mut pf = PageFrag::default();
        for k in 0..30 {
            pf.copy(1 + k * 1448, 1448, false);
        }
        // 22 writes fill 31856 bytes; the 23rd crosses into the second page
        assert_eq!(pf.frags(1 + 22 * 1448, 1448), 2);
        assert_eq!(pf.frags(1 + 21 * 1448, 1448), 1);
        assert_eq!(pf.breaks, VecDeque::from(vec![1, 1 + SKB_FRAG_PAGE_SIZE]));
    }

    #[test]
    fn a_free_page_restarts_at_offset_zero() {
        let mut pf = PageFrag {
            reuse: true,
            ..PageFrag::default()
        };
        pf.copy(1, 1448, false);
        pf.on_peer(true, 10);
        pf.on_peer(false, 20);
        assert!(
            !pf.page_free(false, 15),
            "unacknowledged bytes hold the page"
        );
        assert!(pf.page_free(true, 15));
        pf.copy(1449, 1448, true);
        assert_eq!(pf.offset, 1448);
        assert_eq!(pf.breaks.back(), Some(&1449));
        // the page boundary now falls 1448 bytes later in the stream
        for k in 2..30 {
            pf.copy(1 + k * 1448, 1448, false);
        }
        assert_eq!(pf.frags(1 + 22 * 1448, 1448), 1);
        assert_eq!(pf.frags(1 + 23 * 1448, 1448), 2);
    }

    #[test]
    fn a_deferred_free_needs_a_transmission_after_it() {
        let mut pf = PageFrag::default();
        pf.copy(1, 1448, false);
        pf.on_peer(true, 10);
        pf.on_peer(false, 20);
        assert!(
            !pf.page_free(true, 15),
            "freed after the writer's last transmission"
        );
        assert!(pf.page_free(true, 25));
    }

    #[test]
    fn a_full_page_takes_a_new_one_and_old_breaks_are_forgotten() {
        let mut pf = PageFrag::default();
        pf.copy(1, SKB_FRAG_PAGE_SIZE - 8, false);
        pf.copy(SKB_FRAG_PAGE_SIZE - 7, 100, false);
        assert_eq!(pf.offset, 92);
        assert_eq!(pf.frags(SKB_FRAG_PAGE_SIZE - 7, 100), 2);
        assert_eq!(pf.frags(SKB_FRAG_PAGE_SIZE + 1, 40), 1);
        pf.release(SKB_FRAG_PAGE_SIZE + 1);
        assert_eq!(pf.breaks, VecDeque::from(vec![SKB_FRAG_PAGE_SIZE + 1]));
    }
}
