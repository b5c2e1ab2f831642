//! The socket's fields by name: the one access table of the native socket.
//!
//! Every field of every state record (`sk.conn`, `sk.rcv`, `sk.mem`, `sk.ack`, `sk.snd`) is
//! read and written through the `get`/`set` that the `record!` macro of state.rs generates
//! from the field list, so the table is declared once, with the struct. This module adds the
//! socket's own attributes, the MIB and the sysctls on top. The record views of py_view.rs
//! (the interpreter's and Python patches' `sk.rcv.rcv_nxt`), the differential tests'
//! `kernel_decision` (py_kernel.rs) and the socket's constructor all go through here.

use crate::socket::TcpSocket;
use crate::sysctl::{short_name, CongestionControl, SysctlValue, Sysctls};
use crate::value::{FromValue, Value};

/// One of the five state records, by its Python attribute name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    Conn,
    Rcv,
    Mem,
    Ack,
    Snd,
}

impl Record {
    /// Every record, in snapshot order.
    pub const ALL: [Record; 5] = [
        Record::Conn,
        Record::Rcv,
        Record::Ack,
        Record::Mem,
        Record::Snd,
    ];

    /// The attribute name on the socket ("conn", "rcv", ...).
    pub fn name(self) -> &'static str {
        match self {
            Record::Conn => "conn",
            Record::Rcv => "rcv",
            Record::Mem => "mem",
            Record::Ack => "ack",
            Record::Snd => "snd",
        }
    }

    /// The record called `name`.
    pub fn from_name(name: &str) -> Option<Record> {
        Record::ALL.into_iter().find(|r| r.name() == name)
    }

    /// Its field names, in declaration order.
    pub fn field_names(self) -> &'static [&'static str] {
        use crate::state::{AckState, ConnState, MemState, RcvState, SndState};
        match self {
            Record::Conn => ConnState::FIELDS,
            Record::Rcv => RcvState::FIELDS,
            Record::Mem => MemState::FIELDS,
            Record::Ack => AckState::FIELDS,
            Record::Snd => SndState::FIELDS,
        }
    }
}

/// The value of `rec.name` on `sk` (None: the record has no such field).
pub fn get(sk: &TcpSocket, rec: Record, name: &str) -> Option<Value> {
    match rec {
        Record::Conn => sk.conn.get(name),
        Record::Rcv => sk.rcv.get(name),
        Record::Mem => sk.mem.get(name),
        Record::Ack => sk.ack.get(name),
        Record::Snd => sk.snd.get(name),
    }
}

/// Set `rec.name` on `sk`; Err names the field and why (no such field, wrong type, a queue).
pub fn set(sk: &mut TcpSocket, rec: Record, name: &str, v: &Value) -> Result<(), String> {
    let r = match rec {
        Record::Conn => sk.conn.set(name, v),
        Record::Rcv => sk.rcv.set(name, v),
        Record::Mem => sk.mem.set(name, v),
        Record::Ack => sk.ack.set(name, v),
        Record::Snd => sk.snd.set(name, v),
    };
    r.map_err(|e| format!("sk.{}.{e}", rec.name()))
}

/// A field named by path: "rcv.rcv_nxt", or one of the socket's own attributes ("now",
/// "tcp_mstamp", "accepted").
pub fn get_path(sk: &TcpSocket, path: &str) -> Option<Value> {
    match path.split_once('.') {
        Some(("proto", name)) => proto_get(sk, name).map(Value::Int),
        Some((rec, name)) => get(sk, Record::from_name(rec)?, name),
        None => match path {
            "now" => Some(Value::Int(sk.now)),
            "tcp_mstamp" => Some(Value::Int(sk.tcp_mstamp)),
            "accepted" => Some(Value::Bool(sk.accepted)),
            _ => None,
        },
    }
}

/// Set a field named by path (see `get_path`).
pub fn set_path(sk: &mut TcpSocket, path: &str, v: &Value) -> Result<(), String> {
    match path.split_once('.') {
        Some(("proto", name)) => proto_set(sk, name, i64::from_value(v)?),
        Some((rec, name)) => {
            let r = Record::from_name(rec).ok_or_else(|| format!("no record {rec}"))?;
            set(sk, r, name, v)
        }
        None => {
            match path {
                "now" => sk.now = i64::from_value(v)?,
                "tcp_mstamp" => sk.tcp_mstamp = i64::from_value(v)?,
                "accepted" => sk.accepted = bool::from_value(v)?,
                _ => return Err(format!("{path} cannot be set")),
            }
            Ok(())
        }
    }
}

/// The integer fields of the socket's pool (`sk.proto`, src/protmem.rs) a path may name.
fn proto_slot<'a>(sk: &'a TcpSocket, name: &str) -> Option<&'a std::sync::atomic::AtomicI64> {
    let p = &sk.proto;
    Some(match name {
        "allocated" => &p.allocated,
        "memory_pressure" => &p.memory_pressure,
        "sockets_allocated" => &p.sockets_allocated,
        "sockets_count" => &p.sockets_count,
        "pcpu_rsv" => &p.pcpu_rsv,
        "TCPMemoryPressures" => &p.TCPMemoryPressures,
        "TCPMemoryPressuresChrono" => &p.TCPMemoryPressuresChrono,
        _ => return None,
    })
}

/// `sk.proto.<name>` (None: no such integer field).
pub fn proto_get(sk: &TcpSocket, name: &str) -> Option<i64> {
    proto_slot(sk, name).map(|a| a.load(std::sync::atomic::Ordering::Relaxed))
}

/// Set `sk.proto.<name>` (the pool is shared: every socket on it sees the change).
pub fn proto_set(sk: &mut TcpSocket, name: &str, v: i64) -> Result<(), String> {
    let slot = proto_slot(sk, name).ok_or_else(|| format!("sk.proto has no field {name}"))?;
    slot.store(v, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// A MIB counter by its kernel name (core or patch counter).
pub fn mib_get(sk: &TcpSocket, name: &str) -> Option<i64> {
    sk.mib
        .values()
        .into_iter()
        .find(|&(n, _)| n == name)
        .map(|(_, v)| v)
}

/// Set a MIB counter (`sk.mib.X += 1` from Python); Err when no such counter exists.
pub fn mib_set(sk: &mut TcpSocket, name: &str, v: i64) -> Result<(), String> {
    let slot = sk
        .mib
        .counter_mut(name)
        .ok_or_else(|| format!("sk.mib has no counter {name}"))?;
    *slot = v;
    Ok(())
}

/// A sysctl by its short or long name: an int, or a triple as a list.
pub fn sysctl_get(s: &Sysctls, name: &str) -> Option<Value> {
    let short = short_name(name);
    s.values()
        .into_iter()
        .find(|&(n, _)| n == short)
        .map(|(_, v)| match v {
            SysctlValue::Int(i) => Value::Int(i),
            SysctlValue::Triple(a, b, c) => {
                Value::List(vec![Value::Int(a), Value::Int(b), Value::Int(c)])
            }
            SysctlValue::Name(n) => Value::Str(n.to_string()),
        })
}

/// Set a sysctl by its short or long name (range checks stay in Python, which validates
/// what users type); Err when the kernel has no such sysctl or the value has the wrong shape.
pub fn sysctl_set(s: &mut Sysctls, name: &str, v: &Value) -> Result<(), String> {
    let short = short_name(name);
    let triple = |v: &Value| -> Result<(i64, i64, i64), String> {
        match v {
            Value::List(l) if l.len() == 3 => Ok((
                i64::from_value(&l[0])?,
                i64::from_value(&l[1])?,
                i64::from_value(&l[2])?,
            )),
            _ => Err(format!("sysctl {name}: expected 3 integers, got {v:?}")),
        }
    };
    match short {
        "tcp_rmem" => s.tcp_rmem = triple(v)?,
        "tcp_wmem" => s.tcp_wmem = triple(v)?,
        "tcp_mem" => s.tcp_mem = triple(v)?,
        "tcp_congestion_control" => {
            let Value::Str(cc) = v else {
                return Err(format!("sysctl {name}: expected a name, got {v:?}"));
            };
            s.tcp_congestion_control = CongestionControl::from_name(cc).ok_or_else(|| {
                format!("sysctl {name}: {cc:?} is not available; choose one of: cubic, reno")
            })?;
        }
        _ => {
            let val = i64::from_value(v).map_err(|e| format!("sysctl {name}: {e}"))?;
            if let Some(slot) = s.int_mut(short) {
                *slot = val;
            } else if !s.set_patched(short, val) {
                return Err(format!("the native socket has no sysctl {name:?}"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::kernel_for;
    use crate::socket::SocketParams;

    fn socket() -> TcpSocket {
        let k = kernel_for("linux-6.6").unwrap();
        let s = k.default_sysctls();
        TcpSocket::new(k, s, None, &SocketParams::default()).unwrap()
    }

    #[test]
    fn every_field_of_every_record_reads_back_what_was_written() {
        let mut sk = socket();
        for rec in Record::ALL {
            for &f in rec.field_names() {
                let v = get(&sk, rec, f).expect("declared field");
                let shaped = match v {
                    Value::Int(i) => Value::Int(i + 7),
                    Value::Bool(b) => Value::Bool(!b),
                    other => other,
                };
                match set(&mut sk, rec, f, &shaped) {
                    Ok(()) => assert_eq!(get(&sk, rec, f), Some(shaped), "{}.{f}", rec.name()),
                    Err(e) => assert!(e.contains("read-only"), "{}.{f}: {e}", rec.name()),
                }
            }
        }
        assert_eq!(sk.rcv.rcv_nxt, 7);
        assert!(sk.snd.nodelay != SocketParams::default().nodelay);
    }

    #[test]
    fn paths_states_and_errors() {
        let mut sk = socket();
        set_path(&mut sk, "conn.state", &Value::Str("LISTEN".into())).unwrap();
        assert_eq!(
            get_path(&sk, "conn.state"),
            Some(Value::Str("LISTEN".into()))
        );
        assert!(set_path(&mut sk, "conn.state", &Value::Str("NOPE".into())).is_err());
        assert!(set_path(&mut sk, "rcv.nope", &Value::Int(1))
            .unwrap_err()
            .contains("no field nope"));
        assert!(set_path(&mut sk, "rcv.rcv_nxt", &Value::Str("x".into())).is_err());
        set_path(&mut sk, "accepted", &Value::Bool(true)).unwrap();
        assert!(sk.accepted);
        assert_eq!(get_path(&sk, "nope"), None);
    }

    #[test]
    fn mib_and_sysctls_by_name() {
        let mut sk = socket();
        mib_set(&mut sk, "TCPWinProbe", 3).unwrap();
        assert_eq!(mib_get(&sk, "TCPWinProbe"), Some(3));
        assert!(mib_set(&mut sk, "Nope", 1).is_err());
        let s = std::sync::Arc::make_mut(&mut sk.sysctl);
        sysctl_set(
            s,
            "net.ipv4.tcp_rmem",
            &Value::List(vec![Value::Int(1), Value::Int(2), Value::Int(3)]),
        )
        .unwrap();
        sysctl_set(s, "tcp_shrink_window", &Value::Int(1)).unwrap();
        assert_eq!(s.tcp_rmem, (1, 2, 3));
        assert_eq!(sysctl_get(s, "tcp_shrink_window"), Some(Value::Int(1)));
        assert!(sysctl_set(s, "tcp_nope", &Value::Int(1)).is_err());
    }
}
