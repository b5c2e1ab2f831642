"""tcpsim.validate.host: a host model's summary scored against a host capture's."""

from tcpsim.validate.host import passed, pressure_class, score

KERNEL = {"pressure_onset_s": 1.0, "peak_sockstat_mem": 4000, "pressures": 1,
          "delivered": {"slow": 2_000_000, "healthy": 100_000_000}}


def test_within_a_quarter_passes():
    model = {"pressure_onset_s": 1.2, "peak_sockstat_mem": 3100, "pressures": 1,
             "delivered": {"slow": 2_400_000, "healthy": 80_000_000}}
    m = score(KERNEL, model)
    assert passed(m), [x.line() for x in m]


def test_each_quantity_can_fail():
    base = {"pressure_onset_s": 1.0, "peak_sockstat_mem": 4000, "pressures": 1,
            "delivered": {"slow": 2_000_000, "healthy": 100_000_000}}
    for key, value in (("pressure_onset_s", 1.3), ("peak_sockstat_mem", 5100),
                       ("pressures", 3), ("delivered", {"slow": 2_000_000, "healthy": 1})):
        m = score(KERNEL, {**base, key: value})
        assert not passed(m), key


def test_no_pressure_on_one_side_only_fails_and_prints_a_dash():
    m = score(KERNEL, {**KERNEL, "pressure_onset_s": None, "pressures": 0})
    onset = m[0]
    assert not onset.ok and "—" in onset.line()
    both = score({**KERNEL, "pressure_onset_s": None, "pressures": 0},
                 {**KERNEL, "pressure_onset_s": None, "pressures": 0})
    assert passed(both)


def test_a_class_missing_from_the_model_fails():
    m = score(KERNEL, {**KERNEL, "delivered": {"slow": 2_000_000}})
    assert not passed(m)
    assert pressure_class(0) == "0" and pressure_class(7) == "many"


def test_a_model_inside_the_kernels_own_spread_passes():
    kernel = {**KERNEL, "spread": {"peak_sockstat_mem": [3000, 6000],
                                   "delivered": {"slow": [1_000_000, 2_100_000]}}}
    m = score(kernel, {**KERNEL, "peak_sockstat_mem": 5900,
                       "delivered": {**KERNEL["delivered"], "slow": 1_100_000}})
    assert passed(m)
    assert not passed(score(kernel, {**KERNEL, "peak_sockstat_mem": 6100}))
