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
  :func:`mli.tools.har.run_har`.

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
firmware_cell float_ref time_axis``; ``input`` may be ``"@LAYER"`` to take
another layer's output.  Case keys: ``kind rounding isolate vectors
layers input input_frac``.
"""
from .case import KERNELS, KINDS, ROUNDINGS, CaseError, load_case
from .cli import main
from .har_dumps import crosscheck_har
from .plot import plot_results
from .results import CrosscheckResult, DatasetResult, LayerResult
from .run import crosscheck, run_case

__all__ = ["CaseError", "LayerResult", "CrosscheckResult", "DatasetResult", "load_case", "run_case",
           "crosscheck", "crosscheck_har", "plot_results", "main", "KERNELS", "KINDS", "ROUNDINGS"]
