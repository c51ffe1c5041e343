"""The MLI 1.1 HAR smartphone example (``examples/example_har_smartphone``),
run as its firmware runs it: ``mli har``.

Graph (``model.json`` of the shared data): FC1 on each of the 128 time
steps -> ReLU -> LSTM layer 2 (batch-to-batch) -> LSTM layer 3 (batch-to-last,
either the library kernel or, as in the default build, the example's
``CUSTOM_USER_LSTM_LAYER3`` code built from a stacked basic RNN cell,
activations and element-wise kernels) -> FC4 -> 6 class scores.  Bit depth
16 runs the ``*_fx16`` kernels, 816 the ``*_fx8w16d`` kernels (8-bit weights,
16-bit data; activations and eltwise in fx16), 8 the ``*_fx8`` kernels.

The model data are read where they are (``--data``, ``MLI_HAR_DATA`` or
``<project>/../shared/data/har``); nothing is copied into the package.
"""
import argparse
import functools
import json
import os
import sys
from dataclasses import dataclass, field

import numpy as np

from ..io import read_idx
from ..metrics import f32_ulps_apart, log10f
from ..rows import basic_rnn_cell_rows, lstm_cell_rows
from ..kernels import (RnnCellConfig, basic_rnn_cell, eltwise_add, eltwise_mul, fully_connected, lstm_cell,
                      point_to_subtensor, relu, sigm, tanh)
from ..enums import ReluType, RnnActivation, RnnMode
from ..rounding import rounding as rounding_ctx
from ..tensor import Tensor
from .cases import CaseResult
from .jobs import jobs_arg, process_map, row_chunks, use_processes
from .example_data import candidate_dirs, find_data_dir, searched_places as _searched

DEPTHS = {16: ("fx16", "fx16"), 816: ("fx16", "fx8"), 8: ("fx8", "fx8")}  # depth -> (data, weights)
LAYERS = ("fc1", "relu1", "lstm2", "lstm3", "out")
# a case's expected_db may differ from ours by this many float32 ulps (the
# log10f used; ../shared/vectors/mli11/README.md); its S/N compares exactly
DB_ULPS = 2
IR_FILES = {"fc1": "ir_fc1.idx", "relu1": "ir_relu1.idx", "lstm2": "ir_lstm2.idx",
            "lstm3": "ir_lstm3.idx", "out": "ir_fc4.idx"}
COEFFICIENTS = {  # array -> (shape, frac-bits key of model.json)
    "L1_fc_wt": ((32, 9), "FC1_W"), "L1_fc_bias": ((32,), "FC1_B"),
    "L2_lstm_wt": ((4, 32, 64), "LSTM2_W"), "L2_lstm_bias": ((4, 32), "LSTM2_B"),
    "L3_lstm_wt": ((4, 32, 64), "LSTM3_W"), "L3_lstm_bias": ((4, 32), "LSTM3_B"),
    "L4_fc_wt": ((6, 32), "FC4_W"), "L4_fc_bias": ((6,), "FC4_B"),
}
FRAC_KEYS = ("INPUT", "FC1_OUT", "LSTM2_OUT", "LSTM2_CELL", "LSTM3_OUT", "LSTM3_CELL", "FC4_OUT", "IR_GATES")
_DT = {"fx8": np.int8, "fx16": np.int16}


def _candidate_dirs():
    """Where the shared HAR folder may be, in the order they are tried."""
    return candidate_dirs("har")


def default_data_dir():
    """``$MLI_HAR_DATA``, else ``$MLI_SHARED/data/har``, else the first of
    ``<project root>/../shared/data/har`` (in-place build),
    ``./../shared/data/har`` and ``./shared/data/har`` that exists (an
    installed package has no project root of its own)."""
    return find_data_dir("har", "MLI_HAR_DATA", lambda: _candidate_dirs())


def searched_places():
    """The places :func:`default_data_dir` looked in, as one line for a
    "not found" message."""
    return _searched("har", "MLI_HAR_DATA", lambda: _candidate_dirs())


def data_dir_for_case(case_path):
    """The HAR folder of the ``shared/`` tree a case file sits in
    (``<shared>/vectors/<set>/<case>.npz`` -> ``<shared>/data/har``), else
    :func:`default_data_dir`."""
    d = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(case_path)),
                                      "..", "..", "data", "har"))
    return d if os.path.isdir(d) else default_data_dir()


def _check_depth(depth):
    try:
        depth = int(depth)
    except (TypeError, ValueError):
        depth = None
    if depth not in DEPTHS:
        raise ValueError(f"depth: expected 16, 816 or 8, got {depth!r}")
    return depth


def input_frac_bits(depth):
    """Frac bits of the model input: FRQ_BITS(2 integer bits, data type) = 13 or 5."""
    return 8 * np.dtype(_DT[DEPTHS[_check_depth(depth)][0]]).itemsize - 1 - 2


@dataclass
class HarModel:
    """The quantized model of one bit depth.

    Attributes
    ----------
    depth : int
        16, 816 or 8.
    frac : dict
        model.json frac bits of the activations (``INPUT``, ``FC1_OUT``, ...).
    coef : dict
        Coefficient tensors by C name (``L1_fc_wt`` ...), with their frac bits.
    data_dir : str
        Where the data were read from.
    fc1_seq : (Tensor, Tensor)
        FC1 weights zero-padded to [32, 9 + 32] and a zero state at the input
        frac bits: the whole-sequence form of FC1 (see :func:`load_har`).
    """

    depth: int
    frac: dict
    coef: dict
    data_dir: str
    fc1_seq: "tuple | None" = field(default=None, repr=False)

    @property
    def data_type(self):
        return DEPTHS[self.depth][0]


def load_har(data_dir=None, depth=16):
    """Read ``model.json`` and ``quantized_<depth>.npz`` from `data_dir`.

    Parameters
    ----------
    data_dir : str or path, optional
        The shared HAR folder (default: :func:`default_data_dir`).
    depth : {16, 816, 8}

    Returns
    -------
    HarModel

    Raises
    ------
    FileNotFoundError
        The folder or one of its files is missing.
    ValueError
        A file is malformed (missing key or array, wrong shape or dtype).
    """
    depth = _check_depth(depth)
    d = os.fspath(data_dir) if data_dir is not None else default_data_dir()
    if not os.path.isdir(d):
        raise FileNotFoundError(f"HAR data folder not found: {d} (give --data DIR or set MLI_HAR_DATA)")
    jpath, qpath = os.path.join(d, "model.json"), os.path.join(d, f"quantized_{depth}.npz")
    for p in (jpath, qpath):
        if not os.path.isfile(p):
            raise FileNotFoundError(f"HAR data file missing: {p}")
    try:
        with open(jpath, encoding="utf-8") as fh:
            fb = json.load(fh)["frac_bits"][str(depth)]
        frac = {k: int(fb[k]) for k in FRAC_KEYS + tuple(f for _, f in COEFFICIENTS.values())}
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{jpath}: malformed model.json (frac_bits of depth {depth}): {e!r}") from None
    wdt = np.dtype(_DT[DEPTHS[depth][1]])
    try:
        arrays = _npz_arrays(qpath, COEFFICIENTS, missing_ok=True)
    except (OSError, ValueError) as e:
        raise ValueError(f"{qpath}: not a readable .npz file: {e}") from None
    coef = {}
    for name, (shape, fkey) in COEFFICIENTS.items():
        a = arrays.get(name)
        if a is None:
            raise ValueError(f"{qpath}: array {name} is missing")
        if a.shape != shape or a.dtype != wdt:
            raise ValueError(f"{qpath}: {name} is {a.dtype}{list(a.shape)}, expected {wdt}{list(shape)}")
        coef[name] = Tensor(np.ascontiguousarray(a), frac[fkey])
    m = HarModel(depth, frac, coef, d)
    # FC1 over the whole sequence: a batch-to-batch basic RNN (act NONE) whose
    # recurrent weights are zero and whose state has the input's frac bits is
    # the per-step FC, bit for bit (in-to-state shift 0, same bias and output
    # shifts, exact zero products); see tests/test_har_example.py.
    w = coef["L1_fc_wt"]
    w_ext = np.zeros((32, 9 + 32), wdt)
    w_ext[:, :9] = w.numpy()
    m.fc1_seq = (Tensor(w_ext, w.frac_bits), Tensor(np.zeros(32, _DT[m.data_type]), frac["INPUT"]))
    return m


def quantize_input(x_float, depth=16):
    """Quantize a float sequence [T, 9] as the example does
    (``mli_hlp_float_to_fx_tensor``, float32 arithmetic) into the model input format.

    Returns
    -------
    Tensor
        int16 (depth 16, 816) or int8 (depth 8), frac bits 13 or 5.
    """
    depth = _check_depth(depth)
    return Tensor.from_float(x_float, DEPTHS[depth][0], input_frac_bits(depth))


def fc1_per_step(x, model):
    """FC1 exactly as ``user_fc_on_multiple_samples``: one FC call per time step
    on ``point_to_subtensor(x, [t], 1)``.  (128 C calls; :func:`run_har` uses the
    equivalent single call.)"""
    w, b = model.coef["L1_fc_wt"], model.coef["L1_fc_bias"]
    rows = [fully_connected(point_to_subtensor(x, [t], 1), w, b, out_frac_bits=model.frac["FC1_OUT"]).numpy()
            for t in range(x.shape[0])]
    return Tensor(np.stack(rows), model.frac["FC1_OUT"])


def _layer3_custom(x, h0, c0, model):
    """``user_lstm_batch_to_last`` of the example (CUSTOM_USER_LSTM_LAYER3)."""
    w, b = model.coef["L3_lstm_wt"], model.coef["L3_lstm_bias"]
    cfg = RnnCellConfig(mode=RnnMode.ONE_TO_ONE, act=RnnActivation.NONE)
    f_ir, f_c = model.frac["IR_GATES"], c0.frac_bits
    h, c = h0, c0
    for t in range(x.shape[0]):
        # stacked weights [4, 32, 64]: the 4 gate pre-activations [4, 32] at IR frac
        ir = basic_rnn_cell(point_to_subtensor(x, [t], 1), h, w, b, cfg, out_frac_bits=f_ir).numpy()
        i_g, g_g, f_g, o_g = (Tensor(ir[k], f_ir) for k in range(4))
        i_g, g_g, f_g, o_g = sigm(i_g), tanh(g_g), sigm(f_g), sigm(o_g)
        c = eltwise_mul(f_g, c, out_frac_bits=f_c)
        c = eltwise_add(c, eltwise_mul(i_g, g_g, out_frac_bits=f_c))
        h = tanh(c)
        h = eltwise_mul(h, o_g, out_frac_bits=h.frac_bits)
    return h


def input_tensor(x_fx, model, rows=False):
    """`x_fx` as a Tensor in the model's input format, checked: [T, 9], or
    [B, T, 9] with `rows` (an integer array is taken as that format).

    Raises
    ------
    ValueError
        Another element type, frac bits or shape (naming ``x_fx``).
    """
    f = model.frac
    dt = np.dtype(_DT[model.data_type])
    x = x_fx if isinstance(x_fx, Tensor) else Tensor(np.asarray(x_fx), f["INPUT"])
    rank, want = (3, "[B, T, 9]") if rows else (2, "[T, 9]")
    if x.dtype != dt or x.frac_bits != f["INPUT"] or x.rank != rank or x.shape[-1] != 9:
        raise ValueError(f"x_fx: expected {dt}{want} with {f['INPUT']} frac bits, "
                         f"got {x.dtype}{list(x.shape)} with {x.frac_bits} (use quantize_input)")
    return x


def _model_for(depth, layer3, data_dir, model):
    """The HAR model of a run (`model`, or read from `data_dir`), its arguments checked."""
    if layer3 not in ("custom", "library"):
        raise ValueError(f"layer3: expected 'custom' or 'library', got {layer3!r}")
    m = model if model is not None else load_har(data_dir, depth)
    if model is not None and _check_depth(depth) != m.depth:
        raise ValueError(f"depth {depth} does not match the model's depth {m.depth}")
    return m


def _layers_1_2(x, m, rnn, lstm):
    """FC1 (a batch-to-batch basic RNN with zero recurrent weights), ReLU and
    LSTM2 on `x`, with the cell functions of one sequence or of batched rows;
    also layer 3's zero h0 and c0.  (fc1, relu1, lstm2, h0, c0)"""
    f, c = m.frac, m.coef
    dt = np.dtype(_DT[m.data_type])
    w_seq, h_seq = m.fc1_seq
    seq = RnnCellConfig(mode=RnnMode.BATCH_TO_BATCH, act=RnnActivation.NONE)
    fc1 = rnn(x, h_seq, w_seq, c["L1_fc_bias"], seq, out_frac_bits=f["FC1_OUT"])
    relu1 = relu(fc1, ReluType.GEN)

    def zeros(frac):
        return Tensor(np.zeros(32, dt), frac)

    lstm2, _ = lstm(relu1, zeros(f["LSTM2_OUT"]), c["L2_lstm_wt"], c["L2_lstm_bias"],
                    RnnCellConfig(mode=RnnMode.BATCH_TO_BATCH, act=RnnActivation.TANH), zeros(f["LSTM2_CELL"]))
    return fc1, relu1, lstm2, zeros(f["LSTM3_OUT"]), zeros(f["LSTM3_CELL"])


def run_har(x_fx, depth=16, layer3="custom", data_dir=None, *, model=None):
    """Run the HAR network on one quantized input sequence.

    Parameters
    ----------
    x_fx : Tensor or ndarray
        [T, 9] (T = 128 in the example) in the input format of `depth`
        (see :func:`quantize_input`); an integer array is taken as that format.
    depth : {16, 816, 8}
    layer3 : {"custom", "library"}
        The example's default CUSTOM_USER_LSTM_LAYER3 code, or the library
        LSTM in batch-to-last mode.
    data_dir : str, optional
        Model data folder (ignored when `model` is given).
    model : HarModel, optional
        A model from :func:`load_har` (saves re-reading the files).

    Returns
    -------
    dict
        ``fc1``, ``relu1``, ``lstm2`` ([T, 32]), ``lstm3`` ([32]) and ``out``
        ([6]) as :class:`Tensor` (integer data and frac bits).
    """
    m = _model_for(depth, layer3, data_dir, model)
    f = m.frac
    x = input_tensor(x_fx, m)
    c = m.coef
    fc1, relu1, lstm2, h0, c0 = _layers_1_2(x, m, basic_rnn_cell, lstm_cell)
    if layer3 == "custom":
        lstm3 = _layer3_custom(lstm2, h0, c0, m)
    else:
        lstm3, _ = lstm_cell(lstm2, h0, c["L3_lstm_wt"], c["L3_lstm_bias"],
                             RnnCellConfig(mode=RnnMode.BATCH_TO_LAST, act=RnnActivation.TANH), c0)
    out = fully_connected(lstm3, c["L4_fc_wt"], c["L4_fc_bias"], out_frac_bits=f["FC4_OUT"])
    return {"fc1": fc1, "relu1": relu1, "lstm2": lstm2, "lstm3": lstm3, "out": out}


def _layer3_custom_rows(x, h0, c0, model):
    """:func:`_layer3_custom` on B rows at once: x [B, T, 32] (int array), h0 and
    c0 [32] Tensors shared by every row; each step one batched-rows basic RNN call
    for the gate pre-activations, the activations and element-wise kernels on
    [B, 32] (element-wise: each row's values are those of its own call)."""
    w, b = model.coef["L3_lstm_wt"], model.coef["L3_lstm_bias"]
    cfg = RnnCellConfig(mode=RnnMode.ONE_TO_ONE, act=RnnActivation.NONE)
    f_ir, f_c = model.frac["IR_GATES"], c0.frac_bits
    B = x.shape[0]
    h = Tensor(np.broadcast_to(h0.numpy(), (B, 32)).copy(), h0.frac_bits)
    c = Tensor(np.broadcast_to(c0.numpy(), (B, 32)).copy(), f_c)
    for t in range(x.shape[1]):
        xt = Tensor(np.ascontiguousarray(x[:, t]), model.frac["LSTM2_OUT"])
        ir = basic_rnn_cell_rows(xt, h, w, b, cfg, out_frac_bits=f_ir).numpy().reshape(B, 4, 32)
        i_g, g_g, f_g, o_g = (Tensor(np.ascontiguousarray(ir[:, k]), f_ir) for k in range(4))
        i_g, g_g, f_g, o_g = sigm(i_g), tanh(g_g), sigm(f_g), sigm(o_g)
        c = eltwise_mul(f_g, c, out_frac_bits=f_c)
        c = eltwise_add(c, eltwise_mul(i_g, g_g, out_frac_bits=f_c))
        h = tanh(c)
        h = eltwise_mul(h, o_g, out_frac_bits=h.frac_bits)
    return h


def run_har_rows(x_fx, depth=16, layer3="custom", data_dir=None, *, model=None):
    """Run the HAR network on B input sequences at once: :func:`run_har` row
    for row, bit for bit, with each recurrent layer (and FC4, as a basic RNN
    with zero recurrent weights) one batched-rows call (:mod:`mli.rows`; the
    weights are shared by every row) instead of one call per sequence.

    Parameters
    ----------
    x_fx : Tensor or ndarray
        [B, T, 9] (B >= 0) in the input format of `depth`.
    depth, layer3, data_dir, model
        As :func:`run_har`.

    Returns
    -------
    dict
        ``fc1``, ``relu1``, ``lstm2`` ([B, T, 32]), ``lstm3`` ([B, 32]) and
        ``out`` ([B, 6]) as :class:`Tensor`; row r is :func:`run_har`'s result
        for ``x_fx[r]``.
    """
    m = _model_for(depth, layer3, data_dir, model)
    f = m.frac
    dt = np.dtype(_DT[m.data_type])
    x = input_tensor(x_fx, m, rows=True)
    B, T = x.shape[:2]
    if B == 0:                       # no rows: the shapes of the results
        def empty(shape, frac):
            return Tensor(np.zeros(shape, dt), frac)
        fc1 = empty((0, T, 32), f["FC1_OUT"])
        lstm2 = empty((0, T, 32), 15 if dt == np.int16 else 7)
        return {"fc1": fc1, "relu1": empty((0, T, 32), f["FC1_OUT"]), "lstm2": lstm2,
                "lstm3": empty((0, 32), lstm2.frac_bits), "out": empty((0, 6), f["FC4_OUT"])}
    if B == 1:                       # one row: the per-sequence run (less to set up, same values)
        one = run_har(Tensor(x.numpy()[0], x.frac_bits), m.depth, layer3, model=m)
        return {k: Tensor(v.numpy()[None], v.frac_bits) for k, v in one.items()}
    c = m.coef
    fc1, relu1, lstm2, h0, c0 = _layers_1_2(x, m, basic_rnn_cell_rows, lstm_cell_rows)
    if layer3 == "custom":
        lstm3 = _layer3_custom_rows(lstm2.numpy(), h0, c0, m)
    else:
        lstm3, _ = lstm_cell_rows(lstm2, h0, c["L3_lstm_wt"], c["L3_lstm_bias"],
                                  RnnCellConfig(mode=RnnMode.BATCH_TO_LAST, act=RnnActivation.TANH), c0)
    # FC4 of every row: a one-to-one basic RNN (act NONE) with zero recurrent weights and a
    # zero state at the input's frac bits is the FC, bit for bit (as FC1 above)
    w4 = c["L4_fc_wt"]
    w4_ext = np.zeros((6, 32 + 6), w4.dtype)
    w4_ext[:, :32] = w4.numpy()
    out = basic_rnn_cell_rows(lstm3, Tensor(np.zeros(6, dt), lstm3.frac_bits), Tensor(w4_ext, w4.frac_bits),
                              c["L4_fc_bias"], RnnCellConfig(mode=RnnMode.ONE_TO_ONE, act=RnnActivation.NONE),
                              out_frac_bits=f["FC4_OUT"])
    return {"fc1": fc1, "relu1": relu1, "lstm2": lstm2, "lstm3": lstm3, "out": out}


def sn_db(out_fx, frac, ref):
    """The example's quality figures (``measure_err_vfloat``), in float32.

    The prediction is dequantized as ``mli_hlp_fx_tensor_to_float``
    (``float32(2**-frac) * v``); ``ref_acc = sum r*r`` and
    ``noise_acc = sum (r-p)**2`` are accumulated in float32 in index order.

    Parameters
    ----------
    out_fx : Tensor or array_like of int
    frac : int or None
        Frac bits of `out_fx` (None: the tensor's).
    ref : array_like of float
        Reference values, same element count.

    Returns
    -------
    (numpy.float32, numpy.float32)
        ``S/N = sqrtf(ref_acc) / sqrtf(noise_acc)`` (amplitude ratio) and
        ``dB = 10*log10f((ref_acc + 1e-18f) / (noise_acc + 1e-18f))``, with a
        correctly rounded ``log10f`` (:func:`mli.metrics.log10f`): the same on
        every machine; a firmware's libm may give 1 ulp more or less.
    """
    if frac is None:
        frac = out_fx.frac_bits
    v = np.asarray(out_fx.numpy() if isinstance(out_fx, Tensor) else out_fx).reshape(-1)
    p = np.float32(1.0 / 2.0 ** int(frac)) * v.astype(np.float32)
    r = np.asarray(ref, dtype=np.float32).reshape(-1)
    if r.size != p.size or r.size == 0:
        raise ValueError(f"sn_db: {p.size} predicted values against {r.size} reference values")
    d = r - p
    ref_acc = np.cumsum(r * r, dtype=np.float32)[-1]  # sequential: index order, float32
    noise_acc = np.cumsum(d * d, dtype=np.float32)[-1]
    eps = np.float32(1e-18)
    with np.errstate(divide="ignore", invalid="ignore"):
        sn = np.sqrt(ref_acc) / np.sqrt(noise_acc)
        # log10f correctly rounded (numpy's float32 log10 differs by CPU)
        db = np.float32(10) * log10f((ref_acc + eps) / (noise_acc + eps))
    return np.float32(sn), np.float32(db)


def format_sn(sn, db, c_style=False):
    """``"S/N=%-10.1f (%-4.1f db)"``; by default with the field padding
    collapsed as the example README quotes it (``S/N=1823.9 (65.2 db)``),
    with ``c_style=True`` exactly as the firmware's printf pads it."""
    s = "S/N=%-10.1f (%-4.1f db)" % (float(sn), float(db))
    return s if c_style else "S/N=%.1f (%.1f db)" % (float(sn), float(db))


def _npz_arrays(path, keys, missing_ok=False):
    """The arrays `keys` of an .npz file through mli.io (size limit, no pickles)."""
    from ..io.npz import read_npz

    out = {}
    for k in keys:
        try:
            out[k] = read_npz(path, k)
        except KeyError:
            if not missing_ok:
                raise
    return out


def load_reference(data_dir=None):
    """(input_seq_300 float32 [128, 9], out_scores_300 float32 [6]) of ``ref_inout.npz``."""
    d = os.fspath(data_dir) if data_dir is not None else default_data_dir()
    p = os.path.join(d, "ref_inout.npz")
    if not os.path.isfile(p):
        raise FileNotFoundError(f"HAR data file missing: {p}")
    try:
        arrays = _npz_arrays(p, ("input_seq_300", "out_scores_300"))
        x, r = arrays["input_seq_300"], arrays["out_scores_300"]
    except (OSError, KeyError, ValueError) as e:
        raise ValueError(f"{p}: malformed reference file: {e!r}") from None
    if x.shape != (128, 9) or r.shape != (6,):
        raise ValueError(f"{p}: input_seq_300 {list(x.shape)} / out_scores_300 {list(r.shape)}, "
                         "expected [128, 9] / [6]")
    return x.astype(np.float32), r.astype(np.float32)


def layer_quality(result, data_dir=None):
    """Per-layer (S/N, dB) against the float model's ``ir_idx_300/*.idx``."""
    d = os.fspath(data_dir) if data_dir is not None else default_data_dir()
    q = {}
    for name, fname in IR_FILES.items():
        ref = read_idx(os.path.join(d, "ir_idx_300", fname))
        q[name] = sn_db(result[name], None, ref)
    return q


#: single-core seconds per test vector of :func:`accuracy` (batched rows),
#: for :func:`mli.tools.jobs.use_processes`
SECONDS_PER_VECTOR = 0.001


def accuracy(model, layer3="custom", data_dir=None, jobs=1):
    """Classification over ``small_test_base``: the first maximum of the six
    raw integer outputs against the label.  The test vectors run as batched
    rows (:func:`run_har_rows`, the same figures as one at a time), in at
    least `jobs` runs of up to 64 vectors that `jobs` worker processes run at
    once (:func:`mli.tools.jobs.process_map`; forked workers use `model`, workers
    started by a forkserver read it once with :func:`load_har` from
    ``model.data_dir`` at ``model.depth``).  A test
    set too small to pay for starting the workers (the shared one's 30
    vectors are) runs here, on `model`, one run after the other.

    Returns
    -------
    (int, int, ndarray)
        Correct count, test count, predicted classes.
    """
    d = os.fspath(data_dir) if data_dir is not None else model.data_dir
    tests = read_idx(os.path.join(d, "small_test_base", "tests.idx"))
    labels = read_idx(os.path.join(d, "small_test_base", "labels.idx"))
    if tests.ndim != 3 or tests.shape[1:] != (128, 9) or labels.shape != tests.shape[:1]:
        raise ValueError(f"{d}/small_test_base: tests {list(tests.shape)} / labels {list(labels.shape)} "
                         "are not [N, 128, 9] / [N]")
    bounds = row_chunks(len(tests), jobs)
    seconds = len(tests) * SECONDS_PER_VECTOR
    if use_processes(jobs, len(bounds), seconds):
        token = object.__repr__(model)
        _worker.update(token=token, model=model)    # what forked workers inherit
        try:
            parts = list(process_map(functools.partial(_classify_chunk, layer3), [tests[a:b] for a, b in bounds],
                                     jobs, seconds=seconds, init=_load_worker_model,
                                     init_args=(token, model.data_dir, model.depth)))
        finally:
            _worker.clear()
    else:   # in runs as large as one job's
        parts = (_classify(model, layer3, tests[a:b]) for a, b in row_chunks(len(tests)))
    pred = np.array([p for part in parts for p in part], dtype=np.int64)
    return int(np.sum(pred == labels.astype(np.int64))), int(labels.size), pred


def _classify(model, layer3, chunk):
    """The predicted classes of a run of test vectors."""
    # quantized one vector at a time, as before: the same saturation warnings
    x = np.stack([quantize_input(t, model.depth).numpy() for t in chunk])
    out = run_har_rows(x, model.depth, layer3, model=model)["out"]
    return [int(np.argmax(o)) for o in out.numpy()]


_worker: dict = {}    # a --jobs worker process's model (_load_worker_model)


def _load_worker_model(token, data_dir, depth):
    if _worker.get("token") != token:   # not forked from the caller: read the model once
        _worker.update(token=token, model=load_har(data_dir, depth))


def _classify_chunk(layer3, chunk):
    return _classify(_worker["model"], layer3, chunk)


def run_har_case(path, meta, arrays, rounding="convergent", har_data=None):
    """Run one ``har_model`` reference case for ``mli vectors``.

    The five layer outputs, the output frac bits and the example's S/N and
    dB figures (float32, exact) must all match.  The cases record the
    rounding they were generated with (``rounding_shift``, convergent) and,
    unlike the kernel cases, carry no half-up alternative although half-up
    changes their intermediate layers; so they always run in their recorded
    mode and `rounding` is not applied to them.
    """
    name = os.path.splitext(os.path.basename(path))[0]
    tags = meta.get("tags", [])
    layer3 = "library" if "layer3_library" in tags else "custom"
    if har_data is None:
        har_data = data_dir_for_case(path)
    try:
        model = load_har(har_data, meta["kind"])
        _, ref = load_reference(har_data)
        mode = meta.get("rounding_shift", meta.get("rounding_acc", "convergent"))
        with rounding_ctx(mode):
            res = run_har(Tensor(arrays["input_fx"], int(meta["input_frac"])), model.depth, layer3, model=model)
    except (OSError, ValueError, KeyError) as e:
        return CaseResult(name, False, f"{type(e).__name__}: {e}")
    errs = []
    for layer, key in zip(LAYERS, ("expected_fc1", "expected_relu1", "expected_lstm2", "expected_lstm3",
                                   "expected_out_data")):
        got, want = res[layer].numpy(), arrays[key]
        if got.shape != want.shape or got.dtype != want.dtype:
            errs.append(f"{layer}: {got.dtype}{list(got.shape)} != {want.dtype}{list(want.shape)}")
        elif not np.array_equal(got, want):
            idx = np.argwhere(got != want)
            i = tuple(idx[0])
            errs.append(f"{layer}: {len(idx)} of {want.size} differ, first at {list(i)}: {got[i]} != {want[i]}")
    if res["out"].frac_bits != meta["expected_out_frac"]:
        errs.append(f"out.frac_bits {res['out'].frac_bits} != {meta['expected_out_frac']}")
    sn, db = sn_db(res["out"], None, ref)
    # S/N is exact IEEE arithmetic; dB goes through a log10f, which the
    # vectors' README lets differ by 2 float32 ulps
    if sn != np.float32(meta["expected_sn"]) or f32_ulps_apart(db, meta["expected_db"]) > DB_ULPS:
        errs.append(f"S/N {float(sn)!r} ({float(db)!r} db) != {meta['expected_sn']!r} ({meta['expected_db']!r} db)")
    return CaseResult(name, not errs, "; ".join(errs))


def main(argv=None):
    """``mli har``: run the example on its built-in input (and test set)."""
    ap = argparse.ArgumentParser(prog="mli har", description="Run the MLI 1.1 HAR smartphone LSTM example "
                                 "exactly as its firmware does and print its quality figures.")
    ap.add_argument("--data", metavar="DIR", help="HAR data folder (default: $MLI_HAR_DATA, $MLI_SHARED/data/har, "
                    "<project>/../shared/data/har, ./../shared/data/har, ./shared/data/har: the first that exists)")
    ap.add_argument("--depth", type=int, choices=sorted(DEPTHS), default=16,
                    help="MODEL_BIT_DEPTH: 16 = fx16, 816 = 8-bit weights / 16-bit data, 8 = fx8 (default 16)")
    ap.add_argument("--layer3", choices=("custom", "library"), default="custom",
                    help="LSTM layer 3: the example's CUSTOM_USER_LSTM_LAYER3 code (default) or the library LSTM")
    ap.add_argument("--accuracy", action="store_true", help="also classify the 30-vector test set")
    ap.add_argument("--rounding", choices=("convergent", "up"), default="convergent",
                    help="DSP rounding mode (the library's build uses convergent)")
    ap.add_argument("-j", "--jobs", type=jobs_arg, default=1, metavar="N",
                    help="--accuracy: the test set in runs of batched rows on N worker processes "
                    "(0: one per core; default 1; one process when the test set is too small to pay "
                    "for starting them); the output is the same")
    args = ap.parse_args(argv)
    data = args.data if args.data is not None else default_data_dir()
    if args.data is None and not os.path.isdir(data):
        print(f"mli har: HAR data folder not found; looked in {searched_places()} "
              "(give --data DIR or set MLI_HAR_DATA)", file=sys.stderr)
        return 2
    try:
        model = load_har(data, args.depth)
        x_f, ref = load_reference(data)
        with rounding_ctx(args.rounding):
            res = run_har(quantize_input(x_f, args.depth), args.depth, args.layer3, model=model)
            quality = layer_quality(res, data)
            acc = accuracy(model, args.layer3, data, args.jobs) if args.accuracy else None
    except (OSError, ValueError) as e:
        print(f"mli har: {e}", file=sys.stderr)
        return 2
    kinds = DEPTHS[args.depth]
    print(f"HAR smartphone (MLI 1.1 example): depth {args.depth} ({kinds[0]} data, {kinds[1]} weights), "
          f"layer 3 {args.layer3}, rounding {args.rounding}")
    print(f"data: {model.data_dir}")
    out = res["out"]
    with open(os.path.join(model.data_dir, "model.json"), encoding="utf-8") as fh:
        classes = json.load(fh).get("classes", [f"class {i}" for i in range(6)])
    print(f"{'output':<20} {'Q' + str(out.frac_bits):>7} {'float':>10} {'reference':>10}")
    for name, v, p, r in zip(classes, out.numpy(), out.to_float(), ref):
        print(f"  {name:<18} {int(v):>7} {p:>10.6f} {r:>10.6f}")
    print("Result Quality: " + format_sn(*sn_db(out, None, ref)))
    print("per layer, against the float model (ir_idx_300):")
    for name, fname in IR_FILES.items():
        print(f"  {fname:<14} {format_sn(*quality[name])}")
    if acc is not None:
        ok, n, _ = acc
        print(f"Accuracy: {ok}/{n} = {100.0 * ok / n:.1f} % (small_test_base, first maximum of the raw outputs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
