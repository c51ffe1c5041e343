"""What a user of the installed package meets outside the kernels: the
version, the headers for exported C, the source-tree import message, the
vectors runner's empty run, the HAR data search."""
import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import mli

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(mli.__file__)))
SHARED = pathlib.Path(os.environ.get("MLI_SHARED", ROOT.parent / "shared"))


def _python(args, cwd):
    return subprocess.run([sys.executable, *args], cwd=cwd, env=dict(os.environ, PYTHONPATH=PKG_PARENT),
                          capture_output=True, text=True, timeout=300)


def _mli(args, cwd, **env):
    e = dict(os.environ, PYTHONPATH=PKG_PARENT, **env)
    return subprocess.run([sys.executable, "-m", "mli", *args], cwd=cwd, env=e, capture_output=True, text=True,
                          timeout=300)


def test_version_written_once(tmp_path):
    from mli._version import __version__

    assert mli.__version__ == __version__
    r = _mli(["--version"], tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (0, f"mli-py {__version__}\n", "")
    toml = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in toml and 'version = { attr = "mli._version.__version__" }' in toml
    assert 'version = "' not in toml


def test_pyproject_lists_every_package():
    """Every folder of mli/ with an __init__.py is in pyproject.toml's package list (one
    left out would be missing from the wheel), and nothing else is."""
    toml = (ROOT / "pyproject.toml").read_text()
    start = toml.index("packages = [")
    listed = set(re.findall(r'"([\w.]+)"', toml[start:toml.index("]", start)]))
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "mli").rglob("__init__.py")}
    assert listed == found


def test_get_include_has_the_headers(tmp_path):
    inc = pathlib.Path(mli.get_include())
    assert sorted(p.name for p in inc.glob("*.h")) == ["mli_api.h", "mli_config.h", "mli_helpers_api.h",
                                                     "mli_kernels_api.h", "mli_krn_avepool_spec_api.h",
                                                     "mli_krn_conv2d_spec_api.h", "mli_krn_depthwise_conv2d_spec_api.h",
                                                     "mli_krn_maxpool_spec_api.h", "mli_types.h", "mlipy_ext.h"]
    r = _mli(["export-c", "--print-include"], tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (0, f"{inc}\n", "")


def test_source_tree_without_extension_says_what_to_do(tmp_path):
    """A copy of the package's Python files without the compiled core, run
    from its folder as `python -m mli` from a fresh clone's root would."""
    src = pathlib.Path(mli.__file__).parent
    shutil.copytree(src, tmp_path / "mli", ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__", "include"))
    shutil.copy(ROOT / "mli" / "_core.pyx", tmp_path / "mli" / "_core.pyx")
    r = subprocess.run([sys.executable, "-c", "import mli"], cwd=tmp_path, capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, timeout=300)
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == (
        f"ImportError: you are importing mli from its source tree ({tmp_path / 'mli'}) without a built extension; "
        "run `python setup.py build_ext --inplace` (or `pip install -e .`) there, or run from another folder "
        "to use the installed mli")


@pytest.mark.skipif(not (SHARED / "vectors" / "ov_ti_loop").is_dir(), reason=f"reference data not found at {SHARED}")
def test_vectors_nothing_matched_is_an_error(tmp_path):
    d = SHARED / "vectors" / "ov_ti_loop"
    r = _mli(["vectors", str(d), "-k", "nomatch*"], tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"mli vectors: error: no case matched -k nomatch* in {d}\n")


def test_har_lists_the_places_it_looked(tmp_path):
    r = _mli(["har"], tmp_path, MLI_SHARED=str(tmp_path / "nowhere"))
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == (f"mli har: HAR data folder not found; looked in $MLI_SHARED/data/har "
                        f"({tmp_path / 'nowhere' / 'data' / 'har'}) (give --data DIR or set MLI_HAR_DATA)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("MLI_SHARED", "MLI_HAR_DATA")}
    r = subprocess.run([sys.executable, "-c", "from mli.tools import har; print(har.searched_places())"], cwd=tmp_path,
                       env=dict(env, PYTHONPATH=PKG_PARENT), capture_output=True, text=True, timeout=300)
    assert r.stdout == ", ".join([os.path.normpath(os.path.join(PKG_PARENT, "..", "shared", "data", "har")),
                                  os.path.normpath(os.path.join(str(tmp_path), "..", "shared", "data", "har")),
                                  os.path.join(str(tmp_path), "shared", "data", "har")]) + \
        " ($MLI_HAR_DATA and $MLI_SHARED unset)\n"


def test_tensor_pickles_and_copies():
    """Tensors cross process boundaries (multiprocessing sweeps): every field
    and the data survive pickle and copy.deepcopy, into a private buffer."""
    import copy
    import pickle

    import numpy as np

    import mli

    t = mli.Tensor(np.arange(6, dtype=np.int16).reshape(2, 3), 9)
    for u in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert u.numpy().tolist() == [[0, 1, 2], [3, 4, 5]]
        assert (u.frac_bits, u.shape4, u.rank, u.capacity, u.el_type) == (9, t.shape4, 2, 12, t.el_type)
        u.numpy()[0, 0] = 7
        assert t.numpy()[0, 0] == 0
    assert pickle.loads(pickle.dumps(mli.Tensor(np.array(5, np.int16), 3))).scalar_value == 5
    assert pickle.loads(pickle.dumps(mli.Tensor.raw(is_null=True))).is_null
    d = pickle.loads(pickle.dumps(mli.Tensor.raw(None, data_null=True, capacity=10, shape=(5,))))
    assert d.data_null and d.capacity == 10 and d.shape == (5,)
    sub = mli.point_to_subtensor(t, [1], 1)
    assert pickle.loads(pickle.dumps(sub)).numpy().tolist() == [[3, 4, 5]]


def test_the_api_does_not_import_the_tools(tmp_path):
    """``import mli`` (the API) loads nothing of mli.tools (the commands)."""
    r = _python(["-c", "import mli, sys; print(sorted(m for m in sys.modules if m.startswith('mli.tools')))"],
                tmp_path)
    assert r.stdout == "[]\n", r.stderr


def test_tools_run_from_mli_tools(tmp_path):
    """The tools live in mli.tools only: the old names mli.crosscheck, mli.export_c and
    mli.vectors are gone (CHANGELOG, issue 21), as are mli.gru and mli.fixed_point_mli2 (now
    in the mli.fixed_point package); ``python -m`` runs each tool and mli.fixed_point."""
    import mli.fixed_point

    for gone in ("mli.crosscheck", "mli.export_c", "mli.vectors", "mli.gru", "mli.fixed_point_mli2"):
        assert importlib.util.find_spec(gone) is None, gone
    assert callable(mli.fixed_point.to_fixed_point)
    for module in ("mli.tools.vectors", "mli.fixed_point", "mli.tools.crosscheck", "mli.tools.export_c"):
        r = _python(["-m", module, "--help"], tmp_path)
        assert r.returncode == 0 and r.stdout.startswith("usage: "), (module, r.stdout, r.stderr)
