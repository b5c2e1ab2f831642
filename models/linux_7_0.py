"""Linux 7.0.

On the receive path 7.0 is 6.19.7: mainline took 026dfef287c0 "tcp: give up on stronger
sk_rcvbuf checks (for now)" during 7.0-rc (net tree, 2026-02-28), the same admission test
linux-6.19 (6.19.7+) and linux-6.18 (6.18.17+) model, together with 1cc93c48b5d7
"selftests/net: packetdrill: remove tests for tcp_rcv_*big" (tcp_rcv_toobig.pkt tested the
stronger check; the packetdrill verdict table, tcpsim/data/packetdrill_verdicts.json, knows
it is gone from 7.0's tree).

No other change to the functions tcpsim models was found in the netdev and stable mails read
for the 7.0 cycle. UNVERIFIED: 7.0's tcp_input.c / tcp_output.c were not read in source.
"""

from __future__ import annotations

from tcpsim.models.linux_6_19 import Linux619
from tcpsim.policy import Profile


class Linux70(Linux619):
    """Linux 7.0: 6.19.7's receive path (the stronger admission given up in mainline)."""

    RELEASE = "7.0"


PROFILE = Profile("linux-7.0", Linux70,
                  "7.0: the receive path of 6.19.7 (stronger sk_rcvbuf checks given up)")
