"""Fuzz target `cli`: mli.tools.crosscheck.main([...]) and mli.tools.export_c.main([...])
on random options and (mutated) files.

Rules: main() returns 0, 1 or 2 (export-c: 0 or 2), never raises, and
writes no traceback to stderr.  An error that reached a command's catch-all
("error: SomeError: ... (set MLI_DEBUG=1 for a traceback)") obeys those
rules but means an exception type nobody foresaw: such messages are listed
in the summary ("catch_all") without failing the run.

A spec: {"cmd", "files": per-file mutations, "argv": list of tokens where
"@NAME" stands for the file NAME in the example's temporary folder, "case":
a case dict for crosscheck (written as case.json / case.toml)}.
"""
import contextlib
import io
import json
import os
import tempfile
import sys
import traceback

import numpy as np
from hypothesis import strategies as st

from mli.tools import crosscheck as xc
from mli.tools.crosscheck import case as xc_case
from mli.tools import export_c as ex
from mli.io import encode_idx
from mli.io.c_array import format_c_array

from common import Finding

T, N, H, M = 6, 3, 4, 3
CODES = {}  # (command, exit code) -> count, for the summary
CATCH_ALL = {}  # exception type -> (message, spec) of errors that reached a command's catch-all
FILES = ("x.idx", "xi.idx", "w.npz", "wf.npz", "fw.npy", "fwm.npy", "fw.bin", "fw.idx", "fwc.npy", "coefs.h", "vec",
         "case.json", "case.toml", "har", "bad.txt", "empty.idx")
KERNELS = ("fully_connected", "fully_connected_fx8", "fully_connected_fx16", "fully_connected_fx8w16d", "relu",
           "relu_fx8", "tanh", "sigm_fx16", "lstm_cell", "lstm_cell_fx16", "lstm_cell_fx8w16d", "basic_rnn_cell",
           "basic_rnn_cell_fx8", "eltwise_add", "eltwise_mul_fx16", "eltwise_min", "conv2d", "", "lstm_cell_fx32")
SPECS = ("@x.idx", "@xi.idx", "@w.npz:fc_w", "@w.npz:fc_b", "@w.npz:l_w", "@w.npz:l_b", "@w.npz:r_w", "@w.npz:r_b",
         "@w.npz", "@w.npz:nope", "@wf.npz:fc_w", "@fw.npy", "@fw.bin,dtype=int16", "@fw.bin,dtype=int16,shape=6x4",
         "@fw.bin,dtype=int8,offset=3", "@fw.bin,dtype=bogus", "@fw.bin,shape=-1,-1,dtype=int16", "@fw.idx",
         "@fwc.npy", "@fwm.npy", "@coefs.h:a", "@coefs.h:b,macro=QMN,frac=14,dtype=int16", "@coefs.h", "@vec", "@empty.idx",
         "@bad.txt", "@missing.idx", "zeros", "raw:@fw.bin,dtype=int16,endian=big", "c:@coefs.h:a", "npz:@fw.npy",
         "idx:@fw.bin", "@fw.bin,count=3,dtype=int16", "@fw.bin,unknown=1", "@fw.npy,shape=5x5", "@x.idx,dtype=int8",
         "@har", "", ",", ":", "@w.npz:fc_w,frac=3")
INTS = ("0", "1", "3", "7", "12", "14", "15", "16", "31", "255", "256", "-1", "99999999999999999999", "x", "1.5", "")
FLAG_VALUES = {
    "--kernel": KERNELS, "--kind": ("fx8", "fx16", "fx8w16d", "fx4"),
    "--in": SPECS, "--weights": SPECS, "--bias": SPECS, "--prev-out": SPECS, "--cell": SPECS, "--in2": SPECS,
    "--firmware": SPECS, "--firmware-cell": SPECS, "--float-ref": SPECS,
    "--in-frac": INTS, "--weights-frac": INTS, "--bias-frac": INTS, "--prev-out-frac": INTS, "--cell-frac": INTS,
    "--in2-frac": INTS, "--out-frac": INTS,
    "--mode": ("one_to_one", "batch_to_batch", "batch_to_last", "sideways", "", "1"),
    "--act": ("tanh", "sigm", "none", "relu", ""), "--relu-type": ("gen", "relu_1", "relu_6", "none", "x"),
    "--per-step": ("auto", "yes", "no", "maybe"), "--time-axis": ("0", "1", "none", "-1", "7", "x"),
    "--har": ("@har", "@vec", "@w.npz", "@missing", "@fw.npy"), "--depth": ("16", "816", "8", "32", "x"),
    "--layer3": ("custom", "library", "x"), "--data": ("@har", "@missing", "@vec"),
    "--rounding": ("convergent", "up", "down"),
}
_FC = {"--in": "@x.idx", "--in-frac": "12", "--weights": "@w.npz:fc_w", "--weights-frac": "14",
       "--bias": "@w.npz:fc_b", "--bias-frac": "14", "--firmware": "@fw.npy", "--out-frac": "11"}
BASES = {  # coherent one-kernel command lines that the random flags then perturb
    "fully_connected": dict(_FC, **{"--kernel": "fully_connected"}),
    "fully_connected_fx8": dict(_FC, **{"--kernel": "fully_connected_fx8", "--in-frac": "5", "--weights-frac": "6",
                                        "--bias-frac": "6", "--out-frac": "4"}),
    "relu": {"--kernel": "relu", "--in": "@xi.idx", "--in-frac": "12", "--firmware": "@xi.idx"},
    "tanh": {"--kernel": "tanh", "--in": "@x.idx", "--in-frac": "12", "--firmware": "@fw.bin,dtype=int16"},
    "eltwise_add": {"--kernel": "eltwise_add", "--in": "@x.idx", "--in-frac": "12", "--in2": "@xi.idx",
                    "--in2-frac": "12", "--firmware": "@fw.idx"},
    "lstm_cell": {"--kernel": "lstm_cell_fx16", "--in": "@x.idx", "--in-frac": "12", "--weights": "@w.npz:l_w",
                  "--weights-frac": "15", "--bias": "@w.npz:l_b", "--bias-frac": "14", "--cell-frac": "11",
                  "--prev-out-frac": "15", "--firmware": "@fwm.npy", "--firmware-cell": "@fwc.npy",
                  "--mode": "batch_to_batch"},
    "basic_rnn_cell": {"--kernel": "basic_rnn_cell", "--kind": "fx8w16d", "--in": "@x.idx", "--in-frac": "12",
                       "--weights": "@w.npz:r_w", "--weights-frac": "6", "--bias": "@w.npz:r_b", "--bias-frac": "6",
                       "--prev-out-frac": "15", "--firmware": "@fwm.npy", "--act": "none"},
}
SWITCHES = ("--vectors", "--no-alt-rounding", "--isolate", "--json", "--help", "--bogus")
EX_FLAGS = {
    "--type": ("fx16", "fx8", "fx32", ""), "--type-of": ("fc_w=fx8", "fc_w=x", "nope=fx8", "=", "fc_w"),
    "--frac": ("fc_w=14", "fc_b=3", "fc_w=x", "nope=1", "fc_w=999", "fc_w=-1", "=", "fc_w"),
    "--frac-all": INTS, "--only": ("fc_w", "fc_w,fc_b", "nope", "", ","),
    "--rename": ("fc_w=W", "fc_w=1bad", "fc_w=", "nope=x", "fc_w=fc_b"), "--prefix": ("", "p_", "1", "a b"),
    "--buffer": ("st,shape=32,frac=11", "st,shape=0", "st", "st,shape=x", "st,shape=4x4,frac=x,type=fx8",
                 "st,shape=99999999999", "1x,shape=3", "st,shape=2,bogus=1"),
    "--rnn-cfg": ("cfg,ir=128", "cfg,ir=x", "cfg", "cfg,ir=4,mode=bogus", "cfg,ir=4,act=sigm,type=fx8",
                  "cfg,ir=-1", "cfg,ir=99999999999"),
    "--data-attr": ("", "_W", "__attribute__((x))", "*/"), "--include": ("mli_api.h", "", "a\"b.h"),
}
EX_SWITCHES = ("--auto-frac", "--allow-saturation", "--help", "--bogus")
OUTS = ("@out/model", "@out", "@missingdir/sub/model", "", "@out/ model", "@out/model.c")


KEY_OF = {flag: key for key, flag in xc_case._CLI_FLAG.items()}


def _case_value(draw, key):
    pools = {
        "kernel": KERNELS, "kind": ("fx8", "fx16", "fx8w16d", "fx4", 3),
        "input": SPECS + ("@fc1", "@nope"), "weights": SPECS, "bias": SPECS, "prev_out": SPECS, "cell": SPECS,
        "in2": SPECS, "firmware": SPECS, "firmware_cell": SPECS, "float_ref": SPECS,
        "mode": FLAG_VALUES["--mode"] + (1, None), "act": FLAG_VALUES["--act"] + (2,),
        "relu": FLAG_VALUES["--relu-type"], "per_step": (True, False, "auto", "x"), "time_axis": (0, 1, None, -3, "x"),
        "name": ("fc1", "l2", "", "fc1", 5),
    }
    if key.endswith("_frac"):
        return draw(st.sampled_from((0, 3, 7, 12, 14, 15, 16, 31, 255, 256, -1, "x", 1.5, None, True)))
    v = draw(st.sampled_from(pools.get(key, (None, 1, "x", [], {}))))
    if isinstance(v, str) and v.startswith("@") and v[1:].split(",")[0].split(":")[0] in FILES + ("missing.idx",):
        v = v[1:]  # case files name files relative to themselves ("@fc1" is a layer reference)
    return v


@st.composite
def case_dict(draw):
    keys = sorted(xc_case._LAYER_KEYS)
    layer = {k: _case_value(draw, k) for k in draw(st.lists(st.sampled_from(keys), max_size=8, unique=True))}
    flags = BASES[draw(st.sampled_from(sorted(BASES)))]
    base = {KEY_OF[f]: (v[1:] if v.startswith("@") else int(v) if v.isdigit() else v) for f, v in flags.items()}
    base.update(layer)
    case = {"kind": draw(st.sampled_from(("fx16", "fx8", "fx8w16d", "bogus")))}
    if draw(st.booleans()):
        case["layers"] = [base] + ([dict(base, name="second", input="@fc1")] if draw(st.booleans()) else [])
        if draw(st.booleans()):
            case["layers"][0]["name"] = "fc1"
    else:
        case.update(base)
    for k in draw(st.lists(st.sampled_from(("rounding", "isolate", "vectors", "description", "junk_key")),
                           max_size=2, unique=True)):
        case[k] = draw(st.sampled_from(("up", "convergent", True, False, 3, "x")))
    return case


def file_mut():
    return st.tuples(st.sampled_from(FILES[:10] + ("case.json",)),
                     st.sampled_from(("truncate", "flip", "empty", "delete", "junk")),
                     st.integers(0, 10**6), st.integers(0, 255))


@st.composite
def cli_spec(draw):
    cmd = draw(st.sampled_from(("crosscheck", "crosscheck", "crosscheck_case", "export", "export")))
    argv = []
    if cmd == "crosscheck":
        base = dict(BASES[draw(st.sampled_from(sorted(BASES)))]) if draw(st.integers(0, 4)) else {}
        for f in draw(st.lists(st.sampled_from(sorted(FLAG_VALUES)), max_size=4)):
            base[f] = draw(st.sampled_from(FLAG_VALUES[f]))
        for f in draw(st.lists(st.sampled_from(sorted(base) or ["--kernel"]), max_size=2)):
            base.pop(f, None)
        for f, v in base.items():
            argv += [f, v]
        argv += draw(st.lists(st.sampled_from(SWITCHES), max_size=2, unique=True))
        if draw(st.integers(0, 9)) == 0:
            argv.insert(0, draw(st.sampled_from(("@case.json", "@missing.json", "@w.npz"))))
    elif cmd == "crosscheck_case":
        argv = [draw(st.sampled_from(("@case.json", "@case.json", "@case.toml")))]
        argv += draw(st.lists(st.sampled_from(SWITCHES[:4]), max_size=2, unique=True))
        if draw(st.booleans()):
            argv += ["--rounding", draw(st.sampled_from(("up", "convergent")))]
    else:
        argv = draw(st.lists(st.sampled_from(SPECS), min_size=min(1, draw(st.integers(0, 9))), max_size=3))
        if draw(st.integers(0, 15)):
            argv += ["-o", draw(st.sampled_from(OUTS))]
        for f in draw(st.lists(st.sampled_from(sorted(EX_FLAGS)), max_size=5)):
            argv += [f, draw(st.sampled_from(EX_FLAGS[f]))]
        argv += draw(st.lists(st.sampled_from(EX_SWITCHES), max_size=2, unique=True))
        if draw(st.integers(0, 3)) == 0:
            argv += ["--frac-all", "14"]
    return {"cmd": cmd, "argv": tuple(argv), "case": draw(case_dict()),
            "files": tuple(draw(st.lists(file_mut(), max_size=2))), "seed": draw(st.integers(0, 2**16))}


# ------------------------------------------------------------------ files
def _write_files(d, spec):
    rng = np.random.default_rng(spec["seed"])
    w = {"fc_w": rng.uniform(-0.9, 0.9, (H, N)), "fc_b": rng.uniform(-0.5, 0.5, H),
         "l_w": rng.uniform(-0.9, 0.9, (4, M, H + M)), "l_b": rng.uniform(-0.9, 0.9, (4, M)),
         "r_w": rng.uniform(-0.9, 0.9, (M, N + M)), "r_b": rng.uniform(-0.5, 0.5, M)}
    np.savez(os.path.join(d, "w.npz"), **w)
    np.savez(os.path.join(d, "wf.npz"), **{k: v for k, v in w.items()},
             **{k + ".frac_bits": np.array(14, np.int32) for k in w})
    x = rng.uniform(-1.5, 1.5, (T, N)).astype(np.float32)
    with open(os.path.join(d, "x.idx"), "wb") as f:
        f.write(encode_idx(x))
    with open(os.path.join(d, "xi.idx"), "wb") as f:
        f.write(encode_idx(rng.integers(-3000, 3000, (T, N)).astype(np.int16)))
    fw = rng.integers(-3000, 3000, (T, H)).astype(np.int16)
    np.save(os.path.join(d, "fw.npy"), fw)
    np.save(os.path.join(d, "fwc.npy"), fw[0, :M])
    np.save(os.path.join(d, "fwm.npy"), fw[:, :M])
    fw.tofile(os.path.join(d, "fw.bin"))
    with open(os.path.join(d, "fw.idx"), "wb") as f:
        f.write(encode_idx(fw))
    with open(os.path.join(d, "coefs.h"), "w") as f:
        f.write(format_c_array("a", fw[:2]) + "\nconst w_type b[] = { QMN(int16_t, 14, 0.25), 3 };\n")
    os.mkdir(os.path.join(d, "vec"))
    for i in range(2):
        with open(os.path.join(d, "vec", f"v{i}.idx"), "wb") as f:
            f.write(encode_idx(x[i:i + 3]))
    os.mkdir(os.path.join(d, "har"))
    np.save(os.path.join(d, "har", "fc1.npy"), rng.integers(-100, 100, (128, 32)).astype(np.int16))
    with open(os.path.join(d, "bad.txt"), "w") as f:
        f.write("not an array")
    open(os.path.join(d, "empty.idx"), "wb").close()
    os.mkdir(os.path.join(d, "out"))
    case = spec["case"]
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump(case, f, default=str)
    with open(os.path.join(d, "case.toml"), "w") as f:
        for k, v in case.items():
            if not isinstance(v, (list, dict)) and v is not None:
                f.write(f"{k} = {json.dumps(v)}\n")
        for layer in case.get("layers", []):
            f.write("[[layers]]\n")
            for k, v in layer.items():
                if not isinstance(v, (list, dict)) and v is not None:
                    f.write(f"{k} = {json.dumps(v)}\n")
    for name, how, pos, byte in spec["files"]:
        p = os.path.join(d, name)
        if not os.path.isfile(p):
            continue
        data = open(p, "rb").read()
        if how == "truncate":
            data = data[: pos % (len(data) + 1)]
        elif how == "flip" and data:
            i = pos % len(data)
            data = data[:i] + bytes([byte]) + data[i + 1:]
        elif how == "empty":
            data = b""
        elif how == "junk":
            data = bytes(rng.integers(0, 256, pos % 300, dtype=np.uint8))
        if how == "delete":
            os.remove(p)
        else:
            with open(p, "wb") as f:
                f.write(data)


def _sub(tok, d):
    """Replace @NAME by the path of NAME in d (also inside a spec string)."""
    return tok.replace("@", d + os.sep) if "@" in tok else tok


def run_cli_spec(spec):
    os.environ.pop("MLI_DEBUG", None)
    with tempfile.TemporaryDirectory() as d:
        _write_files(d, spec)
        argv = [_sub(t, d) for t in spec["argv"]]
        main = ex.main if spec["cmd"] == "export" else xc.main
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)
        except BaseException as e:  # noqa: B902
            tb = traceback.extract_tb(e.__traceback__)
            at = f"{tb[-1].filename}:{tb[-1].lineno}" if tb else "?"
            raise Finding(f"{spec['cmd']} main() raised {type(e).__module__}.{type(e).__name__}: "
                          f"{str(e)[:300]} at {at}") from e
        text = err.getvalue()
        CODES[(spec["cmd"], code)] = CODES.get((spec["cmd"], code), 0) + 1
        if os.environ.get("MLI_FUZZ_SHOW_CLI"):
            print(spec["cmd"], code, text.strip()[:200], file=sys.__stderr__)
        allowed = (0, 2) if spec["cmd"] == "export" else (0, 1, 2)
        if code not in allowed:
            raise Finding(f"{spec['cmd']} main() returned {code!r}, expected one of {allowed}")
        if "Traceback (most recent call last)" in text:
            raise Finding(f"{spec['cmd']} printed a traceback on stderr: {text[-500:]}")
        if "MLI_DEBUG=1 for a traceback" in text:  # allowed (exit 2, one line), but worth reporting
            msg = text.strip().splitlines()[-1][:300]
            key = msg.split(":")[2] if msg.count(":") >= 2 else msg
            if key not in CATCH_ALL:
                CATCH_ALL[key] = (msg, repr(spec)[:3000])
        if code == 2 and not text.strip() and "--help" not in argv:
            raise Finding(f"{spec['cmd']} exited 2 with nothing on stderr")
