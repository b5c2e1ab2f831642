//! Built-in patches: one file per patch of models/patches/, each a kernel that wraps the
//! kernel it is applied to (its `base`, what Python's `super()` reaches) and overrides one
//! or a few decision points.
//!
//! A patch declares what it adds besides its overrides (Python's `Patch.sysctls`,
//! `new_sysctls`, `counters`) through the `Kernel` methods `extra_sysctls`, `new_sysctls`
//! and `counters`, appending to its base's.

pub mod collapse_max_bytes;
pub mod initrwnd;
pub mod rfc7323_retraction;
pub mod shrink_window;

use crate::kernel::Kernel;

/// A built-in patch: what users type and how to apply it.
#[derive(Clone, Copy)]
pub struct PatchInfo {
    /// What users type (`--policy shrink-window`): Python's `Patch.name`.
    pub name: &'static str,
    /// One line for listings: Python's `Patch.summary`.
    pub summary: &'static str,
    /// The Python class name (for composed names like "Linux61+ShrinkWindow").
    pub class_name: &'static str,
    /// Wrap a kernel: the patched kernel, with `base` underneath.
    pub apply: fn(Box<dyn Kernel>) -> Box<dyn Kernel>,
}

/// Every built-in patch, in models/patches/ module order (Python's `builtin_patches()`).
pub const PATCHES: &[PatchInfo] = &[
    collapse_max_bytes::PATCH,
    initrwnd::PATCH,
    rfc7323_retraction::PATCH,
    shrink_window::PATCH,
];

/// The built-in patch named `name`.
pub fn patch(name: &str) -> Result<&'static PatchInfo, String> {
    PATCHES.iter().find(|p| p.name == name).ok_or_else(|| {
        let known: Vec<&str> = PATCHES.iter().map(|p| p.name).collect();
        format!(
            "unknown patch '{name}' for the native engine; built-in patches: {}",
            known.join(", ")
        )
    })
}
