"""Where the KWS example's data are, and its quantized model.

The data (``model.json``, ``quantized.npz``, ``test.wav``) are read where
they are -- ``--data DIR``, else ``$MLI_KWS_DATA``, else
``$MLI_SHARED/data/kws``, else the first of ``<project>/../shared/data/kws``,
``./../shared/data/kws`` and ``./shared/data/kws`` that exists -- and never
copied into the package.
"""
import json
import os
from dataclasses import dataclass, field

import numpy as np

from ...tensor import Tensor
from ..example_data import candidate_dirs, find_data_dir, searched_places as _searched

ENV_DATA = "MLI_KWS_DATA"
MODEL_NAME = "Depthwise CNN + LSTM Model on FBANKs features (monolit nn inference)"

# coefficient array -> (shape, element dtype); frac bits come from model.json
COEFFICIENTS = {
    "L1_conv_wt": (64, 1, 3, 3), "L1_conv_bias": (64,),
    "L2a_conv_dw_wt": (64, 1, 3, 3), "L2a_conv_dw_bias": (64,),
    "L2b_conv_pw_wt": (64, 64, 1, 1), "L2b_conv_pw_bias": (64,),
    "L3a_conv_dw_wt": (64, 1, 3, 3), "L3a_conv_dw_bias": (64,),
    "L3b_conv_pw_wt": (64, 64, 1, 1), "L3b_conv_pw_bias": (64,),
    "L4a_conv_dw_wt": (64, 1, 3, 3), "L4a_conv_dw_bias": (64,),
    "L4b_conv_pw_wt": (64, 64, 1, 1), "L4b_conv_pw_bias": (64,),
    "L5_lstm_wt": (4, 32, 96), "L5_lstm_bias": (4, 32),
    "L6_fc_wt": (12, 32), "L6_fc_bias": (12,),
}
SLOPE = "leaky_relu_slope"
# activation frac bits the network sets (model.json "frac_bits")
ACTIVATION_FRAC_KEYS = ("input_features", "L1_conv_out", "L2a_conv_dw_out", "L2b_conv_pw_out", "L3a_conv_dw_out",
                        "L3b_conv_pw_out", "L4a_conv_dw_out", "L4b_conv_pw_out", "leaky_relu_slope",
                        "fx16_after_convert", "L5_lstm_prev_out", "L5_lstm_cell", "L6_fc_out", "softmax_out")


def _candidate_dirs():
    """Where the shared KWS folder may be, in the order they are tried."""
    return candidate_dirs("kws")


def default_data_dir():
    """``$MLI_KWS_DATA``, else ``$MLI_SHARED/data/kws``, else the first of
    ``<project root>/../shared/data/kws`` (in-place build),
    ``./../shared/data/kws`` and ``./shared/data/kws`` that exists (an
    installed package has no project root of its own)."""
    return find_data_dir("kws", ENV_DATA, lambda: _candidate_dirs())


def searched_places():
    """The places :func:`default_data_dir` looked in, as one line for a
    "not found" message."""
    return _searched("kws", ENV_DATA, lambda: _candidate_dirs())


@dataclass
class KwsModel:
    """The example's quantized network.

    Attributes
    ----------
    coef : dict
        Coefficient tensors by the example's field names (``L1_conv_wt`` ...
        ``L6_fc_bias``), int8 with their frac bits.
    slope : Tensor
        The leaky ReLU slope, a rank-0 fx8 tensor (102, frac bits 9).
    frac : dict
        model.json's frac bits of the activations (``L1_conv_out`` ...).
    classes : tuple of str
    data_dir : str
    """

    coef: dict
    slope: Tensor
    frac: dict
    classes: tuple
    data_dir: str
    json: dict = field(default_factory=dict, repr=False)

    @property
    def coefficient_bytes(self):
        """Bytes of all coefficient arrays (the ``-info`` coefficient memory)."""
        return sum(t.numpy().nbytes for t in self.coef.values())


def load_model(data_dir=None):
    """Read ``model.json`` and ``quantized.npz`` from the KWS data folder.

    Raises
    ------
    FileNotFoundError
        The folder or a file is missing.
    ValueError
        A file is malformed (missing key or array, wrong shape or dtype).
    """
    from ...io.npz import read_npz

    d = os.fspath(data_dir) if data_dir is not None else default_data_dir()
    if not os.path.isdir(d):
        raise FileNotFoundError(f"KWS data folder not found: {d} (give --data DIR or set {ENV_DATA})")
    jpath, qpath = os.path.join(d, "model.json"), os.path.join(d, "quantized.npz")
    for p in (jpath, qpath):
        if not os.path.isfile(p):
            raise FileNotFoundError(f"KWS data file missing: {p}")
    try:
        with open(jpath, encoding="utf-8") as fh:
            js = json.load(fh)
        fb = js["frac_bits"]
        frac = {k: int(fb[k]) for k in tuple(COEFFICIENTS) + ACTIVATION_FRAC_KEYS}
        classes = tuple(str(c) for c in js["classes"])
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{jpath}: malformed model.json: {e!r}") from None
    if len(classes) != 12:
        raise ValueError(f"{jpath}: {len(classes)} classes, expected 12")
    coef = {}
    try:
        for name, shape in COEFFICIENTS.items():
            a = read_npz(qpath, name)
            if a.shape != shape or a.dtype != np.int8:
                raise ValueError(f"{name} is {a.dtype}{list(a.shape)}, expected int8{list(shape)}")
            coef[name] = Tensor(np.ascontiguousarray(a), frac[name])
        s = read_npz(qpath, SLOPE)
        if s.shape != () or s.dtype != np.int8:
            raise ValueError(f"{SLOPE} is {s.dtype}{list(s.shape)}, expected an int8 scalar")
    except KeyError as e:
        raise ValueError(f"{qpath}: array {e} is missing") from None
    except (OSError, ValueError) as e:
        raise ValueError(f"{qpath}: {e}") from None
    slope = Tensor(np.int8(s), frac[SLOPE])
    return KwsModel(coef, slope, frac, classes, d, js)
