//! The socket owned by the user, and its backlog: tcpsim/core/backlog.py, room for room.
//!
//! While an application is inside recvmsg() or sendmsg() it holds the socket (lock_sock():
//! "owned by user"). A segment arriving meanwhile is parked by tcp_add_backlog()
//! [net/ipv4/tcp_ipv4.c, 6.18], coalesced into the backlog's tail skb when it can be;
//! release_sock() [net/core/sock.c] -> __release_sock() feeds the parked skbs, in order, to
//! tcp_v4_do_rcv() (one ACK decision per merged skb), and tcp_release_cb()
//! [net/ipv4/tcp_output.c] runs what was deferred meanwhile. How long a call holds the
//! socket is the application's `owns_socket` (workload.py); 0 never owns it. What is not
//! modelled: backlog.py's module docstring.

use std::mem;

use crate::constants::ICSK_ACK_SCHED;
use crate::memory::{skb_condense, skb_try_coalesce};
use crate::segment::{Segment, ACK, AE, CWR, ECE, RST, SYN, URG};
use crate::skb::Skb;
use crate::socket::TcpSocket;

/// tcp_add_backlog(): neither skb may carry these, and both must carry ACK.
const NO_COALESCE: i64 = SYN | RST | URG;
/// ... and these must be equal in both.
const SAME_ECN: i64 = ECE | CWR | AE;

impl TcpSocket {
    /// backlog.py `hold`: the application holds the socket (lock_sock() in
    /// recvmsg/sendmsg) from `now` for `hold_ns`; a hold overlapping the current one
    /// extends it.
    pub fn hold(&mut self, now: i64, hold_ns: i64) {
        if hold_ns <= 0 {
            return;
        }
        self.release_due(now);
        self.mem.owned_until = self.mem.owned_until.max(now + hold_ns);
    }

    /// backlog.py `release_due`: run release_sock() if the hold has ended by `now`.
    pub fn release_due(&mut self, now: i64) {
        let until = self.mem.owned_until;
        if until != 0 && until <= now {
            self.set_clock(now);
            self.release_sock();
        }
    }

    /// backlog.py `backlog_wanted`: tcp_v4_rcv() parks `seg` in the backlog of an
    /// established socket the user owns.
    pub fn backlog_wanted(&self, _seg: &Segment) -> bool {
        self.mem.owned_until > self.now && self.conn.state.synchronized()
    }

    /// tcp_add_backlog() [net/ipv4/tcp_ipv4.c, 6.18]: coalesce `seg`'s skb into the
    /// backlog's tail (no limit: the tail's fragments bound it), else append it unless the
    /// backlog and the receive queue already hold more than the limit.
    pub fn add_backlog(&mut self, seg: &Segment) {
        let mut skb = self.segment_skb(seg);
        let peer_released = self.rcv.peer_released;
        skb_condense(&mut skb, peer_released);
        if let Some((tseg, tskb)) = self.backlog.last_mut() {
            if backlog_may_merge(tseg, seg) {
                if let Some(delta) = skb_try_coalesce(tskb, &skb, peer_released) {
                    *tseg = merged_segment(tseg, seg);
                    self.mem.sk_backlog_len += delta;
                    self.mib.TCPBacklogCoalesce += 1;
                    self.trace_seg("backlog", "coalesced", seg, skb.truesize, "");
                    return;
                }
            }
        }
        if self.mem.sk_backlog_len + self.mem.sk_rmem_alloc > self.backlog_limit() {
            self.mib.TCPBacklogDrop += 1; // sk_add_backlog(): sk_rcvqueues_full()
            self.trace_seg("drop", "backlog full", seg, skb.truesize, "SOCKET_BACKLOG");
            return;
        }
        self.mem.sk_backlog_len += skb.truesize;
        let truesize = skb.truesize;
        self.backlog.push((seg.clone(), skb));
        self.trace_seg("backlog", "queued", seg, truesize, "");
    }

    /// tcp_add_backlog()'s limit [net/ipv4/tcp_ipv4.c, 6.18]: twice sk_rcvbuf, half
    /// sk_sndbuf, and 64 KiB of headroom for the owner's pruning. The doubling is
    /// ec00ed472bdb ("tcp: avoid premature drops in tcp_add_backlog()", 6.10), taken into the
    /// stable trees in June 2024 (its 5.10 stable review mail, 064/317): every profile here
    /// models a stable release after it, so the limit is the same for all. A point release
    /// before it (linux-6.1.59) had sk_rcvbuf + sk_sndbuf / 2 + 64 KiB: not modelled
    /// (UNVERIFIED which point releases carry it).
    pub fn backlog_limit(&self) -> i64 {
        (2 * self.mem.sk_rcvbuf + self.snd.sk_sndbuf / 2 + 65536).min(0xFFFF_FFFF)
    }

    /// release_sock() [net/core/sock.c, 6.18]: __release_sock() processes the backlog's
    /// skbs in order (tcp_v4_do_rcv(): tcp_rcv_established() with each skb as parked,
    /// merged) with the socket still owned -- sk_backlog.len counts in tcp_space() until
    /// the last one is done -- then tcp_release_cb() [tcp_output.c, 6.18] runs a
    /// delayed-ACK timer that fell due meanwhile (tcp_delack_timer() deferred it) and sends
    /// the ACK __tcp_ack_snd_check() deferred, if one is still scheduled.
    pub fn release_sock(&mut self) {
        let q = mem::take(&mut self.backlog);
        self.releasing = true;
        for (seg, skb) in q {
            if !self.conn.state.synchronized() {
                break;
            }
            self.rcv_established(&seg, Some(skb));
        }
        self.releasing = false;
        self.mem.sk_backlog_len = 0;
        self.mem.owned_until = 0;
        if self.ack.delack_deadline != 0 && self.ack.delack_deadline <= self.now {
            self.ack.delack_deadline = 0;
            self.delack_timer();
        }
        if self.ack_deferred {
            // TCP_ACK_DEFERRED
            self.ack_deferred = false;
            if self.ack.ack_pending & ICSK_ACK_SCHED != 0 {
                self.send_ack();
            }
        }
    }

    /// __tcp_ack_snd_check() [net/ipv4/tcp_input.c, 6.7+]: an ACK due now while
    /// __release_sock() runs is deferred to tcp_release_cb() (one ACK after the whole
    /// backlog) when the kernel has net.ipv4.tcp_backlog_ack_defer and it is on.
    pub fn defer_ack(&mut self) -> bool {
        if self.releasing
            && self.sysctl.tcp_backlog_ack_defer != 0
            && self.k.sysctls().contains(&"tcp_backlog_ack_defer")
        {
            self.ack_deferred = true;
            return true;
        }
        false
    }
}

/// tcp_add_backlog()'s header tests [net/ipv4/tcp_ipv4.c, 6.18]: `seg` continues the tail,
/// neither has SYN, RST or URG, both have ACK, their ECE/CWR/AE bits agree and their
/// options are identical (the same timestamp pair, the same SACK blocks).
pub fn backlog_may_merge(tail: &Segment, seg: &Segment) -> bool {
    tail.end_seq() == seg.seq
        && (tail.flags | seg.flags) & NO_COALESCE == 0
        && tail.flags & seg.flags & ACK != 0
        && (tail.flags ^ seg.flags) & SAME_ECN == 0
        && tail.tsval == seg.tsval
        && tail.tsecr == seg.tsecr
        && tail.sacks == seg.sacks
}

/// The backlog tail's header after tcp_add_backlog() merged `seg` into it: the end moves
/// on, the ACK and window are the newer ACK's (not one before the tail's), the flags are
/// ORed, and the segment size carried is the larger of the two (gso_size).
pub fn merged_segment(tail: &Segment, seg: &Segment) -> Segment {
    let newer = seg.ack - tail.ack >= 0;
    let gso = |s: &Segment| if s.gso_size != 0 { s.gso_size } else { s.len };
    let mut m = Segment::new(
        tail.seq,
        tail.len + seg.len,
        tail.flags | seg.flags,
        if newer { seg.ack } else { tail.ack },
        if newer { seg.win } else { tail.win },
    );
    m.tsval = tail.tsval;
    m.tsecr = tail.tsecr;
    m.sacks = tail.sacks.clone();
    m.gso_size = gso(tail).max(gso(seg));
    m.tx_ns = tail.tx_ns;
    m.tx_segs = tail.tx_segs.max(seg.tx_segs);
    m.frags = tail.frags + seg.frags;
    m
}

/// A parked skb as tcp_add_backlog() keeps it: the header and the skb the device built.
pub type Parked = (Segment, Skb);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::open_receiver;
    use crate::segment::{FIN, PSH};

    fn data(seq: i64, tsval: i64) -> Segment {
        let mut d = Segment::new(seq, 1448, ACK | PSH, 1, 502);
        d.tsval = tsval;
        d.tsecr = 1;
        d.tx_segs = 10;
        d
    }

    #[test]
    fn only_contiguous_acks_with_identical_options_and_ecn_merge() {
        let a = data(1, 5);
        assert!(backlog_may_merge(&a, &data(1449, 5)));
        assert!(!backlog_may_merge(&a, &data(1450, 5)), "a gap");
        assert!(!backlog_may_merge(&a, &data(1449, 6)), "another timestamp");
        let mut b = data(1449, 5);
        b.flags |= ECE;
        assert!(!backlog_may_merge(&a, &b), "ECE differs");
        b.flags = PSH;
        assert!(!backlog_may_merge(&a, &b), "no ACK");
        b.flags = ACK | URG;
        assert!(!backlog_may_merge(&a, &b), "URG");
        b = data(1449, 5);
        b.sacks = vec![(5000, 6000)];
        assert!(!backlog_may_merge(&a, &b), "other SACK blocks");
    }

    #[test]
    fn a_merged_header_keeps_the_newer_ack_and_the_largest_segment() {
        let mut a = data(1, 5);
        a.ack = 100;
        let mut b = data(1449, 5);
        b.ack = 90; // older: the tail keeps its own ACK and window
        b.win = 7;
        b.flags |= FIN;
        let m = merged_segment(&a, &b);
        assert_eq!((m.seq, m.len, m.ack, m.win), (1, 2896, 100, 502));
        assert_eq!((m.flags & FIN, m.gso_size), (FIN, 1448));
        b.ack = 200;
        assert_eq!(merged_segment(&a, &b).win, 7);
    }

    #[test]
    fn a_burst_while_owned_is_one_skb_and_one_ack_at_release() {
        let mut sk = open_receiver("linux-6.18", "veth", false).unwrap();
        let t = 5_000_000;
        let nxt = sk.rcv.rcv_nxt;
        sk.hold(t, 60_000);
        for i in 0..10 {
            sk.on_segment(t, &data(nxt + i * 1448, 3));
        }
        assert_eq!(sk.rcv.rcv_nxt, nxt);
        assert_eq!(sk.mib.TCPBacklogCoalesce, 9);
        assert_eq!(sk.mem.sk_backlog_len, 832 + 10 * 1448);
        assert_eq!(sk.next_deadline(), t + 60_000);
        sk.take_outbox();
        sk.on_timer(t + 60_000);
        assert_eq!(sk.rcv.rcv_nxt, nxt + 10 * 1448);
        assert_eq!((sk.mem.sk_backlog_len, sk.mem.owned_until), (0, 0));
        assert_eq!(sk.mem.receive_queue.len(), 1);
        let acks = sk.take_outbox();
        assert_eq!(acks.len(), 1);
        assert_eq!(acks[0].ack, nxt + 10 * 1448);
    }
}
