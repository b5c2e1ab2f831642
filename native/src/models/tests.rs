//! Per-era unit tests of the pure decisions, with values computed by the Python eras
//! (models/*.py; the generating snippet is in each test's comment). The Python differential
//! test (tests/native/test_native_kernel.py) covers every point over drawn inputs; these pin a
//! few tables so that `cargo test` alone catches a broken era.

use crate::kernel::KernelRef;
use crate::models::{compose, PROFILES};
use crate::socket::{SocketParams, TcpSocket};
use crate::state::TcpState;
use crate::sysctl::Sysctls;

fn socket(k: KernelRef, sysctl: Sysctls) -> TcpSocket {
    TcpSocket::new(k, sysctl, None, &SocketParams::default()).unwrap()
}

fn defaults(k: &KernelRef) -> Sysctls {
    k.default_sysctls().with_specs(&k.new_sysctls())
}

/// Per profile: win_from_space(131072) for adv_win_scale in (1, 2, -2) x scaling_ratio in
/// (65, 128, 200); select_initial_window(131072, 1448) with wscale_ok -> (rcv_wnd, rcv_wscale,
/// window_clamp); ts_rtt_sample_us(0); rcvbuf_grow_term(3000, 1000); pingpong_thresh;
/// default tcp_rmem[2]. From Python: TcpSocket(get_profile(p).policy(), replace(defaults,
/// tcp_adv_win_scale=a), DEVICES["veth"]) with sk.rcv.scaling_ratio set, then the calls.
#[allow(clippy::type_complexity)]
const TABLE: &[(&str, [i64; 9], (i64, i64, i64), i64, i64, i64, i64)] = &[
    (
        "linux-5.15",
        [
            65536, 65536, 65536, 98304, 98304, 98304, 32768, 32768, 32768,
        ],
        (65535, 7, 8388480),
        1000,
        0,
        3,
        6291456,
    ),
    (
        "linux-6.1",
        [
            65536, 65536, 65536, 98304, 98304, 98304, 32768, 32768, 32768,
        ],
        (65535, 7, 8388480),
        1000,
        0,
        3,
        6291456,
    ),
    (
        "linux-6.1.59",
        [
            65536, 65536, 65536, 98304, 98304, 98304, 32768, 32768, 32768,
        ],
        (65535, 7, 8388480),
        1000,
        0,
        3,
        6291456,
    ),
    (
        "linux-6.6",
        [
            33280, 65536, 102400, 33280, 65536, 102400, 33280, 65536, 102400,
        ],
        (65535, 7, 8388480),
        1000,
        0,
        3,
        6291456,
    ),
    (
        "linux-6.8",
        [
            33280, 65536, 102400, 33280, 65536, 102400, 33280, 65536, 102400,
        ],
        (65535, 7, 8388480),
        1000,
        0,
        3,
        6291456,
    ),
    (
        "linux-6.10",
        [
            33280, 65536, 102400, 33280, 65536, 102400, 33280, 65536, 102400,
        ],
        (130320, 7, 8388480),
        1000,
        0,
        3,
        6291456,
    ),
    (
        "linux-6.14",
        [
            33280, 65536, 102400, 33280, 65536, 102400, 33280, 65536, 102400,
        ],
        (130320, 7, 8388480),
        1000,
        0,
        3,
        6291456,
    ),
    (
        "linux-6.17",
        [
            33280, 65536, 102400, 33280, 65536, 102400, 33280, 65536, 102400,
        ],
        (130320, 10, 67107840),
        -1,
        0,
        1,
        33554432,
    ),
    (
        "linux-6.18",
        [
            33280, 65536, 102400, 33280, 65536, 102400, 33280, 65536, 102400,
        ],
        (130320, 10, 67107840),
        -1,
        24000,
        1,
        33554432,
    ),
    (
        "linux-6.18.0",
        [
            33280, 65536, 102400, 33280, 65536, 102400, 33280, 65536, 102400,
        ],
        (130320, 10, 67107840),
        -1,
        24000,
        1,
        33554432,
    ),
    (
        "linux-6.19",
        [
            33280, 65536, 102400, 33280, 65536, 102400, 33280, 65536, 102400,
        ],
        (130320, 10, 67107840),
        -1,
        0,
        1,
        33554432,
    ),
    (
        "linux-7.0",
        [
            33280, 65536, 102400, 33280, 65536, 102400, 33280, 65536, 102400,
        ],
        (130320, 10, 67107840),
        -1,
        0,
        1,
        33554432,
    ),
    (
        "linux-7.1",
        [
            33280, 65536, 102400, 33280, 65536, 102400, 33280, 65536, 102400,
        ],
        (130320, 10, 67107840),
        -1,
        0,
        1,
        33554432,
    ),
];

#[test]
fn every_profile_is_in_the_table() {
    let names: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
    let table: Vec<&str> = TABLE.iter().map(|r| r.0).collect();
    assert_eq!(names, table);
}

#[test]
fn pure_decisions_per_era_match_python() {
    for &(profile, wfs, siw, ts0, term, pingpong, rmem2) in TABLE {
        let k = compose(profile, &[]).unwrap();
        let mut i = 0;
        for aws in [1, 2, -2] {
            for ratio in [65, 128, 200] {
                let s = Sysctls {
                    tcp_adv_win_scale: aws,
                    ..defaults(&k)
                };
                let mut sk = socket(k.clone(), s);
                sk.rcv.scaling_ratio = ratio;
                assert_eq!(
                    k.win_from_space(&sk, 131072),
                    wfs[i],
                    "{profile} {aws} {ratio}"
                );
                i += 1;
            }
        }
        let mut sk = socket(k.clone(), defaults(&k));
        sk.conn.wscale_ok = true;
        k.select_initial_window(&mut sk, 131072, 1448);
        let got = (sk.rcv.rcv_wnd, sk.conn.rcv_wscale, sk.rcv.window_clamp);
        assert_eq!(got, siw, "{profile} select_initial_window");
        assert_eq!(k.ts_rtt_sample_us(0), ts0, "{profile}");
        assert_eq!(k.rcvbuf_grow_term(&sk, 3000, 1000), term, "{profile}");
        assert_eq!(k.pingpong_thresh(), pingpong, "{profile}");
        assert_eq!(k.default_sysctls().tcp_rmem.2, rmem2, "{profile}");
        assert_eq!(k.rmem2_default(), rmem2, "{profile}");
    }
}

#[test]
fn eras_inherit_the_overrides_of_the_eras_between() {
    // 6.8 changes only the default ratio and the loss probe: its windows are 6.6's.
    let k = compose("linux-6.8", &[]).unwrap();
    assert_eq!((k.release(), k.initial_scaling_ratio()), ("6.8", 128));
    assert_eq!(
        compose("linux-6.6", &[]).unwrap().initial_scaling_ratio(),
        65
    );
    assert_eq!(
        compose("linux-5.15", &[]).unwrap().initial_scaling_ratio(),
        -1
    );
    let sk = socket(k.clone(), defaults(&k));
    assert_eq!(k.win_from_space(&sk, 4096), 2048);
    // 6.1 keeps 5.15's windows but has the 5.18 TSO term, and 6.18 inherits it.
    for profile in ["linux-6.1", "linux-6.18"] {
        let k = compose(profile, &[]).unwrap();
        let mut sk = socket(k.clone(), defaults(&k));
        sk.snd.min_rtt_us = 600;
        assert_eq!(k.tso_rtt_bytes(&sk), (65536 - 193) >> 1, "{profile}");
    }
    assert_eq!(compose("linux-5.15", &[]).unwrap().class_name(), "Linux515");
}

#[test]
fn rcv_ssthresh_follows_a_raised_clamp_from_6_11() {
    // Python: window_clamp=10000, rcv_ssthresh=1000, rcv_wnd=130320, ESTABLISHED,
    // set_window_clamp(500000) -> 5.15 (500000, 1000); 6.14 (500000, 130320).
    for (profile, want) in [("linux-5.15", 1000), ("linux-6.14", 130320)] {
        let k = compose(profile, &[]).unwrap();
        let mut sk = socket(k.clone(), defaults(&k));
        sk.rcv.window_clamp = 10000;
        sk.rcv.rcv_ssthresh = 1000;
        sk.rcv.rcv_wnd = 130320;
        sk.conn.state = TcpState::Established;
        k.set_window_clamp(&mut sk, 500000);
        assert_eq!((sk.rcv.window_clamp, sk.rcv.rcv_ssthresh), (500000, want));
    }
}

#[test]
fn patches_come_first_and_reach_the_era_underneath() {
    // Python: linux-6.1 with rcv_wscale=7, rcv_wnd=65535, init_rwnd=100, ts_ok:
    // bare -> shrink False, sysctl 0, ssthresh 65535; shrink-window -> True, 1, 65535;
    // initrwnd -> False, 0, 144800.
    for (patches, shrink, sysctl, ssthresh) in [
        (&[][..], false, 0, 65535),
        (&["shrink-window"][..], true, 1, 65535),
        (&["initrwnd"][..], false, 0, 144800),
    ] {
        let k = compose("linux-6.1", patches).unwrap();
        let mut sk = socket(k.clone(), defaults(&k));
        sk.conn.rcv_wscale = 7;
        sk.rcv.rcv_wnd = 65535;
        sk.conn.init_rwnd = 100;
        sk.conn.ts_ok = true;
        k.init_rcv_ssthresh(&mut sk);
        assert_eq!(k.shrink_allowed(&sk), shrink, "{patches:?}");
        assert_eq!(sk.sysctl.tcp_shrink_window, sysctl, "{patches:?}");
        assert_eq!(sk.rcv.rcv_ssthresh, ssthresh, "{patches:?}");
        assert_eq!(k.release(), "6.1", "a patch keeps the era's constants");
    }
}

#[test]
fn patch_sysctls_and_counters_exist_only_with_the_patch() {
    let bare = compose("linux-6.1", &[]).unwrap();
    let sk = socket(bare.clone(), defaults(&bare));
    assert_eq!(sk.sysctl.patched("tcp_collapse_max_bytes"), None);
    assert!(sk
        .mib
        .values()
        .iter()
        .all(|(n, _)| *n != "TCPCollapseMaxBytesExceeded"));
    let k = compose("linux-6.1", &["initrwnd", "collapse-max-bytes"]).unwrap();
    let sk = socket(k.clone(), defaults(&k));
    assert_eq!(sk.sysctl.patched("tcp_collapse_max_bytes"), Some(6 << 20));
    assert_eq!(
        sk.mib.values().last(),
        Some(&("TCPCollapseMaxBytesExceeded", 0))
    );
}

#[test]
fn the_registry_refuses_unknown_and_repeated_names() {
    assert!(compose("linux-9.9", &[]).is_err());
    assert!(compose("linux-6.6", &["nope"]).is_err());
    let twice = compose("linux-6.6", &["initrwnd", "initrwnd"]);
    assert!(twice.is_err_and(|e| e.contains("given twice")));
}

#[test]
fn rfc7323_keeps_its_edge_per_socket() {
    // one kernel object serves every socket of a host's class: the edge is each socket's
    let k = compose("linux-6.18", &["rfc7323-retraction"]).unwrap();
    let mut a = socket(k.clone(), defaults(&k));
    let mut b = socket(k.clone(), defaults(&k));
    for sk in [&mut a, &mut b] {
        sk.rcv.rcv_wup = 1000;
        sk.rcv.rcv_nxt = 1000;
    }
    a.rcv.rcv_wnd = 50_000;
    b.rcv.rcv_wnd = 5000;
    k.advertise_window(&mut a);
    k.advertise_window(&mut b);
    assert_eq!(a.rcv.rcv_mwnd_seq, 51_000);
    assert_eq!(b.rcv.rcv_mwnd_seq, 6000);
    // b's window retracts to 0: it still accepts up to its own largest edge, not a's
    b.rcv.rcv_wnd = 0;
    assert_eq!(k.sequence_window(&b), 5000);
    a.rcv.rcv_wnd = 0;
    assert_eq!(k.sequence_window(&a), 50_000);
}
