"""The KWS example's network as a deployable program (:mod:`mli.deploy`):
the same calls, formats and specialised entry points as
:mod:`mli.tools.kws.network`, one step per MLI call (each convolution and
its leaky ReLU are two), with the LSTM state zeroed at every inference as
the example does."""
import numpy as np

import mli

from ...deploy import Program
from .network import AVEPOOL, CONV_1X1, CONV_GENERIC, DEPTHWISE_3X3, INPUT_SHAPE, LAYER_SHAPES, LSTM_IR_BYTES

__all__ = ["kws_program"]

_CONV_LAYERS = (("L1_conv", CONV_GENERIC, 2, "L1_conv_lrelu"), ("L2a_conv_dw", DEPTHWISE_3X3, 1, "L2a_dw_lrelu"),
                ("L2b_conv_pw", CONV_1X1, 1, "L2b_pw_lrelu"), ("L3a_conv_dw", DEPTHWISE_3X3, 1, "L3a_dw_lrelu"),
                ("L3b_conv_pw", CONV_1X1, 1, "L3b_pw_lrelu"), ("L4a_conv_dw", DEPTHWISE_3X3, 1, "L4a_dw_lrelu"),
                ("L4b_conv_pw", CONV_1X1, 1, "L4b_pw_lrelu"))


def kws_program(model):
    """The :class:`mli.deploy.Program` of the network of `model`
    (:func:`mli.tools.kws.load_model`): input ``input`` (fx8 [1, 65, 13],
    frac 3), output ``softmax_out`` (fx16 [12], Q15); every other layer's
    output under the names of :data:`mli.tools.kws.network.LAYER_OUTPUTS`."""
    c, f = model.coef, model.frac
    p = Program("kws")
    p.add("input", "fx8", f["input_features"], INPUT_SHAPE, "input")
    for name, t in c.items():
        p.add_const(name, t)
    p.add("slope", "fx8", model.slope.frac_bits, (), "const", np.asarray(model.slope.numpy(), np.int8).reshape(()))
    x = "input"
    for prefix, names, stride_h, out in _CONV_LAYERS:
        shape = LAYER_SHAPES[out][0]
        p.add(prefix + "_out", "fx8", f[prefix + "_out"], shape, "activation")
        cfg = mli.Conv2dConfig(relu=mli.ReluType.NONE, stride_width=1, stride_height=stride_h, padding_left=0,
                               padding_right=0, padding_top=0, padding_bottom=0)
        p.call("mli_krn_" + names[0], "conv", (x, prefix + "_wt", prefix + "_bias"), prefix + "_out", cfg)
        p.add(out, "fx8", f[prefix + "_out"], shape, "activation")
        p.call("mli_krn_leaky_relu_fx8", "leaky_relu", (prefix + "_out", "slope"), out)
        x = out
    p.add("fx16_convert", "fx16", f["fx16_after_convert"], LAYER_SHAPES["fx16_convert"][0], "activation")
    p.call("mli_hlp_convert_tensor", "unary", (x,), "fx16_convert")
    p.add("avepool", "fx16", f["fx16_after_convert"], LAYER_SHAPES["avepool"][0], "activation")
    p.call("mli_krn_" + AVEPOOL[0], "pool", ("fx16_convert",), "avepool",
           mli.PoolConfig(kernel_width=5, kernel_height=1, stride_width=1, stride_height=1, padding_left=0,
                          padding_right=0, padding_top=0, padding_bottom=0))
    p.add("permute", "fx16", f["fx16_after_convert"], LAYER_SHAPES["permute"][0], "activation")
    p.call("mli_krn_permute_fx16", "permute", ("avepool",), "permute", mli.PermuteConfig(perm_dim=(1, 2, 0)))
    p.add("lstm_prev_out", "fx16", f["L5_lstm_prev_out"], (32,), "state", np.zeros(32, np.int16), per_run=True)
    p.add("lstm_cell", "fx16", f["L5_lstm_cell"], (32,), "state", np.zeros(32, np.int16), per_run=True)
    p.add("lstm_ir", "fx16", 0, (LSTM_IR_BYTES // 2,), "scratch")
    p.add("lstm_out", "fx16", f["L5_lstm_prev_out"], (32,), "activation")
    p.call("mli_krn_lstm_cell_fx8w16d", "lstm", ("permute", "lstm_prev_out", "L5_lstm_wt", "L5_lstm_bias"),
           "lstm_out", (mli.RnnMode.BATCH_TO_LAST, mli.RnnActivation.TANH), state=("lstm_cell",),
           scratch=("lstm_ir",))
    p.add("fc_out", "fx16", f["L6_fc_out"], (12,), "activation")
    p.call("mli_krn_fully_connected_fx8w16d", "fc", ("lstm_out", "L6_fc_wt", "L6_fc_bias"), "fc_out")
    p.add("softmax_out", "fx16", 15, (12,), "output")
    p.call("mli_krn_softmax_fx16", "unary", ("fc_out",), "softmax_out")
    return p
