"""The example's network (``kws_dsconv_lstm_nn::nn_inference``), one MLI
1.1 kernel call per step, with the example's configurations and frac bits.

=====  ==================================================  ======================  ===========
layer  MLI 1.1 call (``mli.`` name: MLI's minus mli_krn_)   output (CHW)            frac bits
=====  ==================================================  ======================  ===========
1      conv2d_chw_fx8_generic, stride h 2 + leaky_relu_fx8  int8 [64, 32, 11]       3
2a     depthwise_conv2d_chw_fx8_k3x3_str1_nopad + lrelu     int8 [64, 30, 9]        2
2b     conv2d_chw_fx8_k1x1_str1_nopad + lrelu               int8 [64, 30, 9]        2
3a/3b  as 2a/2b                                             int8 [64, 28, 7]        2 / 3
4a/4b  as 2a/2b                                             int8 [64, 26, 5]        3 / 3
5c     convert_tensor (mli_hlp_convert_tensor) to fx16      int16 [64, 26, 5]       11
5p     avepool_chw_fx16_generic, kernel 1 x 5               int16 [64, 26, 1]       11
5t     permute_fx16, perm_dim (1, 2, 0)                     int16 [26, 1, 64]       11
5      lstm_cell_fx8w16d, batch-to-last, tanh               int16 [32]              15
6      fully_connected_fx8w16d                              int16 [12]              10
6s     softmax_fx16                                         int16 [12]              15
=====  ==================================================  ======================  ===========

Every leaky ReLU uses the slope 102 with frac bits 9 (0.2) and keeps its
input's format.  The LSTM state (prev_out, frac 15) and cell (frac 10) are
zero at every inference.  The network calls the specialised entry points
the example calls (``mli.conv2d_chw_fx8_k1x1_str1_nopad`` ...), so a firmware
running that variant gets its bits; a build of the package with only the
dispatcher (``conv2d_chw_fx8``, ``depthwise_conv2d_chw_fx8``,
``avepool_chw_fx16``) would call that instead: for these shapes every variant
computes the same numbers (spec.md 6).

Kernels are looked up in :mod:`mli` when called: a kernel the package does
not have yet raises ``NotImplementedError`` naming it
(:func:`missing_kernels` lists them all).
"""
import numpy as np

import mli

from ...tensor import Tensor

# output of each step, in order, as run_network returns them and --dump writes them
LAYER_OUTPUTS = ("L1_conv_lrelu", "L2a_dw_lrelu", "L2b_pw_lrelu", "L3a_dw_lrelu", "L3b_pw_lrelu", "L4a_dw_lrelu",
                 "L4b_pw_lrelu", "fx16_convert", "avepool", "permute", "lstm_out", "fc_out", "softmax_out")
INPUT_SHAPE = (1, 65, 13)          # [C, H = time, W = mel bin]
# each output's shape and the example's work buffer holding it (X: temp memory A, Y: temp memory B)
LAYER_SHAPES = {"L1_conv_lrelu": ((64, 32, 11), "Y"), "L2a_dw_lrelu": ((64, 30, 9), "X"),
                "L2b_pw_lrelu": ((64, 30, 9), "Y"), "L3a_dw_lrelu": ((64, 28, 7), "X"),
                "L3b_pw_lrelu": ((64, 28, 7), "Y"), "L4a_dw_lrelu": ((64, 26, 5), "X"),
                "L4b_pw_lrelu": ((64, 26, 5), "X"), "fx16_convert": ((64, 26, 5), "Y"),
                "avepool": ((64, 26, 1), "X"), "permute": ((26, 1, 64), "Y"), "lstm_out": ((32,), "X"),
                "fc_out": ((12,), "Y"), "softmax_out": ((12,), "X")}
LAYER_DTYPES = {name: (np.int8 if name.startswith("L") else np.int16) for name in LAYER_OUTPUTS}

# (name the example calls, stand-in the package may have instead)
CONV_GENERIC = ("conv2d_chw_fx8_generic", "conv2d_chw_fx8")
CONV_1X1 = ("conv2d_chw_fx8_k1x1_str1_nopad", "conv2d_chw_fx8")
DEPTHWISE_3X3 = ("depthwise_conv2d_chw_fx8_k3x3_str1_nopad", "depthwise_conv2d_chw_fx8")
AVEPOOL = ("avepool_chw_fx16_generic", "avepool_chw_fx16")
KERNELS = (CONV_GENERIC, ("leaky_relu_fx8", None), DEPTHWISE_3X3, CONV_1X1, ("convert_tensor", None), AVEPOOL,
           ("permute_fx16", None), ("lstm_cell_fx8w16d", None), ("fully_connected_fx8w16d", None),
           ("softmax_fx16", None))
CONFIGS = ("Conv2dConfig", "PoolConfig", "PermuteConfig")

# the example's IR buffer for the LSTM: the recurrent half of temp memory A
LSTM_IR_BYTES = 8640


def _found(names):
    return next((n for n in names if n and callable(getattr(mli, n, None))), None)


def missing_kernels():
    """The ``mli`` names the network needs that this build of the package
    lacks (kernels by the name the example calls, then config classes);
    empty when the network can run."""
    return [names[0] for names in KERNELS if _found(names) is None] + [c for c in CONFIGS if not hasattr(mli, c)]


def _kernel(names):
    name = _found(names)
    if name is None:
        raise NotImplementedError(f"the KWS network needs mli.{names[0]} (MLI 1.1's mli_krn_{names[0]}), "
                                  "which this build of mli-py does not have yet")
    return getattr(mli, name)


def _config(name, **fields):
    cls = getattr(mli, name, None)
    if cls is None:
        raise NotImplementedError(f"the KWS network needs mli.{name} (MLI 1.1's configuration struct), "
                                  "which this build of mli-py does not have yet")
    return cls(**fields)


def _conv_cfg(stride_height=1):
    return _config("Conv2dConfig", relu=mli.ReluType.NONE, stride_width=1, stride_height=stride_height,
                   padding_left=0, padding_right=0, padding_top=0, padding_bottom=0)


def input_tensor(input_fx8, model):
    """The network input as the example's tensor: fx8 [1, 65, 13], frac 3.
    Takes int8 [65, 13] or [1, 65, 13] (or such a Tensor)."""
    f = model.frac["input_features"]
    x = input_fx8.numpy() if isinstance(input_fx8, Tensor) else np.asarray(input_fx8)
    if x.dtype != np.int8 or x.shape not in (INPUT_SHAPE, INPUT_SHAPE[1:]):
        raise ValueError(f"input_fx8: expected int8 [65, 13] or [1, 65, 13], got {x.dtype}{list(x.shape)}")
    if isinstance(input_fx8, Tensor) and input_fx8.frac_bits != f:
        raise ValueError(f"input_fx8: expected {f} frac bits, got {input_fx8.frac_bits}")
    return Tensor(np.ascontiguousarray(x.reshape(INPUT_SHAPE)), f)


def _conv_step(names, prefix, stride_height=1):
    """A convolution layer (`names`: the kernel the example calls, its stand-in)
    with the leaky ReLU after it: weights, bias and output frac bits `prefix`_*."""
    def step(x, model):
        c, f = model.coef, model.frac
        y = _kernel(names)(x, c[prefix + "_wt"], c[prefix + "_bias"], _conv_cfg(stride_height=stride_height),
                           out_frac_bits=f[prefix + "_out"])
        return _kernel(("leaky_relu_fx8", None))(y, model.slope)
    return step


def _to_fx16(y, model):
    return _kernel(("convert_tensor", None))(y, "fx16", model.frac["fx16_after_convert"])


def _avepool(y, model):
    pool = _config("PoolConfig", kernel_width=5, kernel_height=1, stride_width=1, stride_height=1,
                   padding_left=0, padding_right=0, padding_top=0, padding_bottom=0)
    return _kernel(AVEPOOL)(y, pool)


def _permute(y, model):
    return _kernel(("permute_fx16", None))(y, _config("PermuteConfig", perm_dim=(1, 2, 0)))


def _lstm(seq, model):
    c, f = model.coef, model.frac
    h0 = Tensor(np.zeros(32, np.int16), f["L5_lstm_prev_out"])
    c0 = Tensor(np.zeros(32, np.int16), f["L5_lstm_cell"])
    ir = Tensor(np.zeros(LSTM_IR_BYTES // 2, np.int16), 0)   # the example's IR buffer (its capacity)
    cfg = mli.RnnCellConfig(mode=mli.RnnMode.BATCH_TO_LAST, act=mli.RnnActivation.TANH, ir=ir)
    h, _ = _kernel(("lstm_cell_fx8w16d", None))(seq, h0, c["L5_lstm_wt"], c["L5_lstm_bias"], cfg, c0)
    return h


def _fc(h, model):
    c, f = model.coef, model.frac
    return _kernel(("fully_connected_fx8w16d", None))(h, c["L6_fc_wt"], c["L6_fc_bias"], out_frac_bits=f["L6_fc_out"])


def _softmax(y, model):
    return _kernel(("softmax_fx16", None))(y)


# output name -> the step computing it from the previous output (the network is a chain)
STEPS = {"L1_conv_lrelu": _conv_step(CONV_GENERIC, "L1_conv", stride_height=2),
         "L2a_dw_lrelu": _conv_step(DEPTHWISE_3X3, "L2a_conv_dw"), "L2b_pw_lrelu": _conv_step(CONV_1X1, "L2b_conv_pw"),
         "L3a_dw_lrelu": _conv_step(DEPTHWISE_3X3, "L3a_conv_dw"), "L3b_pw_lrelu": _conv_step(CONV_1X1, "L3b_conv_pw"),
         "L4a_dw_lrelu": _conv_step(DEPTHWISE_3X3, "L4a_conv_dw"), "L4b_pw_lrelu": _conv_step(CONV_1X1, "L4b_conv_pw"),
         "fx16_convert": _to_fx16, "avepool": _avepool, "permute": _permute, "lstm_out": _lstm, "fc_out": _fc,
         "softmax_out": _softmax}
assert tuple(STEPS) == LAYER_OUTPUTS


def previous(name):
    """The output a step takes as its input (``"input"`` for the first)."""
    i = LAYER_OUTPUTS.index(name)
    return LAYER_OUTPUTS[i - 1] if i else "input"


def run_layer(name, x, model):
    """One step of the network alone: the output `name` (one of
    :data:`LAYER_OUTPUTS`) computed from `x`, a :class:`mli.Tensor` holding
    the output of the step before it (:func:`previous`) in that step's format,
    for instance a firmware's dump of it (``mli crosscheck --kws --isolate``).
    The rounding mode is the caller's."""
    if name not in STEPS:
        raise ValueError(f"layer: expected one of {', '.join(LAYER_OUTPUTS)}, got {name!r}")
    if not isinstance(x, Tensor):
        raise TypeError(f"x: expected an mli.Tensor (the output of {previous(name)}), got {type(x).__name__}")
    return STEPS[name](x, model)


def _run_steps(names, x, model):
    out = {}
    for name in names:
        out[name] = x = STEPS[name](x, model)
    return out


def conv_layers(x, model):
    """Layers 1 to 4b with their leaky ReLUs, from the input tensor
    (:func:`input_tensor`).  dict of the seven int8 outputs."""
    return _run_steps(LAYER_OUTPUTS[:7], x, model)


def pool_layers(y, model):
    """fx8 -> fx16, average pooling over the 5 mel positions, permutation to
    [time, 1, channel].  dict of the three int16 outputs."""
    return _run_steps(LAYER_OUTPUTS[7:10], y, model)


def recurrent_layers(seq, model):
    """LSTM (batch-to-last over the 26 time steps, zero state) and the fully
    connected layer, from the permuted sequence (int16 [26, 1, 64], frac 11).
    dict of ``lstm_out`` and ``fc_out``."""
    return _run_steps(LAYER_OUTPUTS[10:12], seq, model)


def run_network(input_fx8, model):
    """One inference of the example's network.

    Parameters
    ----------
    input_fx8 : ndarray or Tensor
        int8 [65, 13] (or [1, 65, 13]): 65 feature vectors in the fx8 format
        (frac bits 3), oldest first (:meth:`FeatureStream.network_input`).
    model : KwsModel
        From :func:`mli.tools.kws.load_model`.

    Returns
    -------
    dict
        The output of every step by the names of :data:`LAYER_OUTPUTS`, as
        :class:`mli.Tensor` (int8 CHW up to ``L4b_pw_lrelu``, then int16);
        ``softmax_out`` holds the 12 class probabilities in Q15.

    Raises
    ------
    NotImplementedError
        A kernel the package does not have yet (named).
    ValueError
        `input_fx8` of another type or shape.

    The rounding mode is the caller's (``with mli.rounding("up"):``).
    """
    return _run_steps(LAYER_OUTPUTS, input_tensor(input_fx8, model), model)
