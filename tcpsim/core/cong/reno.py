"""Reno: the model's historic sender, kept as it was (tcp_reno_* [tcp_cong.c])."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.core.cong import CongestionOps

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket


class Reno(CongestionOps):
    """`tcp_reno` [tcp_cong.c]: halve on loss, +1 segment per window above ssthresh."""

    name = "reno"

    def ssthresh(self, sk: TcpSocket) -> int:
        """tcp_reno_ssthresh() [tcp_cong.c, 5.15]: half the cwnd, at least 2."""
        return max(sk.snd.snd_cwnd >> 1, 2)

    def loss_ssthresh(self, sk: TcpSocket) -> int:
        """The model's Reno sets half the *flight* on an RTO (tcp_reno_ssthresh() halves
        snd_cwnd); kept so that Reno runs stay as they were before the congestion-control
        room existed. A known simplification, not the kernel."""
        return max(sk.packets_in_flight() >> 1, 2)

    def cong_avoid(self, sk: TcpSocket, acked: int) -> None:
        """tcp_reno_cong_avoid() [tcp_cong.c] as the model had it: while cwnd-limited, slow
        start up to ssthresh (acks beyond it are dropped, where the kernel carries them into
        tcp_cong_avoid_ai()), then one segment per cwnd acked."""
        snd = sk.snd
        if not sk.is_cwnd_limited():
            return
        if snd.snd_cwnd < snd.snd_ssthresh:
            snd.snd_cwnd = min(snd.snd_cwnd + acked, snd.snd_ssthresh)
            return
        snd.cwnd_cnt += acked
        if snd.cwnd_cnt >= snd.snd_cwnd:
            snd.cwnd_cnt -= snd.snd_cwnd
            snd.snd_cwnd += 1


RENO = Reno()
