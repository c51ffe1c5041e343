"""The MLI 1.1 kernels, one Python function per C function (named as MLI
minus ``mli_krn_``), plus variant-picking forms (``basic_rnn_cell`` ...).

Every function takes :class:`mli.Tensor` arguments, never modifies them,
and returns new tensors unless ``out=`` (or ``cell_out=``) is given.  A
non-OK status raises the :class:`mli.MliError` subclass of that status, naming
the argument and field the C checker rejected."""
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from . import _core
from ._status import Status, error, raise_for_status
from .enums import KINDS, VARIANT, ElementType, ReluType, RnnActivation, RnnMode, parse_enum
from .tensor import Tensor

__all__ = ["RnnCellConfig", "kind_of"]


def _c_enum(value, enum, field):
    """The member of `enum` for `value`, or the plain int when it is outside
    the enum: a C caller can put any int into an enum field, and MLI 1.1
    never compares cfg.mode or cfg.act with their enums (SPEC 12.3)."""
    if isinstance(value, str):  # a member's name: "tanh", "RNN_ACT_TANH", "batch_to_batch"
        try:
            return parse_enum(value, enum, ("RNN_ACT_", "RNN_"))
        except ValueError as e:
            raise error(Status.BAD_FUNC_CFG, "RnnCellConfig", "cfg", field, str(e)) from None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"RnnCellConfig: {field} must be an int, a name or an {enum.__name__}, "
                        f"got {type(value).__name__}")
    v = int(value)
    if not -2 ** 31 <= v < 2 ** 31:
        raise error(Status.BAD_FUNC_CFG, "RnnCellConfig", "cfg", field, f"must fit a C int, got {v}")
    try:
        return enum(v)
    except ValueError:
        return v


@dataclass
class RnnCellConfig:
    """`mli_rnn_cell_cfg`: ``mode`` (:class:`mli.RnnMode`), ``act``
    (:class:`mli.RnnActivation`) and ``ir`` (the ``ir_tsr`` scratch tensor;
    allocated per call when None).  Like the C struct, mode and act may hold
    any int: values outside the enums reach the kernel, which computes as
    MLI 1.1 does for them (SPEC 12.3)."""

    mode: int = RnnMode.ONE_TO_ONE
    act: int = RnnActivation.TANH
    ir: Optional[Tensor] = None

    def __post_init__(self):
        self.mode = _c_enum(self.mode, RnnMode, "mode")
        self.act = _c_enum(self.act, RnnActivation, "act")
        if self.ir is not None and not isinstance(self.ir, Tensor):
            raise TypeError("cfg.ir: expected an mli.Tensor or None")


def _tensor(name, t, fname):
    if not isinstance(t, Tensor):
        raise TypeError(f"{fname}: {name} must be an mli.Tensor, got {type(t).__name__}")
    return t


def kind_of(data, weights=None):
    """'fx8', 'fx16' or 'fx8w16d' from the element types of data (and weights)."""
    d = data.el_type
    w = d if weights is None else weights.el_type
    for k, (de, we) in KINDS.items():
        if (d, w) == (de, we) and (weights is not None or k != "fx8w16d"):
            return k
    raise error(Status.TYPE_MISMATCH, "mli", "weights" if weights is not None else "in", "el_type",
                f"no MLI kernel takes data el_type {d} with weights el_type {w}")


def _dtype(kind):
    return np.int8 if kind == "fx8" else np.int16


def _count(t):
    return math.prod(t.shape) if t.rank <= 4 else 0


def _not_a_strided_copy(name, out, fname):
    """An output must be the caller's memory, not mli.Tensor's copy of a strided view."""
    if getattr(out, "_strided_copy", False):
        raise ValueError(f"{fname}: {name} wraps a copy of a non-contiguous array, so the results would not "
                         f"reach the caller's array: pass np.ascontiguousarray(...) and read the tensor")


# The kernel functions hand their arguments to the bridge, which runs every
# check of this API (in this order: each tensor argument's type, cfg, the
# output's type, contiguity and aliasing, then C's checks) and marshals once.
_core.register(Tensor, RnnCellConfig, error, raise_for_status, np.zeros, np.dtype(np.int8), np.dtype(np.int16),
               RnnMode.BATCH_TO_BATCH, RnnMode.BATCH_TO_LAST, RnnActivation.NONE)
_unary = _core.unary_api


def _named(fn, name):
    """A kernel function of the bridge (a closure over its variant and name: one
    call per kernel call, no Python layer) named as this module's function."""
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    return fn


def _make_rnn(kind):
    variant = VARIANT[kind]
    fname = f"basic_rnn_cell_{kind}"

    fn = _named(_core.rnn_kernel(variant, fname), fname)
    fn.__doc__ = f"""``mli_krn_basic_rnn_cell_{kind}(in, prev_out, weights, bias, cfg, out)``.

    Parameters
    ----------
    x : Tensor
        ``in``: [N] (one-to-one) or [T, N...] (batch modes), {kind} data.
    prev_out : Tensor
        The state h0, rank 1, M values.
    weights, bias : Tensor
        [M, N+M] and [M] (or stacked [L, M, N+M] and [L, M] in one-to-one mode).
    cfg : RnnCellConfig
        mode and output activation; ``cfg.ir`` is allocated when None.
    out : Tensor, optional
        Where to write the result (else a new tensor).
    out_frac_bits : int, optional
        Output frac bits for act NONE (default: prev_out's); 15 / 7 otherwise.

    Returns
    -------
    Tensor
        [T, K] in batch-to-batch mode, else bias-shaped (the last step).

    Raises
    ------
    MliError
        The subclass of the C status: BAD_TENSOR, SHAPE_MISMATCH,
        INCOMPATEBLE_TENSORS, BAD_FUNC_CFG, NOT_ENGH_MEM or TYPE_MISMATCH.
    """
    return fn


def _make_lstm(kind):
    variant = VARIANT[kind]
    fname = f"lstm_cell_{kind}"

    fn = _named(_core.lstm_kernel(variant, fname), fname)
    fn.__doc__ = f"""``mli_krn_lstm_cell_{kind}(in, prev_out, weights, bias, cfg, cell, out)``.

    Weights [4, M, N+M] and bias [4, M] in MLI's gate order i, g, f, o.
    The cell is read and a new updated cell is returned (the caller's
    ``cell`` is unchanged unless it is passed as ``cell_out``).

    Returns
    -------
    (Tensor, Tensor)
        The output ([T, M] in batch-to-batch mode, else [M]) and the cell.

    Raises
    ------
    MliError
        BAD_TENSOR, SHAPE_MISMATCH, INCOMPATEBLE_TENSORS, BAD_FUNC_CFG,
        NOT_ENGH_MEM or TYPE_MISMATCH, as the C checks decide.
    """
    return fn


def _make_fc(kind):
    variant = VARIANT[kind]
    fname = f"fully_connected_{kind}"

    fn = _named(_core.fc_kernel(variant, fname), fname)
    fn.__doc__ = f"""``mli_krn_fully_connected_{kind}(in, weights, bias, out)``: y = W x + b.

    ``out_frac_bits`` (default: in's) is the output format the caller asks for.
    Raises the MliError subclass of the C status."""
    return fn


def _make_unary(op, kind):
    variant = VARIANT[kind]
    fname = f"{op}_{kind}"
    code = ("tanh", "sigm").index(op)

    fn = _named(_core.unary_kernel(code, variant, fname), fname)
    fn.__doc__ = f"""``mli_krn_{op}_{kind}(in, out)``: {op} by MLI's Q15 lookup table with
    linear interpolation; output frac bits {15 if kind == 'fx16' else 7}.  ``out`` may be ``x`` (in place)."""
    return fn


def _make_relu(kind):
    variant = VARIANT[kind]
    fname = f"relu_{kind}"

    def fn(x, relu_type=ReluType.GEN, *, out=None):
        _tensor("in", x, fname)
        if isinstance(relu_type, str):  # a name: "gen", "relu_6", "MLI_RELU_1"
            try:
                relu_type = parse_enum(relu_type, ReluType, ("MLI_RELU_",))
            except ValueError as e:
                raise error(Status.BAD_FUNC_CFG, "mli_krn_" + fname, "cfg", "type", str(e)) from None
        elif isinstance(relu_type, bool) or not isinstance(relu_type, (int, np.integer)):
            raise TypeError(f"{fname}: relu_type must be an mli.ReluType, an int or a name, "
                            f"got {type(relu_type).__name__}")
        rt = int(relu_type)
        if not -2 ** 31 <= rt < 2 ** 31:
            raise error(Status.BAD_FUNC_CFG, "mli_krn_" + fname, "cfg", "type",
                        f"must be an mli_relu_type (an int32), got {rt}")
        return _unary(2, variant, fname, x, out, rt)

    fn.__name__ = fn.__qualname__ = fname
    fn.__doc__ = f"``mli_krn_relu_{kind}(in, cfg, out)`` with ``cfg.type = relu_type`` (:class:`mli.ReluType`)."
    return fn


def _make_eltwise(op, kind):
    variant = VARIANT[kind]
    fname = f"eltwise_{op}_{kind}"
    code = _core.ELTWISE_OPS.index(op)

    fn = _named(_core.eltwise_kernel(code, variant, fname), fname)
    fn.__doc__ = (f"``mli_krn_eltwise_{op}_{kind}(in1, in2, out)``; a one-element (or rank-0) operand "
                  "is broadcast." + (" ``out_frac_bits`` (default in1's) sets the product's format."
                                     if op == "mul" else " Both inputs need the same frac bits."))
    return fn


_OWN = {}   # name -> the function defined here (mli.graph's fused run calls the bridge only for these)


def _export(fn):
    globals()[fn.__name__] = _OWN[fn.__name__] = fn
    __all__.append(fn.__name__)
    return fn


for _k in ("fx8", "fx16", "fx8w16d"):
    _export(_make_rnn(_k))
    _export(_make_lstm(_k))
    _export(_make_fc(_k))
for _k in ("fx8", "fx16"):
    _export(_make_unary("tanh", _k))
    _export(_make_unary("sigm", _k))
    _export(_make_relu(_k))
    for _op in ("add", "sub", "mul", "max", "min"):
        _export(_make_eltwise(_op, _k))


def basic_rnn_cell(x, prev_out, weights, bias, cfg, **kw):
    """:func:`basic_rnn_cell_fx8`/``_fx16``/``_fx8w16d`` picked from the element types."""
    _tensor("in", x, "basic_rnn_cell")
    _tensor("weights", weights, "basic_rnn_cell")
    return globals()["basic_rnn_cell_" + kind_of(x, weights)](x, prev_out, weights, bias, cfg, **kw)


def lstm_cell(x, prev_out, weights, bias, cfg, cell, **kw):
    """:func:`lstm_cell_fx8`/``_fx16``/``_fx8w16d`` picked from the element types."""
    _tensor("in", x, "lstm_cell")
    _tensor("weights", weights, "lstm_cell")
    return globals()["lstm_cell_" + kind_of(x, weights)](x, prev_out, weights, bias, cfg, cell, **kw)


def fully_connected(x, weights, bias, **kw):
    """:func:`fully_connected_fx8`/``_fx16``/``_fx8w16d`` picked from the element types."""
    _tensor("in", x, "fully_connected")
    _tensor("weights", weights, "fully_connected")
    return globals()["fully_connected_" + kind_of(x, weights)](x, weights, bias, **kw)


def _by_data(name):
    def fn(x, *args, **kw):
        return globals()[f"{name}_{kind_of(_tensor('in', x, name))}"](x, *args, **kw)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f":func:`{name}_fx8` or ``_fx16`` picked from the element type of the input."
    return fn


for _n in ("tanh", "sigm", "relu") + tuple(f"eltwise_{o}" for o in ("add", "sub", "mul", "max", "min")):
    _export(_by_data(_n))
__all__ += ["basic_rnn_cell", "lstm_cell", "fully_connected"]


# ------------------------------------------------------------------ helpers
def count_elem_num(t, start_dim=0):
    """``mli_hlp_count_elem_num``: product of shape[start_dim:rank] (0 when start_dim >= rank)."""
    if isinstance(start_dim, bool) or not 0 <= int(start_dim) < 2 ** 32:
        raise ValueError(f"count_elem_num: start_dim must be in 0..2**32-1, got {start_dim!r}")
    return _core.count_elem_num(_tensor("in", t, "count_elem_num"), int(start_dim))


def tensor_element_size(t):
    """``mli_hlp_tensor_element_size``: bytes per element of the el_type."""
    return _core.tensor_element_size(_tensor("in", t, "tensor_element_size"))


def point_to_subtensor(t, start_coord, first_out_dim_size=1):
    """``mli_hlp_point_to_subtensor``: a view of `t` starting at ``start_coord``
    (one coordinate per leading dimension) with ``first_out_dim_size`` entries
    on the first kept dimension.  The view shares `t`'s memory."""
    _tensor("in", t, "point_to_subtensor")
    coords = [int(c) for c in start_coord]
    if not 1 <= len(coords) <= 4 or not all(0 <= c < 2 ** 32 for c in coords):
        raise error(Status.BAD_FUNC_CFG, "mli_hlp_point_to_subtensor", "cfg", "start_coord",
                    f"needs 1 to 4 coordinates in 0..2**32-1, got {list(start_coord)}")
    if not 0 <= int(first_out_dim_size) <= 255:
        raise error(Status.BAD_FUNC_CFG, "mli_hlp_point_to_subtensor", "cfg", "first_out_dim_size",
                    f"must be in 0..255 (a uint8_t), got {first_out_dim_size}")
    out = Tensor()
    raise_for_status(_core.point_to_subtensor(t, coords, len(coords), int(first_out_dim_size), out),
                     "mli_hlp_point_to_subtensor")
    return out


def convert_tensor(t, el_type, frac_bits):
    """``mli_hlp_convert_tensor``: a new tensor of `el_type` ("fx8"/"fx16")
    and `frac_bits`, values shifted with rounding and saturated."""
    from .tensor import element_type

    fname = "mli_hlp_convert_tensor"
    _tensor("in", t, "convert_tensor")
    et = element_type(el_type)
    es = 1 if et == ElementType.FX_8 else 2
    need = _count(t) * es      # the bytes MLI's out capacity check asks for
    fx_in = t.el_type in (ElementType.FX_8, ElementType.FX_16)
    data = not t.data_null and t.scalar_value is None
    # an fx input passes CHK_TENSOR(in) only when its capacity (never more than
    # its buffer) holds its shape, so that out costs at most twice the input
    backed = fx_in and data and _count(t) * (1 if t.el_type == ElementType.FX_8 else 2) <= t.capacity
    if need <= _SMALL_OUT or (backed and need <= 0xFFFFFFFF):
        return _convert_into(t, need, es, et, frac_bits)
    # a shape that no data vouches for: MLI's checks before out's capacity
    # first, with an out of capacity 0 (nothing is written when it fails)
    probe = Tensor.empty(1, et, frac_bits)
    probe.capacity = 0
    st = _core.convert_tensor(t, probe)
    failed = _core.last_error()
    if st != Status.NOT_ENGH_MEM or failed[0] != st or failed[2] != "out":
        raise_for_status(st, fname)
    if need > 0xFFFFFFFF:
        raise error(Status.NOT_ENGH_MEM, fname, "out", "capacity",
                    f"is too small for the result: {need} bytes exceed the largest capacity", expected=need,
                    actual=0xFFFFFFFF)
    if fx_in:   # what C answers once out is large enough: MLI would read through NULL
        raise error(Status.BAD_TENSOR, fname, "in", "data", "is NULL", mlipy_safety=True)
    # MLI converts nothing for this el_type and answers OK with out's shape set (SPEC 12.3)
    from .io.limits import max_array_bytes
    if need > max_array_bytes():
        raise error(Status.NOT_ENGH_MEM, fname, "in", "shape",
                    f"asks for a {need}-byte out, above the {max_array_bytes()}-byte limit for data no buffer "
                    f"holds (in.el_type {t.el_type} is not an fx type, so MLI converts nothing)",
                    expected=max_array_bytes(), actual=need, mlipy_safety=True)
    return _convert_into(t, need, es, et, frac_bits)


_SMALL_OUT = 1 << 16   # bytes: an output this small is allocated before any check


def _convert_into(t, need, es, et, frac_bits):
    """convert_tensor's call into a new out of capacity `need` (its whole buffer)."""
    out = Tensor.empty(max(-(-need // es), 1), et, frac_bits)
    out.capacity = need
    raise_for_status(_core.convert_tensor(t, out), "mli_hlp_convert_tensor")
    return out


__all__ += ["count_elem_num", "tensor_element_size", "point_to_subtensor", "convert_tensor"]


# ------------------------------------------------------------ prepared calls
def prepare(kernel, x, prev_out, weights, bias, cfg, cell=None, *, out):
    """Bind a basic RNN or LSTM call once, for calling again and again with
    no marshalling or allocation (e.g. one-to-one stepping from Python).

    ``kernel`` is one of the ``basic_rnn_cell_*`` / ``lstm_cell_*`` functions.
    The weights are copied now (later changes to the caller's weights do not
    reach the prepared call) and kept packed; ``x``, ``prev_out``, ``bias``,
    ``cell`` and ``out`` are used as they are at each call: update their
    contents in place (e.g. ``x.numpy()[...] = next_input``).  Like the C
    kernel, the call writes ``out`` and updates ``cell`` in place.

    Returns a callable taking no argument; it raises the MliError of a
    non-OK status.
    """
    name = getattr(kernel, "__name__", "")
    lstm = name.startswith("lstm_cell_")
    if not (lstm or name.startswith("basic_rnn_cell_")) or name.rsplit("_", 1)[-1] not in VARIANT:
        raise TypeError("prepare: kernel must be one of mli.basic_rnn_cell_* / mli.lstm_cell_*")
    kind = name.rsplit("_", 1)[-1]
    for n, t in (("in", x), ("prev_out", prev_out), ("weights", weights), ("bias", bias), ("out", out)):
        _tensor(n, t, "prepare")
    if lstm:
        _tensor("cell", cell, "prepare")
    if not isinstance(cfg, RnnCellConfig):
        raise TypeError("prepare: cfg must be an mli.RnnCellConfig")
    fname = "mli_krn_" + name
    # the bridge's checks of the caller's tensors (the caller's weights too:
    # the handle computes from a copy of them), then the kernel's C checks on
    # the arguments as bound now, before anything is allocated from their
    # shapes (a cfg.ir made here stands in as one the checks accept): a bad
    # argument fails here, naming it, and no handle is made
    given = (cfg.ir, cell, out) if lstm else (cfg.ir, out)
    _core.check_call(("in", "prev_out", "weights", "bias", "cfg.ir_tsr") + (("cell",) if lstm else ()) + ("out",),
                     (x, prev_out, weights, bias), given)
    _not_a_strided_copy("out", out, "prepare")
    raise_for_status(_core.check_cell(lstm, VARIANT[kind], x, prev_out, weights, bias, int(cfg.mode), int(cfg.act),
                                      cfg.ir, cell if lstm else None, out), fname)
    ir = cfg.ir
    if ir is None and (lstm or cfg.mode == RnnMode.BATCH_TO_LAST):
        ir = Tensor(np.zeros(max(4 * _count(prev_out) if lstm else _count(bias), 1), _dtype(kind)))

    def on_error(st):
        raise_for_status(st, fname)

    return _core.PreparedCall(lstm, VARIANT[kind], x, prev_out, weights.copy(), bias, int(cfg.mode), int(cfg.act),
                              ir, cell if lstm else None, out, on_error)


__all__.append("prepare")
