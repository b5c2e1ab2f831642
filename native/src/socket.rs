//! TcpSocket: one endpoint of a TCP connection as a sans-IO state machine.
//!
//! Mirrors tcpsim/core/socket.py `TcpSocket`. So far: the socket's parts and its
//! construction (`__init__`); the behaviour arrives room by room as `impl TcpSocket` blocks
//! in their own files (memory.rs so far; receive.rs, ack.rs, sender.rs to come). The trace
//! sink is not here yet.

use crate::clock::{clock_for, Clock};
use crate::devices::{device, Device};
use crate::kernel::KernelRef;
use crate::mib::Mib;
use crate::segment::Segment;
use crate::state::{AckState, ConnState, MemState, RcvState, SndState};
use crate::sysctl::Sysctls;

/// The keyword arguments of Python's `TcpSocket(...)` beyond the kernel, sysctls and device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketParams {
    pub name: String,
    pub mtu: i64,
    pub initcwnd: i64,
    pub nodelay: bool,
    pub init_rwnd: i64,
    /// CONFIG_HZ of the kernel's tick; 0 = the exact clock.
    pub hz: i64,
}

impl Default for SocketParams {
    fn default() -> Self {
        SocketParams {
            name: "rcv".to_string(),
            mtu: 1500,
            initcwnd: crate::constants::TCP_INIT_CWND,
            nodelay: true,
            init_rwnd: 0,
            hz: 0,
        }
    }
}

/// One TCP endpoint: the five state records plus the sans-IO surface and injected parts.
pub struct TcpSocket {
    pub name: String,
    /// The kernel era's decisions, with the profile's patches (Python: the policy object
    /// `k`). An `Arc` so that a decision taking `&mut TcpSocket` is called on a clone of the
    /// handle (`sk.k.clone().point(sk, ..)`): see src/kernel.rs.
    pub k: KernelRef,
    pub sysctl: Sysctls,
    /// The ingress device that builds our skbs.
    pub dev: Device,
    pub mib: Mib,
    pub clock: Box<dyn Clock + Send + Sync>,
    pub now: i64,
    pub tcp_mstamp: i64,
    pub outbox: Vec<Segment>,
    pub readable: bool,
    pub writable: bool,
    pub error: String,
    pub accepted: bool,
    pub eof: bool,
    pub conn: ConnState,
    pub rcv: RcvState,
    pub mem: MemState,
    pub ack: AckState,
    pub snd: SndState,
}

impl TcpSocket {
    /// A closed socket, as `TcpSocket(kernel, sysctl, device, name=, mtu=, initcwnd=,
    /// nodelay=, init_rwnd=, hz=)` builds it; `dev` None is veth. Errors name a bad HZ.
    pub fn new(
        k: KernelRef,
        sysctl: Sysctls,
        dev: Option<Device>,
        p: &SocketParams,
    ) -> Result<Self, String> {
        let dev = match dev {
            Some(d) => d,
            None => device("veth")?,
        };
        let scaling_ratio = k.initial_scaling_ratio();
        let counters: Vec<&'static str> = k.counters().iter().map(|&(n, _)| n).collect();
        Ok(TcpSocket {
            name: p.name.clone(),
            clock: clock_for(p.hz)?,
            conn: ConnState::new(p.mtu, p.init_rwnd),
            rcv: RcvState::new(scaling_ratio),
            mem: MemState::new(&sysctl),
            ack: AckState::new(),
            snd: SndState::new(p.initcwnd, p.nodelay, &sysctl),
            k,
            sysctl,
            dev,
            mib: Mib::with_counters(&counters),
            now: 0,
            tcp_mstamp: 0,
            outbox: Vec::new(),
            readable: false,
            writable: false,
            error: String::new(),
            accepted: true,
            eof: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::kernel_for;

    #[test]
    fn a_new_socket_takes_the_eras_scaling_ratio() {
        let p = SocketParams::default();
        let sk = TcpSocket::new(
            kernel_for("linux-6.6").unwrap(),
            Sysctls::default(),
            None,
            &p,
        )
        .unwrap();
        assert_eq!(sk.rcv.scaling_ratio, 65);
        assert_eq!(sk.dev.name(), "veth");
        let old = TcpSocket::new(
            kernel_for("linux-5.15").unwrap(),
            Sysctls::default(),
            None,
            &p,
        )
        .unwrap();
        assert_eq!(old.rcv.scaling_ratio, -1);
        assert_eq!(old.k.win_from_space(&old, 4096), 2048);
        assert_eq!(sk.k.win_from_space(&sk, 4096), 1040);
    }

    #[test]
    fn a_bad_hz_is_refused() {
        let p = SocketParams {
            hz: 123,
            ..SocketParams::default()
        };
        let k = kernel_for("linux-6.1").unwrap();
        assert!(TcpSocket::new(k, Sysctls::default(), None, &p).is_err());
    }
}
