"""scripts/ack_batching.py: the ACK bunching and first-retransmission figures of
docs/app-latency.md#ack-path, on small synthetic captures."""

from __future__ import annotations

from pathlib import Path

from tests.pcap_frames import RCV, SND, frame, tcp, write_pcap
from tests.scripts import load_script

ab = load_script("ack_batching")
MSS = 1448


def _pcap(path: Path, data: list[tuple[float, int]], acks: list[tuple[float, int]]) -> Path:
    """A capture with data segments (time s, seq) and pure ACKs (time s, ack)."""
    frames = [(t, frame(tcp(SND[1], RCV[1], seq, 1, 0x18, 1000, MSS), False, 1))
              for t, seq in data]
    frames += [(t, frame(tcp(RCV[1], SND[1], 1, ack, 0x10, 1000), True, 1)) for t, ack in acks]
    return write_pcap(path, sorted(frames, key=lambda f: f[0]))


def test_bunching_counts_close_acks_and_most_data_per_ms() -> None:
    # 5 ACKs: three within 20 us of each other, then two 1 ms apart, 2 segments each
    acks = [(0, 0), (10_000, 2 * MSS), (20_000, 4 * MSS), (1_500_000, 6 * MSS),
            (2_600_000, 8 * MSS)]
    n, close, most = ab.bunching(acks, 0, 1 << 62)
    assert n == 5
    assert close == 2 / 4
    assert most == 4      # 4 segments newly acknowledged within the first 20 us (1 ms window)


def test_a_segment_resent_after_a_hole_is_a_retransmission(tmp_path: Path) -> None:
    seq = [1 + i * MSS for i in range(6)]
    # segment 2 dropped, resent 10 ms later; segments 4 and 5 swapped by 5 us (reordering)
    data = [(1.000, seq[0]), (1.001, seq[1]), (1.002, seq[3]), (1.003, seq[5]),
            (1.003005, seq[4]), (1.012, seq[2])]
    acks = [(1.0011, seq[2]), (1.0121, seq[5] + MSS)]
    pcap = _pcap(tmp_path / "w.pcap", data, acks)
    got, first, rtx = ab.acks_and_marks(pcap, rcv_port=RCV[1])
    assert first == 1_000_000_000
    assert rtx == 1_012_000_000            # not the reordered segment at 1.003005
    assert [a for _, a in got] == [seq[2], seq[5] + MSS]


def test_no_retransmission_when_only_reordered(tmp_path: Path) -> None:
    seq = [1 + i * MSS for i in range(4)]
    data = [(1.000, seq[0]), (1.001, seq[2]), (1.001010, seq[1]), (1.002, seq[3])]
    _, _, rtx = ab.acks_and_marks(_pcap(tmp_path / "w.pcap", data, []), rcv_port=RCV[1])
    assert rtx == -1
