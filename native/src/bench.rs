//! The socket alone in a Rust-only loop: what one in-order segment costs without Python.
//!
//! Mirrors tcpsim/bench_socket.py `open_receiver` and `drive` step for step (an established
//! client socket with timestamps, SACK and window scaling; `n` in-order 1448-byte segments
//! 100 us apart, each followed by a read of everything queued, the outbox drained and due
//! timers run), with no Python between the steps. A benchmark, not a test: `tcpsim bench
//! --socket` times `in_order` through `tcpsim._native.bench_in_order`, and
//! `cargo run --release --example socket_bench` times it from Rust alone.

use crate::constants::{NS_PER_MS, NS_PER_US};
use crate::devices::device;
use crate::models::kernel_for;
use crate::segment::{Segment, ACK, PSH, SYN};
use crate::socket::{SocketParams, TcpSocket};

/// The payload of every segment (bench_socket.py MSS).
pub const MSS: i64 = 1448;
/// The gap between two segments (bench_socket.py GAP_NS).
pub const GAP_NS: i64 = 100 * NS_PER_US;

/// An established client socket of `profile` receiving through `device` (SYN sent at 0,
/// SYN-ACK taken at 1 ms); `trace` records trace events, as the engine does for a trace.
/// The peer's SYN-ACK every synthetic client here (and the Rust tests) is opened with:
/// MSS 1460, window scale 7, timestamps, SACK as asked.
pub fn peer_synack(sack_ok: bool) -> Segment {
    let mut s = Segment::new(0, 0, SYN | ACK, 1, 65535);
    s.mss = 1460;
    s.wscale = 7;
    s.sack_ok = sack_ok;
    s.tsval = 1;
    s.tsecr = 1;
    s
}

pub fn open_receiver(profile: &str, device_name: &str, trace: bool) -> Result<TcpSocket, String> {
    let k = kernel_for(profile)?;
    let sysctl = k.default_sysctls();
    let dev = device(device_name)?;
    let mut sk = TcpSocket::new(
        k,
        sysctl,
        Some(std::sync::Arc::new(dev)),
        &SocketParams::default(),
    )?;
    sk.tracing = trace;
    sk.connect(0);
    sk.take_outbox();
    sk.on_segment(NS_PER_MS, &peer_synack(true));
    sk.take_outbox();
    sk.take_events();
    Ok(sk)
}

/// `n` in-order segments into `sk`, each read at once; returns the bytes read. Trace events
/// are drained after every segment, as an engine writing a trace does.
pub fn drive(sk: &mut TcpSocket, n: i64) -> i64 {
    let (mut now, mut seq, mut echo, mut got) = (NS_PER_MS, 1, 1, 0);
    for _ in 0..n {
        now += GAP_NS;
        let mut seg = Segment::new(seq, MSS, ACK | PSH, 1, 502);
        seg.tsval = now / NS_PER_MS + 1;
        seg.tsecr = echo;
        sk.on_segment(now, &seg);
        seq += MSS;
        got += sk.read(now, 1 << 20);
        for out in sk.take_outbox() {
            echo = out.tsval;
        }
        sk.take_events();
        let deadline = sk.next_deadline();
        if deadline != 0 && deadline <= now {
            sk.on_timer(now);
            sk.take_outbox();
            sk.take_events();
        }
    }
    got
}

/// A fresh receiver driven by `n` in-order segments: the bytes read (`n * MSS` when every
/// segment was accepted and read). Errors name an unknown profile or device.
pub fn in_order(profile: &str, device_name: &str, n: i64, trace: bool) -> Result<i64, String> {
    let mut sk = open_receiver(profile, device_name, trace)?;
    Ok(drive(&mut sk, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_segment_is_accepted_and_read() {
        assert_eq!(in_order("linux-6.18", "veth", 500, false), Ok(500 * MSS));
        assert_eq!(in_order("linux-5.15", "tun", 500, true), Ok(500 * MSS));
    }

    #[test]
    fn unknown_names_are_errors() {
        assert!(in_order("linux-9.9", "veth", 1, false).is_err());
        assert!(in_order("linux-6.18", "nosuch", 1, false).is_err());
    }
}
