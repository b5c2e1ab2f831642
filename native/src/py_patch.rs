//! A user's Python patch on the native socket: a `Kernel` that calls into Python only at the
//! decision points the patch overrides, and the native kernel underneath everywhere else.
//!
//! `--policy ./my_patch.py:Class` names a Python class written against tcpsim/policy.py. On
//! the native engine, tcpsim/native_patch.py composes it over `NativeBase` (every decision
//! point of which calls back into the native kernel underneath, so that `super().point(sk,
//! ...)` in the patch reaches the era and built-in patches below) and records which points
//! the user's classes define (`__native_overrides__`), once, at load time. [`python_patch`]
//! wraps the composed native kernel in a [`PyPatch`] holding one instance of that class per
//! socket (a patch may keep per-socket state, as a Python policy object does).
//!
//! At an overridden point the patch method gets a `SocketView` whose records read and write
//! the native fields (py_view.rs) through a pointer lent for the duration of the call; `seg`
//! arrives as a `tcpsim.core.segment.Segment` and `skb` as a `tcpsim.core.skb.Skb` (copies:
//! a patch that changes one is stopped with an error naming it, since the native kernel
//! would never see the change). An exception raised in the patch is kept in the
//! [`PatchError`] slot (the kernel's methods cannot fail) and the native answer is used until
//! the socket's Python method returns, which then raises it with its traceback, so that
//! `catalog.patch_failure()` names the patch, the point and the line as on the Python engine.
//!
//! The constants of the era a patch defines are taken as the Python composition of the
//! profile gives them (tcpsim/native_patch.py `profile_class`); `ts_rtt_sample_us` is
//! called without a view (it takes no socket). Points a Python patch cannot override on the
//! native engine (`try_coalesce`, `grow_skb`: they change native objects in place) are
//! refused when the patch is loaded.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyString, PyTuple};

use crate::fields::Record;
use crate::kernel::{Kernel, KernelRef};
use crate::models::compose_boxed;
use crate::py_view::{Lent, MibView, RecordView, SkRef, SysctlView};
use crate::segment::Segment;
use crate::skb::Skb;
use crate::socket::{TcpSocket, TraceArgs};
use crate::sysctl::SysctlSpec;

/// The first exception a Python patch raised, until the socket's caller takes it, and the
/// flag saying one is there (shared with the run, which stops at the next event:
/// engine/simulation.rs `halt`).
pub struct PatchFailure {
    err: Mutex<Option<PyErr>>,
    raised: Arc<AtomicBool>,
}

/// Where a Python patch's kernel leaves its exception (one per socket, or per run).
pub type PatchError = Arc<PatchFailure>;

impl PatchFailure {
    /// An empty slot raising `raised` when an exception lands in it.
    pub fn new(raised: Arc<AtomicBool>) -> PatchError {
        Arc::new(PatchFailure {
            err: Mutex::new(None),
            raised,
        })
    }

    fn keep(&self, e: PyErr) {
        let mut slot = self.err.lock().expect("patch error lock");
        if slot.is_none() {
            *slot = Some(e);
        }
        self.raised.store(true, Ordering::Relaxed);
    }

    fn failed(&self) -> bool {
        self.raised.load(Ordering::Relaxed)
    }
}

/// A name from Python made `'static` (counter and sysctl names, `tcp_sequence` answers):
/// each distinct name is stored once for the life of the process.
fn intern(s: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .expect("intern lock");
    if let Some(&n) = names.get(s) {
        return n;
    }
    let n: &'static str = Box::leak(s.to_string().into_boxed_str());
    names.insert(n);
    n
}

static SEGMENT_CLS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static SKB_CLS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn class<'py>(
    py: Python<'py>,
    cell: &PyOnceLock<Py<PyAny>>,
    module: &str,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    cell.get_or_try_init(py, || {
        Ok::<_, PyErr>(py.import(module)?.getattr(name)?.unbind())
    })
    .map(|c| c.bind(py).clone())
}

/// An argument of a decision point as the trait takes it (`i64`, `bool`, `&Segment`,
/// `&Skb`): to Python, and back from Python for `super()` (`Owned`, lent to the call by
/// `pass`).
trait Arg<'a>: Sized {
    type Owned: 'a;
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>>;
    fn from_py(v: &Bound<'_, PyAny>) -> PyResult<Self::Owned>;
    fn pass(o: &'a Self::Owned) -> Self;
    /// Whether the patch changed `v`, the Python copy of this argument it was handed (a
    /// change the native kernel would never see).
    fn changed(&self, _v: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(false)
    }
}

impl<'a> Arg<'a> for i64 {
    type Owned = i64;
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.into_pyobject(py)?.into_any())
    }
    fn from_py(v: &Bound<'_, PyAny>) -> PyResult<i64> {
        v.extract()
    }
    fn pass(o: &'a i64) -> i64 {
        *o
    }
}

impl<'a> Arg<'a> for bool {
    type Owned = bool;
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(pyo3::types::PyBool::new(py, *self).to_owned().into_any())
    }
    fn from_py(v: &Bound<'_, PyAny>) -> PyResult<bool> {
        v.is_truthy()
    }
    fn pass(o: &'a bool) -> bool {
        *o
    }
}

impl<'a> Arg<'a> for &'a Segment {
    type Owned = Segment;
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let cls = class(py, &SEGMENT_CLS, "tcpsim.core.segment", "Segment")?;
        crate::py::segment_to_py(py, &cls, self)
    }
    fn from_py(v: &Bound<'_, PyAny>) -> PyResult<Segment> {
        crate::py::segment_from_py(v)
    }
    fn pass(o: &'a Segment) -> Self {
        o
    }
    fn changed(&self, v: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(crate::py::segment_from_py(v)? != **self)
    }
}

impl<'a> Arg<'a> for &'a Skb {
    type Owned = Skb;
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let cls = class(py, &SKB_CLS, "tcpsim.core.skb", "Skb")?;
        let o = cls.call_method1("__new__", (&cls,))?;
        o.setattr("seq", self.seq)?;
        o.setattr("end_seq", self.end_seq)?;
        o.setattr("len", self.len)?;
        o.setattr("truesize", self.truesize)?;
        o.setattr("head", self.head)?;
        o.setattr("linear", self.linear)?;
        o.setattr("nfrags", self.nfrags)?;
        o.setattr("head_frag", self.head_frag)?;
        o.setattr("tailroom", self.tailroom)?;
        o.setattr("fin", self.fin)?;
        o.setattr("cloned_until", self.cloned_until)?;
        Ok(o)
    }
    fn from_py(v: &Bound<'_, PyAny>) -> PyResult<Skb> {
        let int = |k: &str| -> PyResult<i64> { v.getattr(k)?.extract() };
        Ok(Skb {
            seq: int("seq")?,
            end_seq: int("end_seq")?,
            len: int("len")?,
            truesize: int("truesize")?,
            head: int("head")?,
            linear: int("linear")?,
            nfrags: int("nfrags")?,
            head_frag: v.getattr("head_frag")?.is_truthy()?,
            tailroom: int("tailroom")?,
            fin: v.getattr("fin")?.is_truthy()?,
            cloned_until: int("cloned_until")?,
        })
    }
    fn pass(o: &'a Skb) -> Self {
        o
    }
    fn changed(&self, v: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(<Self as Arg>::from_py(v)? != **self)
    }
}

/// A decision point's answer, from Python and back (for `super()`).
trait Answer: Sized {
    /// What the kernel takes, for the message when a patch answers something else.
    const WHAT: &'static str;
    fn from_py(v: &Bound<'_, PyAny>) -> PyResult<Self>;
    fn to_py(self, py: Python<'_>) -> PyResult<Py<PyAny>>;
    /// Within the point's range (tcpsim/answers.py `RANGES`, inclusive bounds here)?
    fn in_range(&self, _range: Option<&(i64, i64)>) -> bool {
        true
    }
}

impl Answer for () {
    const WHAT: &'static str = "anything (the answer is ignored)";
    fn from_py(_: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(()) // a procedure's return value is ignored, as the Python core ignores it
    }
    fn to_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(py.None())
    }
}

impl Answer for i64 {
    const WHAT: &'static str = "an int";
    fn from_py(v: &Bound<'_, PyAny>) -> PyResult<Self> {
        if v.is_instance_of::<pyo3::types::PyBool>() {
            return Err(PyTypeError::new_err("a bool where an int is due"));
        }
        v.extract()
    }
    fn in_range(&self, range: Option<&(i64, i64)>) -> bool {
        range.is_none_or(|&(lo, hi)| lo <= *self && *self <= hi)
    }
    fn to_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(self.into_pyobject(py)?.into_any().unbind())
    }
}

impl Answer for bool {
    const WHAT: &'static str = "a bool";
    fn from_py(v: &Bound<'_, PyAny>) -> PyResult<Self> {
        // True or False only: "no" is not False (tcpsim/answers.py)
        Ok(v.cast::<pyo3::types::PyBool>()?.is_true())
    }
    fn to_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(pyo3::types::PyBool::new(py, self)
            .to_owned()
            .into_any()
            .unbind())
    }
}

impl Answer for &'static str {
    const WHAT: &'static str = "a str (a drop reason, or \"\")";
    fn from_py(v: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(intern(&v.extract::<String>()?))
    }
    fn to_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(PyString::new(py, self).into_any().unbind())
    }
}

impl Answer for (i64, i64) {
    const WHAT: &'static str = "a tuple (start, end)";
    fn from_py(v: &Bound<'_, PyAny>) -> PyResult<Self> {
        v.extract()
    }
    fn to_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(PyTuple::new(py, [self.0, self.1])?.into_any().unbind())
    }
}

/// `sk` as a decision point takes it: `ro` points read it, `rw` points may write it.
macro_rules! sk_ty {
    (ro) => {
        &TcpSocket
    };
    (rw) => {
        &mut TcpSocket
    };
}

/// The socket as a raw pointer for a lend (py_view.rs `Lent`), and whether it may write.
macro_rules! raw_sk {
    (ro, $sk:expr) => {
        ($sk as *const TcpSocket as *mut TcpSocket, false)
    };
    (rw, $sk:expr) => {
        ($sk as *mut TcpSocket, true)
    };
}

/// The socket behind a lent view, as the point underneath takes it; the view's pointer is
/// out (null) while the native code holds the socket (see py_view.rs `Lent`).
macro_rules! with_lent {
    (ro, $lent:expr, $p:ident, $body:expr) => {{
        // SAFETY: `p` is the live borrow of the call in progress (py_view.rs `Lent`), taken
        // out of the view for the duration of this call, so nothing else reaches the socket.
        let $p: &TcpSocket = unsafe { &*$lent.take() };
        let out = $body;
        $lent.restore($p as *const TcpSocket as *mut TcpSocket);
        out
    }};
    (rw, $lent:expr, $p:ident, $body:expr) => {{
        if !$lent.writable() {
            return Err(PyTypeError::new_err(
                "a decision point that only reads the socket cannot call one that writes it",
            ));
        }
        let raw = $lent.take();
        // SAFETY: as above; the lend is writable, so `raw` came from a `&mut TcpSocket`.
        let $p: &mut TcpSocket = unsafe { &mut *raw };
        let out = $body;
        $lent.restore(raw);
        out
    }};
}

/// Declares, from one list of the points a Python patch may override: the override flags,
/// the `Kernel` methods of [`PyPatch`] and the `super()` dispatcher of [`NativeBase`].
macro_rules! py_points {
    (extra { $($extra:tt)* } $($mode:ident $name:ident($($a:ident: $t:ty),*) -> $r:ty;)*) => {
        /// The bound methods of the points the Python class overrides (found once, at
        /// load time); None: the native kernel underneath answers.
        #[derive(Default)]
        struct Overrides {
            $($name: Option<Py<PyAny>>,)*
        }

        /// Every point a Python patch may override on the native engine (besides the
        /// constants of the era, native_patch.py `CONSTANTS`).
        pub const PY_POINTS: &[&str] = &[$(stringify!($name),)* "ts_rtt_sample_us"];

        impl Overrides {
            fn set(&mut self, name: &str, method: Py<PyAny>) -> bool {
                match name {
                    $(stringify!($name) => self.$name = Some(method),)*
                    _ => return false,
                }
                true
            }
        }

        impl Kernel for PyPatch {
            fn base(&self) -> &dyn Kernel {
                &*self.inner
            }

            fn class_name(&self) -> &'static str {
                self.class_name
            }

            fn counters(&self) -> Vec<(&'static str, &'static str)> {
                let mut c = self.inner.counters();
                c.extend(self.counters.iter().copied());
                c
            }

            fn new_sysctls(&self) -> Vec<SysctlSpec> {
                let mut s = self.inner.new_sysctls();
                s.extend(self.new_sysctls.iter().copied());
                s
            }

            $($extra)*

            $(
                #[allow(unused_parens, unused_variables, unused_mut)]
                fn $name(&self, sk: sk_ty!($mode), $($a: $t),*) -> $r {
                    if let Some(m) = &self.over.$name {
                        let (p, writable) = raw_sk!($mode, sk);
                        if let Some(v) = self.call::<$r>(m, stringify!($name), p, writable, |py| {
                            Ok(vec![$(Arg::to_py(&$a, py)?),*])
                        }, |objs| {
                            let mut it = objs.iter();
                            $(if let Some(o) = it.next() {
                                if Arg::changed(&$a, o)? {
                                    return Ok(Some(stringify!($a)));
                                }
                            })*
                            Ok(None)
                        }) {
                            return v;
                        }
                    }
                    self.inner.$name(sk, $($a),*)
                }
            )*
        }

        /// `super().point(sk, ...)` from Python: the native point underneath.
        #[allow(unused_variables, unused_mut)]
        fn call_native(
            k: &dyn Kernel,
            py: Python<'_>,
            name: &str,
            lent: &Lent,
            args: &[Bound<'_, PyAny>],
        ) -> PyResult<Py<PyAny>> {
            match name {
                $(stringify!($name) => {
                    let mut it = args.iter();
                    $(let $a = <$t as Arg>::from_py(it.next().ok_or_else(|| {
                        PyTypeError::new_err(format!("{name}() missing argument {}", stringify!($a)))
                    })?)?;)*
                    let r: $r = with_lent!($mode, lent, p, k.$name(p, $(<$t as Arg>::pass(&$a)),*));
                    Answer::to_py(r, py)
                })*
                _ => Err(PyValueError::new_err(format!(
                    "{name}: not a decision point a Python patch can reach on the native engine"
                ))),
            }
        }
    };
}

/// The error for a patch answer the kernel cannot take (tcpsim/catalog.py `wrong_answer`:
/// one line naming the patch, the point and the value); `e` if that cannot be made.
fn wrong_answer(
    py: Python<'_>,
    m: &Py<PyAny>,
    point: &str,
    value: &Bound<'_, PyAny>,
    what: &str,
    e: PyErr,
) -> PyErr {
    py.import("tcpsim.catalog")
        .and_then(|c| c.call_method1("wrong_answer", (m, point, value, what)))
        .map_or(e, PyErr::from_value)
}

/// The constants of the era as the Python engine's composition of the profile gives them
/// (native_patch.py `profile_class`), for a patch that defines one (`PINGPONG_THRESH = 1`).
struct Consts {
    release: &'static str,
    sysctls: Vec<&'static str>,
    rmem2_default: i64,
    pingpong_thresh: i64,
    default_scaling_ratio: i64,
    collapse_ns_per_byte: f64,
    collapse_ns_fixed: i64,
    initial_scaling_ratio: i64,
}

impl Consts {
    fn from_py(d: &Bound<'_, PyAny>) -> PyResult<Self> {
        let int = |k: &str| -> PyResult<i64> { d.get_item(k)?.extract() };
        let names: Vec<String> = d.get_item("sysctls")?.extract()?;
        Ok(Consts {
            release: intern(&d.get_item("release")?.extract::<String>()?),
            sysctls: names.iter().map(|n| intern(n)).collect(),
            rmem2_default: int("rmem2_default")?,
            pingpong_thresh: int("pingpong_thresh")?,
            default_scaling_ratio: int("default_scaling_ratio")?,
            collapse_ns_per_byte: d.get_item("collapse_ns_per_byte")?.extract()?,
            collapse_ns_fixed: int("collapse_ns_fixed")?,
            initial_scaling_ratio: int("initial_scaling_ratio")?,
        })
    }
}

/// The error for a patch that changed its `seg` or `skb` argument, a copy here
/// (tcpsim/catalog.py `changed_argument`).
fn changed_argument(py: Python<'_>, m: &Py<PyAny>, point: &str, arg: &str) -> PyErr {
    match py
        .import("tcpsim.catalog")
        .and_then(|c| c.call_method1("changed_argument", (m, point, arg)))
    {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

/// A composed native kernel with a user's Python patch on top (see the module docs).
pub struct PyPatch {
    inner: Arc<dyn Kernel>,
    /// The `sk` its methods get: one view per socket, lent the socket for each call.
    view: Py<SocketView>,
    over: Overrides,
    /// `ts_rtt_sample_us` (no socket argument: called without a view).
    ts_rtt: Option<Py<PyAny>>,
    /// The constants of the era when the patch defines any (native_patch.py `CONSTANTS`).
    consts: Option<Consts>,
    class_name: &'static str,
    counters: Vec<(&'static str, &'static str)>,
    new_sysctls: Vec<SysctlSpec>,
    /// The range of each int answer, inclusive (native_patch.py `__native_answers__`).
    ranges: HashMap<&'static str, (i64, i64)>,
    error: PatchError,
}

impl PyPatch {
    /// Call the bound Python method `m` with the socket `p` lent to the view; None (and the
    /// exception kept) when it raised or returned the wrong type, or an earlier call raised.
    fn call<R: Answer>(
        &self,
        m: &Py<PyAny>,
        point: &str,
        p: *mut TcpSocket,
        writable: bool,
        args: impl FnOnce(Python<'_>) -> PyResult<Vec<Bound<'_, PyAny>>>,
        changed: impl FnOnce(&[Bound<'_, PyAny>]) -> PyResult<Option<&'static str>>,
    ) -> Option<R> {
        if self.error.failed() {
            return None;
        }
        Python::attach(|py| {
            let run = || -> PyResult<R> {
                let view = self.view.bind(py);
                let lent = view.borrow().sk.clone();
                let _lend = lent.set(p, writable);
                let mut all = vec![view.clone().into_any()];
                all.extend(args(py)?);
                let out = m.bind(py).call1(PyTuple::new(py, &all)?)?;
                if let Some(arg) = changed(&all[1..])? {
                    return Err(changed_argument(py, m, point, arg));
                }
                match R::from_py(&out) {
                    Ok(v) if v.in_range(self.ranges.get(point)) => Ok(v),
                    Ok(_) => Err(wrong_answer(
                        py,
                        m,
                        point,
                        &out,
                        R::WHAT,
                        PyValueError::new_err("out of range"),
                    )),
                    Err(e) => Err(wrong_answer(py, m, point, &out, R::WHAT, e)),
                }
            };
            match run() {
                Ok(v) => Some(v),
                Err(e) => {
                    self.error.keep(e);
                    None
                }
            }
        })
    }
}

/// A constant of the era from the patch's values (the Python composition's), else the
/// native kernel's underneath.
macro_rules! constant {
    ($($name:ident -> $t:ty;)*) => {
        $(fn $name(&self) -> $t {
            match &self.consts {
                Some(c) => c.$name.clone(),
                None => self.inner.$name(),
            }
        })*
    };
}

py_points! {
    extra {
        constant! {
            release -> &'static str;
            sysctls -> Vec<&'static str>;
            rmem2_default -> i64;
            pingpong_thresh -> i64;
            default_scaling_ratio -> i64;
            collapse_ns_per_byte -> f64;
            collapse_ns_fixed -> i64;
            initial_scaling_ratio -> i64;
        }

        fn ts_rtt_sample_us(&self, delta_ms: i64) -> i64 {
            if let Some(m) = &self.ts_rtt {
                if !self.error.failed() {
                    let r = Python::attach(|py| -> PyResult<i64> {
                        let out = m.bind(py).call1((delta_ms,))?;
                        <i64 as Answer>::from_py(&out).map_err(|e| {
                            wrong_answer(py, m, "ts_rtt_sample_us", &out, <i64 as Answer>::WHAT, e)
                        })
                    });
                    match r {
                        Ok(v) => return v,
                        Err(e) => self.error.keep(e),
                    }
                }
            }
            self.inner.ts_rtt_sample_us(delta_ms)
        }
    }
    ro win_from_space(space: i64) -> i64;
    ro space_from_win(win: i64) -> i64;
    ro initial_rcv_wnd(space: i64) -> i64;
    rw select_initial_window(space: i64, mss: i64) -> ();
    rw init_rcv_ssthresh() -> ();
    rw init_buffer_space() -> ();
    rw set_window_clamp(val: i64) -> ();
    rw on_rcvbuf_set() -> ();
    rw rcv_rtt_update(sample_us: i64, win_dep: bool) -> ();
    rw rcv_rtt_measure() -> ();
    rw rcv_rtt_measure_ts(seg: &Segment) -> ();
    rw measure_rcv_mss(seg: &Segment, skb: &Skb) -> ();
    rw on_rcv_mss_change(seg: &Segment, skb: &Skb) -> ();
    rw on_scaling_ratio_change() -> ();
    rw ofo_measure_rcv_mss(seg: &Segment, skb: &Skb) -> ();
    rw grow_window(skb: &Skb, adjust: bool, seg: &Segment) -> ();
    rw grow_under_pressure() -> ();
    rw pressure_adjust() -> ();
    ro shrink_allowed() -> bool;
    rw select_window() -> i64;
    rw advertise_window() -> i64;
    rw nomem_window() -> i64;
    rw tcp_sequence(seg: &Segment) -> &'static str;
    ro sequence_window() -> i64;
    ro end_beyond_window(seg: &Segment, right: i64) -> bool;
    rw overwindow_drop() -> ();
    ro zero_window_accepts(seg: &Segment) -> bool;
    ro can_ingest(skb: &Skb) -> bool;
    rw admit_in_order(skb: &Skb) -> bool;
    rw try_rmem_schedule(skb: &Skb, size: i64) -> bool;
    rw clamp_window() -> ();
    rw prune_queue(skb: &Skb) -> i64;
    ro needs_clamp(skb: &Skb) -> bool;
    rw collapse(skb: &Skb) -> ();
    ro collapse_cost_ns(copied: i64) -> i64;
    rw prune_ofo_queue(skb: &Skb) -> bool;
    ro ofo_prune_done(dropped: &Skb) -> bool;
    ro ofo_dsack(skb: &Skb, dsack_high: i64) -> (i64, i64);
    rw ofo_rcvbuf_grow() -> ();
    ro rcv_space_gate_us() -> i64;
    ro rcv_space_copied(copied_seq: i64, rcvq_seq: i64) -> i64;
    rw rcv_space_adjust() -> ();
    rw grow_rcvbuf(copied: i64) -> ();
    rw rcvbuf_grow(newval: i64) -> ();
    ro rcvbuf_grow_term(newval: i64, oldval: i64) -> i64;
    ro comp_sack_delay_ns(rtt_us8: i64) -> i64;
    ro delack_max() -> i64;
    rw dec_quickack_mode() -> ();
    ro may_update_window(seg: &Segment, ack: i64, nwin: i64) -> bool;
    ro rtx_probe0_timed_out() -> bool;
    ro tso_rtt_bytes() -> i64;
    ro new_data_checks_space() -> bool;
    ro tso_defer_ack_window(srtt_ns: i64) -> i64;
    ro loss_probe_timeout() -> i64;
    ro hystart_ack_delay() -> i64;
    ro hystart_round_reset_first() -> bool;
}

/// The socket a Python patch method gets as `sk`: its records (`sk.rcv.rcv_nxt`, readable
/// and, in a procedure or a decision that writes, writable), `sk.mib`, `sk.sysctl`, `sk.now`,
/// `sk.trace(event, detail)`. Valid only during a call it was passed to.
#[pyclass(name = "SocketView", unsendable)]
struct SocketView {
    sk: Rc<Lent>,
    /// conn, rcv, mem, ack, snd (Record::ALL order), mib, sysctl: made once.
    records: Vec<Py<RecordView>>,
    mib: Py<MibView>,
    sysctl: Py<SysctlView>,
}

impl SocketView {
    fn new(py: Python<'_>) -> PyResult<Self> {
        let sk = Rc::new(Lent::new());
        let at = |r| RecordView::new(SkRef::Lent(Rc::clone(&sk)), r);
        let records = Record::ALL
            .into_iter()
            .map(|r| Py::new(py, at(r)))
            .collect::<PyResult<Vec<_>>>()?;
        let mib = Py::new(py, MibView::new(SkRef::Lent(sk.clone())))?;
        let sysctl = Py::new(py, SysctlView::new(SkRef::Lent(sk.clone())))?;
        Ok(SocketView {
            sk,
            records,
            mib,
            sysctl,
        })
    }

    fn skref(&self) -> SkRef {
        SkRef::Lent(self.sk.clone())
    }

    fn record(&self, py: Python<'_>, r: Record) -> Py<RecordView> {
        let i = Record::ALL.iter().position(|&x| x == r).expect("a record");
        self.records[i].clone_ref(py)
    }
}

#[pymethods]
impl SocketView {
    #[getter]
    fn conn(&self, py: Python<'_>) -> Py<RecordView> {
        self.record(py, Record::Conn)
    }
    #[getter]
    fn rcv(&self, py: Python<'_>) -> Py<RecordView> {
        self.record(py, Record::Rcv)
    }
    #[getter]
    fn mem(&self, py: Python<'_>) -> Py<RecordView> {
        self.record(py, Record::Mem)
    }
    #[getter]
    fn ack(&self, py: Python<'_>) -> Py<RecordView> {
        self.record(py, Record::Ack)
    }
    #[getter]
    fn snd(&self, py: Python<'_>) -> Py<RecordView> {
        self.record(py, Record::Snd)
    }
    #[getter]
    fn mib(&self, py: Python<'_>) -> Py<MibView> {
        self.mib.clone_ref(py)
    }
    #[getter]
    fn sysctl(&self, py: Python<'_>) -> Py<SysctlView> {
        self.sysctl.clone_ref(py)
    }
    #[getter]
    fn now(&self, py: Python<'_>) -> PyResult<i64> {
        self.skref().with(py, |sk| sk.now)
    }
    #[getter]
    fn tcp_mstamp(&self, py: Python<'_>) -> PyResult<i64> {
        self.skref().with(py, |sk| sk.tcp_mstamp)
    }
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        self.skref().with(py, |sk| sk.name.clone())
    }

    /// Python's `sk.trace(event, detail)`: a trace event with the socket's state.
    #[pyo3(signature = (event, detail="", *, truesize=-1, reason="", length=-1, cost=-1))]
    #[allow(clippy::too_many_arguments)] // keyword arguments, as Python's `sk.trace`
    fn trace(
        &self,
        py: Python<'_>,
        event: &str,
        detail: &str,
        truesize: i64,
        reason: &str,
        length: i64,
        cost: i64,
    ) -> PyResult<()> {
        let x = TraceArgs {
            seg: None,
            truesize,
            reason: reason.to_string().into(),
            length,
            cost,
        };
        let (event, detail) = (event.to_string(), detail.to_string());
        self.skref().with_mut(py, |sk| sk.trace(event, detail, x))
    }
}

/// The native kernel underneath a Python patch: `NativeBase`'s methods call `call(name,
/// args)` with `args[0]` the `SocketView` (tcpsim/native_patch.py).
#[pyclass(name = "NativeSuper", frozen)]
struct NativeSuper {
    inner: Arc<dyn Kernel>,
}

#[pymethods]
impl NativeSuper {
    fn call(&self, py: Python<'_>, name: &str, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        if name == "ts_rtt_sample_us" {
            let (delta_ms,): (i64,) = args.extract()?;
            return Answer::to_py(self.inner.ts_rtt_sample_us(delta_ms), py);
        }
        let items: Vec<Bound<'_, PyAny>> = args.iter().collect();
        let (first, rest) = items
            .split_first()
            .ok_or_else(|| PyTypeError::new_err(format!("{name}() takes the socket first")))?;
        let view = first.cast::<SocketView>().map_err(|_| {
            PyTypeError::new_err(format!(
                "{name}(): on the native engine the socket argument must be the sk the \
                 decision point was given"
            ))
        })?;
        let lent = view.borrow().sk.clone();
        if lent.is_expired() {
            return Err(PyRuntimeError::new_err(
                "this socket view belonged to a decision-point call that has returned",
            ));
        }
        call_native(&*self.inner, py, name, &lent, rest)
    }
}

/// The kernel `inner` with the user's Python patch class `cls` on top, and the slot its
/// exceptions land in. `cls` is the class tcpsim/native_patch.py composed (user patches over
/// `NativeBase`, with `__native_overrides__`, `__patch_counters__`, `__patch_sysctls__`);
/// one instance is made per call (per socket). This is the single constructor the Rust
/// engine calls for a profile that carries a Python patch.
pub fn python_patch(
    py: Python<'_>,
    inner: Box<dyn Kernel>,
    cls: &Bound<'_, PyAny>,
    error: PatchError,
) -> PyResult<Box<dyn Kernel>> {
    let inner: Arc<dyn Kernel> = Arc::from(inner);
    let obj = cls.call0()?;
    obj.setattr(
        "_native_super",
        Bound::new(
            py,
            NativeSuper {
                inner: inner.clone(),
            },
        )?,
    )?;
    let mut over = Overrides::default();
    let mut ts_rtt = None;
    for name in cls.getattr("__native_overrides__")?.try_iter()? {
        let name: String = name?.extract()?;
        // bound to this socket's instance, which they keep alive
        let method = obj.getattr(name.as_str())?.unbind();
        if name == "ts_rtt_sample_us" {
            ts_rtt = Some(method);
        } else if !over.set(&name, method) {
            return Err(PyValueError::new_err(format!(
                "decision point {name} cannot be overridden by a Python patch on the native \
                 engine yet; use --engine python"
            )));
        }
    }
    let mut counters = Vec::new();
    for item in cls.getattr("__patch_counters__")?.try_iter()? {
        let (n, meaning): (String, String) = item?.extract()?;
        counters.push((intern(&n), intern(&meaning)));
    }
    let mut new_sysctls = Vec::new();
    for item in cls.getattr("__patch_sysctls__")?.try_iter()? {
        let (n, default, lo, hi): (String, i64, i64, i64) = item?.extract()?;
        new_sysctls.push(SysctlSpec {
            name: intern(&n),
            default,
            lo,
            hi,
            doc: "",
        });
    }
    let mut ranges = HashMap::new();
    if let Ok(items) = cls.getattr("__native_answers__") {
        for item in items.try_iter()? {
            let (n, lo, hi): (String, i64, i64) = item?.extract()?;
            ranges.insert(intern(&n), (lo, hi));
        }
    }
    let k = PyPatch {
        inner,
        view: Py::new(py, SocketView::new(py)?)?,
        over,
        ts_rtt,
        consts: match cls.getattr("__native_constants__") {
            Ok(d) if !d.is_none() => Some(Consts::from_py(&d)?),
            _ => None,
        },
        class_name: intern(&cls.getattr("__name__")?.extract::<String>()?),
        counters,
        new_sysctls,
        ranges,
        error,
    };
    Ok(Box::new(k))
}

/// The kernel of `profile` with the built-in `patches` and the user's Python layers
/// (`layers`: (how many of `patches` lie below, composed class), native_patch.py
/// `native_layers`), each layer's exceptions kept in `error`.
pub fn compose_python(
    py: Python<'_>,
    profile: &str,
    patches: &[String],
    layers: &[(usize, Bound<'_, PyAny>)],
    error: &PatchError,
) -> PyResult<KernelRef> {
    let at = |n: usize| -> Vec<&str> { patches[..n].iter().map(String::as_str).collect() };
    let mut k = compose_boxed(profile, &at(0)).map_err(PyValueError::new_err)?;
    let mut applied = 0;
    for (below, cls) in layers {
        let below = (*below).min(patches.len());
        for name in &patches[applied..below] {
            k = (crate::patches::patch(name)
                .map_err(PyValueError::new_err)?
                .apply)(k);
        }
        applied = below;
        k = python_patch(py, k, cls, error.clone())?;
    }
    for name in &patches[applied..] {
        k = (crate::patches::patch(name)
            .map_err(PyValueError::new_err)?
            .apply)(k);
    }
    // the registry's checks (a patch given twice, an unknown name) on the whole list
    compose_boxed(profile, &at(patches.len())).map_err(PyValueError::new_err)?;
    Ok(Arc::from(k))
}

/// Raise the exception a Python patch raised during the last call, if any.
pub fn take_error(slot: &PatchError) -> PyResult<()> {
    match slot.err.lock().expect("patch error lock").take() {
        Some(e) => {
            slot.raised.store(false, Ordering::Relaxed);
            Err(e)
        }
        None => Ok(()),
    }
}

/// Add the view classes to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SocketView>()?;
    m.add_class::<NativeSuper>()?;
    m.add("PY_PATCH_POINTS", PY_POINTS.to_vec())?;
    Ok(())
}
