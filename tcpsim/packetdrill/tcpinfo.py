"""The names a `%{ }%` block sees: tcp_info and sk_meminfo of the socket under test.

packetdrill collects `getsockopt(TCP_INFO)` and the SO_MEMINFO array when it reaches a code
event and hands them to Python as `tcpi_<field>` and `SK_MEMINFO_<NAME>` variables. Here each
value is read from the simulated socket the way tcp_get_info() [net/ipv4/tcp.c] and
sk_get_meminfo() [net/core/sock.c] compute it. Fields the model has no state for are left
out, so a script that uses one fails with `unsupported: tcp_info field ...` instead of seeing a
made-up value. The tcp_states.h constants (`TCP_CLOSE`, ...) and the TCPI_OPT_* bits come
along.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.core.constants import NS_PER_MS, NS_PER_US

from .symbols import TCP_STATE_CONSTANTS, TCP_STATE_NUMBERS

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket

TCPI_OPTS = {"TCPI_OPT_TIMESTAMPS": 1, "TCPI_OPT_SACK": 2, "TCPI_OPT_WSCALE": 4,
             "TCPI_OPT_ECN": 8, "TCPI_OPT_ECN_SEEN": 16, "TCPI_OPT_SYN_DATA": 32}


def _ms_since(now_ns: int, then_ns: int) -> int:
    """jiffies_to_msecs(now - then) with a 1 ms jiffy."""
    return now_ns // NS_PER_MS - then_ns // NS_PER_MS


def tcp_info(sk: TcpSocket, now_ns: int) -> dict[str, int]:
    """tcpi_* fields the model can answer for."""
    options = ((TCPI_OPTS["TCPI_OPT_TIMESTAMPS"] if sk.conn.ts_ok else 0)
               | (TCPI_OPTS["TCPI_OPT_SACK"] if sk.conn.sack_ok else 0)
               | (TCPI_OPTS["TCPI_OPT_WSCALE"] if sk.conn.wscale_ok else 0))
    return {
        "tcpi_state": TCP_STATE_NUMBERS[sk.conn.state],
        "tcpi_retransmits": sk.snd.retransmits,
        "tcpi_probes": sk.snd.probes_out,
        "tcpi_backoff": sk.snd.backoff,
        "tcpi_options": options,
        "tcpi_snd_wscale": sk.conn.snd_wscale if sk.conn.wscale_ok else 0,
        "tcpi_rcv_wscale": sk.conn.rcv_wscale if sk.conn.wscale_ok else 0,
        "tcpi_rto": sk.snd.rto // NS_PER_US,
        "tcpi_ato": sk.ack.ack_ato // NS_PER_US,
        "tcpi_snd_mss": sk.conn.mss_cache,
        "tcpi_rcv_mss": sk.ack.ack_rcv_mss,
        "tcpi_unacked": len(sk.snd.rtx_queue),
        "tcpi_last_data_sent": _ms_since(now_ns, sk.ack.lsndtime),
        "tcpi_last_data_recv": _ms_since(now_ns, sk.ack.ack_lrcvtime),
        "tcpi_last_ack_recv": _ms_since(now_ns, sk.snd.rcv_tstamp),
        "tcpi_pmtu": sk.conn.mtu,
        "tcpi_rcv_ssthresh": sk.rcv.rcv_ssthresh,
        "tcpi_rtt": sk.snd.srtt_us8 >> 3,
        "tcpi_rttvar": sk.snd.mdev_us >> 2,
        "tcpi_snd_ssthresh": sk.snd.snd_ssthresh,
        "tcpi_snd_cwnd": sk.snd.snd_cwnd,
        "tcpi_advmss": sk.conn.advmss,
        "tcpi_rcv_rtt": sk.rcv.rcv_rtt_us8 >> 3,
        "tcpi_rcv_space": sk.rcv.rcvq_space,
        "tcpi_bytes_acked": sk.snd.bytes_acked,
        "tcpi_bytes_received": sk.rcv.bytes_received,
        "tcpi_snd_wnd": sk.snd.snd_wnd,
        "tcpi_rcv_wnd": sk.rcv.rcv_wnd,
        "tcpi_total_retrans": sk.mib.TCPRetransSegs,
    }


def sk_meminfo(sk: TcpSocket) -> dict[str, int]:
    """SK_MEMINFO_* entries the model tracks."""
    return {
        "SK_MEMINFO_RMEM_ALLOC": sk.mem.sk_rmem_alloc,
        "SK_MEMINFO_RCVBUF": sk.mem.sk_rcvbuf,
        "SK_MEMINFO_SNDBUF": sk.snd.sk_sndbuf,
        "SK_MEMINFO_FWD_ALLOC": sk.mem.sk_forward_alloc,
        "SK_MEMINFO_WMEM_QUEUED": sk.wmem_queued(),
    }


def snapshot(sk: TcpSocket | None, now_ns: int) -> dict[str, int]:
    """Every name a code block may use at this moment (constants even without a socket)."""
    names: dict[str, int] = dict(TCP_STATE_CONSTANTS)
    names.update(TCPI_OPTS)
    if sk is not None:
        names.update(tcp_info(sk, now_ns))
        names.update(sk_meminfo(sk))
    return names
