// The ns-3 side of `tcpsim bench --ns3`: the benchmark's cases as an ns-3 program, so ns-3's
// cost for the same simulated work is measured beside tcpsim's in one run of the benchmark.
//
// Two nodes on a point-to-point link (rate, one-way delay = rtt / 2, a drop-tail queue of
// `queue` packets), one TCP connection (NewReno, MSS 1448, no SACK/timestamps differences
// matter for cost), a writer on the sender and a reader on the receiver:
//   writer: bulk (keeps the send buffer full) | periodic (wbytes every wevery_us)
//   reader: fast (reads everything on arrival) | periodic (rbytes every revery_us)
//           | oscillating (rbytes every revery_us, then rbytes2 every revery2_us, switching
//             each period_s)
// Prints one JSON line: packets sent on the link (both directions, as tcpsim counts them),
// bytes read, simulated seconds and ns-3's event count.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"

#include <cstdio>
#include <string>

using namespace ns3;

namespace
{

uint64_t g_packets = 0;
uint64_t g_read = 0;

void
CountTx(Ptr<const Packet>)
{
    ++g_packets;
}

struct Options
{
    std::string rate = "1Gbps";
    double rttMs = 20;
    uint32_t queue = 2000;
    double durationS = 10;
    std::string writer = "bulk";
    uint32_t wbytes = 1448;
    uint32_t weveryUs = 1000;
    std::string reader = "fast";
    uint32_t rbytes = 1;
    uint32_t reveryUs = 1000;
    uint32_t rbytes2 = 0;
    uint32_t revery2Us = 1000;
    double periodS = 0;
    uint32_t rcvbuf = 6 << 20;
    uint32_t sndbuf = 4 << 20;
};

// The receiving application: accepts one connection and reads by the chosen pattern.
class Reader : public Application
{
  public:
    explicit Reader(const Options& o)
        : m_o(o)
    {
    }

    void Listen(Ptr<Node> node, uint16_t port)
    {
        m_listener = Socket::CreateSocket(node, TcpSocketFactory::GetTypeId());
        m_listener->Bind(InetSocketAddress(Ipv4Address::GetAny(), port));
        m_listener->Listen();
        m_listener->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                      MakeCallback(&Reader::Accepted, this));
    }

  private:
    void Accepted(Ptr<Socket> s, const Address&)
    {
        m_sock = s;
        if (m_o.reader == "fast")
        {
            s->SetRecvCallback(MakeCallback(&Reader::ReadAll, this));
        }
        else
        {
            Simulator::Schedule(MicroSeconds(m_o.reveryUs), &Reader::Tick, this);
        }
    }

    void ReadAll(Ptr<Socket> s)
    {
        while (Ptr<Packet> p = s->Recv())
        {
            if (p->GetSize() == 0)
            {
                break;
            }
            g_read += p->GetSize();
        }
    }

    // an oscillating reader's second pair in odd periods; else the first
    bool SecondPhase() const
    {
        return m_o.reader == "oscillating" && m_o.periodS > 0 &&
               static_cast<uint64_t>(Simulator::Now().GetSeconds() / m_o.periodS) % 2 == 1;
    }

    void Tick()
    {
        bool second = SecondPhase();
        if (Ptr<Packet> p = m_sock->Recv(second ? m_o.rbytes2 : m_o.rbytes, 0))
        {
            g_read += p->GetSize();
        }
        Simulator::Schedule(MicroSeconds(second ? m_o.revery2Us : m_o.reveryUs),
                            &Reader::Tick,
                            this);
    }

    Options m_o;
    Ptr<Socket> m_listener;
    Ptr<Socket> m_sock;
};

// The sending application: bulk keeps the send buffer full; periodic writes wbytes a tick
// (a write that finds no room is dropped, as a non-blocking writer's EAGAIN would be).
class Writer : public Application
{
  public:
    explicit Writer(const Options& o)
        : m_o(o)
    {
    }

    void Connect(Ptr<Node> node, Address to)
    {
        m_sock = Socket::CreateSocket(node, TcpSocketFactory::GetTypeId());
        m_sock->Bind();
        m_sock->Connect(to);
        if (m_o.writer == "bulk")
        {
            m_sock->SetSendCallback(MakeCallback(&Writer::Fill, this));
        }
        else
        {
            Simulator::Schedule(MicroSeconds(m_o.weveryUs), &Writer::Tick, this);
        }
    }

  private:
    void Fill(Ptr<Socket> s, uint32_t)
    {
        while (s->GetTxAvailable() > 0)
        {
            uint32_t n = std::min<uint32_t>(s->GetTxAvailable(), 65536);
            if (s->Send(Create<Packet>(n)) < 0)
            {
                break;
            }
        }
    }

    void Tick()
    {
        if (m_sock->GetTxAvailable() >= m_o.wbytes)
        {
            m_sock->Send(Create<Packet>(m_o.wbytes));
        }
        Simulator::Schedule(MicroSeconds(m_o.weveryUs), &Writer::Tick, this);
    }

    Options m_o;
    Ptr<Socket> m_sock;
};

} // namespace

int
main(int argc, char* argv[])
{
    Options o;
    CommandLine cmd;
    cmd.AddValue("rate", "link rate", o.rate);
    cmd.AddValue("rtt_ms", "round-trip time, ms", o.rttMs);
    cmd.AddValue("queue", "drop-tail queue, packets", o.queue);
    cmd.AddValue("duration_s", "simulated seconds", o.durationS);
    cmd.AddValue("writer", "bulk|periodic", o.writer);
    cmd.AddValue("wbytes", "bytes per write", o.wbytes);
    cmd.AddValue("wevery_us", "write period, us", o.weveryUs);
    cmd.AddValue("reader", "fast|periodic|oscillating", o.reader);
    cmd.AddValue("rbytes", "bytes per read", o.rbytes);
    cmd.AddValue("revery_us", "read period, us", o.reveryUs);
    cmd.AddValue("rbytes2", "bytes per read in the second phase (oscillating)", o.rbytes2);
    cmd.AddValue("revery2_us", "read period in the second phase (oscillating), us", o.revery2Us);
    cmd.AddValue("period_s", "oscillation phase length, s", o.periodS);
    cmd.AddValue("rcvbuf", "receive buffer, bytes", o.rcvbuf);
    cmd.AddValue("sndbuf", "send buffer, bytes", o.sndbuf);
    cmd.Parse(argc, argv);

    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(o.rcvbuf));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(o.sndbuf));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));

    NodeContainer nodes;
    nodes.Create(2);
    PointToPointHelper link;
    link.SetDeviceAttribute("DataRate", StringValue(o.rate));
    link.SetChannelAttribute("Delay", TimeValue(MicroSeconds(o.rttMs * 500)));
    link.SetQueue("ns3::DropTailQueue",
                  "MaxSize",
                  QueueSizeValue(QueueSize(std::to_string(o.queue) + "p")));
    NetDeviceContainer devs = link.Install(nodes);
    InternetStackHelper stack;
    stack.Install(nodes);
    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.255.0");
    Ipv4InterfaceContainer ifs = addr.Assign(devs);
    for (uint32_t i = 0; i < devs.GetN(); ++i)
    {
        devs.Get(i)->TraceConnectWithoutContext("MacTx", MakeCallback(&CountTx));
    }

    const uint16_t port = 5001;
    Ptr<Reader> reader = CreateObject<Reader>(o);
    nodes.Get(1)->AddApplication(reader);
    // sockets are made once the nodes are initialised (their traffic-control layer is set up
    // when the simulation starts)
    Simulator::ScheduleNow(&Reader::Listen, reader, nodes.Get(1), port);
    Ptr<Writer> writer = CreateObject<Writer>(o);
    nodes.Get(0)->AddApplication(writer);
    Simulator::Schedule(MicroSeconds(1),
                        &Writer::Connect,
                        writer,
                        nodes.Get(0),
                        Address(InetSocketAddress(ifs.GetAddress(1), port)));

    Simulator::Stop(Seconds(o.durationS));
    Simulator::Run();
    std::printf("{\"packets\": %llu, \"read_bytes\": %llu, \"sim_s\": %g, \"events\": %llu}\n",
                static_cast<unsigned long long>(g_packets),
                static_cast<unsigned long long>(g_read),
                Simulator::Now().GetSeconds(),
                static_cast<unsigned long long>(Simulator::GetEventCount()));
    Simulator::Destroy();
    return 0;
}
