import pytest

from tcpsim.capture.units import duration_ns, rate_bps, size_bytes


@pytest.mark.parametrize("text,ns", [("250us", 250_000), ("20ms", 20_000_000), ("1.5s", 1_500_000_000),
                                     ("35min", 2_100_000_000_000), (2, 2_000_000_000), (0.5, 500_000_000)])
def test_duration(text, ns):
    assert duration_ns(text) == ns


def test_size_and_rate():
    assert size_bytes("32KiB") == 32768
    assert size_bytes("256MiB") == 268435456
    assert size_bytes(1448) == 1448
    assert rate_bps("1gbit") == 10**9
    assert rate_bps("100mbit") == 10**8


@pytest.mark.parametrize("fn,bad", [(duration_ns, "3 parsecs"), (size_bytes, "12furlongs"), (rate_bps, "fast")])
def test_bad_units(fn, bad):
    with pytest.raises(ValueError):
        fn(bad)
