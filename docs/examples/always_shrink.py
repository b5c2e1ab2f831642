"""A patch in its own file: tcpsim run SCENARIO --policy docs/examples/always_shrink.py:AlwaysShrink"""


class AlwaysShrink:
    """Let the window retract whenever memory says so (what tcp_shrink_window=1 does)."""

    name = "always-shrink"
    summary = "retract the window whenever memory says so"

    def shrink_allowed(self, sk):
        """Models the test in `tcp_select_window()` [tcp_output.c, 6.5]: shrink only with
        window scaling (without it the old right edge is already exact to the byte)."""
        return sk.conn.rcv_wscale != 0
