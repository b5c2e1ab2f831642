"""Which `sysctl -q net.x.y=v` settings of a script reach the simulated sockets, and how.

A setting is one of three kinds:

* **modelled**: a field of `tcpsim.core.sysctl.Sysctls` (tcp_rmem, tcp_shrink_window, ...).
  It is applied with the profile's validation, so a name that does not exist on the chosen
  kernel fails the way `sysctl` fails there (non-zero status).
* **irrelevant**: settings of the sender, congestion control, SYN retries, Fast Open, ...
  that the receive-path model has no counterpart for; `defaults.sh` sets many of them. They
  are accepted and listed in the run's notes. A few are only irrelevant at one value (the
  model always sends D-SACKs and never uses ECN): any other value is unsupported.
* anything else is **unsupported** and fails the script with a message naming it.
"""

from __future__ import annotations

from dataclasses import dataclass

from tcpsim.core.sysctl import SysctlError, Sysctls, short_name
from tcpsim.sysctl_parse import parse_value

# name -> the one value the model matches, or None when any value is fine.
IRRELEVANT: dict[str, str | None] = {
    "tcp_dsack": "1",                    # the model always reports D-SACKs when SACK is on
    "tcp_ecn": "0",                      # no ECN in the model
    "tcp_ecn_option": None,              # AccECN option: only used with ECN
    "tcp_fack": None,                    # removed from the kernel (no-op since 4.15)
    "tcp_syn_retries": None,             # SYN / SYN-ACK retransmission counts
    "tcp_synack_retries": None,
    "tcp_frto": None,                    # sender: loss recovery
    "tcp_reordering": None,
    "tcp_early_retrans": None,
    "tcp_recovery": None,
    "tcp_congestion_control": None,      # sender; the model's sender is Reno
    "tcp_slow_start_after_idle": None,
    "tcp_tso_win_divisor": None,
    "tcp_pacing_ss_ratio": None,
    "tcp_pacing_ca_ratio": None,
    "tcp_notsent_lowat": None,
    "tcp_fastopen": None,                # Fast Open: the subset has no TFO packets
    "tcp_fastopen_key": None,
    "tcp_syncookies": None,              # only under SYN floods
    "tcp_min_tso_segs": None,
    "tcp_autocorking": None,
}

class SysctlSettingError(ValueError):
    """A setting the real `sysctl` would refuse on this kernel (non-zero status)."""


class UnsupportedSysctl(ValueError):
    """A setting outside the model; the message starts with 'unsupported:'."""


@dataclass(frozen=True, slots=True)
class Applied:
    """The result of one setting: the new sysctls, or `ignored` for an irrelevant one."""

    sysctls: Sysctls
    ignored: bool = False       # an irrelevant setting: accepted, not applied


def apply_setting(sysctls: Sysctls, name: str, raw: str, known: frozenset[str],
                  profile: str) -> Applied:
    """Apply `name=raw` (raw is the shell word after '=', quotes already removed)."""
    short = short_name(name.replace("/", "."))
    if short in IRRELEVANT:
        wanted = IRRELEVANT[short]
        if wanted is not None and _normal(raw) != wanted:
            raise UnsupportedSysctl(f"unsupported: sysctl {name}={raw} (the model behaves as "
                                    f"{short}={wanted})")
        return Applied(sysctls, ignored=True)
    if short not in Sysctls.__dataclass_fields__:
        raise UnsupportedSysctl(f"unsupported: sysctl {name} is not modelled")
    try:
        value = parse_value(raw, short)
        return Applied(sysctls.with_overrides({name: value}, known=known, profile=profile))
    except (SysctlError, ValueError) as exc:
        raise SysctlSettingError(str(exc)) from None


def _normal(raw: str) -> str:
    try:
        return str(int(raw, 0))
    except ValueError:
        return raw.strip()
