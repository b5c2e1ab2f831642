//! Sysctls that shape the receive path and the sender, under their kernel names.
//!
//! Mirrors the record of tcpsim/core/sysctl.py (`Sysctls` and its defaults). Validating a
//! user's `net.ipv4.x = v` stays in Python, which builds the record the native socket gets.

/// Receive-path and sender sysctls (net.ipv4.* unless the name says net.core).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sysctls {
    pub tcp_rmem: (i64, i64, i64),
    pub tcp_wmem: (i64, i64, i64),
    pub tcp_adv_win_scale: i64,
    pub tcp_app_win: i64,
    pub tcp_moderate_rcvbuf: i64,
    pub tcp_shrink_window: i64,
    pub tcp_timestamps: i64,
    pub tcp_window_scaling: i64,
    pub tcp_sack: i64,
    pub tcp_retries2: i64,
    /// ms
    pub tcp_invalid_ratelimit: i64,
    /// us (6.19)
    pub tcp_rcvbuf_low_rtt: i64,
    pub tcp_workaround_signed_windows: i64,
    pub tcp_backlog_ack_defer: i64,
    pub tcp_comp_sack_nr: i64,
    pub tcp_comp_sack_delay_ns: i64,
    /// The sender's algorithm (src/cong).
    pub tcp_congestion_control: CongestionControl,
    /// UINT_MAX: unsent bytes do not limit writes.
    pub tcp_notsent_lowat: i64,
    pub tcp_slow_start_after_idle: i64,
    /// net.core.rmem_max
    pub rmem_max: i64,
    /// net.core.wmem_max
    pub wmem_max: i64,
    /// The host's TCP pool (min, pressure, max), pages (src/protmem.rs). The default is what
    /// tcp_init_mem() [net/ipv4/tcp.c] computes on the 24 GB reference machine: limit =
    /// max(nr_free_buffer_pages() / 16, 128), tcp_mem = (limit / 4 * 3, limit, 2 * that
    /// first) -- 1.1 / 1.5 / 2.2 GB, which no single connection comes near.
    pub tcp_mem: (i64, i64, i64),
    /// net.core.mem_pcpu_rsv, pages (6.9+; 0 on an era without per-CPU reserves).
    pub mem_pcpu_rsv: i64,
    /// Sysctls the applied patches add (Python's `patched`): (short name, value), in the
    /// order the patches declare them. Read with `patched(name)`.
    pub patched: Vec<(&'static str, i64)>,
}

/// A sysctl a patch adds (the core does not know it): its name, default and the range the
/// patched kernel accepts (Python's `SysctlSpec`, declared in `Patch.new_sysctls`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SysctlSpec {
    pub name: &'static str,
    pub default: i64,
    pub lo: i64,
    pub hi: i64,
    pub doc: &'static str,
}

impl Default for Sysctls {
    fn default() -> Self {
        Sysctls {
            tcp_rmem: (4096, 131072, 6291456),
            tcp_wmem: (4096, 16384, 4194304),
            tcp_adv_win_scale: 1,
            tcp_app_win: 31,
            tcp_moderate_rcvbuf: 1,
            tcp_shrink_window: 0,
            tcp_timestamps: 1,
            tcp_window_scaling: 1,
            tcp_sack: 1,
            tcp_retries2: 15,
            tcp_invalid_ratelimit: 500,
            tcp_rcvbuf_low_rtt: 1000,
            tcp_workaround_signed_windows: 0,
            tcp_backlog_ack_defer: 1,
            tcp_comp_sack_nr: 44,
            tcp_comp_sack_delay_ns: 1_000_000,
            tcp_congestion_control: CongestionControl::Cubic,
            tcp_notsent_lowat: 4294967295,
            tcp_slow_start_after_idle: 1,
            rmem_max: 212992,
            wmem_max: 212992,
            tcp_mem: (287901, 383868, 575802),
            mem_pcpu_rsv: crate::protmem::SK_MEMORY_PCPU_RESERVE,
            patched: Vec::new(),
        }
    }
}

/// A sysctl's value: one integer, a (min, default, max) triple, or a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SysctlValue {
    Int(i64),
    Triple(i64, i64, i64),
    Name(&'static str),
}

impl Sysctls {
    /// (short name, value) of every field, in declaration order (Python's `fields()`).
    pub fn values(&self) -> Vec<(&'static str, SysctlValue)> {
        use SysctlValue::{Int, Name, Triple};
        let (r, w, m) = (self.tcp_rmem, self.tcp_wmem, self.tcp_mem);
        vec![
            ("tcp_rmem", Triple(r.0, r.1, r.2)),
            ("tcp_wmem", Triple(w.0, w.1, w.2)),
            ("tcp_adv_win_scale", Int(self.tcp_adv_win_scale)),
            ("tcp_app_win", Int(self.tcp_app_win)),
            ("tcp_moderate_rcvbuf", Int(self.tcp_moderate_rcvbuf)),
            ("tcp_shrink_window", Int(self.tcp_shrink_window)),
            ("tcp_timestamps", Int(self.tcp_timestamps)),
            ("tcp_window_scaling", Int(self.tcp_window_scaling)),
            ("tcp_sack", Int(self.tcp_sack)),
            ("tcp_retries2", Int(self.tcp_retries2)),
            ("tcp_invalid_ratelimit", Int(self.tcp_invalid_ratelimit)),
            ("tcp_rcvbuf_low_rtt", Int(self.tcp_rcvbuf_low_rtt)),
            (
                "tcp_workaround_signed_windows",
                Int(self.tcp_workaround_signed_windows),
            ),
            ("tcp_backlog_ack_defer", Int(self.tcp_backlog_ack_defer)),
            ("tcp_comp_sack_nr", Int(self.tcp_comp_sack_nr)),
            ("tcp_comp_sack_delay_ns", Int(self.tcp_comp_sack_delay_ns)),
            (
                "tcp_congestion_control",
                Name(self.tcp_congestion_control.name()),
            ),
            ("tcp_notsent_lowat", Int(self.tcp_notsent_lowat)),
            (
                "tcp_slow_start_after_idle",
                Int(self.tcp_slow_start_after_idle),
            ),
            ("rmem_max", Int(self.rmem_max)),
            ("wmem_max", Int(self.wmem_max)),
            ("tcp_mem", Triple(m.0, m.1, m.2)),
            ("mem_pcpu_rsv", Int(self.mem_pcpu_rsv)),
        ]
        .into_iter()
        .chain(self.patched.iter().map(|&(n, v)| (n, Int(v))))
        .collect()
    }

    /// A patch's sysctl (Python reads it as an attribute), None when no applied patch adds it.
    pub fn patched(&self, name: &str) -> Option<i64> {
        self.patched
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, v)| v)
    }

    /// Set a patch's sysctl; false when no applied patch adds it (range checks stay in
    /// Python, which builds the record).
    pub fn set_patched(&mut self, name: &str, value: i64) -> bool {
        match self.patched.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => {
                slot.1 = value;
                true
            }
            None => false,
        }
    }

    /// A copy that also has the patches' sysctls `specs`, at their defaults (`with_specs`).
    pub fn with_specs(mut self, specs: &[SysctlSpec]) -> Self {
        for spec in specs {
            if self.patched(spec.name).is_none() {
                self.patched.push((spec.name, spec.default));
            }
        }
        self
    }

    /// The integer sysctl of this short name, to set (the triples are fields of their own).
    pub fn int_mut(&mut self, short: &str) -> Option<&mut i64> {
        Some(match short {
            "tcp_adv_win_scale" => &mut self.tcp_adv_win_scale,
            "tcp_app_win" => &mut self.tcp_app_win,
            "tcp_moderate_rcvbuf" => &mut self.tcp_moderate_rcvbuf,
            "tcp_shrink_window" => &mut self.tcp_shrink_window,
            "tcp_timestamps" => &mut self.tcp_timestamps,
            "tcp_window_scaling" => &mut self.tcp_window_scaling,
            "tcp_sack" => &mut self.tcp_sack,
            "tcp_retries2" => &mut self.tcp_retries2,
            "tcp_invalid_ratelimit" => &mut self.tcp_invalid_ratelimit,
            "tcp_rcvbuf_low_rtt" => &mut self.tcp_rcvbuf_low_rtt,
            "tcp_workaround_signed_windows" => &mut self.tcp_workaround_signed_windows,
            "tcp_backlog_ack_defer" => &mut self.tcp_backlog_ack_defer,
            "tcp_comp_sack_nr" => &mut self.tcp_comp_sack_nr,
            "tcp_comp_sack_delay_ns" => &mut self.tcp_comp_sack_delay_ns,
            "tcp_notsent_lowat" => &mut self.tcp_notsent_lowat,
            "tcp_slow_start_after_idle" => &mut self.tcp_slow_start_after_idle,
            "rmem_max" => &mut self.rmem_max,
            "wmem_max" => &mut self.wmem_max,
            "mem_pcpu_rsv" => &mut self.mem_pcpu_rsv,
            _ => return None,
        })
    }

    /// {kernel name: value}, e.g. ("net.ipv4.tcp_rmem", Triple(4096, 131072, 6291456)).
    pub fn as_dict(&self) -> Vec<(String, SysctlValue)> {
        self.values()
            .into_iter()
            .map(|(n, v)| (long_name(n), v))
            .collect()
    }
}

pub use crate::cong::CongestionControl;

/// Sysctls that live under net.core rather than net.ipv4.
const CORE: [&str; 4] = ["rmem_max", "wmem_max", "bypass_prot_mem", "mem_pcpu_rsv"];

/// "net.ipv4.tcp_rmem" -> "tcp_rmem"; "net.core.rmem_max" -> "rmem_max".
pub fn short_name(name: &str) -> &str {
    for prefix in ["net.ipv4.", "net.core.", "net/ipv4/", "net/core/"] {
        if let Some(rest) = name.strip_prefix(prefix) {
            return rest;
        }
    }
    name
}

/// "tcp_rmem" -> "net.ipv4.tcp_rmem"; "rmem_max" -> "net.core.rmem_max".
pub fn long_name(short: &str) -> String {
    if CORE.contains(&short) {
        format!("net.core.{short}")
    } else {
        format!("net.ipv4.{short}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(short_name("net.ipv4.tcp_rmem"), "tcp_rmem");
        assert_eq!(short_name("net/core/rmem_max"), "rmem_max");
        assert_eq!(long_name("rmem_max"), "net.core.rmem_max");
        for (n, _) in Sysctls::default().values() {
            assert_eq!(short_name(&long_name(n)), n);
        }
    }

    #[test]
    fn patch_sysctls_exist_only_when_added() {
        let spec = SysctlSpec {
            name: "tcp_x",
            default: 7,
            lo: 0,
            hi: 9,
            doc: "",
        };
        let mut s = Sysctls::default();
        assert_eq!(s.patched("tcp_x"), None);
        assert!(!s.set_patched("tcp_x", 1));
        s = s.with_specs(&[spec]).with_specs(&[spec]);
        assert_eq!(s.patched, vec![("tcp_x", 7)]);
        assert!(s.set_patched("tcp_x", 3));
        assert_eq!(s.patched("tcp_x"), Some(3));
        assert_eq!(s.as_dict().last().unwrap().0, "net.ipv4.tcp_x");
    }

    #[test]
    fn defaults() {
        let s = Sysctls::default();
        assert_eq!(s.tcp_rmem.1, 131072);
        assert_eq!(s.as_dict()[0].0, "net.ipv4.tcp_rmem");
    }
}
