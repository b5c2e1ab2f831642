//! Socket methods the kernel eras call that nrust has not ported yet.
//!
//! Each entry is the Python method's signature in Rust, so that src/kernel.rs and the eras
//! compile against it; nrust deletes an entry when it ports the method into its room (the
//! path in the message). Nothing here is behaviour: calling an entry panics.

use crate::segment::Segment;
use crate::socket::TcpSocket;

/// The optional columns of Python's `TcpSocket.trace(event, detail, seg=None, truesize=-1,
/// reason="", length=-1, cost=-1)`, with the same defaults.
#[derive(Debug, Clone, Copy)]
pub struct TraceArgs<'a> {
    pub seg: Option<&'a Segment>,
    pub truesize: i64,
    pub reason: &'a str,
    pub length: i64,
    pub cost: i64,
}

impl Default for TraceArgs<'_> {
    fn default() -> Self {
        TraceArgs {
            seg: None,
            truesize: -1,
            reason: "",
            length: -1,
            cost: -1,
        }
    }
}

impl TcpSocket {
    /// Models tcp_space(): window worth of the unused receive budget (may be negative).
    pub fn tcp_space(&self) -> i64 {
        unimplemented!("ported by nrust: tcpsim/core/receiver.py")
    }

    /// Models tcp_full_space(): window worth of the whole receive budget.
    pub fn full_space(&self) -> i64 {
        unimplemented!("ported by nrust: tcpsim/core/receiver.py")
    }

    /// Models tcp_receive_window(): what the peer may still send.
    pub fn receive_window(&self) -> i64 {
        unimplemented!("ported by nrust: tcpsim/core/receiver.py")
    }

    /// Models tcp_data_ready(): wake the reader when enough is queued.
    pub fn data_ready(&mut self) {
        unimplemented!("ported by nrust: tcpsim/core/receiver.py")
    }

    /// TCP timestamp clock (Python `_tsval`): ms, offset by one.
    pub fn tsval(&self) -> i64 {
        unimplemented!("ported by nrust: tcpsim/core/socket.py")
    }

    /// A duration rounded up to whole jiffies of this kernel's tick, in ns.
    pub fn jiffies_up(&self, _d_ns: i64) -> i64 {
        unimplemented!("ported by nrust: tcpsim/core/socket.py")
    }

    /// Report an event to the sink as a trace event (EVENT_FIELDS).
    pub fn trace(&mut self, _event: &str, _detail: &str, _x: TraceArgs) {
        unimplemented!("ported by nrust: tcpsim/core/socket.py")
    }
}
