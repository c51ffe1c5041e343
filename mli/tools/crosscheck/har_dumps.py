"""PART har"""
import os

import numpy as np

from ..._status import MliError
from ...io.load import parse_spec
from ...metrics import compare
from ...rounding import rounding as rounding_ctx
from ...tensor import Tensor
from .. import har
from ..jobs import check_abandoned, process_map, row_chunks, use_processes
from .case import ROUNDINGS, CaseError, _msg, _read, _read_many, _spec, _to_container
from .results import CrosscheckResult, DatasetResult, LayerResult
from .run import _other, _progress, _releasing

_HAR_ALIASES = {"fc1": ("fc1", "ir_fc1", "layer1_fc"), "relu1": ("relu1", "ir_relu1", "layer1_relu"),
                "lstm2": ("lstm2", "ir_lstm2", "layer2_lstm"), "lstm3": ("lstm3", "ir_lstm3", "layer3_lstm"),
                "out": ("out", "fc4", "ir_fc4", "layer4_fc", "output")}


_DUMP_EXT = (".idx", ".npy", ".bin", ".raw", ".dat")


def _har_find(folder):
    """{layer: path} of the dumps in a folder (names like the layers)."""
    found = {}
    files = {f.lower(): f for f in os.listdir(folder)}
    for layer, names in _HAR_ALIASES.items():
        for n in names:
            hits = [files[n + e] for e in _DUMP_EXT if n + e in files]
            if hits:
                found[layer] = os.path.join(folder, hits[0])
                break
    return found


def _har_dumps(source, n_vectors, dtype):
    """[{layer: ndarray}] per vector from a folder, an .npz, or a folder of
    per-vector subfolders; stacked files split along axis 0."""
    where = "--har"
    if not os.path.exists(source):
        raise CaseError(f"{where}: no such file or folder: {source}")
    if os.path.isfile(source):
        if not source.lower().endswith(".npz"):
            raise CaseError(f"{where}: expected a folder of layer dumps or an .npz file, got {source}")
        from ...io.npz import read_npz
        try:
            allarr = read_npz(source)
        except (ValueError, KeyError, OSError) as e:
            raise CaseError(f"{where}: {_msg(e)}") from None
        if not isinstance(allarr, dict):
            allarr = {"out": allarr}
        one = {}
        for layer, names in _HAR_ALIASES.items():
            for nm in names:
                if nm in allarr:
                    one[layer] = allarr[nm]
                    break
        if not one:
            raise CaseError(f"{where}: {source} holds none of {', '.join(_HAR_ALIASES)}")
        sets = [one]
        stacked = True
    else:
        subdirs = sorted(d for d in os.listdir(source) if os.path.isdir(os.path.join(source, d))
                         and not d.startswith("."))
        if n_vectors is not None and subdirs and not _har_find(source):
            sets = []
            for d in subdirs:
                paths = _har_find(os.path.join(source, d))
                sets.append({k: _read(parse_spec(p), f"{where} {d}/{os.path.basename(p)}", dtype=dtype)
                             for k, p in paths.items()})
            if len(sets) != n_vectors:
                raise CaseError(f"{where}: {len(sets)} vector folders, the input has {n_vectors} vectors")
            return sets, [d for d in subdirs]
        paths = _har_find(source)
        if not paths:
            raise CaseError(f"{where}: {source} holds no dump named like a layer "
                            f"({', '.join(_HAR_ALIASES)}; {', '.join(_DUMP_EXT)})")
        sets = [{k: _read(parse_spec(p), f"{where} {os.path.basename(p)}", dtype=dtype) for k, p in paths.items()}]
        stacked = True
    if n_vectors is None:
        return sets, [""]
    one = sets[0]
    per = [{} for _ in range(n_vectors)]
    for k, a in one.items():
        if a.ndim == 1 and a.shape[0] != n_vectors and a.size % n_vectors == 0:
            a = a.reshape(n_vectors, -1)  # a flat raw dump of all vectors
        if not stacked or a.ndim == 0 or a.shape[0] != n_vectors:
            raise CaseError(f"{where}: dump {k} of shape {list(a.shape)} does not hold {n_vectors} vectors "
                            "along its first axis")
        for v in range(n_vectors):
            per[v][k] = a[v]
    return per, [str(v) for v in range(n_vectors)]


#: single-core seconds per vector of a HAR data set (batched rows, both
#: roundings), for :func:`mli.tools.jobs.use_processes`
SECONDS_PER_VECTOR = 0.002

_worker: dict = {}    # a --jobs worker process's vectors and checker (_setup_worker)


def _setup_worker(token, *args):
    if _worker.get("token") == token:   # forked: the parent's, already in memory
        return
    pairs, check = _har_setup(*args)
    _worker.update(token=token, pairs=pairs, check=check)


def _check_run(bounds):
    a, b = bounds
    return _worker["check"](_worker["pairs"][a:b])


def _har_setup(firmware, x, depth, layer3, data_dir, float_ref, rounding, check_other_rounding, vectors):
    """(the [(input, dumps, label)] of the vectors, the function checking a run
    of them: (results in order up to the first that fails, its error or None))."""
    if rounding not in ROUNDINGS:
        raise CaseError(f"--rounding: expected convergent or up, got {rounding!r}")
    if layer3 not in ("custom", "library"):
        raise CaseError(f"--layer3: expected custom or library, got {layer3!r}")
    try:
        depth = int(depth)
    except (TypeError, ValueError):
        depth = None
    if depth not in har.DEPTHS:
        raise CaseError(f"--depth: expected 16, 816 or 8, got {depth!r}")
    try:
        model = har.load_har(data_dir, depth)
    except (OSError, ValueError) as e:
        raise CaseError(f"--data: {_msg(e)}") from None
    dt = np.dtype(np.int8 if depth == 8 else np.int16)
    builtin = x is None
    if builtin:
        if vectors:
            raise CaseError("--vectors: needs --in with the vectors (e.g. small_test_base/tests.idx)")
        try:
            xs, _ = har.load_reference(model.data_dir)
        except (OSError, ValueError) as e:
            raise CaseError(f"--data: {_msg(e)}") from None
        inputs, labels = [xs], [""]
    elif isinstance(x, np.ndarray):
        inputs = list(x) if vectors else [x]
        labels = [str(i) for i in range(len(inputs))] if vectors else [""]
    else:
        sp = _spec(x, "--in", None)
        if vectors:
            inputs, labels = _read_many(sp, "--in", None)
        else:
            inputs, labels = [_read(sp, "--in")], [""]
    fref_dir = float_ref
    if fref_dir is None and builtin:
        cand = os.path.join(model.data_dir, "ir_idx_300")
        fref_dir = cand if os.path.isdir(cand) else None
    frefs = {}
    if fref_dir is not None:
        if not os.path.isdir(fref_dir):
            raise CaseError(f"--float-ref: not a folder: {fref_dir}")
        for layer, fname in har.IR_FILES.items():
            p = os.path.join(fref_dir, fname)
            if os.path.isfile(p):
                frefs[layer] = _read(parse_spec(p), f"--float-ref {fname}")
    dumps, dump_labels = _har_dumps(os.fspath(firmware), len(inputs) if vectors else None, dt.name)
    if vectors and labels and all(lb.isdigit() for lb in labels) and not all(lb.isdigit() for lb in dump_labels):
        labels = dump_labels
    alt_mode = _other(rounding) if check_other_rounding else None
    pairs = list(zip(inputs, dumps, labels))
    f_in = har.input_frac_bits(depth)

    def quantized(xin):
        if xin.dtype.kind == "f":
            try:
                return har.quantize_input(xin, depth)
            except ValueError as e:
                raise CaseError(f"--in: {e}") from None
        return Tensor(_to_container(xin, dt, f_in, "--in", "input"), f_in)

    def run_one(xt):
        """(package's layers, the other rounding's or None) of one vector."""
        try:
            with rounding_ctx(rounding):
                pkg = har.run_har(xt, depth, layer3, model=model)
            alt = None
            if alt_mode:
                with rounding_ctx(alt_mode):
                    alt = har.run_har(xt, depth, layer3, model=model)
        except (ValueError, MliError) as e:
            raise CaseError(f"--in: {e}") from None
        return pkg, alt

    def run_many(xts):
        """``[run_one(x) for x in xts]`` up to the first failing vector, and its
        error (or None): consecutive vectors of one shape as batched rows
        (har.run_har_rows, bit-identical); a group the rows run refuses runs
        one vector at a time, so a bad vector fails as it always did."""
        runs = []
        i = 0
        while i < len(xts):
            check_abandoned()       # a run left (Ctrl-C) stops here, not after its last vector
            j = i + 1
            while j < len(xts) and xts[j].shape == xts[i].shape and xts[j].dtype == xts[i].dtype \
                    and xts[j].frac_bits == xts[i].frac_bits:
                j += 1
            group = xts[i:j]
            try:
                x = Tensor(np.stack([t.numpy() for t in group]), group[0].frac_bits)
                with rounding_ctx(rounding):
                    pkg = har.run_har_rows(x, depth, layer3, model=model)
                alt = None
                if alt_mode:
                    with rounding_ctx(alt_mode):
                        alt = har.run_har_rows(x, depth, layer3, model=model)
            except Exception:       # noqa: BLE001 -- one at a time, each failing as it always did
                for t in group:
                    check_abandoned()
                    try:
                        runs.append(run_one(t))
                    except CaseError as e:
                        return runs, e
            else:
                def row(res, r):
                    return {k: Tensor(v.numpy()[r], v.frac_bits) for k, v in res.items()}
                runs += [(row(pkg, r), row(alt, r) if alt else None) for r in range(len(group))]
            i = j
        return runs, None

    def result(pkg, alt, fw, label):
        kind = har.DEPTHS[depth]
        lres = []
        for layer in har.LAYERS:
            if layer not in fw:
                continue
            wk = "fx8w16d" if depth == 816 else kind[0]
            full = {"fc1": f"fully_connected_{wk} per step", "relu1": f"relu_{kind[0]}",
                    "lstm2": f"lstm_cell_{wk} batch-to-batch",
                    "lstm3": (f"lstm_cell_{wk} batch-to-last" if layer3 == "library" else
                              f"custom LSTM: basic_rnn_cell_{wk} + sigm/tanh/eltwise_{kind[0]}"),
                    "out": f"fully_connected_{wk}"}[layer]
            try:
                rep = compare(fw[layer], pkg[layer], float_ref=frefs.get(layer))
                arep = compare(fw[layer], alt[layer]) if alt else None
            except (ValueError, TypeError) as e:
                raise CaseError(f"--har {layer}: {e}") from None
            lres.append(LayerResult(layer, full, rep, arep, alt_mode))
        res = CrosscheckResult(lres, rounding, alt_mode, label, chained=False)
        missing = [lay for lay in har.LAYERS if lay not in fw]
        if missing:
            res.notes.append(f"no dump for {', '.join(missing)}")
        return res

    def check_chunk(chunk):
        """(the results of a run of vectors, in order, up to the first that fails;
        that vector's error or None)."""
        xts, err = [], None
        for xin, _, _ in chunk:
            try:
                xts.append(quantized(xin))
            except Exception as e:          # raised when its vector's turn comes
                err = e
                break
        runs, run_err = run_many(xts)
        results = []
        for (pkg, alt), (_, fw, label) in zip(runs, chunk):
            check_abandoned()
            try:
                results.append(result(pkg, alt, fw, label))
            except Exception as e:
                return results, e
        return results, run_err or err

    return pairs, check_chunk


def crosscheck_har(firmware, *, x=None, depth=16, layer3="custom", data_dir=None, float_ref=None,
                   rounding="convergent", check_other_rounding=True, vectors=False, progress=False, on_result=None,
                   jobs=1):
    """Cross-check firmware dumps of the HAR example's layer outputs.

    Parameters
    ----------
    firmware : str
        A folder of dumps named like the layers (``fc1 relu1 lstm2 lstm3
        out``, also ``ir_fc1`` ... ``ir_fc4`` as the example's float dumps
        are named; extension .idx, .npy, or .bin/.raw/.dat for raw dumps in
        the data type of `depth`), or an .npz with those keys.  Layers
        without a dump are not compared.  With `vectors`: stacked dumps
        (first axis = vector) or one subfolder per vector.
    x : array or spec, optional
        The input [T, 9] (float: quantized as the example does; integer:
        already in the input format), or with `vectors` [N, T, 9] / a
        folder.  Default: the example's built-in input #300.
    depth, layer3, data_dir
        As :func:`mli.tools.har.run_har`.
    float_ref : str, optional
        Folder of float per-layer references (``ir_fc1.idx`` ...); default
        the example's ``ir_idx_300`` when `x` is the built-in input.
    rounding, check_other_rounding, progress, on_result, jobs
        As :func:`crosscheck`.

    Returns
    -------
    CrosscheckResult, or DatasetResult with `vectors`.
    """
    pairs, check_chunk = _har_setup(firmware, x, depth, layer3, data_dir, float_ref, rounding,
                                    check_other_rounding, vectors)

    def checked():
        n_jobs = jobs if vectors else 1
        bounds = row_chunks(len(pairs), n_jobs)
        seconds = len(pairs) * SECONDS_PER_VECTOR
        if use_processes(n_jobs, len(bounds), seconds):
            # each worker loads the model, the vectors and the dumps once; a run is shipped as (start, stop)
            token = object.__repr__(check_chunk)
            _worker.update(token=token, pairs=pairs, check=check_chunk)     # what forked workers inherit
            parts = _releasing(process_map(_check_run, bounds, n_jobs, seconds=seconds, init=_setup_worker,
                                           init_args=(token, firmware, x, depth, layer3, data_dir, float_ref,
                                                      rounding, check_other_rounding, vectors)), _worker)
        else:   # in runs as large as one job's
            parts = (check_chunk(pairs[a:b]) for a, b in row_chunks(len(pairs)))
        for results, err in parts:
            yield from results
            if err is not None:
                raise err

    results = []
    done = checked()
    for res in (_progress(done, len(pairs), "crosscheck --har") if progress and vectors else done):
        results.append(res)
        if on_result is not None and vectors:
            on_result(res)
    return DatasetResult(results) if vectors else results[0]
