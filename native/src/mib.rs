//! SNMP/MIB counters with their nstat names (net/ipv4/proc.c: snmp4_net_list).
//!
//! Mirrors tcpsim/core/mib.py. The socket bumps fields of a `Mib`; `as_nstat()` renders them
//! as `TcpExt<Name>` the way `nstat -az` prints them, so simulated and real counters compare
//! by name. Field names are the kernel's counter names (hence not snake case).

use std::sync::atomic::{AtomicI64, Ordering};

macro_rules! counters {
    ($($name:ident: $doc:literal,)*) => {
        /// Per-socket counters, one field per counter, all starting at zero.
        #[allow(non_snake_case)]
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        pub struct Mib {
            $(#[doc = $doc] pub $name: i64,)*
            /// Counters the applied patches declare (Python's `Patch.counters`), in order:
            /// (name, value). Declared at zero with `declare`, bumped with `bump`.
            pub patch: Vec<(&'static str, PatchCounter)>,
        }

        /// Counter name -> one-line meaning, in the order of Python's `COUNTERS`.
        pub const COUNTERS: &[(&str, &str)] = &[$((stringify!($name), $doc),)*];

        impl Mib {
            /// Every counter as (name, value), in `COUNTERS` order.
            /// Every counter as (name, value): the core's in `COUNTERS` order, then the
            /// patches'.
            pub fn values(&self) -> Vec<(&'static str, i64)> {
                let mut v = vec![$((stringify!($name), self.$name),)*];
                v.extend(self.patch.iter().map(|(n, c)| (*n, c.get())));
                v
            }

            /// The counter named `name` (its kernel name), to bump or set.
            pub fn counter_mut(&mut self, name: &str) -> Option<&mut i64> {
                match name {
                    $(stringify!($name) => Some(&mut self.$name),)*
                    _ => self.patch.iter_mut().find(|(n, _)| *n == name).map(|(_, v)| v.0.get_mut()),
                }
            }
        }
    };
}

/// A patch's own counter. A patch counts its decisions where it makes them, in decision
/// points that only read the socket too (`sk.mib.TCPMyCount += 1` in `shrink_allowed`, as
/// on the Python engine), so its value may change behind a shared reference: an atomic
/// (relaxed: plain loads and stores here), which no kernel code reads in between.
#[derive(Debug, Default)]
pub struct PatchCounter(AtomicI64);

impl PatchCounter {
    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }

    pub fn set(&self, v: i64) {
        self.0.store(v, Ordering::Relaxed)
    }
}

impl Clone for PatchCounter {
    fn clone(&self) -> Self {
        PatchCounter(AtomicI64::new(self.get()))
    }
}

impl PartialEq for PatchCounter {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for PatchCounter {}

counters! {
    TCPRcvCoalesce: "segments coalesced into a queued skb (tcp_try_coalesce)",
    TCPBacklogCoalesce: "segments coalesced in the socket backlog",
    TCPRcvQDrop: "in-order segments dropped for lack of receive memory",
    TCPOFODrop: "out-of-order segments dropped for lack of receive memory",
    TCPOFOQueue: "segments put in the out-of-order queue",
    TCPOFOMerge: "out-of-order segments dropped as already covered",
    TCPZeroWindowDrop: "segments dropped because our window was zero",
    TCPBacklogDrop: "segments dropped because the backlog was full",
    PruneCalled: "tcp_prune_queue() calls",
    RcvPruned: "tcp_prune_queue() gave up: the segment was dropped",
    OfoPruned: "out-of-order queue prunes",
    TCPRcvCollapsed: "skbs freed by collapsing queues",
    TCPWantZeroWindowAdv: "a zero window was computed but not advertised (never-shrink rule)",
    TCPToZeroWindowAdv: "advertised window went from non-zero to zero",
    TCPFromZeroWindowAdv: "advertised window went from zero to non-zero",
    BeyondWindow: "segments rejected for ending beyond the window (6.17+)",
    TCPACKSkippedSeq: "out-of-window dupACKs suppressed by the rate limit",
    DelayedACKs: "delayed ACKs sent by the timer",
    DelayedACKLost: "duplicate data received (our ACK was lost or late)",
    TCPHPHits: "data segments taken by the header-prediction fast path",
    TCPWinProbe: "zero-window probes sent",
    TCPTimeouts: "retransmission timeouts",
    TCPAbortOnTimeout: "connections aborted after too many retransmissions/probes",
    TCPAbortOnClose: "connections reset by close() with unread data (tcp_close)",
    TCPRetransSegs: "segments retransmitted (TcpRetransSegs)",
    TCPFastRetrans: "fast retransmits",
    TCPLossProbes: "tail loss probes sent (tcp_send_loss_probe)",
    TCPLossProbeRecovery: "losses a tail loss probe repaired (cwnd reduced)",
    TCPDSACKOldSent: "D-SACKs sent for old data",
    TCPDSACKOfoSent: "D-SACKs sent for out-of-order duplicates",
    // the sender's (and any socket's) counters, each bumped where the kernel bumps it
    TCPInSegs: "segments received (TcpInSegs; tcp_v4_rcv)",
    TCPOutSegs: "segments sent, retransmissions excepted (TcpOutSegs; __tcp_transmit_skb)",
    TCPOrigDataSent: "segments of new data (and FIN) sent (tcp_event_new_data_sent)",
    TCPDelivered: "segments newly acked or SACKed (tcp_newly_delivered)",
    TCPHPAcks: "ACKs advancing snd_una taken by tcp_ack()'s fast path",
    TCPPureAcks: "ACKs without data taken by tcp_ack()'s slow path",
    TCPSlowStartRetrans: "lost segments retransmitted in Loss (tcp_xmit_retransmit_queue)",
    TCPSackRecovery: "fast recoveries entered with SACK (tcp_enter_recovery)",
    TCPRenoRecovery: "fast recoveries entered without SACK (tcp_enter_recovery)",
    TCPLostRetransmit: "retransmissions marked lost again (tcp_mark_skb_lost)",
    TCPDSACKRecv: "D-SACKs received below the cumulative ACK (tcp_check_dsack)",
    TCPDSACKOfoRecv: "D-SACKs received within the second SACK block (tcp_check_dsack)",
    TCPSACKReorder: "reordering detected from SACKs (tcp_check_sack_reordering)",
}

/// Counters of the Tcp MIB (snmp4_tcp_list), which nstat prints as TcpX, not TcpExtX: kept
/// under their kernel name with the TCP prefix (TCPRetransSegs is TcpRetransSegs). As
/// Python's `TCP_MIB`.
pub const TCP_MIB: &[&str] = &["TCPRetransSegs", "TCPInSegs", "TCPOutSegs"];

/// The name nstat prints for a counter: TcpX for the Tcp MIB's, else TcpExtX.
pub fn nstat_name(name: &str) -> String {
    if TCP_MIB.contains(&name) {
        format!("Tcp{}", &name[3..])
    } else {
        format!("TcpExt{name}")
    }
}

impl Mib {
    /// A Mib with the patch counters `names` declared at zero (the profile's counters,
    /// shown even at zero).
    pub fn with_counters(names: &[&'static str]) -> Self {
        let mut m = Mib::default();
        for &name in names {
            m.declare(name);
        }
        m
    }

    /// Make a patch counter known, at zero (no-op when it is already).
    pub fn declare(&mut self, name: &'static str) {
        if self.counter_mut(name).is_none() {
            self.patch.push((name, PatchCounter::default()));
        }
    }

    /// `sk.mib.<name> += 1` for a patch counter (declared on first use, as Python's).
    pub fn bump(&mut self, name: &'static str) {
        self.declare(name);
        *self.counter_mut(name).expect("declared above") += 1;
    }

    /// Set a patch's own counter through a shared reference (see `PatchCounter`); false
    /// when `name` is not one.
    pub fn set_patch_counter(&self, name: &str, v: i64) -> bool {
        match self.patch.iter().find(|(n, _)| *n == name) {
            Some((_, c)) => {
                c.set(v);
                true
            }
            None => false,
        }
    }

    /// Counters keyed as nstat prints them (TcpExtX; TcpRetransSegs), including zeros.
    pub fn as_nstat(&self) -> Vec<(String, i64)> {
        self.values()
            .into_iter()
            .map(|(name, v)| (nstat_name(name), v))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_at_zero_and_renders_nstat_names() {
        let mut m = Mib::default();
        assert!(m.values().iter().all(|&(_, v)| v == 0));
        m.TCPRcvCoalesce += 2;
        *m.counter_mut("TCPRetransSegs").unwrap() += 1;
        assert!(m.counter_mut("NoSuchCounter").is_none());
        let nstat = m.as_nstat();
        assert_eq!(nstat.len(), COUNTERS.len());
        assert!(nstat.contains(&("TcpExtTCPRcvCoalesce".to_string(), 2)));
        assert!(nstat.contains(&("TcpRetransSegs".to_string(), 1)));
        assert!(nstat.contains(&("TcpOutSegs".to_string(), 0)));
        assert!(nstat.contains(&("TcpExtTCPOrigDataSent".to_string(), 0)));
    }

    #[test]
    fn patch_counters_exist_only_when_declared() {
        let mut m = Mib::with_counters(&["TCPX"]);
        assert_eq!(m.values().last(), Some(&("TCPX", 0)));
        m.bump("TCPX");
        m.bump("TCPY");
        assert_eq!(m.values()[COUNTERS.len()..], [("TCPX", 1), ("TCPY", 1)]);
        assert!(m.set_patch_counter("TCPY", 5) && !m.set_patch_counter("TCPRcvQDrop", 1));
        assert_eq!(m.values().last(), Some(&("TCPY", 5)));
        assert!(m.as_nstat().contains(&("TcpExtTCPX".to_string(), 1)));
        assert!(Mib::default().counter_mut("TCPX").is_none());
    }
}
