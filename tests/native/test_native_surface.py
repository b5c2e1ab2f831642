"""The native socket's Python surface: record views, `sk.mib`, `sk.sysctl`, and the
packetdrill interpreter giving the same verdicts on both engines (issue #12).

`sk.rcv.rcv_nxt` on a tcpsim._native.TcpSocket reads the native field through the one field
table (native/src/fields.rs); assignments write it. The interpreter (tcpsim/packetdrill/)
reads and sets records this way on either engine, so the corpus must come out identically,
script by script, with the same failure message and line.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tcpsim.core.segment import ACK, SYN, Segment
from tcpsim.core.state import ESTABLISHED, LISTEN, TcpState
from tcpsim.engines import make_socket
from tcpsim.catalog import get_profile
from tcpsim.packetdrill.interpreter import run_file

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "peer-tests" / "packetdrill"


def _pair(native, profile="linux-6.18"):
    p = get_profile(profile)
    s = p.policy().default_sysctls()
    return (make_socket("python", p, s, "veth", name="a"),
            make_socket("native", p, s, "veth", name="a"))


def _handshake(sk):
    sk.listen()
    sk.on_segment(1000, Segment(0, 0, SYN, 0, 65535, mss=1460, wscale=7, sack_ok=True,
                                tsval=1, tsecr=0))
    synack = sk.take_outbox()[0]
    sk.on_segment(2000, Segment(1, 0, ACK, synack.seq + 1, 512, tsval=2, tsecr=synack.tsval))
    sk.on_segment(3000, Segment(1, 1000, ACK, synack.seq + 1, 512, tsval=3,
                                tsecr=synack.tsval))


def test_records_read_the_same_fields_on_both_engines(native):
    py, nat = _pair(native)
    for sk in (py, nat):
        _handshake(sk)
    for rec in ("conn", "rcv", "mem", "ack", "snd"):
        want = py.snapshot()[rec]
        for field, value in want.items():
            got = getattr(getattr(nat, rec), field)
            assert _plain(got) == _plain(value), f"{rec}.{field}"     # the snapshot's form
    assert nat.conn.state is ESTABLISHED and isinstance(nat.conn.state, TcpState)
    assert len(nat.mem.receive_queue) == len(py.mem.receive_queue) == 1
    assert nat.mib.as_nstat() == py.mib.as_nstat()
    assert nat.mib.as_nstat(("Extra",))["TcpExtExtra"] == 0
    assert nat.sysctl.tcp_rmem == py.sysctl.tcp_rmem
    assert nat.wmem_queued() == py.wmem_queued()


def _plain(v):
    return [_plain(x) for x in v] if isinstance(v, (list, tuple)) else v


def test_writes_reach_the_native_fields(native):
    _, sk = _pair(native)
    sk.snd.nodelay = True
    sk.rcv.rcv_ssthresh = 12345
    sk.conn.state = LISTEN
    sk.mib.TCPWinProbe += 2
    snap = sk.snapshot()
    assert snap["snd"]["nodelay"] is True and snap["rcv"]["rcv_ssthresh"] == 12345
    assert snap["conn"]["state"] == "LISTEN" and snap["mib"]["TCPWinProbe"] == 2
    sysctls = get_profile("linux-6.18").policy().default_sysctls()
    sk.sysctl = replace(sysctls, tcp_shrink_window=1, tcp_rmem=(4096, 4096, 8192))
    assert sk.sysctl.tcp_shrink_window == 1 and sk.sysctl.tcp_rmem == (4096, 4096, 8192)
    assert sk.sysctl.as_dict()["net.ipv4.tcp_shrink_window"] == 1


def test_bad_accesses_are_clear_errors(native):
    _, sk = _pair(native)
    with pytest.raises(AttributeError, match="sk.rcv has no field nope"):
        sk.rcv.nope
    with pytest.raises(AttributeError, match="no field nope"):
        sk.rcv.nope = 1
    with pytest.raises(AttributeError, match=r"it set sk.rcv.rcv_nxt to 'x' \(str\) where the "
                                             r"socket takes an int"):   # tcpsim/answers.py
        sk.rcv.rcv_nxt = "x"
    with pytest.raises(AttributeError, match="read-only"):
        sk.mem.receive_queue = []
    with pytest.raises(AttributeError, match="no counter Nope"):
        sk.mib.Nope
    with pytest.raises(AttributeError, match="no TCP state"):
        sk.conn.state = "OPEN"


def _corpus():
    if not CORPUS.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no corpus at {CORPUS}"))]
    return [str(p.relative_to(CORPUS)) for p in sorted(CORPUS.rglob("*.pkt"))]


@pytest.mark.parametrize("profile", ["linux-6.18", "linux-5.15", "linux-6.6"])
def test_packetdrill_corpus_gives_identical_verdicts(native, profile):
    """Every corpus script: same verdict, kind, message, line and detail on both engines."""
    scripts = _corpus()
    if scripts and not isinstance(scripts[0], str):
        pytest.skip(f"no corpus at {CORPUS}")
    for script in scripts:
        py = run_file(CORPUS / script, profile, name=script, engine="python").as_dict()
        nat = run_file(CORPUS / script, profile, name=script, engine="native").as_dict()
        py.pop("trace", None)
        nat.pop("trace", None)
        assert nat == py, script
