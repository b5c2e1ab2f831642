"""The native socket's Rust-only benchmark loop (native/src/bench.rs, `tcpsim bench --socket`):
it runs the steps of tcpsim/bench_socket.py `drive` and reads every byte. Its speed is not
checked here (speed belongs in benchmarks/, never in a test)."""

from __future__ import annotations

import pytest

from tcpsim.bench_socket import MSS


def test_rust_loop_reads_every_segment(native):
    assert native.bench_in_order("linux-6.6", "nic-2k", 300) == 300 * MSS
    assert native.bench_in_order("linux-5.15", "tun", 50, trace=True) == 50 * MSS


def test_rust_loop_names_what_it_does_not_know(native):
    with pytest.raises(ValueError, match="linux-0.1"):
        native.bench_in_order("linux-0.1", "veth", 1)
    with pytest.raises(ValueError, match="nosuch"):
        native.bench_in_order("linux-6.18", "nosuch", 1)
