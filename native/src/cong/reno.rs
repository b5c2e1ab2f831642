//! Reno: the model's historic sender, kept as it was (tcp_reno_* [tcp_cong.c];
//! tcpsim/core/cong/reno.py).

use crate::socket::TcpSocket;

/// tcp_reno_ssthresh() [tcp_cong.c, 5.15]: half the cwnd, at least 2.
pub fn ssthresh(sk: &TcpSocket) -> i64 {
    (sk.snd.snd_cwnd >> 1).max(2)
}

/// The model's Reno sets half the *flight* on an RTO (tcp_reno_ssthresh() halves snd_cwnd);
/// kept so that Reno runs stay as they were before the congestion-control room existed. A
/// known simplification, not the kernel.
pub fn loss_ssthresh(sk: &TcpSocket) -> i64 {
    (sk.packets_in_flight() >> 1).max(2)
}

/// tcp_reno_cong_avoid() [tcp_cong.c] as the model had it: while cwnd-limited, slow start up
/// to ssthresh (acks beyond it are dropped, where the kernel carries them into
/// tcp_cong_avoid_ai()), then one segment per cwnd acked.
pub fn cong_avoid(sk: &mut TcpSocket, acked: i64) {
    if !sk.is_cwnd_limited() {
        return;
    }
    let snd = &mut sk.snd;
    if snd.snd_cwnd < snd.snd_ssthresh {
        snd.snd_cwnd = (snd.snd_cwnd + acked).min(snd.snd_ssthresh);
        return;
    }
    snd.cwnd_cnt += acked;
    if snd.cwnd_cnt >= snd.snd_cwnd {
        snd.cwnd_cnt -= snd.snd_cwnd;
        snd.snd_cwnd += 1;
    }
}
