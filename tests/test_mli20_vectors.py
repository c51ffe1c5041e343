"""Every MLI 2.0.2 reference case (../shared/vectors/mli20, official/ included)
in both rounding modes on every ISA path this CPU has: status, outputs,
output metadata, LSTM cell, and no other byte changed."""
import os

import pytest

import mli
from mli.v2 import cases

from conftest import SHARED

VECTORS = os.path.join(SHARED, "vectors", "mli20")

pytestmark = pytest.mark.skipif(not os.path.isdir(VECTORS),
                                reason=f"{VECTORS} is absent (MLI 2.0.2 reference cases; set MLI_SHARED)")


def _files():
    if not os.path.isdir(VECTORS):
        return []
    return list(cases._case_files(VECTORS))


@pytest.mark.parametrize("isa", mli.supported_isas())
@pytest.mark.parametrize("rounding", cases.ROUNDINGS)
def test_all_cases(isa, rounding):
    files = _files()
    assert len(files) >= 1635
    with mli.use_isa(isa):
        failed = [r for r in (cases.run_case(f, rounding) for f in files) if not r.passed]
    assert [str(r) for r in failed[:10]] == []


def test_runner_reports_first_difference(tmp_path):
    """A case whose expected output is altered fails at that element."""
    import json

    import numpy as np

    src = os.path.join(VECTORS, "official")
    f = sorted(p for p in cases._case_files(src) if "lstm" in p)[0]
    z = dict(np.load(f))
    meta = json.loads(str(z["meta_json"]))
    exp = z["expected_out_data"].copy()
    exp.reshape(-1)[0] += 1
    z["expected_out_data"] = exp
    z.pop("expected_out_data_if_round_up", None)
    p = tmp_path / "case.npz"
    np.savez(p, **z)
    r = cases.run_case(str(p), "convergent")
    assert not r.passed and r.where.startswith("out[") and r.expected == int(exp.reshape(-1)[0])
    assert meta["schema"] == "mli20"
