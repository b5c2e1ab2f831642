"""Where a capture's processes run (tcpsim.capture.capture.Placement) and the CLI options."""

from __future__ import annotations

import argparse
from pathlib import Path

from tcpsim.capture.capture import endpoint_configs
from tcpsim.capture.placement import (ENDPOINT_RT_PRIO, Placement, add_placement_options,
                                      placement_error, placement_of)
from tcpsim.capture.netns import Topology
from tcpsim.capture.recorder import dropped_by_kernel
from tcpsim.capture.spec import parse

SCENARIO = {"name": "p", "duration": "1s", "link": {"rtt": "20ms"},
            "writer": {"kind": "bulk"}, "reader": {"kind": "fast"}}


def configs(where: Placement) -> tuple[dict, dict]:
    return endpoint_configs(parse(SCENARIO), Topology(tag="t", delay_ns=10), Path("/tmp"), where)


def test_by_default_everything_shares_one_cpu_at_normal_priority() -> None:
    snd, rcv = configs(Placement())
    assert snd["cpu"] == rcv["cpu"] == 0 and snd["rt"] == rcv["rt"] == 0
    assert Placement().as_dict()["endpoint_policy"] == "SCHED_OTHER"


def test_the_reader_gets_its_own_cpu_and_rt_raises_both_endpoints() -> None:
    where = Placement(cpu=0, reader_cpu=1, rt=True)
    snd, rcv = configs(where)
    assert (snd["cpu"], rcv["cpu"]) == (0, 1)
    assert snd["rt"] == rcv["rt"] == ENDPOINT_RT_PRIO
    rec = where.as_dict()
    assert (rec["delay_cpu"], rec["receiver_cpu"]) == (0, 1)
    assert rec["endpoint_policy"] == f"SCHED_FIFO {ENDPOINT_RT_PRIO}"


def test_the_options_give_the_placement() -> None:
    ap = argparse.ArgumentParser()
    add_placement_options(ap)
    assert placement_of(ap.parse_args([])) == Placement()
    assert placement_of(ap.parse_args(["--cpu", "1", "--reader-cpu", "0", "--rt"])) == \
        Placement(cpu=1, reader_cpu=0, rt=True)


def test_a_placement_the_machine_cannot_give_is_one_error_line() -> None:
    assert placement_error(Placement(cpu=0, reader_cpu=1), 2) == ""
    assert placement_error(Placement(cpu=2), 2) == "--cpu: this machine has CPUs 0 to 1, got 2"
    assert placement_error(Placement(reader_cpu=5), 2).startswith("--reader-cpu: this machine")
    assert "is --cpu already" in placement_error(Placement(cpu=1, reader_cpu=1), 2)


def test_tcpdump_drop_count_is_read_from_its_closing_lines() -> None:
    text = "120 packets captured\n130 packets received by filter\n10 packets dropped by kernel\n"
    assert dropped_by_kernel(text) == 10
    assert dropped_by_kernel("tcpdump: something else") == -1
