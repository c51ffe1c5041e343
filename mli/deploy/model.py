"""``mli deploy MODEL.xml``: an OpenVINO IR model, converted whole to MLI 1.1
fixed point (:func:`mli.fixed_point.to_fixed_point` with ``scope="model"``),
as a deployed folder (:func:`mli.deploy.deploy`)."""
import os

import numpy as np

from .folder import deploy
from .lower import lower
from .program import DeployError

__all__ = ["deploy_model", "calibration_sets"]


def calibration_sets(model, inputs):
    """Input sets (dicts by model input name) from `inputs`: one dict of
    arrays in the model's shapes, a dict whose arrays all have one more
    leading axis (a data set: one set per index), or a list of dicts."""
    if isinstance(inputs, (list, tuple)):
        if not inputs or not all(isinstance(s, dict) for s in inputs):
            raise DeployError("calibration: a non-empty list of input dicts")
        return [dict(s) for s in inputs]
    if not isinstance(inputs, dict) or not inputs:
        raise DeployError("calibration: a dict of input arrays (in__NAME of an .npz) or a list of them")
    ranks = {t.name: len(t.dims) for t in model.inputs}
    unknown = sorted(set(inputs) - set(ranks))
    if unknown:
        raise DeployError(f"calibration: {', '.join(map(repr, unknown))} not among the model's inputs "
                          f"{sorted(ranks)}")
    arrays = {k: np.asarray(v) for k, v in inputs.items()}
    extra = {k: a.ndim - ranks[k] for k, a in arrays.items()}
    if set(extra.values()) == {1}:
        counts = {len(a) for a in arrays.values()}
        if len(counts) != 1 or 0 in counts:
            raise DeployError(f"calibration: a data set's inputs need the same number of samples, got "
                              f"{ {k: len(a) for k, a in arrays.items()} }")
        return [{k: a[i] for k, a in arrays.items()} for i in range(counts.pop())]
    if set(extra.values()) != {0}:
        raise DeployError(f"calibration: input ranks {ranks} (or one more axis for a data set), got "
                          f"{ {k: a.ndim for k, a in arrays.items()} }")
    return [arrays]


def deploy_model(model, folder, *, kind="fx16", plan=None, calibration=None, samples=2, prefix="model",
                 force=False, margin=0):
    """Write the deployed folder of an IR model (see :func:`mli.deploy.deploy`).

    Parameters
    ----------
    model : str, path or mli.ir Model
        The OpenVINO IR (``.xml`` with its ``.bin``).
    kind : {"fx16", "fx8w16d", "fx8"}
        Every layer's kernel kind, unless `plan` says otherwise per layer.
    plan : str, path or mli.fixed_point.Plan, optional
        A whole-model plan (``mli fixed-point --scope model --save-plan``).
    calibration : dict or list of dict, optional
        Calibration input sets (see :func:`calibration_sets`); default: the
        ``in__NAME`` arrays of the ``.npz`` beside the model file.
    samples : int
        How many calibration sets (the first) become golden samples.

    Returns
    -------
    dict
        :func:`mli.deploy.deploy`'s, plus ``program`` and ``inputs`` /
        ``outputs`` (program tensor -> model input / output name).

    Raises
    ------
    DeployError
        Anything that cannot be deployed (named), before any file is written.
    """
    from .. import ir
    from ..fixed_point import FixedPointError, to_fixed_point
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise DeployError(f"samples: a positive int, got {samples!r}")
    path = None
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        try:
            model = ir.read_model(path)
        except (OSError, ir.IRError) as e:
            raise DeployError(str(e) if path in str(e) else f"{path}: {e}") from None
    if calibration is None:
        if path is None:
            raise DeployError("calibration: needed when the model is not given as a file")
        calibration = _stored_inputs(path)
    sets = calibration_sets(model, calibration)
    try:
        wm = to_fixed_point(model, sets, kind, scope="model", plan=plan, margin=margin)
    except (FixedPointError, ValueError, TypeError, OSError) as e:
        raise DeployError(str(e)) from None
    if wm.float_ops:
        raise DeployError(f"layers kept in float (float_ops) cannot run on MLI kernels: {', '.join(wm.float_ops)}")
    name = os.path.splitext(os.path.basename(path))[0] if path else "model"
    lm = lower(wm, sets[:samples], name=name)
    r = deploy(lm.program, folder, lm.samples, prefix=prefix, force=force)
    r.update(program=lm.program, inputs=lm.inputs, outputs=lm.outputs, model=wm)
    return r


def _stored_inputs(xml):
    from ..io.npz import npz_keys, read_npz
    npz = os.path.splitext(xml)[0] + ".npz"
    if not os.path.isfile(npz):
        raise DeployError(f"{xml}: no {os.path.basename(npz)} beside it with the inputs (in__<name> arrays); "
                          "give --calibration DATA.npz")
    return _npz_inputs(npz, npz_keys, read_npz)


def _npz_inputs(npz, npz_keys, read_npz):
    try:
        keys = [k for k in npz_keys(npz) if k.startswith("in__")]
        if not keys:
            raise DeployError(f"{npz}: no in__<name> arrays")
        return {k[4:]: read_npz(npz, k) for k in keys}
    except (OSError, ValueError) as e:
        raise DeployError(str(e) if npz in str(e) else f"{npz}: {e}") from None


def read_calibration(npz):
    """The ``in__NAME`` arrays of a ``.npz`` (mli.io's checked reader)."""
    from ..io.npz import npz_keys, read_npz
    return _npz_inputs(os.fspath(npz), npz_keys, read_npz)
