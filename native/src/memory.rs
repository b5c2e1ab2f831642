//! Receive-memory accounting and the mechanics the prune policies use.
//!
//! Mirrors tcpsim/core/memory.py (`MemoryMixin`) as an `impl TcpSocket` block. `sk_rmem_alloc`
//! is the sum of the truesize of every skb charged to the socket; `sk_forward_alloc` is the
//! page-granular quota charged against the protocol's memory pool. This module holds the
//! mechanics (charging, freeing, coalescing, collapsing, dropping OFO skbs); *when* to use
//! them is decided by the kernel eras (src/models/).

use std::collections::VecDeque;
use std::mem;

use crate::arith::ceil_div;
use crate::constants::{
    data_align, kmalloc_size, skb_truesize, COLLAPSE_CHUNK, MAX_SKB_FRAGS, PAGE_SIZE, SKB_SHINFO,
    SKB_STRUCT, SKB_WITH_OVERHEAD_PAGE,
};
use crate::skb::{Layout, Skb};
use crate::socket::TcpSocket;

/// The kinds of __sk_mem_schedule() [include/net/sock.h]: SK_MEM_SEND, SK_MEM_RECV.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemKind {
    Send,
    Recv,
}

/// SOCK_MIN_SNDBUF [include/net/sock.h]: 2 * TCP_SKB_MIN_TRUESIZE (2048 + the sk_buff).
pub const SOCK_MIN_SNDBUF: i64 = 2 * (2048 + SKB_STRUCT);

/// The queued skb a segment is coalesced into: the tail of sk_receive_queue or of the
/// out-of-order queue (the Python callers pass `q[-1]` / `ofo[-1]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    Receive,
    Ofo,
}

/// skb_try_coalesce() [net/core/skbuff.c] on the skbs alone: merge `frm` into `to` and return
/// the truesize delta to charge, or None when they cannot be merged (gap, FIN, a `to` still
/// shared with the sender -- cloned until the peer released `to.cloned_until` -- or the
/// fragment limit).
pub fn skb_try_coalesce(to: &mut Skb, frm: &Skb, peer_released: i64) -> Option<i64> {
    if frm.seq != to.end_seq || to.fin || to.cloned_until > peer_released {
        return None;
    }
    let length = frm.len;
    let delta = if length <= to.tailroom && to.nfrags == 0 {
        // copied into the linear tail: free
        to.tailroom -= length;
        to.linear += length;
        0
    } else if frm.linear != 0 {
        // payload in the head: steal it as one more fragment if it is a page fragment
        if to.nfrags + frm.nfrags >= MAX_SKB_FRAGS || !frm.head_frag {
            return None;
        }
        to.nfrags += frm.nfrags + 1;
        frm.truesize - SKB_STRUCT
    } else {
        // payload in page fragments: move the descriptors, keep their memory
        if to.nfrags + frm.nfrags > MAX_SKB_FRAGS {
            return None;
        }
        to.nfrags += frm.nfrags;
        frm.truesize - skb_truesize(frm.head)
    };
    to.len += length;
    to.end_seq = frm.end_seq;
    to.fin = frm.fin;
    to.truesize += delta;
    Some(delta)
}

/// skb_condense() [net/core/skbuff.c, 6.18], as tcp_add_backlog() and tcp_data_queue_ofo()
/// [tcp_input.c] run it on an skb about to be parked: a payload in page fragments that fits
/// the linear tailroom is pulled into the head and truesize becomes the head's alone, unless
/// the skb is still cloned (`cloned_until`). memory.py `skb_condense`: on a local pair a
/// software-GSO segment of 64 B or less becomes a linear skb whose kmalloc'd head
/// skb_try_coalesce() cannot steal.
pub fn skb_condense(skb: &mut Skb, peer_released: i64) {
    let data = skb.len - skb.linear;
    if data == 0 || skb.nfrags == 0 || data > skb.tailroom || skb.cloned_until > peer_released {
        return;
    }
    skb.linear += data;
    skb.tailroom -= data;
    skb.nfrags = 0;
    skb.truesize = skb_truesize(skb.head);
}

/// A fresh linear skb of up to one page at `start`, as tcp_collapse() allocates it.
fn collapse_skb(start: i64, copy: i64) -> Skb {
    let alloc = kmalloc_size(data_align(copy) + SKB_SHINFO);
    let head = alloc - SKB_SHINFO;
    let layout = Layout {
        head,
        tailroom: head,
        ..Layout::default()
    };
    Skb::new(start, 0, skb_truesize(head), layout, false)
}

impl TcpSocket {
    /// Pages this socket holds in its pool: its forward-alloc quota and what the receive and
    /// send queues charged to it (always whole pages: the quota is taken and given back in
    /// pages) -- sk_forward_alloc + sk_rmem_alloc + sk_wmem_queued, in pages.
    pub fn charged_pages(&self) -> i64 {
        let m = &self.mem;
        (m.sk_forward_alloc + m.sk_rmem_alloc + m.wmem_charged).div_euclid(PAGE_SIZE)
    }

    /// Models `sk_rmem_schedule()` [include/net/sock.h, 5.15-6.18]: make `size` bytes of
    /// quota available -- at once if sk_forward_alloc covers them, else by taking whole pages
    /// from the host's pool (`__sk_mem_schedule`, SK_MEM_RECV), which may refuse them under
    /// tcp_mem (pfmemalloc emergency skbs are not modelled).
    pub fn rmem_schedule(&mut self, size: i64) -> bool {
        let need = size - self.mem.sk_forward_alloc;
        need <= 0 || self.mem_schedule(need, MemKind::Recv)
    }

    /// Models `__sk_mem_schedule()` [net/core/sock.c, 5.15-6.18]: add the pages that cover
    /// `size` to sk_forward_alloc and raise the pool by them; take them back if the pool
    /// refuses.
    pub fn mem_schedule(&mut self, size: i64, kind: MemKind) -> bool {
        let amt = ceil_div(size, PAGE_SIZE); // sk_mem_pages()
        self.mem.sk_forward_alloc += amt * PAGE_SIZE;
        if self.mem_raise_allocated(size, amt, kind) {
            return true;
        }
        self.mem.sk_forward_alloc -= amt * PAGE_SIZE;
        false
    }

    /// Models `__sk_mem_raise_allocated()` [net/core/sock.c, 5.15-6.18] (memory.py
    /// `mem_raise_allocated`): add `amt` pages to the pool and, for a socket of a memory
    /// cgroup, charge them to it (mem_cgroup_charge_skmem(), src/memcg.rs: a refusal goes
    /// straight to the refusal, past every tcp_mem rule); then, with `allocated` the global
    /// counter, at most tcp_mem[0] leaves pressure and grants, above tcp_mem[1] enters
    /// pressure, above tcp_mem[2] refuses; otherwise granted under the guaranteed minimum
    /// (tcp_rmem[0] / tcp_wmem[0]), outside pressure, or within the fair share
    /// (sockets_allocated as percpu_counter_read_positive() sees it x this socket's pages
    /// < tcp_mem[2]). A refused send charge
    /// moderates sk_sndbuf and is granted when the send queue is at its sndbuf (the memcg
    /// charged with __GFP_NOFAIL if it had refused); a refusal takes the pages back out of
    /// the pool and the memcg.
    pub fn mem_raise_allocated(&mut self, size: i64, amt: i64, kind: MemKind) -> bool {
        let blocking = kind == MemKind::Send;
        if self.mem.sk_bypass_prot_mem {
            // 6.19: outside the protocol's accounting
            return match &self.memcg {
                None => true,
                Some(m) if m.charge_skmem(amt, self.now, false, blocking) => true,
                Some(_) => self.mem_suppress(size, amt, kind, false, false),
            };
        }
        // borrowed, not cloned: an Arc clone is a locked add on a count every socket of the
        // host shares
        let proto = &*self.proto;
        proto.memory_allocated_add(self.cpu, amt);
        let memcg = self.memcg.is_some();
        if let Some(m) = &self.memcg {
            if !m.charge_skmem(amt, self.now, false, blocking) {
                return self.mem_suppress(size, amt, kind, true, false);
            }
        }
        let allocated = proto.memory_allocated();
        if allocated <= proto.limit(0) {
            proto.leave_pressure(self.now);
            return true;
        }
        if allocated > proto.limit(1) {
            proto.enter_pressure(self.now);
        }
        let mem = &self.mem;
        if allocated <= proto.limit(2) {
            let guaranteed = match kind {
                MemKind::Recv => mem.sk_rmem_alloc < self.sysctl.tcp_rmem.0,
                MemKind::Send => mem.wmem_charged < self.sysctl.tcp_wmem.0,
            };
            if guaranteed || !proto.under_pressure() {
                return true;
            }
            let own = ceil_div(
                mem.wmem_charged + mem.sk_rmem_alloc + mem.sk_forward_alloc,
                PAGE_SIZE,
            );
            let sockets = proto.sockets_allocated_read_positive();
            if proto.limit(2) > sockets * own {
                return true;
            }
        }
        self.mem_suppress(size, amt, kind, true, memcg)
    }

    /// `suppress_allocation` of __sk_mem_raise_allocated() (memory.py `_mem_suppress`): a
    /// send charge moderates sk_sndbuf and is granted when the send queue is at its sndbuf
    /// (a memcg that refused charged with __GFP_NOFAIL); else the pages leave the pool
    /// (`pooled`) and the memcg (`charged`), and the charge is refused.
    fn mem_suppress(
        &mut self,
        size: i64,
        amt: i64,
        kind: MemKind,
        pooled: bool,
        charged: bool,
    ) -> bool {
        if kind == MemKind::Send {
            self.moderate_sndbuf();
            if self.mem.wmem_charged + size >= self.snd.sk_sndbuf {
                if let (Some(m), false) = (&self.memcg, charged) {
                    m.charge_skmem(amt, self.now, true, true);
                }
                return true;
            }
        }
        if pooled {
            self.proto.memory_allocated_sub(self.cpu, amt);
        }
        if let (Some(m), true) = (&self.memcg, charged) {
            m.uncharge_skmem(amt);
        }
        false
    }

    /// Models `sk_forced_mem_schedule()` [net/ipv4/tcp_output.c, 5.15-6.18]: cover `size`
    /// with whole pages charged to the pool without any limit and without touching the
    /// pressure state -- how tcp_data_queue() admits an in-order segment to an empty receive
    /// queue, and why a host's pool can sit above tcp_mem[2]. A socket's memcg is charged
    /// with __GFP_NOFAIL (past its limit too).
    pub fn forced_mem_schedule(&mut self, size: i64) {
        let need = size - self.mem.sk_forward_alloc;
        if need > 0 {
            let amt = ceil_div(need, PAGE_SIZE);
            self.mem.sk_forward_alloc += amt * PAGE_SIZE;
            if !self.mem.sk_bypass_prot_mem {
                self.proto.memory_allocated_add(self.cpu, amt);
            }
            if let Some(m) = &self.memcg {
                // __GFP_NOFAIL: past memory.max / the tcp limit
                m.charge_skmem(amt, self.now, true, false);
            }
        }
    }

    /// Models `sk_stream_moderate_sndbuf()` [include/net/sock.h]: a refused send charge cuts
    /// sk_sndbuf to half the queued bytes (not below SOCK_MIN_SNDBUF; SO_SNDBUF locks are
    /// not modelled).
    pub fn moderate_sndbuf(&mut self) {
        let half = self.mem.wmem_charged >> 1;
        self.snd.sk_sndbuf = self.snd.sk_sndbuf.min(half).max(SOCK_MIN_SNDBUF);
    }

    /// Models the send queue's share of the socket's one memory quota (memory.py
    /// `wmem_settle`): every skb tcp_sendmsg_locked() queues is charged to `sk_forward_alloc`
    /// with its truesize (sk_wmem_schedule() + sk_mem_charge(), whole pages from the pool when
    /// short), and tcp_wmem_free_skb() gives it back when the ACK frees the skb
    /// (sk_mem_uncharge(), which reclaims whole pages) [net/ipv4/tcp.c, include/net/sock.h,
    /// 6.18]. Run when an event has changed `sk_wmem_queued`: `sk_forward_alloc` ends as the
    /// kernel's, the part of a page the send and receive queues leave over -- what
    /// tcp_rcv_established()'s fast path compares an arriving skb's truesize with. The pages
    /// come from the host's pool (SK_MEM_SEND); a refusal cannot take back bytes already
    /// queued, so they are charged anyway and the moderated sk_sndbuf holds the writer back.
    pub fn wmem_settle(&mut self) {
        let queued = self.wmem_queued();
        let delta = queued - self.mem.wmem_charged;
        if delta > 0 {
            let need = delta - self.mem.sk_forward_alloc;
            if need > 0 && !self.mem_schedule(need, MemKind::Send) {
                self.forced_mem_schedule(delta);
            }
            self.mem.sk_forward_alloc -= delta;
        } else if delta < 0 {
            self.mem_reclaim(-delta);
        }
        self.mem.wmem_charged = queued;
    }

    /// Models `sk_mem_uncharge()` + `sk_mem_reclaim()` [include/net/sock.h, 6.x]: give `size`
    /// back to the quota and return its whole pages to the pool (`__sk_mem_reclaim`), keeping
    /// less than one page.
    pub fn mem_reclaim(&mut self, size: i64) {
        let mut fwd = self.mem.sk_forward_alloc + size;
        if fwd >= PAGE_SIZE {
            self.mem_reduce_allocated(fwd / PAGE_SIZE);
            fwd &= PAGE_SIZE - 1;
        }
        self.mem.sk_forward_alloc = fwd;
    }

    /// Models `__sk_mem_reduce_allocated()` [net/core/sock.c, 6.x]: give `pages` back to the
    /// pool (and uncharge them from the socket's memcg, mem_cgroup_uncharge_skmem()); leave
    /// pressure once the global counter is below tcp_mem[0].
    pub fn mem_reduce_allocated(&mut self, pages: i64) {
        if let Some(m) = &self.memcg {
            m.uncharge_skmem(pages);
        }
        if self.mem.sk_bypass_prot_mem {
            return;
        }
        let proto = &self.proto;
        proto.memory_allocated_sub(self.cpu, pages);
        if proto.under_pressure() && proto.memory_allocated() < proto.limit(0) {
            proto.leave_pressure(self.now);
        }
    }

    /// Models `tcp_under_memory_pressure()` [include/net/tcp.h]: the socket's memcg is under
    /// socket pressure (mem_cgroup_under_socket_pressure()), or the host's pool is (never
    /// for a 6.19 socket that bypasses it).
    pub fn under_memory_pressure(&self) -> bool {
        (self.proto.under_pressure() && !self.mem.sk_bypass_prot_mem) || self.memcg_pressure()
    }

    /// tcp_under_memory_pressure()'s memcg term alone (memory.py `memcg_pressure`).
    pub fn memcg_pressure(&self) -> bool {
        self.memcg
            .as_ref()
            .is_some_and(|m| m.under_socket_pressure())
    }

    /// memory.py `release_all`: the socket is freed -- sk_stream_kill_queues()
    /// [net/core/stream.c] purges its queues, sk_mem_reclaim_final() [include/net/sock.h]
    /// gives back the rest of its quota: every page it held back to its pool, one socket
    /// less in it.
    pub fn release_all(&mut self) {
        let pages = self.charged_pages();
        self.mem_reduce_allocated(pages);
        self.proto.sockets_allocated_add(self.cpu, -1);
        self.mem.receive_queue.clear();
        self.mem.ofo_queue.clear();
        self.mem.sk_rmem_alloc = 0;
        self.mem.sk_forward_alloc = 0;
        self.mem.wmem_charged = 0;
    }

    /// skb_set_owner_r() / the coalesce delta: rmem += size, quota -= size.
    pub fn charge(&mut self, size: i64) {
        self.mem.sk_rmem_alloc += size;
        self.mem.sk_forward_alloc -= size;
    }

    /// Models `sock_rfree()` + `sk_mem_uncharge()` [6.x]: give back `size` and reclaim
    /// whole pages of quota, keeping less than one page (sk_mem_reclaim).
    pub fn uncharge(&mut self, size: i64) {
        self.mem.sk_rmem_alloc -= size;
        self.mem_reclaim(size);
    }

    /// Models `tcp_try_coalesce()` + `skb_try_coalesce()`: merge `frm` into the tail skb of
    /// the queue `to`. Charges only the delta (no rcvbuf check: coalescing never consults
    /// sk_rcvbuf). Returns false when the skbs cannot be merged (gap, FIN, fragment limit)
    /// or the queue is empty.
    pub fn coalesce_into(&mut self, to: Tail, frm: &Skb) -> bool {
        let peer_released = self.rcv.peer_released;
        let tail = match to {
            Tail::Receive => self.mem.receive_queue.back_mut(),
            Tail::Ofo => self.mem.ofo_queue.last_mut(),
        };
        let Some(delta) = tail.and_then(|t| skb_try_coalesce(t, frm, peer_released)) else {
            return false;
        };
        self.charge(delta);
        self.mib.TCPRcvCoalesce += 1;
        true
    }

    /// Models `tcp_collapse()` over sk_receive_queue, range [copied_seq, rcv_nxt).
    pub fn collapse_receive_queue(&mut self) {
        if self.mem.receive_queue.is_empty() {
            return;
        }
        let q: Vec<Skb> = mem::take(&mut self.mem.receive_queue).into();
        let n = q.len();
        let (start, end) = (self.rcv.copied_seq, self.rcv.rcv_nxt);
        self.mem.receive_queue = VecDeque::from(self.collapse(q, 0, n, start, end));
    }

    /// Models `tcp_collapse_ofo_queue()`: collapse each contiguous OFO range that holds more
    /// than one skb or at least a page of payload; give up once the tiny ranges skipped add
    /// up to more than rcvbuf/8.
    pub fn collapse_ofo_queue(&mut self) {
        let ofo = mem::take(&mut self.mem.ofo_queue);
        self.mem.ofo_queue = self.collapse_ofo_ranges(ofo);
    }

    fn collapse_ofo_ranges(&mut self, mut ofo: Vec<Skb>) -> Vec<Skb> {
        let mut i = 0;
        let mut sum_tiny = 0;
        while i < ofo.len() {
            let head = i;
            let (mut start, mut end) = (ofo[i].seq, ofo[i].end_seq);
            let mut range_truesize = ofo[i].truesize;
            let mut j = i + 1;
            while j < ofo.len() && ofo[j].seq <= end && ofo[j].end_seq >= start {
                range_truesize += ofo[j].truesize;
                start = start.min(ofo[j].seq);
                end = end.max(ofo[j].end_seq);
                j += 1;
            }
            if range_truesize != ofo[head].truesize || end - start >= SKB_WITH_OVERHEAD_PAGE {
                let before = ofo.len();
                ofo = self.collapse(ofo, head, j, start, end);
                j -= before - ofo.len();
            } else {
                sum_tiny += range_truesize;
                if sum_tiny > self.mem.sk_rcvbuf >> 3 {
                    return ofo;
                }
            }
            i = j;
        }
        ofo
    }

    /// Models `tcp_collapse()` on q[head..tail]: copy the payload of bloated skbs into fresh
    /// linear skbs of up to one page and free the originals (TCPRcvCollapsed).
    fn collapse(
        &mut self,
        mut q: Vec<Skb>,
        head: usize,
        mut tail: usize,
        mut start: i64,
        end: i64,
    ) -> Vec<Skb> {
        let mut i = head;
        while i < tail {
            let skb = &q[i];
            if start >= skb.end_seq {
                // no new bits: free it
                let skb = q.remove(i);
                self.free_collapsed(&skb);
                tail -= 1;
                continue;
            }
            if !skb.fin && (self.k.win_from_space(self, skb.truesize) > skb.len || skb.seq < start)
            {
                break;
            }
            if i + 1 < tail && skb.end_seq != q[i + 1].seq {
                break;
            }
            start = skb.end_seq; // decided to skip this one
            i += 1;
        }
        if i >= tail || q[i].fin {
            return q;
        }
        let rest = q.split_off(i);
        let mut out = q;
        let mut rest_i = 0;
        let tail = tail - i;
        while start < end {
            let mut copy = COLLAPSE_CHUNK.min(end - start);
            let nskb = collapse_skb(start, copy);
            self.charge(nskb.truesize);
            out.push(nskb);
            while copy > 0 {
                let skb = &rest[rest_i];
                let fin = i64::from(skb.fin);
                let size = skb.end_seq - start - fin;
                if size > 0 {
                    let size = copy.min(size);
                    self.mem.collapsed_bytes += size;
                    let nskb = out.last_mut().expect("just pushed");
                    nskb.len += size;
                    nskb.linear += size;
                    nskb.end_seq += size;
                    nskb.tailroom -= size;
                    copy -= size;
                    start += size;
                }
                let skb = &rest[rest_i];
                if start >= skb.end_seq - i64::from(skb.fin) {
                    let truesize = skb.truesize;
                    self.uncharge(truesize);
                    self.mib.TCPRcvCollapsed += 1;
                    rest_i += 1;
                    if rest_i >= tail || rest[rest_i].fin {
                        out.extend_from_slice(&rest[rest_i..]);
                        return out;
                    }
                }
            }
        }
        out.extend_from_slice(&rest[rest_i..]);
        out
    }

    /// tcp_collapse_one(): free a source skb whose payload was copied.
    fn free_collapsed(&mut self, skb: &Skb) {
        self.uncharge(skb.truesize);
        self.mib.TCPRcvCollapsed += 1;
    }

    /// Drop the highest-sequence OFO skb (tcp_prune_ofo_queue's unit of work); None when the
    /// queue is empty.
    pub fn ofo_drop_last(&mut self) -> Option<Skb> {
        let skb = self.mem.ofo_queue.pop()?;
        self.uncharge(skb.truesize);
        Some(skb)
    }

    /// Index of the first OFO skb whose seq >= `seq`.
    pub fn ofo_index(&self, seq: i64) -> usize {
        self.mem.ofo_queue.partition_point(|s| s.seq < seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::device;
    use crate::models::kernel_for;
    use crate::sender::SND_SKB_OVERHEAD;
    use crate::socket::SocketParams;
    use crate::sysctl::Sysctls;

    fn socket(profile: &str) -> TcpSocket {
        let k = kernel_for(profile).unwrap();
        TcpSocket::new(k, Sysctls::default(), None, &SocketParams::default()).unwrap()
    }

    fn queue(sk: &mut TcpSocket, dev: &str, lens: &[i64]) {
        let dev = device(dev).unwrap();
        let mut seq = 1;
        for &len in lens {
            let skb = dev.make_skb(seq, len, false, 0, 0, 0);
            sk.rmem_schedule(skb.truesize);
            sk.charge(skb.truesize);
            seq = skb.end_seq;
            sk.mem.receive_queue.push_back(skb);
        }
        sk.rcv.copied_seq = 1;
        sk.rcv.rcv_nxt = seq;
    }

    #[test]
    fn quota_is_charged_in_pages_and_reclaimed_below_one() {
        let mut sk = socket("linux-6.1");
        sk.rmem_schedule(1);
        assert_eq!(sk.mem.sk_forward_alloc, PAGE_SIZE);
        sk.charge(3000);
        assert_eq!(
            (sk.mem.sk_rmem_alloc, sk.mem.sk_forward_alloc),
            (3000, 1096)
        );
        sk.uncharge(3000);
        assert_eq!((sk.mem.sk_rmem_alloc, sk.mem.sk_forward_alloc), (0, 0));
    }

    #[test]
    fn the_send_queue_shares_the_quota_and_leaves_the_rest_of_a_page() {
        // memory.py `wmem_settle`: charged with whole pages, given back on the ACK
        let mut sk = socket("linux-6.18");
        sk.snd.write_queue.push_back(4000);
        sk.snd.write_seq = sk.snd.snd_una + 4000;
        sk.wmem_settle();
        let queued = 4000 + SND_SKB_OVERHEAD;
        assert_eq!(sk.mem.wmem_charged, queued);
        assert_eq!(sk.mem.sk_forward_alloc, (-queued).rem_euclid(PAGE_SIZE));
        sk.rmem_schedule(832); // a small skb fits the rest: no page taken
        assert_eq!(sk.mem.sk_forward_alloc, (-queued).rem_euclid(PAGE_SIZE));
        sk.snd.write_queue.clear();
        sk.snd.write_seq = sk.snd.snd_una;
        sk.wmem_settle();
        assert_eq!((sk.mem.wmem_charged, sk.mem.sk_forward_alloc), (0, 0));
    }

    #[test]
    fn veth_coalesce_charges_the_payload() {
        let mut sk = socket("linux-6.1");
        queue(&mut sk, "veth", &[1000]);
        let frm = device("veth").unwrap().make_skb(1001, 500, false, 0, 0, 0);
        let before = sk.mem.sk_rmem_alloc;
        assert!(sk.coalesce_into(Tail::Receive, &frm));
        assert_eq!(sk.mem.sk_rmem_alloc - before, 500);
        assert_eq!(sk.mem.receive_queue[0].end_seq, 1501);
        assert_eq!(sk.mib.TCPRcvCoalesce, 1);
        assert!(!sk.coalesce_into(Tail::Ofo, &frm), "empty queue");
        let gap = device("veth").unwrap().make_skb(2000, 10, false, 0, 0, 0);
        assert!(!sk.coalesce_into(Tail::Receive, &gap));
    }

    #[test]
    fn skb_try_coalesce_per_layout() {
        let nic = device("nic-2k").unwrap();
        let mut to = nic.make_skb(1, 1000, false, 0, 0, 0);
        let frm = nic.make_skb(1001, 1000, false, 0, 0, 0);
        // payload in a page-fragment head: stolen as a fragment, charged truesize - sk_buff
        assert_eq!(skb_try_coalesce(&mut to, &frm, 0), Some(2304 - SKB_STRUCT));
        assert_eq!((to.nfrags, to.len, to.end_seq), (1, 2000, 2001));
        // the fragment limit: a stolen head takes one more slot, up to MAX_SKB_FRAGS
        to.nfrags = MAX_SKB_FRAGS - 1;
        let next = nic.make_skb(2001, 10, false, 0, 0, 0);
        assert_eq!(skb_try_coalesce(&mut to, &next, 0), Some(2304 - SKB_STRUCT));
        let last = nic.make_skb(2011, 10, false, 0, 0, 0);
        assert_eq!(skb_try_coalesce(&mut to, &last, 0), None);
        // a small segment fits the linear tailroom of a tun skb: copied for free
        let tun = device("tun").unwrap();
        let mut lin = tun.make_skb(1, 100, false, 0, 0, 0);
        let small = tun.make_skb(101, 50, false, 0, 0, 0);
        assert_eq!(skb_try_coalesce(&mut lin, &small, 0), Some(0));
        assert_eq!((lin.linear, lin.tailroom), (150, 438));
        // a shared veth skb is cloned until the peer releases it
        let lo = device("loopback").unwrap();
        let mut shared = lo.make_skb(1, 100, false, 0, 0, 0);
        let more = lo.make_skb(101, 100, false, 0, 0, 0);
        assert_eq!(skb_try_coalesce(&mut shared.clone(), &more, 100), None);
        assert_eq!(skb_try_coalesce(&mut shared, &more, 101), Some(100));
        // a FIN ends the skb
        let mut fin = lo.make_skb(1, 10, true, 0, 0, 0);
        assert_eq!(
            skb_try_coalesce(&mut fin, &lo.make_skb(12, 1, false, 0, 0, 0), 1 << 62),
            None
        );
    }

    #[test]
    fn skb_condense_makes_a_small_fresh_segment_linear_and_unstealable() {
        // a 32 B software-GSO segment on a local pair: pulled into its head's 64 B tailroom
        let soft = device("veth-direct:tso=off").unwrap();
        let mut small = soft.make_skb(1001, 32, false, 0, 13, 0);
        assert_eq!((small.nfrags, small.tailroom, small.truesize), (1, 64, 864));
        skb_condense(&mut small, 0);
        assert_eq!((small.nfrags, small.linear, small.tailroom), (0, 32, 32));
        assert_eq!(small.truesize, skb_truesize(256));
        // its kmalloc'd head cannot be stolen: it stays an skb of its own
        let mut to = soft.make_skb(1, 1000, false, 0, 13, 0);
        assert_eq!(skb_try_coalesce(&mut to, &small, 0), None);
        // 65 B do not fit; a clone (the sender's copy not freed) is left alone
        let mut big = soft.make_skb(1001, 65, false, 0, 13, 0);
        skb_condense(&mut big, 0);
        assert_eq!(big.nfrags, 1);
        let mut clone = soft.make_skb(1001, 32, false, 0, 1, 0);
        skb_condense(&mut clone, 0);
        assert_eq!(clone.nfrags, 1);
        skb_condense(&mut clone, 1033);
        assert_eq!(clone.nfrags, 0);
    }

    #[test]
    fn collapse_packs_small_tun_skbs_into_pages() {
        let mut sk = socket("linux-6.1");
        queue(&mut sk, "nic-4k", &[100; 50]);
        let rmem = sk.mem.sk_rmem_alloc;
        sk.collapse_receive_queue();
        assert_eq!(sk.mib.TCPRcvCollapsed, 50);
        assert_eq!(sk.mem.collapsed_bytes, 5000);
        let q = &sk.mem.receive_queue;
        assert_eq!(q.iter().map(|s| s.len).sum::<i64>(), 5000);
        assert_eq!(q.len(), 2);
        assert_eq!(q[0].len, COLLAPSE_CHUNK);
        assert!(sk.mem.sk_rmem_alloc < rmem);
        assert_eq!(
            sk.mem.sk_rmem_alloc,
            q.iter().map(|s| s.truesize).sum::<i64>()
        );
    }

    #[test]
    fn ofo_helpers() {
        let mut sk = socket("linux-6.6");
        let dev = device("veth").unwrap();
        for seq in [100, 300, 500] {
            let skb = dev.make_skb(seq, 100, false, 0, 0, 0);
            sk.charge(skb.truesize);
            sk.mem.ofo_queue.push(skb);
        }
        assert_eq!(sk.ofo_index(0), 0);
        assert_eq!(sk.ofo_index(300), 1);
        assert_eq!(sk.ofo_index(301), 2);
        assert_eq!(sk.ofo_drop_last().unwrap().seq, 500);
        assert_eq!(sk.mem.ofo_queue.len(), 2);
    }
}
