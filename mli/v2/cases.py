"""Runner for MLI 2.0.2 reference cases (schema ``mli20``, the format of
``../shared/vectors/mli20`` and of the oracle's ``gen_cases.py``).

``run_case(path, rounding)`` rebuilds the call a case file describes (NULL
pointers, capacities, strides, holes, aliasing, LUT objects and scratch as
written), runs it on mli.v2's C library (on the ISA path of :func:`mli.use_isa`) and compares the status, the output
elements, the output metadata and the LSTM cell exactly; it also checks that
no byte of any other container changed.  ``run_dir`` runs a folder
(recursively)."""
from __future__ import annotations

import fnmatch
import json
import os
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import BinaryIO, Dict, Iterable, List, Optional, Union

import numpy as np

from .. import _core as _core11
from ..io.limits import check_size
from ..io.npz import load_npz_arrays
from . import _core2
from .tensor import DTYPES, SA_8, SA_32, Lut, Tensor

ROUNDINGS = ("convergent", "up")


@dataclass
class CaseResult:
    """Outcome of one case: ``passed``, and for a failure what differed first
    (``where``: e.g. ``"status"``, ``"out[3, 1]"``, ``"cell[0]"``), with the
    expected and actual values."""

    case_id: str
    kernel: str
    kind: str
    rounding: str
    passed: bool
    where: str = ""
    expected: object = None
    actual: object = None
    message: str = ""

    def __str__(self) -> str:
        if self.passed:
            return f"{self.case_id} [{self.rounding}]: passed"
        return (f"{self.case_id} [{self.rounding}]: FAILED at {self.where}: expected {self.expected!r}, "
                f"got {self.actual!r} {self.message}").rstrip()


@dataclass
class DirResult:
    results: List[CaseResult] = field(default_factory=list)

    @property
    def failed(self) -> List[CaseResult]:
        return [r for r in self.results if not r.passed]

    def counts(self) -> dict:
        """{(kernel, kind): [passed, total]}"""
        c: dict = {}
        for r in self.results:
            e = c.setdefault((r.kernel, r.kind), [0, 0])
            e[0] += r.passed
            e[1] += 1
        return c


def _cap(meta, key, default=None):
    """A capacity the case states: an integer in 0..2**32-1 within the size
    limit of data read from case files (mli.io.limits), checked before
    anything is allocated from it."""
    v = meta[key] if default is None else meta.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) <= 0xFFFFFFFF:
        raise ValueError(f"{key}: expected an integer in 0..2**32-1, got {v!r}")
    check_size(int(v), key)
    return int(v)


def _buffer_for(meta, z, role, extra_bytes=0):
    el = meta[f"{role}_el_type"]
    data = z[f"{role}_data"] if f"{role}_data" in z else None
    nbytes = 0 if data is None else data.nbytes
    size = max(_cap(meta, f"{role}_capacity"), nbytes, extra_bytes, 1)
    raw = np.zeros(size, np.uint8)
    if data is not None:
        raw[:nbytes] = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
    return raw


def _tensor(meta, role, raw) -> Optional[Tensor]:
    if meta.get(f"{role}_null"):
        return None
    el = int(meta[f"{role}_el_type"])
    t = Tensor(None if meta.get(f"{role}_data_null") else raw, el, [], capacity=int(meta[f"{role}_capacity"]))
    t.rank = int(meta[f"{role}_rank"])
    t.shape = [int(v) for v in meta[f"{role}_shape"]]
    t.mem_stride = [int(v) for v in meta[f"{role}_mem_stride"]]
    if el in (SA_8, SA_32):
        t.sa_type = int(meta.get(f"{role}_sa_type", 0))
        t.sa_dim = int(meta[f"{role}_sa_dim"])
        caps = [_cap(meta, f"{role}_{p}_capacity", 0) for p in ("zero_point", "scale", "scale_frac_bits")]
        vals = [meta[f"{role}_{p}"] for p in ("zero_point", "scale", "scale_frac_bits")]
        arrs = []
        for v, cap, dt in zip(vals, caps, (np.int16, np.int16, np.int8)):
            a = np.zeros(max(len(v), (cap + np.dtype(dt).itemsize - 1) // np.dtype(dt).itemsize, 1), dt)
            a[:len(v)] = v
            arrs.append(a)
        t.zero_point, t.scale, t.scale_frac_bits = arrs
        t.zero_point_capacity, t.scale_capacity, t.scale_frac_bits_capacity = caps
    else:
        t.frac_bits = int(meta.get(f"{role}_frac_bits", 0))
    return t


def _lut(fn: str, capacity: int):
    lut = Lut(capacity)
    st = _core2.create_lut(fn, lut)
    return lut, st


def run_case(path: Union[str, BinaryIO], rounding: str = "convergent") -> CaseResult:
    """Run one ``.npz`` case (a path, or an open binary file) in rounding mode
    ``"convergent"`` or ``"up"``."""
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding: expected one of {ROUNDINGS}, got {rounding!r}")
    z = load_npz_arrays(path)
    meta = json.loads(str(z["meta_json"]))
    if not isinstance(meta, dict) or meta.get("schema") != "mli20":
        raise ValueError(f"{path}: not a case of schema mli20")
    for key in ("kernel", "kind", "args", "expected_status"):
        if key not in meta:
            raise ValueError(f"{path}: its meta has no {key!r}")
    kernel, kind = meta["kernel"], meta["kind"]
    case_id = meta.get("case_id") or (os.path.basename(path) if isinstance(path, str) else "case")
    res = CaseResult(case_id, kernel, kind, rounding, False)
    roles = list(meta["args"])
    in_role = "in0" if kernel == "rnn_dense" else "in"
    alias = bool(meta.get("out_aliases_in"))
    scratch_over = bool(meta.get("cfg_scratch_overlaps_in"))
    raws: Dict[str, np.ndarray] = {}
    tens: Dict[str, Optional[Tensor]] = {}
    for r in roles:
        if meta.get(f"{r}_null"):
            tens[r] = None
            continue
        if r == "out" and alias:
            continue
        extra = _cap(meta, "cfg_scratch_capacity", 0) if (r == in_role and scratch_over) else 0
        if r == in_role and alias:
            extra = max(extra, _cap(meta, "out_capacity", 0))
        raws[r] = _buffer_for(meta, z, r, extra)
        tens[r] = _tensor(meta, r, raws[r])
    if alias and not meta.get("out_null"):
        aliased = _tensor(meta, "out", raws[in_role])
        if aliased is not None:  # the container of in: pointer (out_data_null does not apply) and capacity
            src = tens.get(in_role)
            aliased.buffer = None if src is None else src.buffer
            aliased.capacity = int(meta[f"{in_role}_capacity"])
        tens["out"] = aliased
    before = {r: b.copy() for r, b in raws.items()}
    mode = 1 if rounding == "up" else 0
    # the ISA path of mli.set_isa / mli.use_isa, as the kernels of mli.v2 apply it (_core2 keeps its own switch)
    if _core2.get_isa() != _core11.get_isa():
        _core2.set_isa(_core11.get_isa())

    # LUTs
    lut_status = {}
    luts = {}
    for name in ("tanh_lut", "sigm_lut", "lut"):
        if f"{name}_from" in meta:
            luts[name], lut_status[name] = _lut(meta[f"{name}_from"], _cap(meta, f"{name}_capacity"))
    exp_lut = meta.get("expected_lut_create_status", {})
    for name, st in exp_lut.items():
        if lut_status.get(name) != st:
            res.where, res.expected, res.actual = f"{name} create status", st, lut_status.get(name)
            return res

    cfg_null = bool(meta.get("cfg_null"))
    if kernel in ("tanh", "sigm"):
        st = _core2.activation(kernel, kind, tens.get("in"), luts.get("lut"), tens.get("out"), mode)
    elif kernel == "fully_connected":
        st = _core2.fully_connected(kind, tens.get("in"), tens.get("weights"), tens.get("bias"),
                                    None if cfg_null else int(meta.get("cfg_relu_type", 0)), tens.get("out"), mode)
    elif kernel == "rnn_dense":
        ins = [tens.get(f"in{i}") for i in range(4)]
        ws = [tens.get(f"weights{i}") for i in range(4)]
        st = _core2.rnn_dense(kind, ins, ws, tens.get("bias"), None if cfg_null else int(meta["cfg_inputs_num"]),
                              tens.get("out"), mode)
    else:
        cfg: Optional[SimpleNamespace] = None
        if not cfg_null:
            cfg = SimpleNamespace()
            cfg.direction, cfg.results, cfg.act = (int(meta.get("cfg_direction", 0)), int(meta.get("cfg_results", 0)),
                                                   int(meta.get("cfg_act", 0)))
            cap = _cap(meta, "cfg_scratch_capacity", 0)
            cfg.scratch_capacity = cap
            if meta.get("cfg_scratch_null"):
                cfg.scratch_buffer = None
            elif scratch_over:
                cfg.scratch_buffer = raws[in_role]
            else:
                cfg.scratch_buffer = np.zeros(max(cap, 1), np.uint8)
        cell_kind = "lstm" if kernel == "lstm_cell" else "gru"
        st = _core2.rnn_cell(cell_kind, kind, tens.get("in"), tens.get("prev_out"), tens.get("weights_in"),
                             tens.get("weights_out"), tens.get("bias"), luts.get("tanh_lut"), luts.get("sigm_lut"),
                             cfg, tens.get("cell"), tens.get("out"), mode)

    if st != meta["expected_status"]:
        res.where, res.expected, res.actual = "status", meta["expected_status"], st
        res.message = "(" + "; ".join(str(v) for v in _core2.last_error()[2:4]) + ")"
        return res
    if st != 0:
        for r, b in before.items():  # a refused call touches nothing
            if not np.array_equal(b, raws[r]):
                res.where, res.expected, res.actual = f"{r} unchanged", "no change", "changed"
                return res
        res.passed = True
        return res

    out = tens.get("out")
    if out is None:  # a case with no out tensor must expect a refusal
        res.where, res.expected, res.actual = "status", "a refusal (no out tensor)", st
        return res
    # metadata
    for key, meta_got in (("rank", out.rank), ("shape", out.shape), ("mem_stride", out.mem_stride),
                          ("el_type", out.el_type)):
        meta_exp = meta[f"expected_out_{key}"]
        if (list(meta_got) if isinstance(meta_got, list) else meta_got) != meta_exp:
            res.where, res.expected, res.actual = f"out.{key}", meta_exp, meta_got
            return res
    if "expected_out_frac_bits" in meta and out.frac_bits != meta["expected_out_frac_bits"]:
        res.where, res.expected, res.actual = "out.frac_bits", meta["expected_out_frac_bits"], out.frac_bits
        return res
    if "expected_out_zero_point" in meta:
        sa_got = (int(out.zero_point[0]), int(out.scale[0]), int(out.scale_frac_bits[0]), out.sa_dim)
        sa_exp = (meta["expected_out_zero_point"], meta["expected_out_scale"], meta["expected_out_scale_frac_bits"],
                  meta["expected_out_sa_dim"])
        if out.sa_dim >= 0 or sa_got != sa_exp:
            res.where, res.expected, res.actual = "out sa params", sa_exp, sa_got
            return res

    def expected(name):
        key = f"expected_{name}_data"
        if rounding == "up" and f"{key}_if_round_up" in z:
            return z[f"{key}_if_round_up"]
        return z[key]

    exp = expected("out")
    out_raw = raws[in_role] if alias else raws["out"]
    dt = DTYPES[out.el_type]
    flat = out_raw.view(dt)
    rank = meta["expected_out_rank"]
    shape, strides = meta["expected_out_shape"][:rank], meta["expected_out_mem_stride"][:rank]
    got = np.lib.stride_tricks.as_strided(flat, tuple(shape), tuple(s * flat.itemsize for s in strides)).copy()
    if not np.array_equal(got, exp):
        idx = tuple(int(i) for i in np.argwhere(got != exp)[0])
        res.where, res.expected, res.actual = f"out{list(idx)}", int(exp[idx]), int(got[idx])
        return res
    # every other byte of the output buffer, and every input, unchanged
    written = np.zeros(flat.size, bool)
    offsets = np.zeros(tuple(shape), np.int64)
    for d, s in enumerate(strides):
        sh = [1] * len(shape)
        sh[d] = -1
        offsets = offsets + (np.arange(shape[d]) * s).reshape(sh)
    written[offsets.reshape(-1)] = True
    orig_out = (before[in_role] if alias else before["out"]).view(dt)
    if not np.array_equal(orig_out[~written], flat[~written]):
        res.where, res.expected, res.actual = "out holes", "unchanged", "changed"
        return res
    if kernel == "lstm_cell":
        cexp = expected("cell")
        cell = tens.get("cell")
        if cell is None:  # an LSTM call with no cell tensor must expect a refusal
            res.where, res.expected, res.actual = "status", "a refusal (no cell tensor)", st
            return res
        cflat = raws["cell"].view(np.int16 if cell.el_type == 0x10 else np.int8)
        cgot = cflat[: cexp.size]
        if not np.array_equal(cgot, cexp.reshape(-1)):
            i = int(np.argwhere(cgot != cexp.reshape(-1))[0][0])
            res.where, res.expected, res.actual = f"cell[{i}]", int(cexp.reshape(-1)[i]), int(cgot[i])
            return res
        if not np.array_equal(before["cell"][cexp.nbytes:], raws["cell"][cexp.nbytes:]):
            res.where, res.expected, res.actual = "cell beyond M", "unchanged", "changed"
            return res
    for r, b in before.items():
        if r in ("out", "cell") or (alias and r == in_role):
            continue
        if not np.array_equal(b, raws[r]):
            res.where, res.expected, res.actual = f"{r} unchanged", "no change", "changed"
            return res
    res.passed = True
    return res


def _case_files(path: str) -> Iterable[str]:
    if os.path.isfile(path):
        yield path
        return
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".npz"):
                yield os.path.join(root, f)


def run_dir(path: str, patterns: Optional[Iterable[str]] = None, rounding="both") -> DirResult:
    """Run every case under `path` (recursively) whose file name matches one
    of `patterns` (fnmatch; all when None), in `rounding` ("convergent",
    "up" or "both")."""
    modes = ROUNDINGS if rounding == "both" else (rounding,)
    pats = list(patterns) if patterns else None
    out = DirResult()
    for f in _case_files(path):
        if pats and not any(fnmatch.fnmatch(os.path.basename(f), p) for p in pats):
            continue
        for m in modes:
            out.results.append(run_case(f, m))
    return out


def is_mli20_dir(path: str) -> bool:
    """Whether `path` holds an index.json of schema mli20."""
    try:
        with open(os.path.join(path, "index.json"), encoding="utf-8") as fh:
            return json.load(fh).get("schema") == "mli20"
    except (OSError, ValueError):
        return False


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m mli.v2.cases", description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--rounding", default="both", choices=("both",) + ROUNDINGS)
    ap.add_argument("-k", dest="patterns", action="append")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args(argv)
    total = DirResult()
    for p in a.paths:
        total.results += run_dir(p, a.patterns, a.rounding).results
    for r in total.failed[:50]:
        print(r)
    if a.v:
        for (k, kind), (ok, n) in sorted(total.counts().items()):
            print(f"{k:16s} {kind:22s} {ok}/{n}")
    print(f"{len(total.results)} runs, {len(total.results) - len(total.failed)} passed, {len(total.failed)} failed")
    return 1 if total.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
