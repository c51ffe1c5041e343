"""``mli crosscheck``: compare a firmware's integer outputs with the
package's, bit for bit, and say where and why they differ.

Three ways to describe what to run:

* a **case file** (JSON, or TOML on Python >= 3.11) naming the kernel or a
  chain of layers (e.g. fc -> relu -> lstm), their configuration, frac bits
  and the files holding inputs, weights and the firmware's outputs;
* **command-line flags** for one kernel (``--kernel lstm_cell_fx16 --in x.idx
  --in-frac 12 ... --firmware out.npy``);
* ``--har DIR``: firmware dumps of the MLI 1.1 HAR example's layer outputs
  (``fc1``, ``relu1``, ``lstm2``, ``lstm3``, ``out``), checked against
  :func:`mli.tools.har.run_har`;
* ``--kws DIR``: a firmware's dumps of one inference of the MLI 1.1 KWS
  example (``input`` and any of ``L1_conv_lrelu`` ... ``softmax_out``),
  checked against :func:`mli.tools.kws.run_network`
  (:func:`crosscheck_kws`; ``--isolate`` feeds each layer the firmware's own
  previous one);
* ``--deploy DIR --arena dump.bin [--after LAYER] [--sample N]``: a raw
  memory image of the arena of an ``mli deploy`` folder, mapped back
  through its ``plan.json`` and compared tensor by tensor with its goldens
  (:func:`crosscheck_deploy`).

A **model case** (``{"model": "m.xml", "plan": "plan.json", "inputs": "x.npz",
"dumps": {"<tensor>": "fw.npy"}}``) compares a firmware's dumps of any layers of an IR
model run whole in MLI 1.1 fixed point with the package's goldens
(:mod:`mli.tools.crosscheck.model_case`).

MLI 2.0.2 kernels (:mod:`mli.v2`): a case with ``"mli": 2``, ``--mli 2``,
or a kernel only MLI 2.x has (``gru_cell_*``, ``rnn_dense_*``, a
``fx16_fx8_fx8`` / ``sa8_sa8_sa32`` / ``sa8`` suffix) runs on the 2.x
kernels; names shared with 1.1 (``lstm_cell_fx16``, ``fully_connected_fx16``,
``tanh_fx16``) stay 1.1 unless ``mli`` is 2.  Their tensors are
``input prev_out weights_in weights_out bias cell`` (cells), ``input weights
bias`` (fully_connected, rnn_dense with lists), formats ``ROLE_frac`` or
``ROLE_zp ROLE_scale ROLE_scale_frac [ROLE_dim]`` (on the command line
``--sa ROLE=ZP,SCALE,FRAC``, ``--sa-dim ROLE=D``, ``--weights-in(-frac)``,
``--weights-out(-frac)``), the output format ``out_frac`` / ``out_zp
out_scale out_scale_frac``, and ``direction results act relu``; see
:mod:`mli.tools.crosscheck.v2`.  Example::

    mli crosscheck --kernel gru_cell_fx16 --in x.npy --in-frac 14 --prev-out h0.npy --prev-out-frac 15 \
        --weights-in wi.npy --weights-in-frac 15 --weights-out wo.npy --weights-out-frac 15 \
        --bias b.npy --bias-frac 12 --out-frac 15 --firmware fw_out.npy

The reports are the same as for 1.1 (data-set runs are 1.1 only).

Every output is compared with :func:`mli.metrics.compare`, then the whole
run is repeated in the other DSP rounding mode (``convergent`` / ``up``) to
tell a rounding-mode build difference from a real one.  Data-set runs (an
input folder, or ``--vectors`` with an input whose first axis indexes
vectors) print one summary line per vector, each as soon as its vector is
done, so a run stopped with Ctrl-C (exit 130) keeps the lines it finished.

Case file (JSON; TOML is the same structure)::

    {
      "kind": "fx16",
      "input": "x.idx", "input_frac": 13,
      "layers": [
        {"name": "fc1", "kernel": "fully_connected", "weights": "w.npz:L1_fc_wt",
         "weights_frac": 14, "bias": "w.npz:L1_fc_bias", "bias_frac": 14,
         "out_frac": 12, "firmware": "fw/fc1.idx"},
        {"name": "relu1", "kernel": "relu", "relu": "gen", "firmware": "fw/relu1.idx"},
        {"name": "lstm2", "kernel": "lstm_cell", "mode": "batch_to_batch", "act": "tanh",
         "weights": "w.npz:L2_lstm_wt", "weights_frac": 15,
         "bias": "w.npz:L2_lstm_bias", "bias_frac": 14,
         "prev_out": "zeros", "prev_out_frac": 15, "cell": "zeros", "cell_frac": 11,
         "firmware": "fw/lstm2.bin,dtype=int16"}
      ]
    }

A single-kernel case may put the layer keys at the top level instead of
``layers``.  Paths are relative to the case file.  File specs are those of
:func:`mli.io.load.load_array`.  Float weights are quantized with the QMN
rule (:func:`mli.io.c_array.qmn`), float inputs as the MLI example helper
does (:meth:`mli.Tensor.from_float`).  Layer keys: ``name kernel kind input
input_frac weights weights_frac bias bias_frac prev_out prev_out_frac cell
cell_frac in2 in2_frac mode act relu out_frac per_step firmware
firmware_cell float_ref time_axis``, and for the convolution, pooling,
leaky ReLU and permute kernels their cfg fields ``variant stride
stride_width stride_height padding padding_left padding_right padding_top
padding_bottom kernel_width kernel_height slope slope_frac perm_dim``
(``stride`` and ``padding`` set both / all four; ``variant``, or the
kernel's full name, picks a specialised entry point such as
``k3x3_str1_nopad`` or ``generic``); ``input`` may be ``"@LAYER"`` to take
another layer's output.  Case keys: ``kind rounding isolate vectors
layers input input_frac``.
"""
from .case import KERNELS, KINDS, ROUNDINGS, CaseError, load_case
from .cli import main
from .deploy_dumps import crosscheck_deploy
from .har_dumps import crosscheck_har
from .kws_dumps import crosscheck_kws
from .plot import plot_results
from .results import CrosscheckResult, DatasetResult, LayerResult
from .run import crosscheck, run_case

__all__ = ["CaseError", "LayerResult", "CrosscheckResult", "DatasetResult", "load_case", "run_case",
           "crosscheck", "crosscheck_har", "crosscheck_kws", "crosscheck_deploy", "plot_results", "main", "KERNELS", "KINDS", "ROUNDINGS"]
