"""Run a folder of OpenVINO TensorIterator/Loop reference cases.

The folder holds a ``manifest.json`` (schema of
``shared/vectors/ov_ti_loop``) and per case ``<name>.xml``, ``<name>.bin``
and ``<name>.npz`` (``in__*`` inputs, ``out__*`` expected outputs).

Pass rules per ``category``:

* ``core``, ``quirk``, ``ov_cpu_bug``: the model runs and every output has
  the expected dtype and shape and equal values (``exact=true``) or values
  within the case's ``tolerance`` (``rtol``/``atol``, default rtol=1e-4,
  atol=1e-5).  For ``ov_cpu_bug`` the expected value is the specification's,
  not the OpenVINO CPU plugin's.
* ``error`` and ``unsupported``: reading or running the model raises a clear
  error (a ``ValueError``, ``TypeError`` or ``NotImplementedError``; mli's
  :class:`~mli.ir.IRError` and :class:`~mli.graph.GraphError` are
  ``ValueError``\\ s).
"""

from __future__ import annotations

import fnmatch
import functools
import json
from pathlib import Path

import numpy as np

from ..ir import read_model
from .cases import CaseResult
from .jobs import chunked, process_map

__all__ = ["CaseResult", "load_manifest", "run_case", "run_manifest_dir"]

DEFAULT_TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
_CLEAR_ERRORS = (ValueError, TypeError, NotImplementedError)
_MUST_RAISE = ("error", "unsupported")


def load_manifest(path) -> list[dict]:
    """The ``cases`` list of ``<path>/manifest.json``."""
    with open(Path(path) / "manifest.json", encoding="utf-8") as f:
        return json.load(f)["cases"]


def _file(folder: Path, case: dict, suffix: str) -> Path:
    for name in case.get("files", ()):
        if name.endswith(suffix):
            return folder / name
    return folder / f"{case['name']}{suffix}"


def _compare(name, got, want, exact, tol):
    if not isinstance(got, np.ndarray):
        return f"{name}: got {type(got).__name__}, not an array"
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"{name}: got {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}"
    if exact:
        bad = ~((got == want) | (np.isnan(got) & np.isnan(want))
                if got.dtype.kind in "fc" else got == want)
    else:
        bad = ~np.isclose(got, want, rtol=tol["rtol"], atol=tol["atol"], equal_nan=True)
    if not bad.any():
        return None
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    diff = ""
    if got.dtype.kind in "fiu":
        diff = f", max |diff| {np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))}"
    return (f"{name}: {int(bad.sum())} of {bad.size} elements differ{diff}; first at {idx}: "
            f"got {got[idx]!r}, expected {want[idx]!r}")


def run_case(path, case: dict) -> CaseResult:
    """Run one manifest case from folder ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        Folder of the manifest.
    case : dict
        One entry of the manifest's ``cases``.

    Returns
    -------
    CaseResult
    """
    folder = Path(path)
    name, category = case["name"], case.get("category", "core")
    must_raise = category in _MUST_RAISE
    try:
        with np.load(_file(folder, case, ".npz"), allow_pickle=False) as z:
            inputs = {i["name"]: z[i["npz_key"]] for i in case["inputs"]}
            expected = {} if must_raise else {o["name"]: z[o["npz_key"]]
                                              for o in case["outputs"]}
    except (OSError, KeyError, ValueError) as e:
        return CaseResult(name, False, f"cannot load the case data: {e!r}", category)
    try:
        model = read_model(_file(folder, case, ".xml"), _file(folder, case, ".bin"))
        outputs = model(inputs)
    except _CLEAR_ERRORS as e:
        if must_raise:
            return CaseResult(name, True, f"raised {type(e).__name__} as required: {e}", category)
        return CaseResult(name, False, f"{type(e).__name__}: {e}", category)
    except Exception as e:  # a crash is never a clear error
        return CaseResult(name, False, f"unexpected {type(e).__name__}: {e}", category)
    if must_raise:
        want = case.get("expected_error") or "a rejection"
        return CaseResult(name, False, f"ran without error, expected {category}: {want}", category)
    exact = bool(case.get("exact", True))
    tol = case.get("tolerance") or DEFAULT_TOLERANCE
    problems = []
    for out_name, want in expected.items():
        if out_name not in outputs:
            problems.append(f"{out_name}: missing (model outputs {sorted(outputs)})")
            continue
        p = _compare(out_name, outputs[out_name], want, exact, tol)
        if p:
            problems.append(p)
    if problems:
        return CaseResult(name, False, "; ".join(problems), category)
    how = "exact" if exact else f"rtol={tol['rtol']}, atol={tol['atol']}"
    return CaseResult(name, True, f"ok: {len(expected)} outputs match ({how})", category)


def run_manifest_dir(path, patterns=None, jobs: int = 1) -> list[CaseResult]:
    """Run every case of a folder with a ``manifest.json``.

    Parameters
    ----------
    path : str or os.PathLike
        Folder with ``manifest.json`` and the case files.
    patterns : sequence of str, optional
        fnmatch globs on case names; a case runs if any matches.  Default:
        all cases.
    jobs : int
        Worker processes running chunks of cases at once
        (:func:`mli.tools.jobs.process_map`; one process when the cases are
        too few to pay for them).

    Returns
    -------
    list of CaseResult
        In manifest order.
    """
    if isinstance(patterns, str):
        patterns = [patterns]
    cases = [c for c in load_manifest(path)
             if not patterns or any(fnmatch.fnmatchcase(c["name"], p) for p in patterns)]
    parts = process_map(functools.partial(_run_cases, path), chunked(cases, jobs), jobs,
                        seconds=len(cases) * SECONDS_PER_CASE)
    return [r for part in parts for r in part]


#: single-core seconds per case, measured on ../shared/vectors/ov_ti_loop and
#: ov_real (``mli vectors --jobs 1``), for :func:`mli.tools.jobs.use_processes`
SECONDS_PER_CASE = 0.01


def _run_cases(path, cases):
    """[CaseResult] of manifest cases (one chunk of a --jobs run)."""
    return [run_case(path, case) for case in cases]
