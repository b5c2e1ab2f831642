"""Linux 6.8: the default scaling_ratio goes from 25 % to 50 %.

697a6c8cec03 "tcp: increase the default TCP scaling ratio" (Hechao Li, 2024; also backported
to 6.6.y stable): before any segment is measured the ratio is 128/256, so the initial windows
are back to ~64 KiB (64240 / 65160 on the wire) instead of 6.6.0's ~32 KiB.
"""

from __future__ import annotations

from tcpsim.models.linux_6_6 import Linux66
from tcpsim.policy import Profile


class Linux68(Linux66):
    """Linux 6.8: 6.6 with the 50 % default scaling_ratio."""

    RELEASE = "6.8"
    DEFAULT_SCALING_RATIO = 128     # 1 << (TCP_RMEM_TO_WIN_SCALE - 1)


PROFILE = Profile("linux-6.8", Linux68, "6.8: scaling_ratio default raised to 50 %")
