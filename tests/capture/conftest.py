"""Skip @pytest.mark.root tests unless we are root and `ip netns` works."""

from __future__ import annotations

import pytest

from tcpsim.capture.netns import netns_available


def pytest_collection_modifyitems(config, items):
    if netns_available():
        return
    skip = pytest.mark.skip(reason="needs root and `ip netns` (real-kernel capture)")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)
