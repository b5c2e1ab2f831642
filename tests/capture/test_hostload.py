"""The captures' controlled host load (tcpsim.capture.hostload): the NxB/P form, its
errors, and a load process that runs pinned and reports the CPU it got."""

from __future__ import annotations

import os
import time

import pytest

from tcpsim.capture.hostload import HostLoad, HostLoadRunner, parse_host_load


def test_the_form_names_processes_busy_time_and_period() -> None:
    assert parse_host_load("1x5/10") == HostLoad(1, 5000, 10000)
    assert parse_host_load("2x0.5/2") == HostLoad(2, 500, 2000)
    assert parse_host_load("1x10/10").label() == "1x10/10"


@pytest.mark.parametrize("text,msg", [
    ("half", "write NxB/P"), ("1x5", "write NxB/P"), ("0x5/10", "1 to 16 processes"),
    ("1x11/10", "at most the period"), ("1x0/10", "more than 0"),
])
def test_bad_forms_say_what_to_write(text: str, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        parse_host_load(text)


def test_a_load_process_runs_pinned_and_reports_its_share(tmp_path) -> None:
    cpu = sorted(os.sched_getaffinity(0))[0]
    runner = HostLoadRunner(parse_host_load("1x2/4"), cpu, tmp_path).start()
    time.sleep(0.5)
    got = runner.stop()
    assert got["spec"] == "1x2/4" and got["cpu"] == cpu
    (proc,) = got["processes"]
    assert proc["wall_s"] > 0 and 0 < proc["cpu_s"] <= proc["wall_s"]
    assert all(p.poll() is not None for p in runner.procs)


def test_capture_fixtures_refuses_a_bad_host_load_before_capturing(capsys) -> None:
    from tests.scripts import load_script
    main = load_script("capture_fixtures").main
    assert main(["--only", "seed-rcvbuf32k-fill", "--host-load", "lots"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fixtures: --host-load:") and "1x5/10" in err[0]
