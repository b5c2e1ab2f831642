"""Reading the capturing kernel's CONFIG_HZ (no root needed)."""

import gzip

from tcpsim.capture.kconfig import config_paths, kernel_hz, read_config_hz


def test_reads_hz_from_gzip_and_plain_configs(tmp_path):
    text = "# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\nCONFIG_HZ_PERIODIC=n\n"
    gz = tmp_path / "config.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    plain = tmp_path / "config-6.18"
    plain.write_text(text.replace("250", "1000"))
    assert read_config_hz(gz) == 250 and read_config_hz(plain) == 1000
    assert kernel_hz([tmp_path / "missing", plain]) == (1000, str(plain))


def test_unknown_hz_says_where_it_looked(tmp_path):
    hz, why = kernel_hz([tmp_path / "a", tmp_path / "b"])
    assert hz is None and why.startswith("unknown: no CONFIG_HZ in") and str(tmp_path / "b") in why


def test_the_usual_places():
    assert [str(p) for p in config_paths("6.18.44")] == ["/proc/config.gz", "/boot/config-6.18.44"]
