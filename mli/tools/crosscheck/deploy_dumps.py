"""``mli crosscheck --deploy DIR --arena dump.bin``: a raw memory image of
the arena of an ``mli deploy`` folder, taken on the target at the end of a
run (or after step K, ``--after``), mapped back through the folder's
``plan.json`` and compared tensor by tensor with its goldens (``golden.c``).

Every tensor the arena must hold after that step is compared: its first
differing element, in LSB and real units, with the report the other
crosschecks print."""
import json
import os

import numpy as np

from ...deploy import MARK
from ...deploy.emit import TABLES_MARK
from ...io.c_array import read_c_arrays
from ...io.limits import check_size
from ...metrics import compare
from .case import CaseError
from .results import CrosscheckResult, LayerResult

__all__ = ["crosscheck_deploy", "load_plan"]

_DTYPES = {"fx8": np.dtype(np.int8), "fx16": np.dtype(np.int16)}
_RECURRENT = {"lstm", "rnn"}


def _int(d, key, where, lo, hi):
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise CaseError(f"{where}: {key} must be an integer in {lo}..{hi}, got {v!r}")
    return v


def load_plan(folder):
    """The checked plan.json of an ``mli deploy`` folder."""
    path = os.path.join(os.fspath(folder), "plan.json")
    try:
        size = os.path.getsize(path)
        check_size(size, f"--deploy: {path}")
        with open(path, encoding="utf-8") as f:
            plan = json.load(f)
    except (OSError, ValueError) as e:
        raise CaseError(f"--deploy: {path}: {getattr(e, 'strerror', None) or e}") from None
    if not isinstance(plan, dict) or plan.get("generator") != MARK:
        raise CaseError(f"--deploy: {path} is not a plan written by mli deploy")
    arena = _int(plan, "arena_bytes", path, 0, 0xFFFFFFFF)
    n_steps = len(plan.get("steps") or [])
    _int(plan, "samples", path, 1, 1 << 20)
    tensors = {}
    for t in plan.get("tensors") or []:
        if not isinstance(t, dict) or not isinstance(t.get("name"), str) or t.get("el_type") not in _DTYPES:
            raise CaseError(f"{path}: a tensor entry is malformed: {str(t)[:80]}")
        where = f"{path}: tensor {t['name']}"
        shape = t.get("shape")
        if not isinstance(shape, list) or len(shape) > 4 or not all(isinstance(d, int) and d > 0 for d in shape):
            raise CaseError(f"{where}: shape must be up to 4 positive integers, got {shape!r}")
        if "offset" in t:
            off = _int(t, "offset", where, 0, arena)
            nbytes = _int(t, "bytes", where, 0, arena)
            if off + nbytes > arena or nbytes != int(np.prod(shape, dtype=np.int64)) * _DTYPES[t["el_type"]].itemsize:
                raise CaseError(f"{where}: offset {off} + {nbytes} bytes does not fit its shape or the arena")
        tensors[t["name"]] = t
    for g in plan.get("goldens") or []:
        if not isinstance(g, dict) or g.get("tensor") not in tensors or "offset" not in tensors[g["tensor"]] or \
                not isinstance(g.get("array"), str) or not g["array"].isidentifier():
            raise CaseError(f"{path}: a golden entry is malformed: {str(g)[:80]}")
        _int(g, "from_step", path, -1, n_steps - 1)
        _int(g, "to_step", path, -1, n_steps - 1)
    plan["_tensors"] = tensors
    return plan


def _step_index(plan, after):
    steps = plan["steps"]
    if after is None:
        return len(steps) - 1
    for s in steps:
        if after in (s.get("layer"), s.get("output"), str(s.get("index"))):
            return int(s["index"])
    raise CaseError(f"--after: {after!r} is not a step of the plan (a layer name or index 0..{len(steps) - 1})")


def crosscheck_deploy(folder, arena, *, after=None, sample=0):
    """Compare the arena image `arena` (a file) with the goldens of the
    ``mli deploy`` folder `folder` after step `after` (layer name or index;
    default the last) of a run on golden input `sample`.

    Returns
    -------
    CrosscheckResult
    """
    folder = os.fspath(folder)
    plan = load_plan(folder)
    if isinstance(sample, bool) or not isinstance(sample, int) or not 0 <= sample < plan["samples"]:
        raise CaseError(f"--sample: expected 0..{plan['samples'] - 1}, got {sample!r}")
    k = _step_index(plan, after)
    try:
        size = os.path.getsize(arena)
        if size != plan["arena_bytes"]:
            raise CaseError(f"--arena: {arena} holds {size} bytes; the plan's arena has {plan['arena_bytes']}")
        with open(arena, "rb") as f:
            image = np.frombuffer(f.read(size), np.uint8)
    except OSError as e:
        raise CaseError(f"--arena: {arena}: {e.strerror or e}") from None
    golden_c = os.path.join(folder, "golden.c")
    try:
        check_size(os.path.getsize(golden_c), f"--deploy: {golden_c}")
        with open(golden_c, encoding="utf-8") as f:
            text = f.read()
        if TABLES_MARK not in text:
            raise ValueError("not a golden.c written by mli deploy")
        arrays = read_c_arrays(text.split(TABLES_MARK)[0])
    except (OSError, ValueError) as e:
        raise CaseError(f"--deploy: {golden_c}: {getattr(e, 'strerror', None) or e}") from None
    steps = plan["steps"]
    results = []
    for g in sorted(plan.get("goldens") or [], key=lambda g: (g["from_step"], g["tensor"])):
        if not g["from_step"] <= k <= g["to_step"]:
            continue
        t = plan["_tensors"][g["tensor"]]
        dt = _DTYPES[t["el_type"]]
        want = arrays.get(f"{g['array']}_s{sample}")
        if want is None or np.asarray(want).size * dt.itemsize != t["bytes"]:
            raise CaseError(f"--deploy: {golden_c} has no array {g['array']}_s{sample} of {t['bytes']} bytes")
        got = image[t["offset"]:t["offset"] + t["bytes"]].copy().view(dt)
        shape = tuple(t["shape"]) or (1,)
        writer = steps[g["from_step"]] if g["from_step"] >= 0 else None
        time_axis = 0 if writer is not None and writer.get("sig") in _RECURRENT and len(shape) >= 2 else None
        try:
            rep = compare(got.reshape(shape), np.asarray(want).reshape(shape), time_axis=time_axis,
                          frac_bits=t["frac_bits"])
        except (ValueError, TypeError) as e:
            raise CaseError(f"--deploy {g['tensor']}: {e}") from None
        kernel = writer["func"] if writer else ("the run's input" if t["role"] == "input" else "reset state")
        results.append(LayerResult(g["tensor"], kernel, rep))
    label = f"sample {sample}, arena after step {k} ({steps[k]['layer']})" if k >= 0 else f"sample {sample}"
    return CrosscheckResult(results, "convergent", None, label, chained=True,
                            notes=[f"{len(results)} tensors live in the arena after step {k} of {len(steps)}"])
