"""Type checkers see the API: mypy --strict over a typed user script, the
stubs (mli/*.pyi) checked against the modules by mypy.stubtest, mypy over the
package, and ``mli.__all__`` (what ``from mli import *`` and ``help(mli)``
show).  The mypy tests skip, saying so, when mypy is not installed (it is a
test extra: ``pip install ".[test]"``)."""
import importlib.util
import os
import pathlib
import pydoc
import subprocess
import sys

import pytest

import mli

ROOT = pathlib.Path(__file__).resolve().parents[1]
TYPING = ROOT / "tests" / "typing"
PKG_PARENT = str(pathlib.Path(mli.__file__).resolve().parents[1])   # the mli under test
needs_mypy = pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                                reason="mypy not installed (a test extra: pip install '.[test]')")


def _run(args, cwd):
    env = dict(os.environ, PYTHONPATH=PKG_PARENT)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@needs_mypy
def test_user_script_passes_mypy_strict(tmp_path):
    r = _run(["-m", "mypy", "--strict", "--no-incremental", "--config-file", str(ROOT / "pyproject.toml"),
              str(TYPING / "user_script.py")], tmp_path)
    assert r.stdout.strip().splitlines()[-1] == "Success: no issues found in 1 source file", r.stdout + r.stderr


@needs_mypy
def test_stubs_match_the_modules(tmp_path):
    """Every name and signature of mli/*.pyi exists at run time, and every
    public name of the modules is in the stubs (the allowlist says why an
    entry differs)."""
    r = _run(["-m", "mypy.stubtest", "--mypy-config-file", str(ROOT / "pyproject.toml"),
              "--allowlist", str(TYPING / "stubtest_allowlist.txt"), "mli"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1].startswith("Success: no issues found in"), r.stdout


@needs_mypy
def test_package_passes_mypy(tmp_path):
    r = _run(["-m", "mypy", "--no-incremental", "--config-file", str(ROOT / "pyproject.toml"), "-p", "mli"],
             tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_user_script_runs():
    r = _run([str(TYPING / "user_script.py")], ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "fx16 True 6 True 12 True True convergent\n"


def test_all_lists_the_api_and_nothing_else():
    assert len(mli.__all__) == len(set(mli.__all__))
    for name in mli.__all__:
        assert hasattr(mli, name), name
    assert set(mli.kernels.__all__) <= set(mli.__all__)
    assert {"Tensor", "RnnCellConfig", "MliError", "Status", "basic_rnn_cell_fx16", "lstm_cell_fx8w16d",
            "eltwise_min_fx8", "prepare", "get_include", "__version__", "use_isa", "rounding"} <= set(mli.__all__)
    for leak in ("np", "IntEnum", "os", "error", "ERROR_CLASSES", "KINDS", "VARIANT", "parse_enum"):
        assert leak not in mli.__all__ and not hasattr(mli, leak), leak
    ns = {}
    exec("from mli import *", ns)
    assert sorted(k for k in ns if k != "__builtins__") == sorted(mli.__all__)


def test_help_lists_the_kernels():
    text = pydoc.render_doc(mli, renderer=pydoc.plaintext)
    for name in ("basic_rnn_cell_fx16(x, prev_out, weights, bias, cfg, *, out=None, out_frac_bits=None)",
                 "lstm_cell_fx8(x, prev_out, weights, bias, cfg, cell, *, out=None, cell_out=None)",
                 "get_include()", "class Tensor", "class RnnCellConfig"):
        assert name in text, name


def test_stubs_ship_with_the_package():
    pkg = pathlib.Path(mli.__file__).parent
    for stub in ("__init__.pyi", "kernels/__init__.pyi", "tensor.pyi", "rounding.pyi", "dispatch.pyi", "_core.pyi",
                 "py.typed"):
        assert (pkg / stub).is_file(), stub
