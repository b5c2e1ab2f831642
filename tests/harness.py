"""Test harness: a TcpSocket under test driven by a scripted peer (no link, no engine)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tcpsim.core.constants import NS_PER_MS  # noqa: E402
from tcpsim.core.segment import ACK, FIN, PSH, SYN, Segment  # noqa: E402
from tcpsim.core.socket import TcpSocket  # noqa: E402
from tcpsim.engines import make_socket  # noqa: E402
from tcpsim.catalog import get_profile  # noqa: E402
from tcpsim.trace.recorder import MemoryRecorder  # noqa: E402


def conn_field(sk, name: str):
    """`sk.conn.<name>` of either engine (the native socket shows its records through
    snapshot())."""
    conn = getattr(sk, "conn", None)
    return getattr(conn, name) if conn is not None else sk.snapshot()["conn"][name]


class Peer:
    """A scripted sender talking to one TcpSocket under test (no link, no engine)."""

    def __init__(self, sk: TcpSocket, seq: int = 1, wscale: int = 7) -> None:
        self.sk = sk
        self.seq = seq
        self.wscale = wscale
        self.now = 0
        self.acks: list[Segment] = []
        self.echo = 1                    # the receiver's last timestamp, echoed back

    def at(self, t_ms: float) -> "Peer":
        self.now = int(t_ms * NS_PER_MS)
        return self

    def send(self, length: int, *, seq: int | None = None, flags: int = ACK | PSH,
             ack: int = 1, win: int = 502, tx_segs: int = 0) -> list[Segment]:
        """Deliver a data segment; returns the segments the socket sent back (`tx_segs`: the
        segment count of the peer's skb it was cut from, 0 = unknown)."""
        s = self.seq if seq is None else seq
        seg = Segment(s, length, flags, ack, win, tsval=self.now // NS_PER_MS + 1,
                      tsecr=self.echo if conn_field(self.sk, "ts_ok") else -1)
        seg.tx_segs = tx_segs
        self.sk.on_segment(self.now, seg)
        if seq is None:
            self.seq += length + (1 if flags & FIN else 0)
        return self.take()

    def read(self, n: int) -> int:
        got = self.sk.read(self.now, n)
        return got

    def take(self) -> list[Segment]:
        out = self.sk.take_outbox()
        self.acks.extend(out)
        for seg in out:
            if seg.tsval >= 0:
                self.echo = seg.tsval
        return out

    def tick(self) -> list[Segment]:
        """Run the socket's due timers at the current time."""
        self.sk.on_timer(self.now)
        return self.take()


def established(profile: str = "linux-6.1", *, sysctl: dict | None = None, dev: str = "veth",
                so_rcvbuf: int = 0, patches: tuple = (), peer_wscale: int = 7,
                role: str = "client", sink=None, hz: int = 0, engine: str = "python") -> Peer:
    """A receiver socket that completed the handshake with a timestamp/SACK/wscale peer
    (`hz`: the kernel's CONFIG_HZ; 0 = tcpsim's default clock; `engine`: "python", or
    "native" for tcpsim._native's socket, which takes no sink: see take_events())."""
    prof = get_profile(profile, [p for p in patches if isinstance(p, str)])
    classes = [p for p in patches if not isinstance(p, str)]     # patch classes, applied after
    if classes:
        prof = prof.with_patches(*classes)
    sysctls = prof.default_sysctls().with_overrides(sysctl or {}, known=prof.known_sysctls())
    extra = {"sink": sink or MemoryRecorder()} if engine == "python" else {}
    sk = make_socket(engine, prof, sysctls, dev, name="rcv", hz=hz, **extra)
    if so_rcvbuf:
        sk.set_rcvbuf(so_rcvbuf)
    if role == "client":
        sk.connect(0)
        sk.take_outbox()
        synack = Segment(0, 0, SYN | ACK, 1, 65535, mss=1460, wscale=peer_wscale, sack_ok=True,
                         tsval=1, tsecr=conn_field(sk, "ts_recent") or 1)
        sk.on_segment(NS_PER_MS, synack)
    else:
        sk.listen()
        syn = Segment(0, 0, SYN, 0, 65535, mss=1460, wscale=peer_wscale, sack_ok=True, tsval=1, tsecr=0)
        sk.on_segment(0, syn)
        sk.on_segment(NS_PER_MS, Segment(1, 0, ACK, 1, 502, tsval=2,
                                         tsecr=conn_field(sk, "ts_recent")))
    peer = Peer(sk, seq=1, wscale=peer_wscale)
    peer.take()
    peer.at(1)
    return peer


def shared_dir() -> Path | None:
    """../shared relative to the repository, if present."""
    p = Path(__file__).resolve().parents[1].parent / "shared"
    return p if p.is_dir() else None


def is_root_with_netns() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("ip") is not None


class Keep:
    """A sink that keeps the events as they come."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def wants(self, sock: str) -> bool:
        return True

    def record(self, ev: tuple) -> None:
        self.events.append(ev)


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """Run the `tcpsim` entry point in-process: (exit status, stdout, stderr)."""
    from tcpsim.cli import main
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err
