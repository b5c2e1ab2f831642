"""Real traffic in and out: packet captures (pcap, pcapng) read into tcpsim and written from it.

Rooms: `read` decodes a capture file into TCP segments with dpkt (every link type tcpdump
and Wireshark write on Linux: Ethernet with VLAN tags, Linux cooked SLL and SLL2, raw IP,
loopback; IPv4 and IPv6), `flows` groups them into connections and picks one, `wirelog`
turns a connection into a trace of what the wire shows (tcpsim's schema), `workload` into a
scenario to run, `replay` runs that workload and scores the model against the capture
(through tcpsim.validate), `export` writes a simulated run's packets as a pcap.
"""

from tcpsim.importers import ImportFormatError as PcapError

__all__ = ["PcapError"]
