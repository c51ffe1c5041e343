"""``mli crosscheck --kws DIR``: a firmware's dumps of one inference of MLI
1.1's keyword-spotting example against the package's run on the same input."""
import os

import numpy as np

from ..._status import MliError
from ...io.load import parse_spec
from ...metrics import compare
from ...rounding import rounding as rounding_ctx
from ...tensor import Tensor
from ..kws import network
from ..kws.data import load_model
from .case import ROUNDINGS, CaseError, _msg, _read
from .har_dumps import _DUMP_EXT
from .results import CrosscheckResult, LayerResult
from .run import _other

INPUT = "input"


def _kernel_name(layer):
    """What the example calls to compute `layer` (for the report)."""
    conv = {"L1": "conv2d_chw_fx8_generic", "a": "depthwise_conv2d_chw_fx8_k3x3_str1_nopad",
            "b": "conv2d_chw_fx8_k1x1_str1_nopad"}
    if layer.startswith("L"):
        return conv["L1" if layer.startswith("L1") else layer[2]] + " + leaky_relu_fx8"
    return {"fx16_convert": "convert_tensor (fx8 -> fx16)", "avepool": "avepool_chw_fx16_generic",
            "permute": "permute_fx16", "lstm_out": "lstm_cell_fx8w16d batch-to-last",
            "fc_out": "fully_connected_fx8w16d", "softmax_out": "softmax_fx16"}[layer]


def find_kws_dumps(folder):
    """{name: path} of the dumps in `folder`: ``input`` and the layer outputs
    of :data:`mli.tools.kws.LAYER_OUTPUTS`, each as .npy, .idx or a raw
    .bin/.raw/.dat (names compared without case)."""
    if not os.path.isdir(folder):
        raise CaseError(f"--kws: not a folder: {folder}")
    files = {f.lower(): f for f in os.listdir(folder)}
    found = {}
    for name in (INPUT,) + network.LAYER_OUTPUTS:
        hits = [files[name.lower() + e] for e in _DUMP_EXT if name.lower() + e in files]
        if len(hits) > 1:
            raise CaseError(f"--kws: {name} is dumped twice in {folder} ({', '.join(hits)}): keep one")
        if hits:
            found[name] = os.path.join(folder, hits[0])
    return found


def _read_dump(name, path):
    """A dump as an integer array of the layer's shape (a raw dump in the
    layer's data type; any dump of the right element count is reshaped)."""
    if name == INPUT:
        shape, dtype = network.INPUT_SHAPE[1:], np.int8
    else:
        shape, dtype = network.LAYER_SHAPES[name][0], network.LAYER_DTYPES[name]
    a = _read(parse_spec(path), f"--kws {os.path.basename(path)}", dtype=np.dtype(dtype).name)
    if a.dtype.kind not in "iu":
        raise CaseError(f"--kws {os.path.basename(path)}: expected integers ({np.dtype(dtype).name}), got {a.dtype}")
    want = int(np.prod(shape))
    if a.size != want:
        raise CaseError(f"--kws {os.path.basename(path)}: {a.size} elements, {name} has {want} "
                        f"({np.dtype(dtype).name} {list(shape)})")
    info = np.iinfo(dtype)
    if a.size and (int(a.min()) < info.min or int(a.max()) > info.max):
        raise CaseError(f"--kws {os.path.basename(path)}: values {int(a.min())}..{int(a.max())} do not fit "
                        f"{np.dtype(dtype).name}")
    return np.ascontiguousarray(a.reshape(shape).astype(dtype))


def crosscheck_kws(firmware, *, data_dir=None, rounding="convergent", check_other_rounding=True, isolate=False):
    """Cross-check a firmware's dumps of one inference of the KWS example.

    Parameters
    ----------
    firmware : str
        A folder holding ``input`` (int8 [65, 13], the network's fx8 input)
        and any of the layer outputs named as :data:`mli.tools.kws.LAYER_OUTPUTS`
        (``L1_conv_lrelu`` ... ``softmax_out``; .npy, .idx, or raw .bin/.raw/.dat
        in the layer's type: int8 up to ``L4b_pw_lrelu``, then int16), as
        ``mli kws --dump`` writes them.  Layers without a dump are not compared.
    data_dir : str, optional
        The KWS data folder (default as ``mli kws`` finds it).
    rounding, check_other_rounding
        The DSP rounding mode checked first, and whether to try the other.
    isolate : bool
        Feed each dumped layer the firmware's own dump of the layer before it
        (where there is one), so that one wrong layer does not make every
        later one differ.

    Returns
    -------
    CrosscheckResult
    """
    if rounding not in ROUNDINGS:
        raise CaseError(f"--rounding: expected convergent or up, got {rounding!r}")
    dumps = find_kws_dumps(os.fspath(firmware))
    if INPUT not in dumps:
        raise CaseError(f"--kws: {firmware} has no input dump (input.npy, input.idx or input.bin: int8 [65, 13])")
    layers = [n for n in network.LAYER_OUTPUTS if n in dumps]
    if not layers:
        raise CaseError(f"--kws: {firmware} has an input but no layer dump (named as {network.LAYER_OUTPUTS[0]} ... "
                        f"{network.LAYER_OUTPUTS[-1]}; {', '.join(_DUMP_EXT)})")
    fw = {n: _read_dump(n, p) for n, p in dumps.items()}
    try:
        model = load_model(data_dir)
    except (OSError, ValueError) as e:
        raise CaseError(f"--data: {_msg(e)}") from None
    alt_mode = _other(rounding) if check_other_rounding else None

    def run(mode):
        """Every layer's output in `mode`: chained from the input, and with
        `isolate` each dumped layer again from the firmware's previous layer."""
        with rounding_ctx(mode):
            chained = network.run_network(fw[INPUT], model)
            if not isolate:
                return chained
            out = dict(chained)
            for name in layers:
                prev = network.previous(name)
                if prev in fw and prev != INPUT:
                    x = Tensor(fw[prev], chained[prev].frac_bits)
                    out[name] = network.run_layer(name, x, model)
            return out

    try:
        pkg = run(rounding)
        alt = run(alt_mode) if alt_mode else None
    except (ValueError, MliError) as e:
        raise CaseError(f"--kws input: {e}") from None
    results = []
    for name in layers:
        t_axis = 0 if name == "permute" else 1
        try:
            rep = compare(fw[name], pkg[name], time_axis=t_axis)
            arep = compare(fw[name], alt[name], time_axis=t_axis) if alt else None
        except (ValueError, TypeError) as e:
            raise CaseError(f"--kws {name}: {e}") from None
        results.append(LayerResult(name, _kernel_name(name), rep, arep, alt_mode))
    res = CrosscheckResult(results, rounding, alt_mode, "", isolate=isolate, chained=True)
    missing = [n for n in network.LAYER_OUTPUTS if n not in dumps]
    if missing:
        res.notes.append(f"no dump for {', '.join(missing)}")
    if isolate:
        own = [n for n in layers if network.previous(n) not in fw]
        if own:
            res.notes.append(f"no dump of the layer before {', '.join(own)}: computed from the package's own")
    return res
