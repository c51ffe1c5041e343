"""mli.metrics.compare: where, how many, how much, and S/N."""

import json
import math

import numpy as np
import pytest

import mli
from mli.metrics import compare, snr_db


def seq(t=10, m=4, seed=0):
    return np.random.default_rng(seed).integers(-3000, 3000, (t, m)).astype(np.int16)


def test_bit_exact():
    a = seq()
    r = compare(a, a.copy())
    assert r.bit_exact and r.n_diff == 0 and r.count == a.size
    assert r.first_index is None and r.where() == "" and r.max_abs_diff == 0
    assert math.isinf(r.snr_db) and r.histogram == {}
    assert r.per_step_diff == [0] * 10
    assert r.summary() == "bit-exact (40 elements)"
    assert json.loads(json.dumps(r.to_dict()))["snr_db"] is None


def test_first_difference_is_step_and_unit():
    pkg = seq()
    fw = pkg.copy()
    fw[7, 1] += 1
    fw[3, 2] -= 5          # earliest in time
    fw[3, 3] += 2
    r = compare(fw, pkg)
    assert not r.bit_exact and r.n_diff == 3
    assert (r.first_step, r.first_unit) == (3, 2)
    assert r.first_index == (3, 2) and r.first_flat == 14
    assert (r.first_firmware, r.first_package) == (int(pkg[3, 2]) - 5, int(pkg[3, 2]))
    assert r.max_abs_diff == 5 and r.max_diff_index == (3, 2)
    assert r.histogram == {-5: 1, 1: 1, 2: 1}
    assert r.per_step_diff == [0, 0, 0, 2, 0, 0, 0, 1, 0, 0]
    assert r.where() == "step 3, unit 2"
    assert "first at step 3, unit 2" in r.summary()
    noise = 25 + 1 + 4
    assert r.snr_db == pytest.approx(10 * math.log10(float(np.sum(pkg.astype(float) ** 2)) / noise))
    assert math.isinf(r.per_step_snr_db[0]) and r.per_step_snr_db[3] < r.per_step_snr_db[7]


def test_time_axis_one_orders_by_time():
    pkg = seq(4, 6)            # [M=4, T=6]: time on axis 1
    fw = pkg.copy()
    fw[0, 5] += 1              # unit 0, step 5
    fw[3, 2] += 1              # unit 3, step 2: first in time
    r = compare(fw, pkg, time_axis=1)
    assert (r.first_step, r.first_unit, r.first_index) == (2, 3, (3, 2))
    assert r.per_step_diff == [0, 0, 1, 0, 0, 1]


def test_one_d_and_nd_without_time_axis():
    pkg = np.arange(6, dtype=np.int8)
    fw = pkg.copy()
    fw[4] = 100
    r = compare(fw, pkg)
    assert r.first_step is None and r.first_index == (4,) and r.where() == "element 4"
    assert r.per_step_diff is None
    nd = np.zeros((2, 3, 4), np.int16)
    f2 = nd.copy()
    f2[1, 0, 3] = -2
    r = compare(f2, nd, time_axis=None)
    assert r.first_index == (1, 0, 3) and r.first_flat == 15 and r.where() == "index (1, 0, 3) (flat 15)"
    r = compare(f2, nd)                       # time axis 0 of a 3-D output: unit is a tuple
    assert (r.first_step, r.first_unit) == (1, (0, 3))


def test_flat_dump_is_reshaped_with_a_note():
    pkg = seq()
    r = compare(pkg.reshape(-1), pkg)
    assert r.bit_exact and r.notes and "read as (10, 4)" in r.notes[0]
    with pytest.raises(ValueError, match="does not match the package output"):
        compare(pkg[:5], pkg)


def test_float_reference_and_frac_from_tensor():
    x = np.linspace(-0.9, 0.9, 40).reshape(10, 4)
    t = mli.Tensor.from_float(x, "fx16", 12)
    fw = t.numpy().copy()
    fw[0, 0] += 40
    r = compare(fw, t, float_ref=x)
    assert r.frac_bits == 12
    assert r.snr_package_vs_float_db > r.snr_firmware_vs_float_db > 0
    with pytest.raises(ValueError, match="needs frac_bits"):
        compare(fw, t.numpy(), float_ref=x)
    with pytest.raises(ValueError, match="float_ref: shape"):
        compare(fw, t, float_ref=x[:2])


def test_integer_valued_floats_ok_fractions_refused():
    pkg = seq()
    assert compare(pkg.astype(np.float32), pkg).bit_exact
    with pytest.raises(TypeError, match="non-integer"):
        compare(pkg / 3.0, pkg)
    with pytest.raises(TypeError, match="not an integer type"):
        compare(np.array(["a"] * 40).reshape(10, 4), pkg)


def test_no_overflow_in_differences():
    pkg = np.full((2, 2), -32768, np.int16)
    fw = np.full((2, 2), 32767, np.int16)
    r = compare(fw, pkg)
    assert r.max_abs_diff == 65535 and r.histogram == {65535: 4}


def test_text_and_json_output():
    pkg = seq()
    fw = pkg.copy()
    fw[2, 1] += 1
    r = compare(fw, pkg)
    text = r.format()
    assert "1 of 40 elements differ, first at step 2, unit 1" in text
    assert "+1: 1" in text and "2: 1" in text
    d = json.loads(json.dumps(r.to_dict()))
    assert d["first_step"] == 2 and d["first_unit"] == 1 and d["histogram"] == {"1": 1}
    assert d["where"] == "step 2, unit 1" and len(d["per_step_snr_db"]) == 10


def test_snr_db_edges():
    assert snr_db(100.0, 1.0) == pytest.approx(20.0)
    assert math.isinf(snr_db(1.0, 0.0)) and snr_db(0.0, 1.0) == -math.inf


def test_log10f_correctly_rounded():
    """log10f is float32(log10(float64)): the same bits on every machine
    (numpy's float32 log10 is not; case 0628's quotient is one it differs on)."""
    from mli.metrics import log10f
    rng = np.random.default_rng(7)
    for q in np.concatenate([rng.uniform(1e-3, 1e9, 2000).astype(np.float32), [1, 10, 1e5, 3326464.5]]):
        assert log10f(q) == np.float32(math.log10(float(np.float32(q))))
    assert log10f(np.float32(1000)) == np.float32(3)
    assert log10f(0) == -np.inf and np.isnan(log10f(-1.0)) and log10f(np.inf) == np.inf


def test_f32_ulps_apart():
    from mli.metrics import f32_ulps_apart
    one = np.float32(1)
    nxt = np.nextafter(one, np.float32(2))
    assert f32_ulps_apart(one, one) == 0 and f32_ulps_apart(one, nxt) == 1
    assert f32_ulps_apart(nxt, one) == 1 and f32_ulps_apart(np.nextafter(nxt, np.float32(2)), one) == 2
    assert f32_ulps_apart(-one, -nxt) == 1 and f32_ulps_apart(0.0, -0.0) == 0
    assert math.isinf(f32_ulps_apart(one, -one)) and math.isinf(f32_ulps_apart(np.nan, one))
