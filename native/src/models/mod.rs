//! Kernel eras: one file per era of models/, each overriding what its Python twin overrides,
//! and the profile registry (profile name + patches -> the composed kernel).

pub mod linux_5_15;
pub mod linux_6_1;
pub mod linux_6_10;
pub mod linux_6_14;
pub mod linux_6_17;
pub mod linux_6_18;
pub mod linux_6_18_0;
pub mod linux_6_19;
pub mod linux_6_1_59;
pub mod linux_6_6;
pub mod linux_6_8;
pub mod linux_7_0;
pub mod linux_7_1;

use std::sync::Arc;

use crate::kernel::{Kernel, KernelRef};
use crate::patches;

/// A built-in profile: its name, the era it runs, and its one-line summary (the `PROFILE` of
/// each models/linux_*.py).
pub struct ProfileInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub era: fn() -> Box<dyn Kernel>,
}

/// Every built-in profile, oldest first.
pub const PROFILES: &[ProfileInfo] = &[
    ProfileInfo {
        name: "linux-5.15",
        summary: "5.15 LTS: adv_win_scale windows, classic DRS, never-shrink windows",
        era: || Box::new(linux_5_15::Linux515),
    },
    ProfileInfo {
        name: "linux-6.1",
        summary: "6.1.14 (the seeds' kernel): adv_win_scale windows, never-shrink windows",
        era: || Box::new(linux_6_1::Linux61),
    },
    ProfileInfo {
        name: "linux-6.1.59",
        summary: "6.1.59: 6.1 with the tcp_shrink_window sysctl backported (default 0)",
        era: || Box::new(linux_6_1_59::Linux6159),
    },
    ProfileInfo {
        name: "linux-6.6",
        summary: "6.6 LTS: scaling_ratio windows with the 25 % default, NOMEM zero-window ACKs",
        era: || Box::new(linux_6_6::Linux66),
    },
    ProfileInfo {
        name: "linux-6.8",
        summary: "6.8: scaling_ratio default raised to 50 %",
        era: || Box::new(linux_6_8::Linux68),
    },
    ProfileInfo {
        name: "linux-6.10",
        summary: "6.10: no 64 KiB cap on the initial receive window",
        era: || Box::new(linux_6_10::Linux610),
    },
    ProfileInfo {
        name: "linux-6.14",
        summary:
            "6.14: window_clamp follows scaling_ratio (6.11), memory-squeeze zero window stored",
        era: || Box::new(linux_6_14::Linux614),
    },
    ProfileInfo {
        name: "linux-6.17",
        summary: "6.17.0-6.17.2: tcp_rcvbuf_grow() autotuning, truesize admission, \
                  beyond-window drops, tcp_rmem[2] 32 MiB",
        era: || Box::new(linux_6_17::Linux617),
    },
    ProfileInfo {
        name: "linux-6.18",
        summary: "6.18.44 (development machines): proportional DRS growth, OFO-driven buffer \
                  growth, 6.17's stricter admission given up",
        era: || Box::new(linux_6_18::Linux618),
    },
    ProfileInfo {
        name: "linux-6.18.0",
        summary: "6.18.0-6.18.16: admission rmem + skb->len <= sk_rcvbuf, before the 6.18.17 \
                  revert (026dfef287c0)",
        era: || Box::new(linux_6_18_0::Linux6180),
    },
    ProfileInfo {
        name: "linux-6.19",
        summary: "6.19.7+: tcp_rcvbuf_low_rtt DRS damping, tcp_comp_sack_rtt_percent (33 %), \
                  bypass_prot_mem flag; 6.18's admission revert",
        era: || Box::new(linux_6_19::Linux619),
    },
    ProfileInfo {
        name: "linux-7.0",
        summary: "7.0: the receive path of 6.19.7 (stronger sk_rcvbuf checks given up)",
        era: || Box::new(linux_7_0::Linux70),
    },
    ProfileInfo {
        name: "linux-7.1",
        summary: "7.1: RFC 7323 receive-side retraction -- data accepted up to the largest \
                  right edge ever advertised (rcv_mwnd_seq), BeyondWindow for over-window drops",
        era: || Box::new(linux_7_1::Linux71),
    },
];

/// The kernel of `profile` with `patches` applied in order, for one socket: Python's
/// `get_profile(profile, patches).policy()`. Patches come first in the method resolution
/// order, later patches before earlier ones, so each wraps the kernel built so far; a patch's
/// call to its base is Python's `super()`. A patch may be applied once.
pub fn compose(profile: &str, patch_names: &[&str]) -> Result<KernelRef, String> {
    compose_boxed(profile, patch_names).map(Arc::from)
}

/// `compose`, boxed: a kernel another layer can still wrap (a Python patch, py_patch.rs).
pub fn compose_boxed(profile: &str, patch_names: &[&str]) -> Result<Box<dyn Kernel>, String> {
    let info = PROFILES.iter().find(|p| p.name == profile).ok_or_else(|| {
        let known: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
        format!(
            "unknown profile '{profile}' for the native engine; built-in profiles: {}",
            known.join(", ")
        )
    })?;
    let mut k = (info.era)();
    for (i, name) in patch_names.iter().enumerate() {
        if patch_names[..i].contains(name) {
            return Err(format!(
                "--policy {name}: the patch is given twice; apply each patch once"
            ));
        }
        k = (patches::patch(name)?.apply)(k);
    }
    Ok(k)
}

/// The era a built-in profile runs on, without patches.
pub fn kernel_for(profile: &str) -> Result<KernelRef, String> {
    compose(profile, &[])
}

#[cfg(test)]
mod tests;
