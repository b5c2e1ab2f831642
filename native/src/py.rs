//! `tcpsim._native`: the Python bindings of the native engine.
//!
//! They expose the leaf rooms (constants, sequence comparison, segments, skbs, devices, the
//! clocks, MIB, sysctls and the initial state records), a `NativeSocket` with the memory
//! room, and `TcpSocket`, the whole native socket with the Python socket's sans-IO surface,
//! so that tests/native/ can hold them to the Python model. No `unsafe` here: PyO3's safe
//! API covers every conversion.

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::clock;
use crate::constants;
use crate::devices;
use crate::fields::Record;
use crate::kernel::Kernel;
use crate::memory::Tail;
use crate::mib::{Mib, COUNTERS};
use crate::models::kernel_for;
use crate::protmem::{ProtoHandle, ProtoMemory};
use crate::py_view::{from_py, to_py, MibView, RecordView, SkRef, SysctlView};
use crate::segment::{self, Segment};
use crate::sender;
use crate::seq;
use crate::skb::{Layout, Skb};
use crate::socket::{SocketParams, TcpSocket};
use crate::state::{AckState, ConnState, MemState, RcvState, SndState, TcpState};
use crate::sysctl::{self, SysctlValue, Sysctls};
use crate::value::{ToValue, Value};

pub(crate) fn fields_dict<'py>(
    py: Python<'py>,
    fields: &[(&str, Value)],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, v) in fields {
        d.set_item(*name, to_py(py, v)?)?;
    }
    Ok(d)
}

fn pairs_dict<'py>(py: Python<'py>, pairs: &[(&str, i64)]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, v) in pairs {
        d.set_item(*name, v)?;
    }
    Ok(d)
}

/// The module-level constants of one Python room ("constants", "sender", "devices"), by name.
#[pyfunction]
fn module_constants<'py>(py: Python<'py>, room: &str) -> PyResult<Bound<'py, PyDict>> {
    let pairs = match room {
        "constants" => constants::ALL,
        "sender" => sender::ALL,
        "devices" => devices::ALL,
        _ => {
            return Err(PyKeyError::new_err(format!(
                "no constants for room {room:?}"
            )))
        }
    };
    pairs_dict(py, pairs)
}

/// SKB_TRUESIZE(x).
#[pyfunction]
fn skb_truesize(x: i64) -> i64 {
    constants::skb_truesize(x)
}

/// ksize() of an n-byte kmalloc.
#[pyfunction]
fn kmalloc_size(n: i64) -> i64 {
    constants::kmalloc_size(n)
}

/// SKB_DATA_ALIGN.
#[pyfunction]
fn data_align(n: i64) -> i64 {
    constants::data_align(n)
}

/// ALIGN(x, unit).
#[pyfunction]
fn align_up(x: i64, unit: i64) -> i64 {
    constants::align_up(x, unit)
}

/// round_down(x, unit).
#[pyfunction]
fn round_down(x: i64, unit: i64) -> i64 {
    constants::round_down(x, unit)
}

/// The kernel's before(seq1, seq2) on 32-bit sequence numbers.
#[pyfunction]
fn before(seq1: u32, seq2: u32) -> bool {
    seq::before(seq1, seq2)
}

/// The kernel's after(seq2, seq1).
#[pyfunction]
fn after(seq2: u32, seq1: u32) -> bool {
    seq::after(seq2, seq1)
}

/// The kernel's between(seq1, seq2, seq3).
#[pyfunction]
fn between(seq1: u32, seq2: u32, seq3: u32) -> bool {
    seq::between(seq1, seq2, seq3)
}

/// Flags as tcpdump prints them.
#[pyfunction]
fn flags_str(flags: i64) -> String {
    segment::flags_str(flags)
}

/// (repr, end_seq) of the segment with these fields (Python `Segment(...)` arguments).
#[pyfunction]
#[pyo3(signature = (seq, length, flags, ack=0, win=0, *, mss=0, wscale=-1, sack_ok=false,
                    tsval=-1, tsecr=-1, sacks=Vec::new(), gso_size=0))]
#[allow(clippy::too_many_arguments)] // keyword arguments from Python, like Segment's own
fn segment_info(
    seq: i64,
    length: i64,
    flags: i64,
    ack: i64,
    win: i64,
    mss: i64,
    wscale: i64,
    sack_ok: bool,
    tsval: i64,
    tsecr: i64,
    sacks: Vec<(i64, i64)>,
    gso_size: i64,
) -> (String, i64) {
    let s = Segment {
        mss,
        wscale,
        sack_ok,
        tsval,
        tsecr,
        sacks,
        gso_size,
        ..Segment::new(seq, length, flags, ack, win)
    };
    (s.to_string(), s.end_seq())
}

/// The skb `device` builds for a segment: its fields as a dict, plus "repr".
#[pyfunction]
#[pyo3(signature = (device, seq, length, fin, gso_size=0, tx_segs=0, frags=0))]
#[allow(clippy::too_many_arguments)]
fn make_skb<'py>(
    py: Python<'py>,
    device: &str,
    seq: i64,
    length: i64,
    fin: bool,
    gso_size: i64,
    tx_segs: i64,
    frags: i64,
) -> PyResult<Bound<'py, PyDict>> {
    let dev = devices::device(device).map_err(PyValueError::new_err)?;
    let skb = dev.make_skb(seq, length, fin, gso_size, tx_segs, frags);
    let Value::Record(fields) = skb.to_value() else {
        unreachable!("an skb is a record")
    };
    let d = fields_dict(py, &fields)?;
    d.set_item("repr", skb.to_string())?;
    Ok(d)
}

/// The device profile names, in the order of Python's DEVICES.
#[pyfunction]
fn device_names() -> Vec<String> {
    devices::devices()
        .iter()
        .map(|d| d.name().to_string())
        .collect()
}

/// The socket alone in a Rust-only loop (src/bench.rs `in_order`): `n` in-order segments
/// into a fresh receiver of `profile` on `device`, each read at once; the bytes read.
/// `tcpsim bench --socket` times the call.
#[pyfunction]
#[pyo3(signature = (profile, device, n, trace=false))]
fn bench_in_order(profile: &str, device: &str, n: i64, trace: bool) -> PyResult<i64> {
    crate::bench::in_order(profile, device, n, trace).map_err(PyValueError::new_err)
}

/// A kernel tick clock (tcpsim/core/clock.py `JiffyClock`).
#[pyclass(name = "JiffyClock", frozen)]
struct PyJiffyClock(clock::JiffyClock);

#[pymethods]
impl PyJiffyClock {
    #[new]
    fn new(hz: i64) -> PyResult<Self> {
        Ok(PyJiffyClock(
            clock::JiffyClock::new(hz).map_err(PyValueError::new_err)?,
        ))
    }

    #[getter]
    fn hz(&self) -> i64 {
        self.0.hz
    }

    fn jiffies(&self, t_ns: i64) -> i64 {
        self.0.jiffies(t_ns)
    }

    fn tick_ns(&self, j: i64) -> i64 {
        self.0.tick_ns(j)
    }

    fn to_jiffies(&self, d_ns: i64) -> i64 {
        self.0.to_jiffies(d_ns)
    }

    fn usecs_to_jiffies(&self, us: i64) -> i64 {
        self.0.usecs_to_jiffies(us)
    }

    fn bucket_expiry(&self, expires: i64, clk: i64) -> i64 {
        self.0.bucket_expiry(expires, clk)
    }

    fn arm(&self, now_ns: i64, when_j: i64) -> (i64, i64) {
        self.0.arm(now_ns, when_j)
    }
}

/// The socket's clock (`Clock` trait): hz = 0 is the exact clock, else a JiffyClock.
#[pyclass(name = "Clock", frozen)]
struct PyClock(Box<dyn clock::Clock + Send + Sync>);

#[pymethods]
impl PyClock {
    #[new]
    fn new(hz: i64) -> PyResult<Self> {
        Ok(PyClock(
            clock::clock_for(hz).map_err(PyValueError::new_err)?,
        ))
    }

    #[getter]
    fn hz(&self) -> i64 {
        self.0.hz()
    }

    fn reset_xmit_timer(&self, now_ns: i64, when_ns: i64) -> i64 {
        self.0.reset_xmit_timer(now_ns, when_ns)
    }

    fn jiffies_up(&self, d_ns: i64) -> i64 {
        self.0.jiffies_up(d_ns)
    }

    fn rto_ns(&self, us: i64) -> i64 {
        self.0.rto_ns(us)
    }

    fn within(&self, since_ns: i64, now_ns: i64, limit_ns: i64) -> bool {
        self.0.within(since_ns, now_ns, limit_ns)
    }
}

/// (name, meaning) of every MIB counter, in order.
#[pyfunction]
fn mib_counters() -> Vec<(&'static str, &'static str)> {
    COUNTERS.to_vec()
}

/// `Mib.as_nstat()` of a Mib whose counters are set from `values` ({kernel name: n}).
#[pyfunction]
fn mib_nstat(values: Vec<(String, i64)>) -> PyResult<Vec<(String, i64)>> {
    let mut m = Mib::default();
    for (name, v) in values {
        let c = m
            .counter_mut(&name)
            .ok_or_else(|| PyKeyError::new_err(format!("no MIB counter {name:?}")))?;
        *c = v;
    }
    Ok(m.as_nstat())
}

fn sysctl_py<'py>(py: Python<'py>, v: SysctlValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        SysctlValue::Int(i) => i.into_pyobject(py)?.into_any(),
        SysctlValue::Triple(a, b, c) => PyList::new(py, [a, b, c])?.into_any(),
        SysctlValue::Name(n) => PyString::new(py, n).into_any(),
    })
}

/// `Sysctls().as_dict()`: the defaults under their kernel names.
#[pyfunction]
fn default_sysctls(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (name, v) in Sysctls::default().as_dict() {
        d.set_item(name, sysctl_py(py, v)?)?;
    }
    Ok(d)
}

/// sysctl.py `short_name`.
#[pyfunction]
fn sysctl_short_name(name: &str) -> String {
    sysctl::short_name(name).to_string()
}

/// sysctl.py `long_name`.
#[pyfunction]
fn sysctl_long_name(short: &str) -> String {
    sysctl::long_name(short)
}

/// The connection states' names, in enum order.
#[pyfunction]
fn tcp_states() -> Vec<&'static str> {
    TcpState::ALL.iter().map(|s| s.as_str()).collect()
}

/// {record: [field names]} for the five state records.
#[pyfunction]
fn record_fields() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        ("conn", ConnState::FIELDS.to_vec()),
        ("rcv", RcvState::FIELDS.to_vec()),
        ("mem", MemState::FIELDS.to_vec()),
        ("ack", AckState::FIELDS.to_vec()),
        ("snd", SndState::FIELDS.to_vec()),
    ]
}

/// The five records of a new socket, {record: {field: value}}, built as
/// `TcpSocket(kernel, sysctl, mtu=, initcwnd=, nodelay=, init_rwnd=)` builds them;
/// `scaling_ratio` is the era's `initial_scaling_ratio()`.
#[pyfunction]
#[pyo3(signature = (*, mtu, init_rwnd, initcwnd, nodelay, scaling_ratio, tcp_rmem, tcp_wmem))]
#[allow(clippy::too_many_arguments)] // keyword-only from Python, like TcpSocket's own
fn initial_state<'py>(
    py: Python<'py>,
    mtu: i64,
    init_rwnd: i64,
    initcwnd: i64,
    nodelay: bool,
    scaling_ratio: i64,
    tcp_rmem: (i64, i64, i64),
    tcp_wmem: (i64, i64, i64),
) -> PyResult<Bound<'py, PyDict>> {
    let sysctl = Sysctls {
        tcp_rmem,
        tcp_wmem,
        ..Sysctls::default()
    };
    let out = PyDict::new(py);
    out.set_item(
        "conn",
        fields_dict(py, &ConnState::new(mtu, init_rwnd).fields())?,
    )?;
    out.set_item(
        "rcv",
        fields_dict(py, &RcvState::new(scaling_ratio).fields())?,
    )?;
    out.set_item("mem", fields_dict(py, &MemState::new(&sysctl).fields())?)?;
    out.set_item("ack", fields_dict(py, &AckState::new().fields())?)?;
    let snd = SndState::new(initcwnd, nodelay, &sysctl);
    out.set_item("snd", fields_dict(py, &snd.fields())?)?;
    Ok(out)
}

fn skb_py<'py>(py: Python<'py>, skb: &Skb) -> PyResult<Bound<'py, PyAny>> {
    to_py(py, &skb.to_value())
}

/// An skb from a dict of its fields (as `make_skb` returns them; "repr" ignored).
fn skb_from_py(d: &Bound<'_, PyDict>) -> PyResult<Skb> {
    let int = |k: &str| -> PyResult<i64> {
        d.get_item(k)?
            .ok_or_else(|| PyKeyError::new_err(format!("skb field {k:?} missing")))?
            .extract()
    };
    let flag = |k: &str| -> PyResult<bool> {
        d.get_item(k)?
            .ok_or_else(|| PyKeyError::new_err(format!("skb field {k:?} missing")))?
            .extract()
    };
    let layout = Layout {
        head: int("head")?,
        linear: int("linear")?,
        nfrags: int("nfrags")?,
        head_frag: flag("head_frag")?,
        tailroom: int("tailroom")?,
    };
    let mut skb = Skb::new(
        int("seq")?,
        int("len")?,
        int("truesize")?,
        layout,
        flag("fin")?,
    );
    skb.end_seq = int("end_seq")?;
    skb.cloned_until = int("cloned_until")?;
    Ok(skb)
}

fn tail(name: &str) -> PyResult<Tail> {
    match name {
        "receive" => Ok(Tail::Receive),
        "ofo" => Ok(Tail::Ofo),
        _ => Err(PyValueError::new_err(format!(
            "queue {name:?}: expected 'receive' or 'ofo'"
        ))),
    }
}

/// A native TcpSocket, driven from Python by the differential tests: construction and the
/// memory room so far.
#[pyclass(name = "NativeSocket")]
struct PySocket(TcpSocket);

#[pymethods]
impl PySocket {
    #[new]
    #[pyo3(signature = (profile, *, device="veth", mtu=1500, initcwnd=10, nodelay=true,
                        init_rwnd=0, hz=0, tcp_rmem=None, tcp_wmem=None, tcp_adv_win_scale=None))]
    #[allow(clippy::too_many_arguments)] // keyword-only from Python, like TcpSocket's own
    fn new(
        profile: &str,
        device: &str,
        mtu: i64,
        initcwnd: i64,
        nodelay: bool,
        init_rwnd: i64,
        hz: i64,
        tcp_rmem: Option<(i64, i64, i64)>,
        tcp_wmem: Option<(i64, i64, i64)>,
        tcp_adv_win_scale: Option<i64>,
    ) -> PyResult<Self> {
        let d = Sysctls::default();
        let sysctl = Sysctls {
            tcp_rmem: tcp_rmem.unwrap_or(d.tcp_rmem),
            tcp_wmem: tcp_wmem.unwrap_or(d.tcp_wmem),
            tcp_adv_win_scale: tcp_adv_win_scale.unwrap_or(d.tcp_adv_win_scale),
            ..d
        };
        let params = SocketParams {
            name: "rcv".to_string(),
            mtu,
            initcwnd,
            nodelay,
            init_rwnd,
            hz,
        };
        let k = kernel_for(profile).map_err(PyValueError::new_err)?;
        let dev = devices::device(device).map_err(PyValueError::new_err)?;
        let sk = TcpSocket::new(k, sysctl, Some(std::sync::Arc::new(dev)), &params)
            .map_err(PyValueError::new_err)?;
        Ok(PySocket(sk))
    }

    /// {record: {field: value}} for the five records, plus "mib": {counter: value}.
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let sk = &self.0;
        let out = PyDict::new(py);
        out.set_item("conn", fields_dict(py, &sk.conn.fields())?)?;
        out.set_item("rcv", fields_dict(py, &sk.rcv.fields())?)?;
        out.set_item("mem", fields_dict(py, &sk.mem.fields())?)?;
        out.set_item("ack", fields_dict(py, &sk.ack.fields())?)?;
        out.set_item("snd", fields_dict(py, &sk.snd.fields())?)?;
        out.set_item("mib", pairs_dict(py, &sk.mib.values())?)?;
        Ok(out)
    }

    /// Set one integer field the memory tests arrange (rcv.copied_seq, rcv.rcv_nxt,
    /// rcv.peer_released, rcv.scaling_ratio, mem.sk_rcvbuf).
    fn set_field(&mut self, record: &str, name: &str, value: i64) -> PyResult<()> {
        let sk = &mut self.0;
        let slot = match (record, name) {
            ("rcv", "copied_seq") => &mut sk.rcv.copied_seq,
            ("rcv", "rcv_nxt") => &mut sk.rcv.rcv_nxt,
            ("rcv", "peer_released") => &mut sk.rcv.peer_released,
            ("rcv", "scaling_ratio") => &mut sk.rcv.scaling_ratio,
            ("mem", "sk_rcvbuf") => &mut sk.mem.sk_rcvbuf,
            _ => {
                return Err(PyKeyError::new_err(format!(
                    "{record}.{name} cannot be set from Python"
                )))
            }
        };
        *slot = value;
        Ok(())
    }

    /// Append an skb (a dict of its fields) to the "receive" or "ofo" queue, uncharged.
    fn push_skb(&mut self, queue: &str, skb: &Bound<'_, PyDict>) -> PyResult<()> {
        let skb = skb_from_py(skb)?;
        match tail(queue)? {
            Tail::Receive => self.0.mem.receive_queue.push_back(skb),
            Tail::Ofo => self.0.mem.ofo_queue.push(skb),
        }
        Ok(())
    }

    fn rmem_schedule(&mut self, size: i64) -> bool {
        self.0.rmem_schedule(size)
    }

    fn charge(&mut self, size: i64) {
        self.0.charge(size)
    }

    fn uncharge(&mut self, size: i64) {
        self.0.uncharge(size)
    }

    /// Coalesce `skb` into the tail of the "receive" or "ofo" queue.
    fn coalesce_into(&mut self, queue: &str, skb: &Bound<'_, PyDict>) -> PyResult<bool> {
        let frm = skb_from_py(skb)?;
        Ok(self.0.coalesce_into(tail(queue)?, &frm))
    }

    fn collapse_receive_queue(&mut self) {
        self.0.collapse_receive_queue()
    }

    fn collapse_ofo_queue(&mut self) {
        self.0.collapse_ofo_queue()
    }

    /// The dropped skb as a dict, or None when the OFO queue is empty.
    fn ofo_drop_last<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.0.ofo_drop_last().map(|s| skb_py(py, &s)).transpose()
    }

    fn ofo_index(&self, seq: i64) -> usize {
        self.0.ofo_index(seq)
    }

    /// The era's win_from_space(space) for this socket.
    fn win_from_space(&self, space: i64) -> i64 {
        self.0.k.win_from_space(&self.0, space)
    }
}

/// The kernel of `profile` with `patches` applied (the profile registry).
pub(crate) fn compose_kernel(
    profile: &str,
    patches: &[String],
) -> PyResult<crate::kernel::KernelRef> {
    let names: Vec<&str> = patches.iter().map(String::as_str).collect();
    crate::models::compose(profile, &names).map_err(PyValueError::new_err)
}

/// A Python `tcpsim.core.segment.Segment`, read by attribute.
pub(crate) fn segment_from_py(seg: &Bound<'_, PyAny>) -> PyResult<Segment> {
    let int = |k: &str| -> PyResult<i64> { seg.getattr(k)?.extract() };
    let sacks: Vec<(i64, i64)> = seg.getattr("sacks")?.extract()?;
    Ok(Segment {
        seq: int("seq")?,
        len: int("len")?,
        flags: int("flags")?,
        ack: int("ack")?,
        win: int("win")?,
        mss: int("mss")?,
        wscale: int("wscale")?,
        sack_ok: seg.getattr("sack_ok")?.is_truthy()?,
        tsval: int("tsval")?,
        tsecr: int("tsecr")?,
        sacks,
        gso_size: int("gso_size")?,
        tx_ns: int("tx_ns")?,
        tx_segs: int("tx_segs")?,
        frags: seg.getattr("frags")?.extract()?,
    })
}

/// A Python `Segment` (the class `cls`) with the fields of `seg`.
pub(crate) fn segment_to_py<'py>(
    py: Python<'py>,
    cls: &Bound<'py, PyAny>,
    seg: &Segment,
) -> PyResult<Bound<'py, PyAny>> {
    let kw = PyDict::new(py);
    kw.set_item("mss", seg.mss)?;
    kw.set_item("wscale", seg.wscale)?;
    kw.set_item("sack_ok", seg.sack_ok)?;
    kw.set_item("tsval", seg.tsval)?;
    kw.set_item("tsecr", seg.tsecr)?;
    let sacks = PyTuple::new(py, seg.sacks.iter().map(|&(a, b)| (a, b)))?;
    kw.set_item("sacks", sacks)?;
    kw.set_item("gso_size", seg.gso_size)?;
    let obj = cls.call((seg.seq, seg.len, seg.flags, seg.ack, seg.win), Some(&kw))?;
    obj.setattr("tx_ns", seg.tx_ns)?;
    obj.setattr("tx_segs", seg.tx_segs)?;
    obj.setattr("frags", seg.frags)?;
    Ok(obj)
}

/// A sysctl dict (`Sysctls.as_dict()` form, short or long names) onto the kernel's defaults,
/// with the sysctls its era (`default_sysctls`) and its patches (`new_sysctls`) add.
pub(crate) fn sysctls_from_py(d: &Bound<'_, PyDict>, k: &dyn Kernel) -> PyResult<Sysctls> {
    let mut s = k.default_sysctls().with_specs(&k.new_sysctls());
    for (k, v) in d.iter() {
        let name: String = k.extract()?;
        crate::fields::sysctl_set(&mut s, &name, &from_py(&v)?).map_err(PyKeyError::new_err)?;
    }
    Ok(s)
}

/// `tcpsim._native.TcpSocket`: the native twin of tcpsim/core/socket.py `TcpSocket`, with
/// the sans-IO surface of /work/native-contract.md (events in as method calls, segments out
/// by `take_outbox()`, the whole state by `snapshot()`, trace events by `take_events()`).
#[pyclass(name = "TcpSocket", unsendable)]
pub(crate) struct PyTcpSocket {
    pub(crate) sk: TcpSocket,
    /// tcpsim.core.segment.Segment, imported once.
    segment_cls: Py<PyAny>,
    /// Where a user's Python patch (`py_policy`) leaves the exception it raised.
    patch_error: Option<crate::py_patch::PatchError>,
}

impl PyTcpSocket {
    /// Raise what a Python patch raised during the step just made (py_patch.rs).
    fn patch_ok(&self) -> PyResult<()> {
        match &self.patch_error {
            Some(slot) => crate::py_patch::take_error(slot),
            None => Ok(()),
        }
    }
}

#[pymethods]
impl PyTcpSocket {
    #[new]
    #[pyo3(signature = (profile, patches, sysctl, device, *, name="rcv", mtu=1500, initcwnd=10,
                        nodelay=true, init_rwnd=0, hz=0, trace=true, py_policy=None))]
    #[allow(clippy::too_many_arguments)] // keyword arguments, as the Python socket's own
    fn new(
        py: Python<'_>,
        profile: &str,
        patches: Vec<String>,
        sysctl: &Bound<'_, PyDict>,
        device: &str,
        name: &str,
        mtu: i64,
        initcwnd: i64,
        nodelay: bool,
        init_rwnd: i64,
        hz: i64,
        trace: bool,
        py_policy: Option<Vec<(usize, Bound<'_, PyAny>)>>,
    ) -> PyResult<Self> {
        let mut k = compose_kernel(profile, &patches)?;
        let mut patch_error = None;
        if let Some(layers) = py_policy {
            let slot = crate::py_patch::PatchFailure::new(Default::default());
            k = crate::py_patch::compose_python(py, profile, &patches, &layers, &slot)?;
            patch_error = Some(slot);
        }
        let sysctl = sysctls_from_py(sysctl, &*k)?;
        let dev = devices::device(device).map_err(PyValueError::new_err)?;
        let params = SocketParams {
            name: name.to_string(),
            mtu,
            initcwnd,
            nodelay,
            init_rwnd,
            hz,
        };
        let mut sk = TcpSocket::new(k, sysctl, Some(std::sync::Arc::new(dev)), &params)
            .map_err(PyValueError::new_err)?;
        sk.tracing = trace;
        let segment_cls = py
            .import("tcpsim.core.segment")?
            .getattr("Segment")?
            .unbind();
        Ok(PyTcpSocket {
            sk,
            segment_cls,
            patch_error,
        })
    }

    fn connect(&mut self, now: i64) -> PyResult<()> {
        self.sk.connect(now);
        self.patch_ok()
    }

    fn listen(&mut self) -> PyResult<()> {
        self.sk.listen();
        self.patch_ok()
    }

    fn on_segment(&mut self, now: i64, seg: &Bound<'_, PyAny>) -> PyResult<()> {
        let seg = segment_from_py(seg)?;
        self.sk.on_segment(now, &seg);
        self.patch_ok()
    }

    fn read(&mut self, now: i64, n: i64) -> PyResult<i64> {
        let got = self.sk.read(now, n);
        self.patch_ok().map(|()| got)
    }

    fn write(&mut self, now: i64, n: i64) -> PyResult<i64> {
        let put = self.sk.write(now, n);
        self.patch_ok().map(|()| put)
    }

    /// socket.py `hold`: the call just made holds the socket for `hold_ns` more.
    fn hold(&mut self, now: i64, hold_ns: i64) -> PyResult<()> {
        self.sk.hold(now, hold_ns);
        self.patch_ok()
    }

    fn on_timer(&mut self, now: i64) -> PyResult<()> {
        self.sk.on_timer(now);
        self.patch_ok()
    }

    fn next_deadline(&self) -> i64 {
        self.sk.next_deadline()
    }

    fn take_outbox<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let cls = self.segment_cls.bind(py);
        let out = self
            .sk
            .take_outbox()
            .iter()
            .map(|s| segment_to_py(py, cls, s))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, out)
    }

    fn close(&mut self, now: i64) -> PyResult<()> {
        self.sk.close(now);
        self.patch_ok()
    }

    fn shutdown_write(&mut self, now: i64) -> PyResult<()> {
        self.sk.shutdown_write(now);
        self.patch_ok()
    }

    fn set_rcvbuf(&mut self, val: i64) -> PyResult<()> {
        self.sk.set_rcvbuf(val);
        self.patch_ok()
    }

    /// Charge this socket's memory to the shared pool `proto` on CPU `cpu` (socket.py
    /// `set_proto`).
    #[pyo3(signature = (proto, cpu=0))]
    fn set_proto(&mut self, proto: &PyProtoMemory, cpu: usize) -> PyResult<()> {
        self.sk
            .set_proto(proto.0.clone(), cpu)
            .map_err(PyValueError::new_err)
    }

    /// The socket is destroyed: its pages back to the pool (socket.py `release_memory`).
    fn release_memory(&mut self, now: i64) {
        self.sk.release_memory(now)
    }

    /// The pool this socket charges (shared with the socket: not a copy).
    #[getter]
    fn proto(&self) -> PyProtoMemory {
        PyProtoMemory(self.sk.proto.clone())
    }

    #[getter]
    fn cpu(&self) -> usize {
        self.sk.cpu
    }

    fn set_window_clamp(&mut self, val: i64) -> PyResult<()> {
        self.sk.set_window_clamp(val);
        self.patch_ok()
    }

    fn on_peer_release(&mut self, seq: i64) -> PyResult<()> {
        self.sk.on_peer_release(seq);
        self.patch_ok()
    }

    fn recv_q(&self) -> i64 {
        self.sk.recv_q()
    }

    fn ss_line(&self) -> String {
        self.sk.ss_line()
    }

    fn can_queue(&self) -> bool {
        self.sk.can_queue()
    }

    fn send_space(&self) -> i64 {
        self.sk.send_space()
    }

    fn count_inert_reads(&mut self, t0: i64, period: i64, n: i64, limit: i64) -> PyResult<i64> {
        let c = self.sk.count_inert_reads(t0, period, n, limit);
        self.patch_ok().map(|()| c)
    }

    fn apply_inert_reads(&mut self, t0: i64, period: i64, n: i64, count: i64) -> PyResult<()> {
        self.sk.apply_inert_reads(t0, period, n, count);
        self.patch_ok()
    }

    #[getter]
    fn name(&self) -> String {
        self.sk.name.clone()
    }

    #[getter]
    fn readable(&self) -> bool {
        self.sk.readable
    }

    #[setter]
    fn set_readable(&mut self, v: bool) {
        self.sk.readable = v
    }

    #[getter]
    fn writable(&self) -> bool {
        self.sk.writable
    }

    #[setter]
    fn set_writable(&mut self, v: bool) {
        self.sk.writable = v
    }

    #[getter]
    fn error(&self) -> String {
        self.sk.error.clone()
    }

    #[getter]
    fn eof(&self) -> bool {
        self.sk.eof
    }

    #[getter]
    fn accepted(&self) -> bool {
        self.sk.accepted
    }

    #[setter]
    fn set_accepted(&mut self, v: bool) {
        self.sk.accepted = v
    }

    #[getter]
    fn state(&self) -> &'static str {
        self.sk.conn.state.as_str()
    }

    #[getter]
    fn now(&self) -> i64 {
        self.sk.now
    }

    #[getter]
    fn conn(slf: &Bound<'_, Self>) -> RecordView {
        RecordView::new(SkRef::Owned(slf.clone().unbind()), Record::Conn)
    }

    #[getter]
    fn rcv(slf: &Bound<'_, Self>) -> RecordView {
        RecordView::new(SkRef::Owned(slf.clone().unbind()), Record::Rcv)
    }

    #[getter]
    fn mem(slf: &Bound<'_, Self>) -> RecordView {
        RecordView::new(SkRef::Owned(slf.clone().unbind()), Record::Mem)
    }

    #[getter]
    fn ack(slf: &Bound<'_, Self>) -> RecordView {
        RecordView::new(SkRef::Owned(slf.clone().unbind()), Record::Ack)
    }

    #[getter]
    fn snd(slf: &Bound<'_, Self>) -> RecordView {
        RecordView::new(SkRef::Owned(slf.clone().unbind()), Record::Snd)
    }

    #[getter]
    fn mib(slf: &Bound<'_, Self>) -> MibView {
        MibView::new(SkRef::Owned(slf.clone().unbind()))
    }

    #[getter]
    fn sysctl(slf: &Bound<'_, Self>) -> SysctlView {
        SysctlView::new(SkRef::Owned(slf.clone().unbind()))
    }

    /// `sk.sysctl = sysctls`: a whole new set (a `Sysctls` object or its `as_dict()`), as the
    /// kernel reads sysctls live.
    #[setter]
    fn set_sysctl(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let d = if value.hasattr("as_dict")? {
            value.call_method0("as_dict")?
        } else {
            value.clone()
        };
        self.sk.sysctl = sysctls_from_py(d.cast()?, &*self.sk.k)?.into();
        Ok(())
    }

    /// sk_wmem_queued (sender.py `wmem_queued`).
    fn wmem_queued(&self) -> i64 {
        self.sk.wmem_queued()
    }

    /// Every field of every state record, both queues skb by skb, the MIB and the socket's
    /// own surface (the contract's `snapshot()`).
    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let sk = &self.sk;
        let out = PyDict::new(py);
        out.set_item("conn", fields_dict(py, &sk.conn.fields())?)?;
        out.set_item("rcv", fields_dict(py, &sk.rcv.fields())?)?;
        out.set_item("ack", fields_dict(py, &sk.ack.fields())?)?;
        out.set_item("mem", fields_dict(py, &sk.mem.fields())?)?;
        out.set_item("snd", fields_dict(py, &sk.snd.fields())?)?;
        out.set_item("mib", pairs_dict(py, &sk.mib.values())?)?;
        let sock = PyDict::new(py);
        sock.set_item("state", sk.conn.state.as_str())?;
        sock.set_item("now", sk.now)?;
        sock.set_item("tcp_mstamp", sk.tcp_mstamp)?;
        sock.set_item("readable", sk.readable)?;
        sock.set_item("writable", sk.writable)?;
        sock.set_item("error", &sk.error)?;
        sock.set_item("eof", sk.eof)?;
        sock.set_item("accepted", sk.accepted)?;
        sock.set_item("next_deadline", sk.next_deadline())?;
        out.set_item("sock", sock)?;
        Ok(out)
    }

    /// The trace events since the last call, each a tuple in EVENT_FIELDS order
    /// (tcpsim/trace/schema.py).
    fn take_events<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let cls = self.segment_cls.bind(py);
        let name = PyString::new(py, &self.sk.name);
        let mut out = Vec::new();
        for ev in self.sk.take_events() {
            let seg = match &ev.seg {
                Some(s) => segment_to_py(py, cls, s)?,
                None => py.None().into_bound(py),
            };
            let mut items: Vec<Bound<'py, PyAny>> = vec![
                ev.t_ns.into_pyobject(py)?.into_any(),
                name.clone().into_any(),
                PyString::new(py, &ev.event).into_any(),
                PyString::new(py, &ev.detail).into_any(),
                seg,
                ev.truesize.into_pyobject(py)?.into_any(),
                PyString::new(py, &ev.drop_reason).into_any(),
                ev.len.into_pyobject(py)?.into_any(),
                ev.collapse_ns.into_pyobject(py)?.into_any(),
                ev.win_scale.into_pyobject(py)?.into_any(),
            ];
            for v in ev.state {
                items.push(v.into_pyobject(py)?.into_any());
            }
            out.push(PyTuple::new(py, items)?);
        }
        PyList::new(py, out)
    }
}

impl PyProtoMemory {
    fn cpu_ok(&self, cpu: usize) -> PyResult<()> {
        if cpu < self.0.ncpus {
            Ok(())
        } else {
            Err(PyValueError::new_err(format!(
                "cpu {cpu} is not one of the pool's {} CPUs",
                self.0.ncpus
            )))
        }
    }
}

/// `tcpsim._native.ProtoMemory`: the host's TCP pool (src/protmem.rs), the twin of
/// tcpsim/core/protmem.py `ProtoMemory`; sockets given it with `set_proto` share it.
#[pyclass(name = "ProtoMemory", frozen)]
pub(crate) struct PyProtoMemory(pub(crate) ProtoHandle);

#[pymethods]
impl PyProtoMemory {
    #[new]
    #[pyo3(signature = (tcp_mem, ncpus=1, pcpu_rsv=0))]
    fn new(tcp_mem: (i64, i64, i64), ncpus: usize, pcpu_rsv: i64) -> PyResult<Self> {
        let pool = ProtoMemory::new(tcp_mem, ncpus, pcpu_rsv).map_err(PyValueError::new_err)?;
        Ok(PyProtoMemory(std::sync::Arc::new(pool)))
    }

    fn memory_allocated(&self) -> i64 {
        self.0.memory_allocated()
    }

    fn total_pages(&self) -> i64 {
        self.0.total_pages()
    }

    fn under_pressure(&self) -> bool {
        self.0.under_pressure()
    }

    fn memory_allocated_add(&self, cpu: usize, pages: i64) -> PyResult<()> {
        self.cpu_ok(cpu)?;
        self.0.memory_allocated_add(cpu, pages);
        Ok(())
    }

    fn memory_allocated_sub(&self, cpu: usize, pages: i64) -> PyResult<()> {
        self.cpu_ok(cpu)?;
        self.0.memory_allocated_sub(cpu, pages);
        Ok(())
    }

    fn enter_pressure(&self, now: i64) {
        self.0.enter_pressure(now)
    }

    fn sockets_allocated_add(&self, cpu: usize, n: i64) -> PyResult<()> {
        self.cpu_ok(cpu)?;
        self.0.sockets_allocated_add(cpu, n);
        Ok(())
    }

    fn sockets_allocated_read_positive(&self) -> i64 {
        self.0.sockets_allocated_read_positive()
    }

    fn leave_pressure(&self, now: i64) {
        self.0.leave_pressure(now)
    }

    /// Whether two handles are the same pool.
    fn same(&self, other: &PyProtoMemory) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }

    /// Every field as plain data (protmem.py `ProtoMemory.snapshot()`).
    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.0.snapshot();
        let d = PyDict::new(py);
        d.set_item("tcp_mem", vec![s.tcp_mem.0, s.tcp_mem.1, s.tcp_mem.2])?;
        d.set_item("ncpus", s.ncpus)?;
        d.set_item("pcpu_rsv", s.pcpu_rsv)?;
        d.set_item("allocated", s.allocated)?;
        d.set_item("per_cpu_fw_alloc", s.per_cpu_fw_alloc)?;
        d.set_item("memory_pressure", s.memory_pressure)?;
        d.set_item("sockets_allocated", s.sockets_allocated)?;
        d.set_item("sockets_count", s.sockets_count)?;
        d.set_item("per_cpu_sockets", s.per_cpu_sockets)?;
        d.set_item("TCPMemoryPressures", s.TCPMemoryPressures)?;
        d.set_item("TCPMemoryPressuresChrono", s.TCPMemoryPressuresChrono)?;
        Ok(d)
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(module_constants, m)?)?;
    m.add_function(wrap_pyfunction!(skb_truesize, m)?)?;
    m.add_function(wrap_pyfunction!(kmalloc_size, m)?)?;
    m.add_function(wrap_pyfunction!(data_align, m)?)?;
    m.add_function(wrap_pyfunction!(align_up, m)?)?;
    m.add_function(wrap_pyfunction!(round_down, m)?)?;
    m.add_function(wrap_pyfunction!(before, m)?)?;
    m.add_function(wrap_pyfunction!(after, m)?)?;
    m.add_function(wrap_pyfunction!(between, m)?)?;
    m.add_function(wrap_pyfunction!(flags_str, m)?)?;
    m.add_function(wrap_pyfunction!(segment_info, m)?)?;
    m.add_function(wrap_pyfunction!(make_skb, m)?)?;
    m.add_function(wrap_pyfunction!(device_names, m)?)?;
    m.add_function(wrap_pyfunction!(bench_in_order, m)?)?;
    m.add_class::<PyJiffyClock>()?;
    m.add_class::<PyClock>()?;
    m.add_function(wrap_pyfunction!(mib_counters, m)?)?;
    m.add_function(wrap_pyfunction!(mib_nstat, m)?)?;
    m.add_function(wrap_pyfunction!(default_sysctls, m)?)?;
    m.add_function(wrap_pyfunction!(sysctl_short_name, m)?)?;
    m.add_function(wrap_pyfunction!(sysctl_long_name, m)?)?;
    m.add_function(wrap_pyfunction!(tcp_states, m)?)?;
    m.add_function(wrap_pyfunction!(record_fields, m)?)?;
    m.add_function(wrap_pyfunction!(initial_state, m)?)?;
    m.add_class::<PySocket>()?;
    m.add_class::<PyTcpSocket>()?;
    m.add_class::<PyProtoMemory>()?;
    m.add("VALID_HZ", clock::VALID_HZ.to_vec())?;
    crate::py_kernel::register(m)?;
    crate::py_engine::register(m)?;
    crate::py_patch::register(m)?;
    Ok(())
}
