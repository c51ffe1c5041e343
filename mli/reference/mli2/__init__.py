"""Slow numpy model of the MLI 2.0.2 recurrent kernels (``shared/spec/SPEC_MLI2.md``).

The hypothesis oracle of the 2.x kernels, as :mod:`mli.reference` is for 1.1.
It needs numpy only (no compiled part of mli) and follows the specification
step by step; section numbers in the comments refer to it.

Model of the C API
------------------
A kernel takes :class:`Tensor` objects (``None`` = a NULL tensor pointer), a
cfg object (``None`` = NULL), :class:`Lut` objects and the rounding mode; it
returns the ``mli_status`` code the checked (``DBG_MODE_RET_CODES``) build
returns and, on success, writes the output elements (and the LSTM cell) into
the tensors' buffers and rewrites the output metadata as MLI does.  A
:class:`Buffer` is a byte array with a made-up address, so that two tensors
may share one (in-place calls, the overlap checks).

Arithmetic
----------
Values are int64 numpy arrays; every operation names the width W it models
(``sat(x, 32)`` is SAT_32 ...).  All intermediate values fit in int64: the
widest products are 32 x 32 bits, and the 64-bit saturations are computed
without overflowing.  ``rounding`` is ``"convergent"`` (ROUND_MODE=CONVERGENT,
ties to even) or ``"up"`` (ROUND_MODE=UP, add the half with saturation).
Where C's result is implementation defined (32-bit wrap-around), the model
does what gcc on x86 does, as the specification says.

Calls on which MLI crashes or reads out of bounds (SPEC 16.4: rank-0
tanh/sigm, a NULL cfg in the cells, a NULL out in rnn_dense, a LUT object
whose creation failed) raise ``ValueError`` instead of returning a status.

Example (one fx16 tanh)::

    lut = Lut(capacity=get_lut_size("tanh")); create_lut("tanh", lut)
    x = Tensor.from_array(np.array([4288, -1]), FX_16, frac_bits=12)
    y = Tensor.from_array(np.zeros(2), FX_16)
    assert tanh("fx16", x, lut, y, "up") == OK    # y.read() -> [25576, -8], y.frac_bits 15

:mod:`mli.reference.mli2_cases` runs the case files of ``shared/vectors/mli20`` through it.

Layout (by kernel family, as :mod:`mli.reference` is for 1.1; every name below is
importable from ``mli.reference.mli2``):

* :mod:`.codes`: statuses, element types, cfg enums, the kinds of each kernel;
* :mod:`.fxmath`: shifts, rounding, saturation (section 2), the sa8 requantisation
  blocks (section 6), the rounding modes;
* :mod:`.lut`: LUT objects and the table lookup (sections 4, 5.1);
* :mod:`.tensor`: tensors, buffers, cfg objects (section 3);
  :mod:`.checks`: the check building blocks (13.1);
* :mod:`.transform`: ``tanh``, ``sigm`` and the cells' activation (section 5);
* :mod:`.eltwise`: the cells' element-wise steps (section 10);
* :mod:`.dense`: the dense block, ``fully_connected``, ``rnn_dense`` (sections 7-9);
* :mod:`.cells`: what the cells share; :mod:`.lstm`: ``lstm_cell`` (section 11);
  :mod:`.gru`: ``gru_cell`` (section 12).
"""

from .codes import (BAD_FUNC_CFG, BAD_TENSOR, FX_16, FX_8, INCOMPATEBLE_TENSORS, INT31, KERNEL_KINDS,
                    KIND_TYPES, NOT_ENGH_MEM, OK, RELU_1, RELU_6, RELU_GEN, RELU_NONE, RNN_ACT_NONE,
                    RNN_ACT_SIGM, RNN_ACT_TANH, RNN_DIR_BACKWARD, RNN_DIR_FORWARD, RNN_MAX_INPUT, RNN_OUT_ALL,
                    RNN_OUT_LAST, SA_32, SA_8, SHAPE_MISMATCH, TYPE_MISMATCH)
from .fxmath import (ROUNDING_MODES, add_sat, asr, bias_preround, check_rounding, div_trunc, fcq, mult,
                     norm32, ratio, req, rshr, sat, shl, sub_sat, wrap)
from .lut import LUT_CHECKS, Lut, create_lut, get_lut_size, lut_lookup, lut_table
from .tensor import Buffer, FullyConnectedCfg, RnnCellCfg, RnnDenseCfg, Tensor
from .transform import SA_SIGM_OUT, SA_TANH_OUT, activation, sigm, tanh
from .eltwise import elt_add, elt_mul, fx_add, fx_mul, sa_add, sa_mul
from .dense import dense_block, dense_part, dense_sum, fully_connected, rnn_dense
from .lstm import lstm_cell
from .gru import gru_cell

__all__ = ["ROUNDING_MODES", "OK", "BAD_TENSOR", "SHAPE_MISMATCH", "INCOMPATEBLE_TENSORS",
           "BAD_FUNC_CFG", "NOT_ENGH_MEM", "TYPE_MISMATCH", "FX_8", "FX_16", "SA_8", "SA_32",
           "RNN_DIR_FORWARD", "RNN_DIR_BACKWARD", "RNN_OUT_LAST", "RNN_OUT_ALL", "RNN_ACT_NONE",
           "RNN_ACT_TANH", "RNN_ACT_SIGM", "RELU_NONE", "RELU_GEN", "RELU_1", "RELU_6",
           "RNN_MAX_INPUT", "KIND_TYPES", "INT31", "check_rounding", "sat", "wrap", "add_sat",
           "sub_sat", "shl", "asr", "rshr", "norm32", "div_trunc", "LUT_CHECKS", "lut_table",
           "get_lut_size", "Lut", "create_lut", "lut_lookup", "Buffer", "Tensor", "RnnCellCfg",
           "RnnDenseCfg", "FullyConnectedCfg", "ratio", "mult", "bias_preround", "req", "fcq",
           "fx_mul", "fx_add", "sa_mul", "sa_add", "elt_mul", "elt_add", "SA_TANH_OUT",
           "SA_SIGM_OUT", "activation", "tanh", "sigm", "dense_part", "dense_sum", "dense_block",
           "fully_connected", "rnn_dense", "lstm_cell", "gru_cell", "KERNEL_KINDS"]
