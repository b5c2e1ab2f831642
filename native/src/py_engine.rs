//! `tcpsim._native.Simulation`: the native engine (crate::engine) for tcpsim/engine/native.py.
//!
//! Built from a flat dict the Python runner prepares from the scenario (the same values the
//! Python engine's `Simulation.__init__` reads); run in slices (`run_some`) so Python can
//! write each trace group to Parquet as it fills and show progress; the trace handed over as
//! little-endian int64 column buffers plus string codes (no Python object per value).

use std::ffi::{c_int, c_void};
use std::ptr;

use pyo3::exceptions::{PyBufferError, PyKeyError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::devices;
use crate::engine::apps::App;
use crate::engine::parallel::HostRun;
use crate::engine::random::Random;
use crate::engine::replay::{ReplayReader, ReplayWriter};
use crate::engine::simulation::{
    FlowEnd, FlowSpec, LinkSpec, RunSpec, Simulation, SocketMaker, RCV, SND,
};
use crate::engine::trace::Spare;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::kernel::KernelRef;
use crate::py::{compose_kernel, fields_dict, segment_to_py, sysctls_from_py};
use crate::py_patch::{compose_python, take_error, PatchError, PatchFailure};
use crate::socket::SocketParams;
use crate::state::{ConnState, MemState, RcvState, SndState};
use crate::value::Value;

/// The socket's queues (skbs, retransmit and write queues): a run's summary never reads
/// them, and a long run's hold hundreds of thousands of entries -- as Python objects, the
/// largest allocation of the whole run (150 MB at the end of the oscillating reader).
const QUEUES: &[&str] = &["receive_queue", "ofo_queue", "rtx_queue", "write_queue"];

/// The fields `names` of a record as a dict (`get` reads one), its queues left out.
fn scalars_dict<'py>(
    py: Python<'py>,
    names: &[&'static str],
    get: impl Fn(&str) -> Option<Value>,
) -> PyResult<Bound<'py, PyDict>> {
    let fields: Vec<(&str, Value)> = names
        .iter()
        .filter(|n| !QUEUES.contains(n))
        .filter_map(|&n| get(n).map(|v| (n, v)))
        .collect();
    fields_dict(py, &fields)
}

fn item<'py>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Bound<'py, PyAny>> {
    d.get_item(key)?
        .ok_or_else(|| PyKeyError::new_err(format!("native engine config: no {key:?}")))
}

fn int(d: &Bound<'_, PyDict>, key: &str) -> PyResult<i64> {
    item(d, key)?.extract()
}

/// The captured lateness sequences: each an int64 buffer (the `array('q')` that
/// tcpsim.latency_file decodes, copied at memory speed) or any sequence of ints.
fn sequences(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<i64>>> {
    let mut out = Vec::new();
    for seq in obj.try_iter()? {
        let seq = seq?;
        match pyo3::buffer::PyBuffer::<i64>::get(&seq) {
            Ok(buf) => out.push(buf.to_vec(seq.py())?),
            Err(_) => out.push(seq.extract()?),
        }
    }
    Ok(out)
}

fn app(d: &Bound<'_, PyDict>, sets: &[Vec<Arc<[i64]>>]) -> PyResult<App> {
    let set: i64 = int(d, "latency_seq_set")?;
    let latency_sequences = match usize::try_from(set) {
        Ok(i) => sets
            .get(i)
            .cloned()
            .ok_or_else(|| PyValueError::new_err(format!("no latency sequence set {i}")))?,
        Err(_) => sequences(&item(d, "latency_sequences")?)?
            .into_iter()
            .map(Into::into)
            .collect(),
    };
    Ok(App {
        kind: item(d, "kind")?.extract()?,
        bytes: int(d, "bytes")?,
        every: int(d, "every")?,
        bytes2: int(d, "bytes2")?,
        every2: int(d, "every2")?,
        period: int(d, "period")?,
        fast_for: int(d, "fast_for")?,
        slow_for: int(d, "slow_for")?,
        fraction: item(d, "fraction")?.extract()?,
        start: int(d, "start")?,
        latency_table: item(d, "latency_quantiles")?.extract::<Vec<i64>>()?.into(),
        latency_sequences,
        latency_block: int(d, "latency_block")?,
        latency_ns: int(d, "latency_ns")?,
        call_cost: int(d, "call_cost")?,
        copy_rate: int(d, "copy_rate")?,
        owns_socket: int(d, "owns_socket")?,
    })
}

/// The maker of one of the run's sockets, as simulation.py builds them: the profile's
/// built-in patches composed natively and, when the run has a user's Python patch
/// (`py_policy`, the class tcpsim/native_patch.py composed), that class on top with one
/// instance per maker (py_patch.rs; a run with one has one flow), its exceptions kept in
/// `error`.
fn socket_maker(
    cfg: &Bound<'_, PyDict>,
    side: &Bound<'_, PyDict>,
    error: &PatchError,
) -> PyResult<SocketMaker> {
    let profile: String = item(cfg, "profile")?.extract()?;
    let patches: Vec<String> = item(cfg, "patches")?.extract()?;
    let layers: Option<Vec<(usize, Bound<'_, PyAny>)>> = item(cfg, "py_policy")?.extract()?;
    let k: KernelRef = match layers {
        None => compose_kernel(&profile, &patches)?,
        Some(l) => compose_python(cfg.py(), &profile, &patches, &l, error)?,
    };
    let sysctl = sysctls_from_py(&item(side, "sysctl")?.cast_into()?, &*k)?;
    let dev_name: String = item(side, "device")?.extract()?;
    let dev = devices::device(&dev_name).map_err(PyValueError::new_err)?;
    let params = SocketParams {
        name: item(side, "name")?.extract()?,
        mtu: int(side, "mtu")?,
        initcwnd: int(side, "initcwnd")?,
        nodelay: item(side, "nodelay")?.extract()?,
        init_rwnd: int(side, "init_rwnd")?,
        hz: int(side, "hz")?,
    };
    let maker = SocketMaker {
        k,
        sysctl: sysctl.into(),
        dev: Arc::new(dev),
        params,
        so_rcvbuf: int(side, "so_rcvbuf")?,
        tracing: item(side, "trace")?.extract()?,
    };
    maker.make().map_err(PyValueError::new_err)?; // a bad HZ is a bad configuration
    Ok(maker)
}

/// One column of the flows' table.
fn column<'py, T: FromPyObjectOwned<'py>>(
    cols: &Bound<'py, PyDict>,
    key: &str,
    n: usize,
) -> PyResult<Vec<T>> {
    let v: Vec<T> = item(cols, key)?.extract()?;
    if v.len() != n {
        return Err(PyValueError::new_err(format!(
            "native engine config: flows column {key:?} has {} values for {n} flows",
            v.len()
        )));
    }
    Ok(v)
}

/// The flows of the config, a column per field (tcpsim/engine/native.py `_flows_cfg` and
/// its FLOW_COLUMNS): indices into its sockets and apps, and each flow's own values -- a
/// host of tens of thousands of flows hands them over as a few dozen lists.
fn flow_specs(
    cols: &Bound<'_, PyDict>,
    makers: &[Arc<SocketMaker>],
    apps: &[Arc<App>],
) -> PyResult<Vec<FlowSpec>> {
    let rcv: Vec<usize> = item(cols, "rcv")?.extract()?;
    let n = rcv.len();
    let snd: Vec<usize> = column(cols, "snd", n)?;
    let ints = |k: &str| column::<i64>(cols, k, n);
    let roles = |k: &str| column::<Option<usize>>(cols, k, n);
    let (delay_ab, delay_ba, rate_bps) = (
        ints("link.delay_ab")?,
        ints("link.delay_ba")?,
        ints("link.rate_bps")?,
    );
    let (queue_limit, jitter, burst, limit) = (
        ints("link.queue_limit")?,
        ints("link.jitter")?,
        ints("link.burst")?,
        ints("link.limit")?,
    );
    let loss: Vec<f64> = column(cols, "link.loss", n)?;
    let (writer, reader, rev_writer, rev_reader) = (
        roles("writer")?,
        roles("reader")?,
        roles("rev_writer")?,
        roles("rev_reader")?,
    );
    let starts = [
        ints("start.writer")?,
        ints("start.reader")?,
        ints("start.rev_writer")?,
        ints("start.rev_reader")?,
    ];
    let seed: Vec<i128> = column(cols, "seed", n)?;
    let client: Vec<bool> = column(cols, "receiver_client", n)?;
    let (duration, start, stop) = (ints("duration")?, ints("start")?, ints("stop")?);
    let cls: Vec<usize> = column(cols, "cls", n)?;
    let socket = |i: usize| -> PyResult<Arc<SocketMaker>> {
        makers
            .get(i)
            .cloned()
            .ok_or_else(|| PyValueError::new_err(format!("no socket {i}")))
    };
    let app_at = |i: Option<usize>| -> PyResult<Option<Arc<App>>> {
        i.map(|i| {
            apps.get(i)
                .cloned()
                .ok_or_else(|| PyValueError::new_err(format!("no app {i}")))
        })
        .transpose()
    };
    let need = |i: Option<usize>, key: &str| -> PyResult<Arc<App>> {
        app_at(i)?.ok_or_else(|| PyValueError::new_err(format!("flow without {key}")))
    };
    (0..n)
        .map(|f| {
            let rev = match (app_at(rev_writer[f])?, app_at(rev_reader[f])?) {
                (Some(w), Some(r)) => Some((w, r)),
                _ => None,
            };
            Ok(FlowSpec {
                starts: [starts[0][f], starts[1][f], starts[2][f], starts[3][f]],
                rcv: socket(rcv[f])?,
                snd: socket(snd[f])?,
                link: LinkSpec {
                    delay_ab: delay_ab[f],
                    delay_ba: delay_ba[f],
                    rate_bps: rate_bps[f],
                    queue_limit: queue_limit[f],
                    loss: loss[f],
                    jitter: jitter[f],
                    burst: burst[f],
                    limit: limit[f],
                },
                seed: seed[f],
                receiver_client: client[f],
                writer: need(writer[f], "writer")?,
                reader: need(reader[f], "reader")?,
                rev,
                duration: duration[f],
                start: start[f],
                stop: stop[f],
                cls: cls[f],
            })
        })
        .collect()
}

/// The bytes of a slice of integers, little-endian (what Arrow buffers hold here).
fn le_bytes<T: Copy>(v: &[T]) -> &[u8] {
    const { assert!(cfg!(target_endian = "little")) };
    // SAFETY: i64/i32 have no padding and any byte pattern is a valid u8.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// The values of one trace column.
enum Values {
    I64(Vec<i64>),
    I32(Vec<i32>),
}

/// One trace column of a group, handed to Python without a copy: a read-only buffer of its
/// little-endian values (`pyarrow.py_buffer(column)`), alive as long as the Arrow arrays
/// built on it; then its vector goes back to the trace (`Spare`) to hold a later group.
#[pyclass(frozen)]
struct Column(Values, Option<Spare>);

impl Drop for Column {
    fn drop(&mut self) {
        if let (Values::I64(v), Some(spare)) = (&mut self.0, &self.1) {
            spare.give(std::mem::take(v));
        }
    }
}

#[pymethods]
impl Column {
    /// The buffer protocol: the values as bytes (format "B"), read-only.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("no view"));
        }
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("a trace column is read-only"));
        }
        let data = match &slf.get().0 {
            Values::I64(v) => le_bytes(v),
            Values::I32(v) => le_bytes(v),
        };
        // SAFETY: `view` is the caller's Py_buffer; the data lives in the Column, which
        // the view keeps alive (view.obj holds a reference) and never changes (frozen).
        unsafe {
            (*view).buf = data.as_ptr() as *mut c_void;
            (*view).len = data.len() as isize;
            (*view).readonly = 1;
            (*view).itemsize = 1;
            (*view).format = if flags & ffi::PyBUF_FORMAT == ffi::PyBUF_FORMAT {
                c"B".as_ptr().cast_mut()
            } else {
                ptr::null_mut()
            };
            (*view).ndim = 1;
            (*view).shape = if flags & ffi::PyBUF_ND == ffi::PyBUF_ND {
                &raw mut (*view).len
            } else {
                ptr::null_mut()
            };
            (*view).strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES {
                &raw mut (*view).itemsize
            } else {
                ptr::null_mut()
            };
            (*view).suboffsets = ptr::null_mut();
            (*view).internal = ptr::null_mut();
            (*view).obj = slf.into_any().into_ptr();
        }
        Ok(())
    }

    fn __len__(&self) -> usize {
        match &self.0 {
            Values::I64(v) => v.len(),
            Values::I32(v) => v.len(),
        }
    }
}

/// Each flow built so far, in index order, with its record (`host_stats`, `host_flows`): a
/// closed flow's kept at its close, an open one's now.
fn each_flow_end(
    s: &Simulation,
    mut each: impl FnMut(usize, &FlowEnd) -> PyResult<()>,
) -> PyResult<()> {
    for c in 0..s.specs.len() {
        match (s.flow(c), &s.ended[c]) {
            (_, Some(e)) => each(c, e)?,
            (Some(f), None) => each(c, &FlowEnd::of(f))?,
            (None, None) => {}
        }
    }
    Ok(())
}

/// A whole run in Rust (crate::engine::simulation).
///
/// Not `unsendable`: everything it holds is `Send` (the compiler checks it), so Python may
/// free it on any thread. A Dask worker does: its profiler keeps the frames of a finished
/// task (and the simulation in their locals) and lets them go on the event-loop thread,
/// where an `unsendable` class could only leak the run and print a traceback.
#[pyclass(name = "Simulation")]
struct PySimulation {
    sim: Simulation,
    /// A host run in CPU order (`threads` >= 2: src/engine/parallel.rs); `sim` is its first
    /// part until it has run.
    host: Option<HostRun>,
    segment_cls: Py<PyAny>,
    /// Where a user's Python patch leaves what it raised (None: no Python patch).
    patch_error: Option<PatchError>,
}

#[pymethods]
impl PySimulation {
    #[new]
    fn new(py: Python<'_>, cfg: &Bound<'_, PyDict>) -> PyResult<Self> {
        let halt = Arc::new(AtomicBool::new(false));
        let error = PatchFailure::new(halt.clone());
        // a patch that raised while the sockets were made: halted, raised by the first
        // run_some (not here, where the caller takes a ValueError for a bad configuration)
        let makers = item(cfg, "sockets")?
            .cast_into::<PyList>()?
            .iter()
            .map(|side| Ok(Arc::new(socket_maker(cfg, &side.cast_into()?, &error)?)))
            .collect::<PyResult<Vec<_>>>()?;
        // the captured latency sequences, once per set however many apps replay them
        let sets = item(cfg, "latency_sequences")?
            .try_iter()?
            .map(|set| Ok(sequences(&set?)?.into_iter().map(Into::into).collect()))
            .collect::<PyResult<Vec<Vec<Arc<[i64]>>>>>()?;
        let apps = item(cfg, "apps")?
            .cast_into::<PyList>()?
            .iter()
            .map(|a| Ok(Arc::new(app(&a.cast_into()?, &sets)?)))
            .collect::<PyResult<Vec<_>>>()?;
        let specs = flow_specs(&item(cfg, "flows")?.cast_into()?, &makers, &apps)?;
        let pool: Bound<'_, PyDict> = item(cfg, "pool")?.cast_into()?;
        let spec = RunSpec {
            duration: int(cfg, "duration")?,
            skip: item(cfg, "skip")?.extract()?,
            tap: item(cfg, "tap")?.extract()?,
            sample_every: int(cfg, "sample_every")?,
            ncpus: item(cfg, "ncpus")?.extract()?,
            local_peers: item(cfg, "local_peers")?.extract()?,
            tcp_mem: item(&pool, "tcp_mem")?.extract()?,
            pcpu_rsv: int(&pool, "pcpu_rsv")?,
            memcg: match cfg.get_item("memcg")? {
                Some(m) if !m.is_none() => Some(m.extract()?),
                _ => None,
            },
        };
        let threads: usize = match cfg.get_item("threads")? {
            Some(t) if !t.is_none() => t.extract()?,
            _ => 1,
        };
        let replay = ["replay_writer", "replay_reader"].iter().any(|k| {
            cfg.get_item(*k)
                .ok()
                .flatten()
                .is_some_and(|v| !v.is_none())
        });
        let py_patch = cfg.get_item("py_policy")?.is_some_and(|c| !c.is_none());
        let (mut sim, host) = if threads >= 2 {
            if replay || py_patch {
                return Err(PyValueError::new_err(
                    "threads: a host run in CPU order takes no replay or Python patch",
                ));
            }
            // `parallel` False: the same order on one thread (the same bytes); `probe` too,
            // the threads' windows timed
            let flag = |k: &str| -> PyResult<Option<bool>> {
                Ok(cfg.get_item(k)?.and_then(|v| v.extract::<bool>().ok()))
            };
            let ordered = flag("parallel")? == Some(false);
            let on = if ordered { 1 } else { threads };
            let (sim, mut host) = HostRun::new(specs, spec, on).map_err(PyValueError::new_err)?;
            // `probe`: the threads' windows run one group after the other, timed
            host.probe = flag("probe")? == Some(true);
            (sim, Some(host))
        } else {
            (
                Simulation::new(specs, spec).map_err(PyValueError::new_err)?,
                None,
            )
        };
        sim.halt = halt;
        if let Some(w) = cfg.get_item("replay_writer")?.filter(|w| !w.is_none()) {
            let w: Bound<'_, PyDict> = w.cast_into()?;
            let ticks = item(&w, "ticks")?.extract()?;
            sim.replay_writer = Some(if item(&w, "schedule")?.extract()? {
                ReplayWriter::schedule(ticks, int(&w, "owns")?)
            } else {
                ReplayWriter::new(ticks, int(&w, "n")?, item(&w, "bulk")?.extract()?)
            });
        }
        if let Some(r) = cfg.get_item("replay_reader")?.filter(|r| !r.is_none()) {
            let r: Bound<'_, PyDict> = r.cast_into()?;
            sim.replay_reader = Some(ReplayReader::new(
                item(&r, "ticks")?.extract()?,
                int(&r, "owns")?,
            ));
        }
        let segment_cls = py
            .import("tcpsim.core.segment")?
            .getattr("Segment")?
            .unbind();
        Ok(PySimulation {
            sim,
            host,
            segment_cls,
            patch_error: py_patch.then_some(error),
        })
    }

    /// Run until the trace holds `max_rows` rows, `max_steps` events ran, or the run ended;
    /// raises what a user's Python patch raised (the run stops at the event it raised in).
    /// Without a Python patch the GIL is released meanwhile; with one it is kept, since the
    /// patch's points need it (re-taken at each call it cost a little more, within noise:
    /// docs/performance.md).
    fn run_some(&mut self, py: Python<'_>, max_rows: usize, max_steps: u64) -> PyResult<()> {
        if let Some(host) = self.host.as_mut() {
            let sim = &mut self.sim;
            py.detach(|| host.run(sim));
            return Ok(());
        }
        let sim = &mut self.sim;
        match &self.patch_error {
            None => {
                py.detach(|| sim.run_some(max_rows, max_steps));
                Ok(())
            }
            Some(slot) => {
                sim.run_some(max_rows, max_steps);
                take_error(slot)
            }
        }
    }

    /// A host run in CPU order: (windows run on threads, windows run in order, restarts),
    /// every attempt's windows counted; None for a run in host order.
    #[getter]
    fn host_windows(&self) -> Option<(u64, u64, u32)> {
        self.host
            .as_ref()
            .map(|h| (h.windows_threaded, h.windows_ordered, h.restarts))
    }

    /// A probed host run in CPU order (`probe`): (ns the threads' windows took, one group
    /// after the other; ns of each such window's slowest group, added up).
    #[getter]
    fn host_balance(&self) -> Option<(u128, u128)> {
        self.host
            .as_ref()
            .filter(|h| h.probe)
            .map(|h| (h.busy_ns, h.critical_ns))
    }

    #[getter]
    fn finished(&self) -> bool {
        self.sim.finished
    }

    #[getter]
    fn now(&self) -> i64 {
        self.sim.sched.now
    }

    /// Trace rows buffered.
    fn rows(&self) -> usize {
        self.sim.trace.rows()
    }

    /// The first `n` buffered rows, taken out: ([int64 column values], int32 codes,
    /// [the string tuples (sock, event, detail, flags, drop_reason) first seen since the
    /// last call], int32 flow of each row). The columns are `Column`s, buffers Arrow wraps without a copy; a row's
    /// code indexes all the tuples handed over so far, in order.
    fn take_rows<'py>(&mut self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyTuple>> {
        let tr = &mut self.sim.trace;
        let (ints, codes, flows) = tr.take(n);
        let spare = tr.spare();
        let ints = ints
            .into_iter()
            .map(|v| Bound::new(py, Column(Values::I64(v), Some(spare.clone()))))
            .collect::<PyResult<Vec<_>>>()?;
        let codes = Bound::new(py, Column(Values::I32(codes), None))?;
        let flows = Bound::new(py, Column(Values::I32(flows), None))?;
        let distinct = tr
            .take_distinct()
            .into_iter()
            .map(|t| PyTuple::new(py, t))
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(
            py,
            [
                PyList::new(py, ints)?.into_any(),
                codes.into_any(),
                PyList::new(py, distinct)?.into_any(),
                flows.into_any(),
            ],
        )
    }

    /// The receiver's wire since the last call: [(t_ns, sent by the receiver, Segment)].
    fn take_tap<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let cls = self.segment_cls.bind(py);
        let taken = self
            .sim
            .tap
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        let items = taken
            .iter()
            .map(|(t, from_rcv, seg)| {
                let s = segment_to_py(py, cls, seg)?;
                PyTuple::new(
                    py,
                    [
                        t.into_pyobject(py)?.into_any(),
                        from_rcv.into_pyobject(py)?.to_owned().into_any(),
                        s,
                    ],
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// What the summary is built from (simulation.py `result`): the run's own numbers and,
    /// per socket, its state records, MIB, error and `ss` line.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = &self.sim;
        let f = s.flow(0).ok_or_else(|| {
            PyValueError::new_err("flow 0 closed: a host's numbers are host_stats()")
        })?;
        let out = PyDict::new(py);
        out.set_item("events", s.sched.steps)?;
        out.set_item("packets", f.links[0].sent + f.links[1].sent)?;
        out.set_item("established_at", f.established_at)?;
        out.set_item("rcv_established_at", f.rcv_established_at)?;
        out.set_item("died_at", f.died_at)?;
        let written = |i: usize| match (&s.replay_writer, i) {
            (Some(w), 0) => Some(w.written),
            _ => f.writers[i].as_ref().map(|w| w.written),
        };
        let read = |i: usize| match (&s.replay_reader, i) {
            (Some(r), 0) => Some(r.read_bytes),
            _ => f.readers[i].as_ref().map(|r| r.read_bytes),
        };
        // `tcpsim validate`: the replay's ticks where the model differed from the kernel
        let w = s.replay_writer.as_ref().map_or(0, |w| w.size_mismatch);
        let r = s.replay_reader.as_ref().map_or(0, |r| r.size_mismatch);
        out.set_item("replay_size_mismatch", (w, r))?;
        out.set_item("written", written(0))?;
        out.set_item("rev_written", written(1))?;
        out.set_item("read_bytes", read(0))?;
        out.set_item("rev_read_bytes", read(1))?;
        for (key, i) in [("rcv", RCV), ("snd", SND)] {
            let sk = &f.socks[i];
            let d = PyDict::new(py);
            d.set_item(
                "conn",
                scalars_dict(py, ConnState::FIELDS, |n| sk.conn.get(n))?,
            )?;
            d.set_item(
                "rcv",
                scalars_dict(py, RcvState::FIELDS, |n| sk.rcv.get(n))?,
            )?;
            d.set_item(
                "mem",
                scalars_dict(py, MemState::FIELDS, |n| sk.mem.get(n))?,
            )?;
            d.set_item(
                "snd",
                scalars_dict(py, SndState::FIELDS, |n| sk.snd.get(n))?,
            )?;
            d.set_item("mib", sk.mib.values())?;
            d.set_item("error", &sk.error)?;
            d.set_item("ss", sk.ss_line())?;
            let p = f.peaks[i];
            d.set_item("peaks", (p.rmem, p.rcvbuf, p.recv_q, p.t_rmem))?;
            out.set_item(key, d)?;
        }
        Ok(out)
    }

    /// A host's numbers (tcpsim/host/outputs.py): its samples [(t, inuse, mem, pressure,
    /// memcg usage)], the pool's and (with one) the memcg's snapshot,
    /// events run, and per flow built (in index order) its record: class, start, stop,
    /// established_at, written, read_bytes, queue area (bytes x ns), peak sk_rmem_alloc and
    /// the receiver's MIB -- at its close for a closed flow, at the end for the others
    /// (`flows` False: without them; `host_flows` gives them as rows).
    #[pyo3(signature = (flows = true))]
    fn host_stats<'py>(&self, py: Python<'py>, flows: bool) -> PyResult<Bound<'py, PyDict>> {
        let s = &self.sim;
        let out = PyDict::new(py);
        out.set_item("events", s.sched.steps)?;
        let samples: Vec<(i64, i64, i64, bool, i64)> = s
            .samples
            .iter()
            .map(|h| (h.t, h.inuse, h.mem, h.pressure, h.memcg))
            .collect();
        out.set_item("samples", samples)?;
        let p = s.pool.snapshot();
        let pool = PyDict::new(py);
        pool.set_item("tcp_mem", p.tcp_mem)?;
        pool.set_item("allocated", p.allocated)?;
        pool.set_item("per_cpu_fw_alloc", p.per_cpu_fw_alloc)?;
        pool.set_item("memory_pressure", p.memory_pressure)?;
        pool.set_item("sockets_allocated", p.sockets_allocated)?;
        pool.set_item("TCPMemoryPressures", p.TCPMemoryPressures)?;
        pool.set_item("TCPMemoryPressuresChrono", p.TCPMemoryPressuresChrono)?;
        out.set_item("pool", pool)?;
        if let Some(m) = &s.memcg {
            let m = m.snapshot();
            let d = PyDict::new(py);
            d.set_item("version", m.version)?;
            d.set_item("limit", m.limit)?;
            d.set_item("other", m.other)?;
            d.set_item("atomic", m.atomic)?;
            d.set_item("usage", m.usage)?;
            d.set_item("sock", m.sock)?;
            d.set_item("watermark", m.watermark)?;
            d.set_item("tcpmem_pressure", m.tcpmem_pressure)?;
            d.set_item("refused", m.refused)?;
            d.set_item("events_max", m.events_max)?;
            d.set_item("pressure_since", m.pressure_since)?;
            d.set_item("pressure_entries", m.pressure_entries)?;
            d.set_item("pressure_ns", m.pressure_ns)?;
            out.set_item("memcg", d)?;
        }
        if !flows {
            return Ok(out); // the flows' numbers from host_flows
        }
        let flows = PyList::empty(py);
        each_flow_end(s, |c, rec| {
            let d = PyDict::new(py);
            d.set_item("index", c)?;
            d.set_item("cls", rec.cls)?;
            d.set_item("start", rec.start)?;
            d.set_item("stop", rec.stop)?;
            d.set_item("established_at", rec.established_at)?;
            d.set_item("written", rec.written)?;
            d.set_item("read_bytes", rec.read_bytes)?;
            d.set_item("received", rec.received)?;
            d.set_item("q_area", rec.q_area)?;
            d.set_item("peak_rmem", rec.peaks.rmem)?;
            d.set_item("mib", rec.mib.to_vec())?;
            flows.append(d)
        })?;
        out.set_item("flows", flows)?;
        Ok(out)
    }

    /// The host's flows' final numbers, one tuple each in flow order -- (index, cls, start,
    /// stop, established_at, written, read_bytes, received, q_area, peak_rmem, then the
    /// counters named in `counters`, 0 where a flow has none) -- what `host_stats` gives
    /// under "flows" without a dict and a counter list per flow: tcpsim/host/run.py makes
    /// the host's FlowRecords from them (tens of thousands with churn).
    fn host_flows<'py>(
        &self,
        py: Python<'py>,
        counters: Vec<String>,
    ) -> PyResult<Bound<'py, PyList>> {
        let s = &self.sim;
        let out = PyList::empty(py);
        let mut row: Vec<Bound<'py, PyAny>> = Vec::with_capacity(10 + counters.len());
        each_flow_end(s, |c, rec| {
            row.clear();
            row.push(c.into_pyobject(py)?.into_any());
            row.push(rec.cls.into_pyobject(py)?.into_any());
            for v in [
                rec.start,
                rec.stop,
                rec.established_at,
                rec.written,
                rec.read_bytes,
                rec.received,
            ] {
                row.push(v.into_pyobject(py)?.into_any());
            }
            row.push(rec.q_area.into_pyobject(py)?.into_any());
            row.push(rec.peaks.rmem.into_pyobject(py)?.into_any());
            for name in &counters {
                let v = rec
                    .mib
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or(0, |&(_, v)| v);
                row.push(v.into_pyobject(py)?.into_any());
            }
            out.append(PyTuple::new(py, &row)?)
        })?;
        Ok(out)
    }
}

/// `n` draws of `random.Random(seed).random()` from the engine's generator, then `n` of
/// `expovariate(lambd)` (tests/engine/test_random.py holds them to CPython's).
#[pyfunction]
fn random_draws(seed: i128, n: usize, lambd: f64) -> (Vec<f64>, Vec<f64>) {
    let mut r = Random::new(seed);
    let a = (0..n).map(|_| r.random()).collect();
    let b = (0..n).map(|_| r.expovariate(lambd)).collect();
    (a, b)
}

/// Add the engine's class to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(random_draws, m)?)?;
    m.add_class::<Column>()?;
    m.add_class::<PySimulation>()
}
