"""The state records of a new socket: every field of the five native records against a
freshly constructed Python TcpSocket, for every profile, clock and constructor argument."""

from hypothesis import given
from hypothesis import strategies as st

from tcpsim.core.socket import TcpSocket
from tcpsim.catalog import builtin_profiles

from native_compare import RECORDS, assert_same_fields, home
from strategies import nat_hz, nat_triple

# What stays on the socket itself (state-spec: the sans-IO surface and the injected parts).
SOCKET_LEVEL = {"name", "k", "sysctl", "dev", "sink", "mib", "jc", "clock", "now", "tcp_mstamp",
                "outbox", "readable", "writable", "error", "accepted", "eof",
                *RECORDS}

PROFILES = builtin_profiles()


def _slots(obj) -> set[str]:
    return {s for cls in type(obj).__mro__ for s in getattr(cls, "__slots__", ())}


def test_records_hold_every_field_of_the_python_socket(native):
    fields = dict(native.record_fields())
    assert list(fields) == list(RECORDS)
    every = [f for names in fields.values() for f in names]
    assert len(every) == len(set(every)), "a field in two records"
    sk = TcpSocket(PROFILES["linux-6.1"].policy())
    if home(sk, "rcv") is sk:                     # the flat socket, before the reshape
        assert set(every) == _slots(sk) - SOCKET_LEVEL
    else:
        for record, names in fields.items():
            assert set(names) == _slots(home(sk, record)), record


def test_state_names(native):
    assert native.tcp_states() == ["CLOSED", "LISTEN", "SYN_SENT", "SYN_RECV", "ESTABLISHED",
                                   "CLOSE_WAIT", "FIN_WAIT1", "FIN_WAIT2", "LAST_ACK",
                                   "CLOSING", "TIME_WAIT"]


@given(profile=st.sampled_from(list(PROFILES)), hz=nat_hz,
       mtu=st.one_of(st.just(1500), st.integers(576, 65535)),
       initcwnd=st.one_of(st.just(10), st.integers(1, 1000)), nodelay=st.booleans(),
       init_rwnd=st.one_of(st.just(0), st.integers(1, 1 << 20)),
       rmem=st.one_of(st.none(), nat_triple), wmem=st.one_of(st.none(), nat_triple))
def test_initial_records_field_by_field(native, profile, hz, mtu, initcwnd, nodelay, init_rwnd,
                                        rmem, wmem):
    prof = PROFILES[profile]
    overrides = {k: v for k, v in (("net.ipv4.tcp_rmem", rmem), ("net.ipv4.tcp_wmem", wmem)) if v}
    sysctls = prof.default_sysctls().with_overrides(overrides)
    policy = prof.policy()
    sk = TcpSocket(policy, sysctls, mtu=mtu, initcwnd=initcwnd, nodelay=nodelay,
                   init_rwnd=init_rwnd, hz=hz)
    got = native.initial_state(mtu=mtu, init_rwnd=init_rwnd, initcwnd=initcwnd, nodelay=nodelay,
                               scaling_ratio=policy.initial_scaling_ratio(),
                               tcp_rmem=sysctls.tcp_rmem, tcp_wmem=sysctls.tcp_wmem)
    assert_same_fields(got, sk)


@given(profile=st.sampled_from(list(PROFILES)), hz=nat_hz, mtu=st.integers(576, 9000),
       initcwnd=st.integers(1, 100), nodelay=st.booleans(), init_rwnd=st.integers(0, 1 << 20))
def test_native_socket_is_built_like_the_python_one(native, profile, hz, mtu, initcwnd, nodelay,
                                                    init_rwnd):
    """NativeSocket(profile) picks the era's initial scaling_ratio itself (Kernel trait)."""
    prof = PROFILES[profile]
    sk = TcpSocket(prof.policy(), prof.default_sysctls(), mtu=mtu, initcwnd=initcwnd,
                   nodelay=nodelay, init_rwnd=init_rwnd, hz=hz)
    sysctls = prof.default_sysctls()
    got = native.NativeSocket(profile, mtu=mtu, initcwnd=initcwnd, nodelay=nodelay,
                              init_rwnd=init_rwnd, hz=hz, tcp_rmem=sysctls.tcp_rmem,
                              tcp_wmem=sysctls.tcp_wmem).state()
    assert_same_fields(got, sk)
    assert got["mib"] == {k: getattr(sk.mib, k) for k in got["mib"]}
