from tcpsim.capture.nstat import diff, parse_proc_counters

NETSTAT = """TcpExt: SyncookiesSent PruneCalled TCPRcvCoalesce
TcpExt: 0 355 28182
IpExt: InNoRoutes InOctets
IpExt: 0 1234
"""


def test_parse_and_diff():
    c = parse_proc_counters(NETSTAT)
    assert c["TcpExtPruneCalled"] == 355 and c["IpExtInOctets"] == 1234
    after = dict(c, TcpExtPruneCalled=360)
    assert diff(c, after) == {"TcpExtPruneCalled": 5}
    assert diff(c, after, nonzero=False)["TcpExtTCPRcvCoalesce"] == 0
