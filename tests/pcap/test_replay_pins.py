"""`tcpsim replay` without --fit: a given --device is replayed (it was silently ignored), a
--timing, which only a fit uses, is one error line."""

from __future__ import annotations

from pathlib import Path

from tcpsim.pcap.replay import replay_capture
from tcpsim.validate.report import text

from cli_entry import run_main

PCAP = Path(__file__).parent.parent / "fixtures" / "pcaps" / "veth-periodic-1448-1ms.pcap.gz"


def test_a_given_device_is_replayed():
    veth = replay_capture(PCAP, reader="periodic:1448B/1ms", until_s=0.1)
    lo = replay_capture(PCAP, reader="periodic:1448B/1ms", until_s=0.1, device="loopback")
    assert "note: device given: --device loopback" in text(lo.score)
    assert veth.score.as_dict() != lo.score.as_dict()


def test_timing_without_a_fit_and_a_bad_device_are_one_line(monkeypatch, capsys):
    code, _, err = run_main(["replay", str(PCAP), "--timing", "dev-vm-quiet"], monkeypatch,
                            capsys)
    assert code == 2 and err.strip().splitlines() == [
        "tcpsim: error: --timing dev-vm-quiet: pins the application timing of a fit; give "
        "--fit (or --profiles) with it"]
    code, _, err = run_main(["replay", str(PCAP), "--device", "e1000"], monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--device e1000: unknown device" in err
