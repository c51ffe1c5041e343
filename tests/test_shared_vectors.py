"""Every MLI 1.1 reference case, in both rounding modes, exactly (status,
output data and metadata, LSTM cell, IR scratch)."""
import pytest

from conftest import MLI11, NEEDS_SHARED, mli11_cases
from mli.tools.vectors import run_case

pytestmark = NEEDS_SHARED


@pytest.mark.parametrize("rounding", ["convergent", "up"])
@pytest.mark.parametrize("case", mli11_cases())
def test_case(case, rounding):
    r = run_case(str(MLI11 / f"{case}.npz"), rounding=rounding)
    assert r.passed, r.message


def test_cli_runner_counts(capsys):
    from mli.tools.vectors import main

    code = main([str(MLI11), "-k", "basic_rnn_cell*", "-k", "tanh*", "-k", "sigm*"])
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1] == "200 passed, 0 failed"
    assert code == 0


def test_cli_runner_reports_failures(tmp_path, capsys):
    """A broken case file is one failing line and a non-zero exit, not a crash."""
    import shutil

    from mli.tools.vectors import main

    src = sorted(MLI11.glob("*basic_rnn_cell*.npz"))[0]
    shutil.copy(src, tmp_path / src.name)
    (tmp_path / "9999_basic_rnn_cell_fx16.npz").write_bytes(b"not a zip")
    code = main([str(tmp_path)])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == "1 passed, 1 failed"
    assert lines[0].startswith("FAIL 9999_basic_rnn_cell_fx16")
    assert code == 1


@pytest.mark.parametrize("rounding", ["convergent", "up"])
def test_mli20_folder_through_mli_vectors(capsys, rounding):
    """``mli vectors`` recognises the MLI 2.0.2 schema and runs every case,
    official/ included, on mli.v2 (the case-by-case test is test_mli20_vectors.py)."""
    import json

    from mli.tools.vectors import main

    folder = MLI11.parent / "mli20"
    n_cases = len(json.loads((folder / "index.json").read_text())["cases"])
    n_official = len(list((folder / "official").glob("*.npz")))
    code = main([str(folder), "--rounding", rounding, "--jobs", "2"])
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [f"{n_cases + n_official} passed, 0 failed"]
    assert code == 0
