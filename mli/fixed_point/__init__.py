"""Run the recurrent layers of an OpenVINO IR model on the MLI fixed-point kernels.

:func:`to_fixed_point` takes a float model from :func:`mli.ir.read_model` and
calibration inputs, and returns a :class:`FixedPointModel` in which every
``LSTMCell`` (opset1/4), ``RNNCell`` (opset1), ``LSTMSequence`` / ``RNNSequence``
(opset5) layer -- in TensorIterator / Loop bodies or at top level -- runs on
``mli_krn_lstm_cell_*`` / ``mli_krn_basic_rnn_cell_*`` (cells: one-to-one mode,
one call per batch row and step; sequences: batch-to-batch) through a
:class:`mli.graph.KernelBody`, and every ``GRUCell`` (opset3) / ``GRUSequence``
(opset5) on a GRU composed from MLI 1.1 kernels (:class:`mli.fixed_point.gru.GruCell`,
see below).  The rest of the graph stays
float: the cell's inputs X, H (and C) are quantized where they enter the
cell and its outputs dequantized where they leave it.  (Requantizing a
dequantized state is exact, so a recurrence through back edges computes what
the kernel computes on firmware.)

Conversion of a cell
--------------------
* Gate order: OpenVINO's LSTMCell blocks f, i, c, o become MLI's i, g, f, o;
  W [4M, N] and R [4M, M] are stacked into MLI's weights [4, M, N+M] and
  B [4M] into [4, M] (RNNCell: [M, N+M] and [M]).
* Activations must be the defaults (LSTMCell sigmoid, tanh, tanh; RNNCell
  tanh; GRU sigmoid, tanh), ``clip`` 0 (LSTM, RNN) and no
  ``activations_alpha/beta``; W, R and B must be
  constants: a Const, a Const through Convert (f16 compression), Transpose,
  Reshape, Squeeze, Unsqueeze, Split, VariadicSplit, Concat, Gather, Slice,
  StridedSlice or a static ShapeOf, or a TensorIterator/Loop invariant input fed
  by one of those in the outer graph.  Anything else raises
  :class:`FixedPointError` naming the layer.
* ``LSTMSequence``-5 / ``RNNSequence``-5: each direction is its own cell (own
  frac bits, calibrated on that direction's steps) and runs each batch row as
  a batch-to-batch MLI call over the row's valid steps, the rows of one length
  together in ONE batched-rows call (:mod:`mli.rows`, bit-identical to a call
  per row; ``sequence_lengths`` honoured; the reverse direction is fed its valid
  part backwards); outputs past a row's length are 0 and its final state is
  that of its last valid step.
* ``GRUCell`` / ``GRUSequence``: MLI 1.1 has no GRU kernel, so each direction
  is a :class:`mli.fixed_point.gru.GruCell` stepped in Python over the row's valid steps
  (the reset gate sits inside the candidate: no single MLI call computes a GRU
  sequence).  Per step and batch row it calls (the rows of one length step
  together: the basic RNN cells as batched rows, the fully connected parts as
  batched rows of a basic RNN with zero recurrent weights, the other kernels on
  [B, ...] tensors; the same values):

  1. ``basic_rnn_cell`` one-to-one, act NONE, stacked weights [2, M, N+M]
     (``[W_z | R_z]``, ``[W_r | R_r]``), bias [2, M] -> z, r pre-activations
     at frac 12 (16-bit data) / 4 (8-bit);  (``clip``: ``eltwise_min``,
     ``eltwise_max`` against +-clip)
  2. ``sigm`` -> z, r (frac 15 / 7);
  3. ``linear_before_reset`` false: ``eltwise_mul(r, h)``, then
     ``basic_rnn_cell`` one-to-one, act TANH, weights ``[W_h | R_h]`` [M, N+M]
     on (x, r*h) -> n;  (``clip``: act NONE, ``eltwise_min/max``, ``tanh``)
     ``linear_before_reset`` true: ``fully_connected(x, W_h, Wb_h)`` -> xn,
     ``fully_connected(h, R_h, Rb_h)`` -> hn, ``eltwise_mul(r, hn)``,
     ``eltwise_add(xn, r*hn)``, (``clip``: ``eltwise_min/max``), ``tanh`` -> n;
  4. ``eltwise_mul(z, h)``, ``eltwise_mul(z, n)``, ``eltwise_sub(n, z*n)``,
     ``eltwise_add(n - z*n, z*h)`` -> h' = (1 - z) n + z h (no intermediate
     leaves [-1, 1)).

  8 calls per step (11 with ``linear_before_reset``; +2 per clamp with
  ``clip``).  Error it adds beyond the quantized x, h and weights: z, r and n
  pass through MLI's sigm/tanh lookup tables (linear interpolation, about
  2^-13 at 16 bits) and r*h, z*h, z*n, n - z*n are each rounded to the data
  format (1/2 LSB); pre-activations saturate at +-8 like MLI's own cells.  On
  the 23 public OpenVINO GRU cases fx16 reaches 59.5-65.1 dB against the float
  run (an independent simulation with MLI's tables: 59.9-66.1 dB; with ideal
  activations 70-78 dB: the tables dominate).  Directions, ``sequence_lengths``
  and the outputs past a row's length are handled as for the other sequences.
  ``clip`` is supported for GRU only; activations must be the defaults
  (sigmoid, tanh).

Frac bits (per cell, from the float model run on the calibration inputs)
------------------------------------------------------------------------
* ``h`` (state) = output frac = 15 (16-bit data) or 7 (8-bit data): MLI's
  outputs have that frac and its shifts use the prev_out frac at every step.
  Initial states beyond [-1, 1) saturate (noted in :meth:`FixedPointModel.summary`).
* ``x``: the largest frac holding the range X took at the cell
  (:func:`mli.frac_bits_for`); ``c`` (LSTM): the same for the cell state (C in
  and out over all steps); ``w``: the same for the stacked W and R.
* Accumulator headroom: ``w`` and then ``x`` frac are lowered until the largest
  input-part and full pre-activation seen, at frac ``x+w`` and ``h+w``, stay
  below half the accumulator range (2^39 for fx16's 40-bit accumulator,
  2^31 for fx8 / fx8w16d) -- usually nothing changes.
* ``b``: the largest frac holding B, at most ``x + w`` (MLI's bias shift must
  not be negative).
* GRU: each MLI weight tensor (the stacked z/r one, the candidate's, or W_h and
  R_h with ``linear_before_reset``) gets its own ``w`` and ``b`` frac by the same
  rules (headroom from the calibrated input part and whole of that call's
  pre-activation); with ``linear_before_reset`` xn, hn, r*hn and their sum share
  a frac of at most 12 / 4, lowered if calibration saw them beyond +-8.
* Gate pre-activations are computed at frac 12 (16-bit) / 4 (8-bit) and
  saturate at +-8 (MLI's fixed choice); the share of saturated values seen in
  calibration is reported.

Layout
------
* :mod:`.model`: :func:`to_fixed_point` and :class:`FixedPointModel`;
* :mod:`.registry`: the converter interface and registry -- every op type converted
  is named once, by its converter; :mod:`.converters`: the converters, one per op
  type, by family (:mod:`.converters.recurrent`: the LSTM, RNN and GRU cells and
  sequences);
* :mod:`.constants`: the weights, folded from the graph; :mod:`.calibration`: the
  float run recording what each cell meets (:class:`.calibration.Stats`);
  :mod:`.program`: the model's program with the converted layers' steps replaced;
* :mod:`.backends`: one backend per MLI library behind one interface (plan a unit,
  run a cell op, run a sequence op; :class:`.backends.base.Backend`), chosen by
  name: :mod:`.backends.mli1` (MLI 1.1) and :mod:`.backends.mli2` (MLI 2.0.2);
* :mod:`.gru`: the GRU composed from MLI 1.1 kernels (:class:`.gru.GruCell`);
* :mod:`.errors`: :class:`FixedPointError`.

Whole models (``scope="model"``)
--------------------------------
``to_fixed_point(model, calib, kind, scope="model")`` runs every layer on an MLI 1.1
kernel and returns a :class:`WholeModel` (:mod:`.whole`: how it runs and how formats are
chosen; :mod:`.analysis`: which op becomes which kernel, and the one refusal naming every
op without one; :mod:`.plan`: the formats as an editable JSON plan; :mod:`.report`: S/N,
saturation and headroom per layer, data sets with accuracy and confusion;
:mod:`.examples`: MLI's HAR and KWS networks as IR models with their formats as plans).

Command line::

    python -m mli.fixed_point case.xml [--kind fx16|fx8w16d|fx8|all] [--scope model ...]

calibrates on the ``in__*`` arrays of ``case.npz`` beside the xml and prints
the chosen frac bits and the S/N (dB) of every output against the float run (the
command is :mod:`mli.tools.fixed_point`, also ``mli fixed-point``).
"""

from __future__ import annotations

from .backends import QuantizedCell
from .errors import FixedPointError
from .model import FixedPointModel, to_fixed_point
from .plan import Plan
from .whole import WholeModel

__all__ = ["to_fixed_point", "FixedPointModel", "WholeModel", "Plan", "QuantizedCell",
           "FixedPointError"]
