"""Every case of shared/vectors/ov_ti_loop through mli.tools.ovcases (ids = case names)."""

import json

import pytest

from conftest import manifest_cases

CASES_DIR, CASES = manifest_cases("ov_ti_loop", "OpenVINO TI/Loop reference cases")

from mli.tools.ovcases import run_case, run_manifest_dir  # noqa: E402


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case):
    result = run_case(CASES_DIR, case)
    assert result.name == case["name"] and result.category == case["category"]
    assert result.passed, result.message


def test_run_manifest_dir_filters_by_pattern():
    results = run_manifest_dir(CASES_DIR, ["ti_rev_*", "loop_fib_i64"])
    assert [r.name for r in results] == ["ti_rev_in_rev_out", "ti_rev_in_fwd_out", "loop_fib_i64"]
    assert all(r.passed for r in results)
    assert run_manifest_dir(CASES_DIR, ["no_such_case"]) == []


def test_pass_rules_on_a_doctored_manifest(tmp_path):
    import shutil

    import numpy as np

    base = next(c for c in CASES if c["name"] == "ti_fwd_axis1_cumsum")
    for f in base["files"]:
        shutil.copy(CASES_DIR / f, tmp_path / f)
    with np.load(CASES_DIR / "ti_fwd_axis1_cumsum.npz") as z:
        data = dict(z)
    data["out__Acc_seq"] = data["out__Acc_seq"].copy()
    data["out__Acc_seq"][1, 2, 0] += 0.5
    np.savez(tmp_path / "bad.npz", **data)
    bad_xml = (CASES_DIR / "ti_fwd_axis1_cumsum.xml").read_text().replace('type="Add"',
                                                                         'type="Bogus"')
    (tmp_path / "bogus.xml").write_text(bad_xml)

    def case(name, category, files, **kw):
        return {**base, "name": name, "category": category, "files": files, **kw}

    files, bin_ = base["files"], "ti_fwd_axis1_cumsum.bin"
    cases = [case("ok", "core", files),
             case("wrong_value", "core", [files[0], files[1], "bad.npz"]),
             case("close_enough", "core", [files[0], files[1], "bad.npz"], exact=False,
                  tolerance={"rtol": 0.0, "atol": 0.5}),
             case("should_fail", "error", files, expected_error="boom"),
             case("rejected", "unsupported", ["bogus.xml", bin_, files[2]]),
             case("bogus_core", "core", ["bogus.xml", bin_, files[2]])]
    (tmp_path / "manifest.json").write_text(json.dumps({"cases": cases}))
    res = {r.name: r for r in run_manifest_dir(tmp_path)}
    assert [n for n, r in res.items() if r.passed] == ["ok", "close_enough", "rejected"]
    assert "Acc_seq: 1 of 36 elements differ, max |diff| 0.5; first at (1, 2, 0)" in \
        res["wrong_value"].message
    assert res["should_fail"].message == "ran without error, expected error: boom"
    assert "op type 'Bogus' is not supported" in res["bogus_core"].message
    assert "IRUnsupportedError" in res["rejected"].message
