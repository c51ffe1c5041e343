"""``mli crosscheck`` on a whole-model case: a firmware's dumps of any layers of an IR
model run in MLI 1.1 fixed point (``to_fixed_point(..., scope="model")`` with a plan),
compared with the package's goldens (``WholeModel.run(..., trace=True)``).

Case file (JSON or TOML)::

    {"model": "har.xml", "plan": "plan.json", "inputs": "inputs.npz",
     "dumps": {"fc1/add:0": "fw/fc1.npy", "lstm2:0": "fw/lstm2.bin,dtype=int16"}}

``model``: the IR (.bin beside it); ``plan``: the formats (a file written by
``mli fixed-point --scope model --save-plan``, edited or not); ``inputs``: an .npz with
one array per model input (named as the model's inputs, ``in__<name>`` accepted), the
float values the firmware quantized (calibration uses them too, but a plan fixes every
format); ``dumps``: tensor keys of the plan (``"<layer key>:<output>"``, or an
LSTMSequence's ``"<layer key>:c_steps"``: its cell state at every step) -> array specs
of :func:`mli.io.load.load_array` (relative to the case file).  A dump is compared
after reshaping to the golden's shape (same element count required); a layer in a
TensorIterator/Loop body holds every iteration, stacked first.
"""

from __future__ import annotations

import os

import numpy as np

from ...metrics import compare
from ...rounding import rounding as rounding_ctx
from .case import ROUNDINGS, CaseError, _msg
from .results import CrosscheckResult, LayerResult

__all__ = ["is_model_case", "crosscheck_model"]

_KEYS = {"model", "plan", "inputs", "dumps", "rounding"}


def is_model_case(case) -> bool:
    return isinstance(case, dict) and "model" in case


def _other(mode):
    return "up" if mode == "convergent" else "convergent"


def crosscheck_model(case, base_dir, *, rounding=None, check_other_rounding=True):
    """Compare the dumps a whole-model case names with the package's goldens
    (:class:`CrosscheckResult`, one :class:`LayerResult` per dump, in graph order)."""
    from ...fixed_point import FixedPointError, to_fixed_point
    from ...io.load import load_array
    from ...ir import IRError, read_model

    extra = sorted(set(case) - _KEYS)
    if extra:
        raise CaseError(f"model case: unknown key {extra[0]!r} (keys: {', '.join(sorted(_KEYS))})")
    for k in ("plan", "inputs", "dumps"):
        if k not in case:
            raise CaseError(f"model case: {k!r} missing")
    if not isinstance(case["dumps"], dict) or not case["dumps"]:
        raise CaseError("model case: 'dumps' must map tensor keys to firmware files")
    mode = rounding or case.get("rounding", "convergent")
    if mode not in ROUNDINGS:
        raise CaseError(f"rounding: expected convergent or up, got {mode!r}")

    def path(k):
        p = case[k]
        return p if base_dir is None or os.path.isabs(p) else os.path.join(base_dir, p)
    try:
        model = read_model(path("model"))
    except (OSError, IRError) as e:
        raise CaseError(f"model: {_msg(e)}") from None
    try:
        with np.load(path("inputs")) as z:
            inputs = {k[4:] if k.startswith("in__") else k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise CaseError(f"inputs: {_msg(e)}") from None
    try:
        wm = to_fixed_point(model, inputs, scope="model", plan=path("plan"))
    except (FixedPointError, ValueError, OSError) as e:
        raise CaseError(f"plan: {_msg(e)}") from None
    unknown = [k for k in case["dumps"] if k not in wm.plan.tensors and not (
        k.endswith(":c_steps") and k[:-len(":c_steps")] in wm.plan.layers)]
    if unknown:
        raise CaseError(f"dumps: {unknown[0]!r} is not a tensor of the plan")
    alt_mode = _other(mode) if check_other_rounding else None

    def goldens(m):
        with rounding_ctx(m):
            wm._fixed.reset_state()
            return wm.run(inputs, trace=True)[1]
    try:
        pkg = goldens(mode)
        alt = goldens(alt_mode) if alt_mode else None
    except (ValueError, FixedPointError) as e:
        raise CaseError(f"inputs: {_msg(e)}") from None
    results = []
    for key in list(pkg):
        if key not in case["dumps"]:
            continue
        spec = case["dumps"][key]
        try:
            fw = np.asarray(load_array(spec, base_dir=base_dir))
        except (OSError, ValueError) as e:
            raise CaseError(f"dumps[{key!r}]: {_msg(e)}") from None
        want = pkg[key]
        if fw.size != want.size:
            raise CaseError(f"dumps[{key!r}]: {fw.size} elements, the tensor has {want.size} "
                            f"({list(want.shape)})")
        fw = fw.reshape(want.shape)
        rep = compare(fw, want)
        arep = compare(fw, alt[key]) if alt else None
        role = wm.plan.layers.get(key.rsplit(":", 1)[0], {}).get("role", "input")
        results.append(LayerResult(key, role, rep, arep, alt_mode))
    return CrosscheckResult(results, mode, alt_mode, "", chained=True)
