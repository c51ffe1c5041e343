"""``mli kws [WAV] [--data DIR] [--info] [--dump DIR] [--rounding up] [--lenient-wav]``:
MLI 1.1's keyword-spotting example (``examples/example_kws_speech``) run on a
16 kHz mono 16-bit WAV file (default: the data folder's ``test.wav``),
printing one line per detected keyword as the example does.

Exit codes: 0 done; 2 a usage or input error (one line on stderr: a bad
option, missing data, a WAV file the example cannot read, a dump folder
that is not new or empty, kernels this build lacks).

``--dump DIR`` writes ``DIR/features.npy`` (int8 [calls - 1, 13], every
feature vector of the run) and per inference n ``DIR/inference_NNN/``
(three digits at least) with ``input.npy`` (int8 [65, 13]) and one ``.npy``
per step output (:data:`~mli.tools.kws.network.LAYER_OUTPUTS`: int8 CHW up
to ``L4b_pw_lrelu``, then int16; frac bits as in model.json).  DIR must not
exist or be an empty folder, and every file is created new (never
replaced), so a dump never overwrites anything; a run stopped early leaves
the inferences done so far.
"""
import argparse
import math
import os
import sys

import numpy as np

from ...rounding import rounding as rounding_ctx
from .data import MODEL_NAME, default_data_dir, load_model, searched_places
from .network import LAYER_OUTPUTS, LAYER_SHAPES, LAYER_DTYPES, missing_kernels, run_network
from .post import PostProcessor, probabilities
from .stream import SAMPLES_PER_CALL, features_of_samples, timestamps
from .wav import WavError, read_wav

PROG = "mli kws"

# the example's state memory (dsconv_lstm_nn_model_impl.cc): the module's state struct
# (int16 samples[4][240], int8 features[65][13], padding to 4 bytes, two 32-bit fields), then
# the feature extractor's float tables (Hann window 480, mel weights 438) and the dsplib FFT state
_STATE_STRUCT_BYTES = -(-(4 * SAMPLES_PER_CALL * 2 + 65 * 13) // 4) * 4 + 2 * 4


class _UsageError(ValueError):
    """A bad option or input; the message names it."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _UsageError(f"{message} (see {PROG} --help)")


def _parser():
    ap = _Parser(prog=PROG, description="Run MLI 1.1's keyword-spotting example (example_kws_speech) on a "
                 "16 kHz mono 16-bit WAV file and print its detections exactly as the example does.")
    ap.add_argument("wav", nargs="?", metavar="WAV", help="the WAV file (default: test.wav of the data folder)")
    ap.add_argument("--data", metavar="DIR", help="KWS data folder (default: $MLI_KWS_DATA, $MLI_SHARED/data/kws, "
                    "<project>/../shared/data/kws, ./../shared/data/kws, ./shared/data/kws: the first that exists)")
    ap.add_argument("--info", action="store_true", help="after the detections, what the example's -info reports "
                    "that a PC can know (memory of the model and its buffers; no cycle counts)")
    ap.add_argument("--dump", metavar="DIR", help="write the features and every inference's layer outputs as "
                    ".npy files into DIR, which must be new or empty (nothing is ever overwritten)")
    ap.add_argument("--rounding", choices=("convergent", "up"), default="convergent",
                    help="DSP rounding mode of the kernels (the example's library build: convergent)")
    ap.add_argument("--lenient-wav", action="store_true", help="read the WAV file exactly as the example does "
                    "(its two header checks only; every byte after the 44-byte header is a sample) instead of "
                    "refusing files it would misread")
    return ap


def info_lines(model, calls, inferences):
    """The ``-info`` report as far as a PC knows it (after two blank lines,
    like the example): the model's name; its memory (coefficients, state,
    the two work buffers), where the dsplib FFT state size and the module
    objects' size of the ARC build are unknown; the stream length.  The
    example's cycle counts come from the ARC timer and are not reproduced."""
    coef = model.coefficient_bytes
    tables = 4 * (480 + 438)                 # float window and mel weights
    state = _STATE_STRUCT_BYTES + tables
    buf = {"X": 0, "Y": 0}
    for name, (shape, where) in LAYER_SHAPES.items():
        buf[where] = max(buf[where], math.prod(shape) * np.dtype(LAYER_DTYPES[name]).itemsize)
    rfft = "the dsplib FFT state (dsp_rfft_getsize_f32(512), below 56 bytes)"
    seconds = (SAMPLES_PER_CALL * calls) // 16000      # integer, as the example computes it
    return ["", "", f"Model: {MODEL_NAME}",
            "Dynamic Memory requirements [bytes]: not known on a PC (the module objects of the 32-bit ARC build, "
            "about 296 + sizeof(rfft_f32_t))",
            "Fast Memory requirements [bytes]",
            f"\tCoefficients Memory: {coef}",
            f"\tState Memory: {state} + {rfft}",
            f"\tIR Memory A: {buf['X']}",
            f"\tIR Memory B: {buf['Y']}",
            f"\tTotal: {coef + state + buf['X'] + buf['Y']} + {rfft}",
            "Performance [cycles]: not measured (the example's counts come from the ARC timer)",
            f"\tStream: {calls} process calls of {SAMPLES_PER_CALL} samples, {inferences} inferences "
            f"({seconds:.3f} sec as the example prints it, whole seconds)"]


def check_dump_dir(path):
    """Refuse a dump folder that exists and is not an empty folder."""
    if os.path.lexists(path):
        if not os.path.isdir(path):
            raise _UsageError(f"--dump: {path} exists and is not a folder")
        if os.listdir(path):
            raise _UsageError(f"--dump: {path} is not empty (give a new or empty folder; "
                              "mli kws never overwrites files)")


def _save_new(path, array):
    with open(path, "xb") as fh:          # created new: an existing file is an error, never replaced
        np.save(fh, np.ascontiguousarray(array), allow_pickle=False)


def write_inference_dump(root, n, input_fx8, outputs):
    """``root/inference_NNN/input.npy`` and one file per step output."""
    d = os.path.join(root, f"inference_{n:03d}")
    os.mkdir(d)
    _save_new(os.path.join(d, "input.npy"), np.asarray(input_fx8, np.int8))
    for name in LAYER_OUTPUTS:
        _save_new(os.path.join(d, name + ".npy"), outputs[name].numpy())


def _run(argv):
    args = _parser().parse_args(argv)
    data = args.data if args.data is not None else default_data_dir()
    if args.data is None and not os.path.isdir(data):
        raise _UsageError(f"KWS data folder not found; looked in {searched_places()} "
                          "(give --data DIR or set MLI_KWS_DATA)")
    model = load_model(data)
    wav = args.wav if args.wav is not None else os.path.join(model.data_dir, "test.wav")
    try:
        samples = read_wav(wav, strict=not args.lenient_wav)
    except WavError as e:
        hint = " (--lenient-wav reads it as the example does)" if e.strict_only else ""
        raise _UsageError(f"{e}{hint}") from None
    if args.dump is not None:
        check_dump_dir(args.dump)
    missing = missing_kernels()
    if missing:
        raise NotImplementedError("the network needs MLI 1.1 kernels this build of mli-py does not have yet: "
                                  + ", ".join(f"mli.{k}" for k in missing))
    stream = features_of_samples(samples)
    if args.dump is not None:
        os.makedirs(args.dump, exist_ok=True)
        _save_new(os.path.join(args.dump, "features.npy"), stream.features_fx8)
    pp = PostProcessor(classes=model.classes)
    with rounding_ctx(args.rounding):
        for n in range(stream.inferences):
            x = stream.network_input(n)
            out = run_network(x, model)
            if args.dump is not None:
                write_inference_dump(args.dump, n, x, out)
            sm = out["softmax_out"]
            line = pp.process(probabilities(sm.numpy(), sm.frac_bits), *timestamps(n))
            if line is not None:
                print(line, flush=True)
    line = pp.finalize()
    if line is not None:
        print(line)
    if args.info:
        print("\n".join(info_lines(model, stream.calls, stream.inferences)))
    return 0


def _message(e):
    if isinstance(e, OSError) and e.filename is not None and e.strerror:
        return f"{e.filename}: {e.strerror}"
    return str(e)


def main(argv=None):
    """``mli kws``: returns 0, or 2 with a one-line message on stderr."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _run(argv)
    except SystemExit as e:  # --help
        return int(e.code or 0) if isinstance(e.code, int) else 0
    except BrokenPipeError:  # the reader of stdout left (mli.tools.cli exits quietly)
        raise
    except (ValueError, OSError, NotImplementedError) as e:
        print(f"{PROG}: error: {_message(e)}", file=sys.stderr)
        return 2
    except Exception as e:  # an input we did not foresee: still no traceback
        if os.environ.get("MLI_DEBUG"):
            raise
        print(f"{PROG}: error: {type(e).__name__}: {e} (set MLI_DEBUG=1 for a traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
