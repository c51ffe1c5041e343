"""Slow, obviously correct pure-numpy model of the MLI 1.1 fixed-point kernels.

Every function computes with exact Python integers (see :mod:`.fxmath`) and
follows ``shared/spec/SPEC.md`` step by step; it is the oracle the compiled
kernels are tested against.  Arguments are plain arrays plus frac bits;
``kind`` is "fx8", "fx16" or "fx8w16d"; ``rounding`` is "convergent"
(default, the library's setting) or "up" (round half up everywhere).

The MLI 2.0.2 twin is the subpackage :mod:`mli.reference.mli2`, split by the same
kernel families (:mod:`mli.reference.mli2_cases` runs the ``vectors/mli20`` case files
through it); it is not imported here.
"""

from .dense import dense, fully_connected
from .eltwise import eltwise
from .helpers import convert_tensor, float_to_fx, fx_to_float
from .lstm import lstm_cell, lstm_cell_update, lstm_gates, lstm_hidden
from .rnn import (RNN_ACT_NONE, RNN_ACT_SIGM, RNN_ACT_TANH, RNN_BATCH_TO_BATCH,
                  RNN_BATCH_TO_LAST, RNN_ONE_TO_ONE, basic_rnn_cell)
from .transform import leaky_relu, lut_sigm, lut_tanh, relu, sigm, softmax, tanh
from . import conv2d, data, pool  # the rest of MLI 1.1: convolutions, pooling, permute / concat / padding2d

__all__ = [
    "dense", "fully_connected", "eltwise", "convert_tensor", "float_to_fx",
    "fx_to_float", "lstm_cell", "lstm_gates", "lstm_cell_update", "lstm_hidden",
    "basic_rnn_cell", "lut_tanh", "lut_sigm", "relu", "sigm", "tanh",
    "RNN_ONE_TO_ONE", "RNN_BATCH_TO_BATCH", "RNN_BATCH_TO_LAST",
    "RNN_ACT_NONE", "RNN_ACT_TANH", "RNN_ACT_SIGM", "leaky_relu", "softmax", "conv2d", "data", "pool",
]
