//! Python views of a native socket's records: `sk.rcv.rcv_nxt`, `sk.mib.BeyondWindow += 1`,
//! `sk.sysctl.tcp_shrink_window`, read and written through the one field table (fields.rs).
//!
//! The packetdrill interpreter reads and sets a socket's records the same way on both engines
//! (`tcpsim._native.TcpSocket.conn` is a `RecordView`); a Python patch on the native engine
//! (py_patch.rs) is handed a `SocketView` whose records are these same views. A view holds no
//! copy: every attribute access reads or writes the native field.
//!
//! Where the socket is: a view of a Python-owned socket holds the Python object
//! ([`SkRef::Owned`], borrowed per access through PyO3's checked borrow); a view handed to a
//! Python patch during a decision point holds a pointer lent for the duration of the call
//! ([`SkRef::Lent`], see [`Lent`] for why that is sound).

use std::cell::Cell;
use std::rc::Rc;

use pyo3::exceptions::{PyAttributeError, PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple};

use crate::fields::{self, Record};
use crate::socket::TcpSocket;
use crate::sysctl::{long_name, SysctlValue};
use crate::value::Value;

/// A `Value` as the Python object the model would hold (int, bool, str, None, list, dict).
pub(crate) fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::None => py.None().into_bound(py),
        Value::List(items) => {
            let objs = items
                .iter()
                .map(|i| to_py(py, i))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, objs)?.into_any()
        }
        Value::Record(fields) => {
            let d = PyDict::new(py);
            for (name, v) in fields {
                d.set_item(*name, to_py(py, v)?)?;
            }
            d.into_any()
        }
    })
}

/// A Python value as a `Value` (bool before int: a Python bool is an int).
pub(crate) fn from_py(v: &Bound<'_, PyAny>) -> PyResult<Value> {
    if v.is_none() {
        Ok(Value::None)
    } else if let Ok(b) = v.cast::<PyBool>() {
        Ok(Value::Bool(b.is_true()))
    } else if let Ok(i) = v.extract::<i64>() {
        Ok(Value::Int(i))
    } else if let Ok(s) = v.extract::<String>() {
        Ok(Value::Str(s))
    } else if v.cast::<PyList>().is_ok() || v.cast::<PyTuple>().is_ok() {
        let items = v
            .try_iter()?
            .map(|i| from_py(&i?))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Value::List(items))
    } else {
        Err(PyTypeError::new_err(format!(
            "a native socket field cannot hold {}",
            v.get_type().name()?
        )))
    }
}

/// A socket lent to Python for the duration of one decision-point call (py_patch.rs).
///
/// One `Lent` per Python patch instance (per socket), re-pointed for each call.
///
/// Soundness: `ptr` is set from the `&TcpSocket` / `&mut TcpSocket` the native core passes
/// to the decision point and put back to what it was before (null outside any call) by
/// [`LentGuard`]'s `Drop` before that call returns, so it never outlives the borrow it came
/// from. While it is set, the Rust caller is suspended inside the call (one thread: the views
/// are `unsendable`, the GIL is held), so the only path to the socket is this pointer; each
/// access makes one short-lived reference that ends before the next access starts. A
/// read-only lend (`writable` false: the point takes `&TcpSocket`) never makes a `&mut`.
/// When the patch calls the native implementation underneath (`super()`), py_patch.rs takes
/// the pointer out for the duration of that call (`take`/`restore`), so the view and the
/// native code never hold the socket at once; a nested decision point called from there
/// lends its own borrow and puts the null back when it returns.
pub(crate) struct Lent {
    ptr: Cell<*mut TcpSocket>,
    writable: Cell<bool>,
}

impl Lent {
    /// Nothing lent yet.
    pub(crate) fn new() -> Self {
        Lent {
            ptr: Cell::new(std::ptr::null_mut()),
            writable: Cell::new(false),
        }
    }

    /// The pointer, leaving null behind (restore it with `restore`).
    pub(crate) fn take(&self) -> *mut TcpSocket {
        self.ptr.replace(std::ptr::null_mut())
    }

    pub(crate) fn restore(&self, p: *mut TcpSocket) {
        self.ptr.set(p)
    }

    pub(crate) fn writable(&self) -> bool {
        self.writable.get()
    }

    /// The call that lent the socket has returned (or the native code underneath holds it).
    pub(crate) fn is_expired(&self) -> bool {
        self.ptr.get().is_null()
    }

    /// Lend the socket `p` points to (see the soundness note above) until the guard drops.
    pub(crate) fn set(&self, p: *mut TcpSocket, writable: bool) -> LentGuard<'_> {
        let saved = (self.ptr.replace(p), self.writable.replace(writable));
        LentGuard { lent: self, saved }
    }
}

/// Puts the lent pointer back as it was when the call that lent it returns (also on unwind).
pub(crate) struct LentGuard<'a> {
    lent: &'a Lent,
    saved: (*mut TcpSocket, bool),
}

impl Drop for LentGuard<'_> {
    fn drop(&mut self) {
        self.lent.ptr.set(self.saved.0);
        self.lent.writable.set(self.saved.1);
    }
}

/// Where a view's socket is.
pub(crate) enum SkRef {
    /// A socket Python owns (`tcpsim._native.TcpSocket`).
    Owned(Py<crate::py::PyTcpSocket>),
    /// A socket lent to a Python patch for one call.
    Lent(Rc<Lent>),
}

fn expired() -> PyErr {
    PyRuntimeError::new_err(
        "this socket view belonged to a decision-point call that has returned; keep values, \
         not the socket, across calls",
    )
}

impl SkRef {
    /// `f` on the socket, read-only.
    pub(crate) fn with<R>(&self, py: Python<'_>, f: impl FnOnce(&TcpSocket) -> R) -> PyResult<R> {
        match self {
            SkRef::Owned(o) => Ok(f(&o.bind(py).try_borrow()?.sk)),
            SkRef::Lent(l) => {
                let p = l.ptr.get();
                if p.is_null() {
                    return Err(expired());
                }
                // SAFETY: see `Lent`: p is the live borrow of the call in progress, and no
                // other reference to the socket exists during this access.
                Ok(f(unsafe { &*p }))
            }
        }
    }

    /// `f` on the socket, read-write (Err for a read-only lend).
    pub(crate) fn with_mut<R>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut TcpSocket) -> R,
    ) -> PyResult<R> {
        match self {
            SkRef::Owned(o) => Ok(f(&mut o.bind(py).try_borrow_mut()?.sk)),
            SkRef::Lent(l) => {
                let p = l.ptr.get();
                if p.is_null() {
                    return Err(expired());
                }
                if !l.writable() {
                    return Err(PyAttributeError::new_err(
                        "this decision point only reads the socket (it takes &TcpSocket in \
                         the native kernel); set fields from a procedure",
                    ));
                }
                // SAFETY: see `Lent`: p came from the call's `&mut TcpSocket`, which is
                // suspended while Python runs; this reference ends with `f`.
                Ok(f(unsafe { &mut *p }))
            }
        }
    }
}

/// A Python value of a field: the connection state as tcpsim.core.state.TcpState, the rest
/// as `to_py`.
fn field_to_py<'py>(
    py: Python<'py>,
    rec: Record,
    name: &str,
    v: &Value,
) -> PyResult<Bound<'py, PyAny>> {
    if rec == Record::Conn && name == "state" {
        static TCP_STATE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let cls = TCP_STATE.get_or_try_init(py, || {
            Ok::<_, PyErr>(
                py.import("tcpsim.core.state")?
                    .getattr("TcpState")?
                    .unbind(),
            )
        })?;
        return cls.bind(py).call1((to_py(py, v)?,));
    }
    to_py(py, v)
}

/// `sk.conn`, `sk.rcv`, `sk.mem`, `sk.ack`, `sk.snd` of a native socket: attribute access
/// reads and writes the native fields (queues read as lists of dicts, read-only).
#[pyclass(name = "RecordView", unsendable)]
pub(crate) struct RecordView {
    sk: SkRef,
    rec: Record,
}

impl RecordView {
    pub(crate) fn new(sk: SkRef, rec: Record) -> Self {
        RecordView { sk, rec }
    }
}

#[pymethods]
impl RecordView {
    /// Every attribute is a field (looked up first, as the hot path of a Python patch);
    /// `_`-names go to the object's own attributes.
    fn __getattribute__<'py>(
        slf: &Bound<'py, Self>,
        name: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let n = name.to_str()?;
        if n.starts_with('_') {
            return py
                .get_type::<pyo3::types::PyAny>()
                .call_method1("__getattribute__", (slf, name));
        }
        let this = slf.borrow();
        let rec = this.rec;
        match this.sk.with(py, |sk| fields::get(sk, rec, n))? {
            Some(v) => field_to_py(py, rec, n, &v),
            None => Err(PyAttributeError::new_err(format!(
                "sk.{} has no field {n}",
                rec.name()
            ))),
        }
    }

    /// Reached when `__getattribute__` found nothing (PyO3 falls back to it).
    fn __getattr__(&self, name: &str) -> PyResult<()> {
        Err(PyAttributeError::new_err(format!(
            "sk.{} has no field {name}",
            self.rec.name()
        )))
    }

    fn __setattr__(&self, py: Python<'_>, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let rec = self.rec;
        let kind = match self.sk.with(py, |sk| fields::get(sk, rec, name))? {
            Some(Value::Int(_)) => Some("int"),
            Some(Value::Bool(_)) => Some("bool"),
            _ => None,
        };
        // an int field takes an int (not a bool), a bool field a bool: tcpsim/answers.py
        let fits = match kind {
            Some("int") => !value.is_instance_of::<PyBool>() && value.extract::<i64>().is_ok(),
            Some("bool") => value.is_instance_of::<PyBool>(),
            _ => true,
        };
        match kind {
            Some(kind) if !fits => Err(py
                .import("tcpsim.answers")
                .and_then(|a| a.call_method1("field_error", (rec.name(), name, value, kind)))
                .map_or_else(|e| e, PyErr::from_value)),
            _ => {
                let v = from_py(value)?;
                self.sk
                    .with_mut(py, |sk| fields::set(sk, rec, name, &v))?
                    .map_err(PyAttributeError::new_err)
            }
        }
    }

    fn __dir__(&self) -> Vec<&'static str> {
        self.rec.field_names().to_vec()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let rec = self.rec;
        let vals = self.sk.with(py, |sk| {
            rec.field_names()
                .iter()
                .map(|f| format!("{f}={:?}", fields::get(sk, rec, f)))
                .collect::<Vec<_>>()
        })?;
        Ok(format!("<native sk.{} {}>", rec.name(), vals.join(" ")))
    }
}

/// `sk.mib`: counters by kernel name, readable and settable (`sk.mib.X += 1`).
#[pyclass(name = "MibView", unsendable)]
pub(crate) struct MibView {
    sk: SkRef,
}

impl MibView {
    pub(crate) fn new(sk: SkRef) -> Self {
        MibView { sk }
    }
}

#[pymethods]
impl MibView {
    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<i64> {
        self.sk
            .with(py, |sk| fields::mib_get(sk, name))?
            .ok_or_else(|| PyAttributeError::new_err(format!("sk.mib has no counter {name}")))
    }

    fn __setattr__(&self, py: Python<'_>, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        // a counter takes an int (not a bool) within 64 bits: tcpsim/answers.py
        let value: i64 = match value.extract::<i64>() {
            Ok(v) if !value.is_instance_of::<PyBool>() => v,
            _ => {
                return Err(py
                    .import("tcpsim.answers")
                    .and_then(|a| a.call_method1("field_error", ("mib", name, value, "int")))
                    .map_or_else(|e| e, PyErr::from_value))
            }
        };
        // a patch's own counter may be set from any decision point (mib.rs `PatchCounter`)
        if self
            .sk
            .with(py, |sk| sk.mib.set_patch_counter(name, value))?
        {
            return Ok(());
        }
        self.sk
            .with_mut(py, |sk| fields::mib_set(sk, name, value))?
            .map_err(PyAttributeError::new_err)
    }

    /// Python's `Mib.as_nstat(extra)`: counters keyed as nstat prints them, including zeros;
    /// `extra` names patch counters shown even at zero.
    #[pyo3(signature = (extra=Vec::new()))]
    fn as_nstat<'py>(&self, py: Python<'py>, extra: Vec<String>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in self.sk.with(py, |sk| sk.mib.as_nstat())? {
            d.set_item(k, v)?;
        }
        for name in extra {
            let key = format!("TcpExt{name}");
            if !d.contains(&key)? {
                d.set_item(key, 0)?;
            }
        }
        Ok(d)
    }

    /// {counter: value} of every counter.
    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in self.sk.with(py, |sk| sk.mib.values())? {
            d.set_item(k, v)?;
        }
        Ok(d)
    }
}

/// `sk.sysctl`: the socket's sysctls by short name (triples as tuples), read-only (a new set
/// is assigned whole, `sk.sysctl = sysctls`, as on the Python socket).
#[pyclass(name = "SysctlView", unsendable)]
pub(crate) struct SysctlView {
    sk: SkRef,
}

impl SysctlView {
    pub(crate) fn new(sk: SkRef) -> Self {
        SysctlView { sk }
    }
}

#[pymethods]
impl SysctlView {
    fn __getattr__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        match self
            .sk
            .with(py, |sk| fields::sysctl_get(&sk.sysctl, name))?
        {
            Some(Value::List(items)) => {
                let objs = items
                    .iter()
                    .map(|i| to_py(py, i))
                    .collect::<PyResult<Vec<_>>>()?;
                Ok(PyTuple::new(py, objs)?.into_any())
            }
            Some(v) => to_py(py, &v),
            None => Err(PyAttributeError::new_err(format!(
                "sk.sysctl has no {name}"
            ))),
        }
    }

    /// {kernel name: value}, as Python's `Sysctls.as_dict()`.
    fn as_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (n, v) in self.sk.with(py, |sk| sk.sysctl.values())? {
            let key = long_name(n);
            match v {
                SysctlValue::Int(i) => d.set_item(key, i)?,
                SysctlValue::Triple(a, b, c) => d.set_item(key, (a, b, c))?,
                SysctlValue::Name(cc) => d.set_item(key, cc)?,
            }
        }
        Ok(d)
    }
}
