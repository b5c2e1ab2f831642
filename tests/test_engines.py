"""make_socket(): one factory for the Python and the native socket (tcpsim/engines.py)."""

from __future__ import annotations

import pytest

from tcpsim.core.devices import device
from tcpsim.core.socket import TcpSocket
from tcpsim.engines import EngineError, check_engine, make_socket, native_available
from tcpsim.catalog import get_profile


def test_python_engine_builds_the_reference_socket():
    prof = get_profile("linux-6.6", ["collapse-max-bytes"])
    sysctl = prof.default_sysctls().with_overrides({"net.ipv4.tcp_rmem": [4096, 8192, 65536]})
    sk = make_socket("python", prof, sysctl, "tun", name="x", mtu=9000)
    assert type(sk) is TcpSocket
    assert sk.sysctl is sysctl and sk.dev is device("tun") and sk.name == "x"
    assert sk.conn.mtu == 9000 and sk.mem.sk_rcvbuf == 8192
    assert "TCPCollapseMaxBytesExceeded" in sk.snapshot()["mib"]


def test_unknown_engine_names_the_choices():
    prof = get_profile("linux-6.6")
    with pytest.raises(EngineError, match="unknown engine 'rust'; choose one of: python, native"):
        make_socket("rust", prof, prof.default_sysctls(), "veth")


@pytest.mark.skipif(native_available(), reason="the native socket is built")
def test_missing_native_socket_is_a_clear_error():
    prof = get_profile("linux-6.6")
    with pytest.raises(EngineError, match="engine 'native': .*use --engine python"):
        make_socket("native", prof, prof.default_sysctls(), "veth")
    with pytest.raises(EngineError):
        check_engine("native")


@pytest.mark.skipif(not native_available(), reason="the native socket is not built yet")
def test_native_engine_takes_no_python_objects():
    prof = get_profile("linux-6.6")
    with pytest.raises(EngineError, match="no sink"):
        make_socket("native", prof, prof.default_sysctls(), "veth", sink=object())
