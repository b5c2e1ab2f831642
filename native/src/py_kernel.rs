//! Python bindings of the kernel eras for the differential tests (tests/native/
//! test_native_kernel.py): one decision point of a composed kernel, called on a fresh native
//! socket whose fields the test sets, with the result and every integer/bool field after.
//!
//! The points that work on the queues (admission, pruning, collapse, coalescing) are not
//! reachable (`kernel_decision` refuses them by name): they are exercised through the whole
//! socket by the lockstep tests.

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::fields;
use crate::kernel::Kernel;
use crate::models::{compose, PROFILES};
use crate::patches::PATCHES;
use crate::py_view::from_py;
use crate::segment::Segment;
use crate::skb::{Layout, Skb};
use crate::socket::{SocketParams, TcpSocket};
use crate::sysctl::Sysctls;
use crate::value::Value;

/// A decision's answer in Python's shapes.
enum Answer {
    None,
    Int(i64),
    Bool(bool),
    Str(&'static str),
    Pair(i64, i64),
    List(Vec<i64>),
}

/// Set one field named "record.field" (or a socket attribute) through the field table.
fn set_field(sk: &mut TcpSocket, name: &str, v: &Bound<'_, PyAny>) -> PyResult<()> {
    fields::set_path(sk, name, &from_py(v)?).map_err(PyKeyError::new_err)
}

fn set_sysctl(s: &mut Sysctls, name: &str, v: &Bound<'_, PyAny>) -> PyResult<()> {
    fields::sysctl_set(s, name, &from_py(v)?).map_err(PyKeyError::new_err)
}

fn arg(args: &Bound<'_, PyDict>, name: &str) -> PyResult<i64> {
    args.get_item(name)?
        .ok_or_else(|| PyKeyError::new_err(format!("argument {name} missing")))?
        .extract()
}

fn segment(args: &Bound<'_, PyDict>) -> PyResult<Segment> {
    let mut seg = Segment::new(
        arg(args, "seg_seq")?,
        arg(args, "seg_len")?,
        arg(args, "seg_flags")?,
        0,
        0,
    );
    seg.gso_size = arg(args, "seg_gso_size")?;
    Ok(seg)
}

fn skb(args: &Bound<'_, PyDict>) -> PyResult<Skb> {
    Ok(Skb::new(
        arg(args, "skb_seq")?,
        arg(args, "skb_len")?,
        arg(args, "skb_truesize")?,
        Layout::default(),
        arg(args, "skb_fin")? != 0,
    ))
}

/// Call decision point `name` of `k` on `sk` with the named arguments.
fn call(k: &dyn Kernel, sk: &mut TcpSocket, name: &str, a: &Bound<'_, PyDict>) -> PyResult<Answer> {
    use Answer::{Bool, Int, Pair, Str};
    Ok(match name {
        "RELEASE" => Str(k.release()),
        "RMEM2_DEFAULT" => Int(k.rmem2_default()),
        "PINGPONG_THRESH" | "pingpong_thresh" => Int(k.pingpong_thresh()),
        "DEFAULT_SCALING_RATIO" => Int(k.default_scaling_ratio()),
        "MEMCG_SOFTIRQ_ATOMIC" => Bool(k.memcg_softirq_atomic()),
        "COLLAPSE_NS_FIXED" => Int(k.collapse_ns_fixed()),
        "initial_scaling_ratio" => Int(k.initial_scaling_ratio()),
        "win_from_space" => Int(k.win_from_space(sk, arg(a, "space")?)),
        "space_from_win" => Int(k.space_from_win(sk, arg(a, "win")?)),
        "initial_rcv_wnd" => Int(k.initial_rcv_wnd(sk, arg(a, "space")?)),
        "select_initial_window" => {
            k.select_initial_window(sk, arg(a, "space")?, arg(a, "mss")?);
            Answer::None
        }
        "init_rcv_ssthresh" => {
            k.init_rcv_ssthresh(sk);
            Answer::None
        }
        "set_window_clamp" => {
            k.set_window_clamp(sk, arg(a, "val")?);
            Answer::None
        }
        "rcv_rtt_update" => {
            k.rcv_rtt_update(sk, arg(a, "sample_us")?, arg(a, "win_dep")? != 0);
            Answer::None
        }
        "rcv_rtt_measure" => {
            k.rcv_rtt_measure(sk);
            Answer::None
        }
        "ts_rtt_sample_us" => Int(k.ts_rtt_sample_us(arg(a, "delta_ms")?)),
        "measure_rcv_mss" => {
            k.measure_rcv_mss(sk, &segment(a)?, &skb(a)?);
            Answer::None
        }
        "ofo_measure_rcv_mss" => {
            k.ofo_measure_rcv_mss(sk, &segment(a)?, &skb(a)?);
            Answer::None
        }
        "pressure_adjust" => {
            k.pressure_adjust(sk);
            Answer::None
        }
        "shrink_allowed" => Bool(k.shrink_allowed(sk)),
        "end_beyond_window" => Bool(k.end_beyond_window(sk, &segment(a)?, arg(a, "right")?)),
        "zero_window_accepts" => Bool(k.zero_window_accepts(sk, &segment(a)?)),
        "can_ingest" => Bool(k.can_ingest(sk, &skb(a)?)),
        "needs_clamp" => Bool(k.needs_clamp(sk, &skb(a)?)),
        "collapse_cost_ns" => Int(k.collapse_cost_ns(sk, arg(a, "copied")?)),
        "ofo_prune_done" => Bool(k.ofo_prune_done(sk, &skb(a)?)),
        "ofo_dsack" => {
            let (x, y) = k.ofo_dsack(sk, &skb(a)?, arg(a, "dsack_high")?);
            Pair(x, y)
        }
        "grow_window" => {
            k.grow_window(sk, &skb(a)?, arg(a, "adjust")? != 0, &segment(a)?);
            Answer::None
        }
        "grow_under_pressure" => {
            k.grow_under_pressure(sk);
            Answer::None
        }
        "select_window" => Int(k.select_window(sk)),
        "advertise_window" => Int(k.advertise_window(sk)),
        "nomem_window" => Int(k.nomem_window(sk)),
        "tcp_sequence" => Str(k.tcp_sequence(sk, &segment(a)?)),
        "sequence_window" => Int(k.sequence_window(sk)),
        "overwindow_drop" => {
            k.overwindow_drop(sk);
            Answer::None
        }
        "init_buffer_space" => {
            k.init_buffer_space(sk);
            Answer::None
        }
        "on_rcvbuf_set" => {
            k.on_rcvbuf_set(sk);
            Answer::None
        }
        "rcv_rtt_measure_ts" => {
            k.rcv_rtt_measure_ts(sk, &segment(a)?);
            Answer::None
        }
        "clamp_window" => {
            k.clamp_window(sk);
            Answer::None
        }
        "rcv_space_adjust" => {
            k.rcv_space_adjust(sk);
            Answer::None
        }
        "grow_rcvbuf" => {
            k.grow_rcvbuf(sk, arg(a, "copied")?);
            Answer::None
        }
        "rcvbuf_grow" => {
            k.rcvbuf_grow(sk, arg(a, "newval")?);
            Answer::None
        }
        "ofo_rcvbuf_grow" => {
            k.ofo_rcvbuf_grow(sk);
            Answer::None
        }
        "loss_probe_timeout" => Int(k.loss_probe_timeout(sk)),
        "hystart_ack_delay" => Int(k.hystart_ack_delay(sk)),
        "hystart_round_reset_first" => Bool(k.hystart_round_reset_first(sk)),
        "grow_skb" => {
            let mut q: std::collections::VecDeque<i64> =
                [arg(a, "q0")?, arg(a, "q1")?, arg(a, "q2")?].into();
            k.grow_skb(sk, &mut q, arg(a, "missing")?);
            Answer::List(q.into())
        }
        "rcv_space_gate_us" => Int(k.rcv_space_gate_us(sk)),
        "rcv_space_copied" => {
            Int(k.rcv_space_copied(sk, arg(a, "copied_seq")?, arg(a, "rcvq_seq")?))
        }
        "rcvbuf_grow_term" => Int(k.rcvbuf_grow_term(sk, arg(a, "newval")?, arg(a, "oldval")?)),
        "comp_sack_delay_ns" => Int(k.comp_sack_delay_ns(sk, arg(a, "rtt_us8")?)),
        "delack_max" => Int(k.delack_max(sk)),
        "dec_quickack_mode" => {
            k.dec_quickack_mode(sk);
            Answer::None
        }
        "may_update_window" => {
            Bool(k.may_update_window(sk, &segment(a)?, arg(a, "ack")?, arg(a, "nwin")?))
        }
        "rtx_probe0_timed_out" => Bool(k.rtx_probe0_timed_out(sk)),
        "tso_rtt_bytes" => Int(k.tso_rtt_bytes(sk)),
        "new_data_checks_space" => Bool(k.new_data_checks_space(sk)),
        "tso_defer_ack_window" => Int(k.tso_defer_ack_window(sk, arg(a, "srtt_ns")?)),
        _ => {
            return Err(PyKeyError::new_err(format!(
                "{name}: not a decision point kernel_decision can call alone"
            )))
        }
    })
}

/// `kernel_decision(profile, patches, name, args, fields, sysctl)`: build a native socket
/// on the composed kernel with the profile's default sysctls changed by `sysctl`, set
/// `fields` ({"rcv.rcv_ssthresh": v, ...}), call the decision point `name` with `args` (by
/// parameter name; a segment as seg_seq/seg_len/seg_flags/seg_gso_size, an skb as
/// skb_seq/skb_len/skb_truesize/skb_fin) and return (its result, {"record.field": value}
/// of every int/bool field after the call, {counter: value}).
#[pyfunction]
#[pyo3(signature = (profile, patches, name, args, fields, sysctl))]
fn kernel_decision<'py>(
    py: Python<'py>,
    profile: &str,
    patches: Vec<String>,
    name: &str,
    args: &Bound<'py, PyDict>,
    fields: &Bound<'py, PyDict>,
    sysctl: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyTuple>> {
    let names: Vec<&str> = patches.iter().map(String::as_str).collect();
    let k = compose(profile, &names).map_err(PyValueError::new_err)?;
    let mut s = k.default_sysctls().with_specs(&k.new_sysctls());
    for (key, v) in sysctl.iter() {
        set_sysctl(&mut s, &key.extract::<String>()?, &v)?;
    }
    let mut sk = TcpSocket::new(k.clone(), s, None, &SocketParams::default())
        .map_err(PyValueError::new_err)?;
    for (key, v) in fields.iter() {
        set_field(&mut sk, &key.extract::<String>()?, &v)?;
    }
    let answer = call(&*k, &mut sk, name, args)?;
    let result: Bound<'py, PyAny> = match answer {
        Answer::None => py.None().into_bound(py),
        Answer::Int(v) => v.into_pyobject(py)?.into_any(),
        Answer::Bool(v) => pyo3::types::PyBool::new(py, v).to_owned().into_any(),
        Answer::Str(v) => v.into_pyobject(py)?.into_any(),
        Answer::Pair(x, y) => PyTuple::new(py, [x, y])?.into_any(),
        Answer::List(v) => PyList::new(py, v)?.into_any(),
    };
    let after = PyDict::new(py);
    let records = [
        ("conn", sk.conn.fields()),
        ("rcv", sk.rcv.fields()),
        ("mem", sk.mem.fields()),
        ("ack", sk.ack.fields()),
        ("snd", sk.snd.fields()),
    ];
    for (rec, fs) in records {
        for (f, v) in fs {
            match v {
                Value::Int(i) => after.set_item(format!("{rec}.{f}"), i)?,
                Value::Bool(b) => after.set_item(format!("{rec}.{f}"), b)?,
                _ => {}
            }
        }
    }
    for f in ["allocated", "memory_pressure", "TCPMemoryPressures"] {
        after.set_item(format!("proto.{f}"), fields::proto_get(&sk, f))?;
    }
    let mib = PyDict::new(py);
    for (n, v) in sk.mib.values() {
        mib.set_item(n, v)?;
    }
    PyTuple::new(py, [result, after.into_any(), mib.into_any()])
}

/// What the registry knows: {profile: (class name, release)}, [(patch, class name)], and
/// for a composed kernel its counters and new sysctls (name, default).
#[pyfunction]
fn kernel_registry<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
    let profiles = PyDict::new(py);
    for p in PROFILES {
        let k = (p.era)();
        profiles.set_item(p.name, (k.class_name(), k.release(), p.summary))?;
    }
    let patches = PyList::empty(py);
    for p in PATCHES {
        patches.append((p.name, p.class_name, p.summary))?;
    }
    PyTuple::new(py, [profiles.into_any(), patches.into_any()])
}

/// (counters, new sysctls as (name, default, lo, hi), extra sysctls, known sysctls of the
/// era, default sysctls as {name: value}) of `profile` + `patches`.
#[pyfunction]
fn kernel_additions<'py>(
    py: Python<'py>,
    profile: &str,
    patches: Vec<String>,
) -> PyResult<Bound<'py, PyTuple>> {
    let names: Vec<&str> = patches.iter().map(String::as_str).collect();
    let k = compose(profile, &names).map_err(PyValueError::new_err)?;
    let counters: Vec<&str> = k.counters().iter().map(|&(n, _)| n).collect();
    let specs: Vec<(&str, i64, i64, i64)> = k
        .new_sysctls()
        .iter()
        .map(|s| (s.name, s.default, s.lo, s.hi))
        .collect();
    let defaults = PyDict::new(py);
    for (n, v) in k.default_sysctls().with_specs(&k.new_sysctls()).values() {
        match v {
            crate::sysctl::SysctlValue::Int(i) => defaults.set_item(n, i)?,
            crate::sysctl::SysctlValue::Triple(a, b, c) => defaults.set_item(n, (a, b, c))?,
            crate::sysctl::SysctlValue::Name(name) => defaults.set_item(n, name)?,
        }
    }
    PyTuple::new(
        py,
        [
            counters.into_pyobject(py)?.into_any(),
            specs.into_pyobject(py)?.into_any(),
            k.extra_sysctls().into_pyobject(py)?.into_any(),
            k.sysctls().into_pyobject(py)?.into_any(),
            defaults.into_any(),
        ],
    )
}

/// Add the kernel bindings to the module (called from py.rs's module init).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(kernel_decision, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_registry, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_additions, m)?)?;
    Ok(())
}
