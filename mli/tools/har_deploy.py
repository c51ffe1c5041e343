"""The HAR example's network as a deployable program (:mod:`mli.deploy`),
as its firmware computes it: FC1 on each of the 128 time steps (the
example's ``user_fc_on_multiple_samples``: one ``fully_connected`` call on
a row view of the input and of FC1's output), ReLU, LSTM2 batch-to-batch,
LSTM3 batch-to-last (the library LSTM, ``--layer3 library`` of ``mli
har``), FC4; every state zeroed at each inference."""
import numpy as np

import mli

from ..deploy import Program
from .har import DEPTHS

__all__ = ["har_program", "har_samples"]

KERNEL_KIND = {16: "fx16", 816: "fx8w16d", 8: "fx8"}
STEPS, FEATURES, UNITS, CLASSES = 128, 9, 32, 6


def p_dtype(el):
    return np.int8 if el == "fx8" else np.int16


def _lstm(p, kind, data, f, name, x, w, b, mode, out_shape):
    """An LSTM layer with its zero states, scratch and output tensor."""
    h = p.add(name + "_prev_out", data, f[name.upper() + "_OUT"], (UNITS,), "state",
              np.zeros(UNITS, p_dtype(data)), per_run=True)
    c = p.add(name + "_cell", data, f[name.upper() + "_CELL"], (UNITS,), "state",
              np.zeros(UNITS, p_dtype(data)), per_run=True)
    p.add(name + "_ir", data, 0, (4 * UNITS,), "scratch")
    p.add(name, data, f[name.upper() + "_OUT"], out_shape, "activation")
    p.call(f"mli_krn_lstm_cell_{kind}", "lstm", (x, h.name, w, b), name, (mode, mli.RnnActivation.TANH),
           state=(c.name,), scratch=(name + "_ir",))


def har_program(model):
    """The :class:`mli.deploy.Program` of `model` (:func:`mli.tools.har.load_har`,
    any depth): input ``x`` ([128, 9] in the input format), output ``out``
    ([6]); the layers' outputs are ``fc1``, ``relu1``, ``lstm2``, ``lstm3``
    as ``mli har --layer3 library`` gives them."""
    f, c = model.frac, model.coef
    data, kind = DEPTHS[model.depth][0], KERNEL_KIND[model.depth]
    p = Program(f"har{model.depth}")
    p.add("x", data, f["INPUT"], (STEPS, FEATURES), "input")
    for name, t in c.items():
        p.add_const(name, t)
    p.add("fc1", data, f["FC1_OUT"], (STEPS, UNITS), "activation")
    for t in range(STEPS):
        p.add_view(f"x_{t}", "x", t)
        p.add_view(f"fc1_{t}", "fc1", t)
        p.call(f"mli_krn_fully_connected_{kind}", "fc", (f"x_{t}", "L1_fc_wt", "L1_fc_bias"), f"fc1_{t}")
    p.add("relu1", data, f["FC1_OUT"], (STEPS, UNITS), "activation")
    p.call(f"mli_krn_relu_{data}", "relu", ("fc1",), "relu1", mli.ReluType.GEN)
    _lstm(p, kind, data, f, "lstm2", "relu1", "L2_lstm_wt", "L2_lstm_bias", mli.RnnMode.BATCH_TO_BATCH,
          (STEPS, UNITS))
    _lstm(p, kind, data, f, "lstm3", "lstm2", "L3_lstm_wt", "L3_lstm_bias", mli.RnnMode.BATCH_TO_LAST, (UNITS,))
    p.add("out", data, f["FC4_OUT"], (CLASSES,), "output")
    p.call(f"mli_krn_fully_connected_{kind}", "fc", ("lstm3", "L4_fc_wt", "L4_fc_bias"), "out")
    return p


def har_samples(model, n):
    """The first `n` vectors of the example's test set (``small_test_base``),
    quantized as ``mli har`` does, as inputs of :func:`har_program`."""
    import os

    from ..io.idx import read_idx
    from .har import quantize_input
    tests = read_idx(os.path.join(model.data_dir, "small_test_base", "tests.idx"))
    if tests.ndim != 3 or tests.shape[1:] != (STEPS, FEATURES):
        raise ValueError(f"{model.data_dir}/small_test_base/tests.idx: {list(tests.shape)} is not [N, 128, 9]")
    if not 1 <= n <= len(tests):
        raise ValueError(f"--samples: expected 1..{len(tests)} (the test set's vectors), got {n}")
    return [{"x": quantize_input(tests[i], model.depth).numpy()} for i in range(n)]
