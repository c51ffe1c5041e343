"""mli export-c: the generated .c/.h compile with the package's own C core
(csrc/include + csrc/src/**/*.c), and a kernel run in C on the exported
tensors gives the Python call's output bit for bit."""

import glob
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import mli
from mli.tools.export_c import (ExportError, export_c, main, make_buffer, make_rnn_cfg, make_tensor, quantize, render)
from mli.io.c_array import read_c_array
from mli.io.npz import write_npz

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MLI_SHARED") or ROOT.parent / "shared")
HAR = SHARED / "data" / "har"
needs_har = pytest.mark.skipif(not HAR.is_dir(), reason=f"HAR data not found at {HAR} (set MLI_SHARED)")
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
needs_cc = pytest.mark.skipif(CC is None, reason="no system C compiler (cc/gcc/clang)")
INC = ROOT / "csrc" / "include"


@pytest.fixture(scope="module")
def core_objects(tmp_path_factory):
    """The C core compiled once: object files of csrc/src/**/*.c."""
    from concurrent.futures import ThreadPoolExecutor
    d = tmp_path_factory.mktemp("core")
    srcs = sorted(glob.glob(str(ROOT / "csrc" / "src" / "**" / "*.c"), recursive=True))
    objs = [str(d / f"{i:02d}_{Path(src).stem}.o") for i, src in enumerate(srcs)]

    def compile_one(src, obj):
        subprocess.run([CC, "-std=c11", "-O1", "-I", str(INC), "-c", src, "-o", obj], check=True,
                       capture_output=True, text=True)

    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:   # one compiler process per core
        list(pool.map(compile_one, srcs, objs))
    return objs


def build_and_run(tmp_path, core_objects, base, main_c):
    """Compile BASE.c strictly, link it with main_c and the core, run; the printed ints."""
    (tmp_path / "main.c").write_text(main_c)
    exe = tmp_path / "prog"
    flags = ["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I", str(INC), "-I", str(tmp_path)]
    r = subprocess.run([CC, *flags, "-c", f"{base}.c", "-o", str(tmp_path / "model.o")], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([CC, *flags, str(tmp_path / "main.c"), str(tmp_path / "model.o"), *core_objects, "-lm",
                        "-o", str(exe)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return [int(v) for v in r.stdout.split()]


def print_loop(name, n):
    return f"    for (unsigned i = 0; i < {n}u; i++) printf(\"%d\\n\", (int){name}_data[i]);\n"


# ------------------------------------------------------------------ round trips
@needs_cc
def test_lstm_fx16_cli_round_trip(tmp_path, core_objects, capsys):
    """Float weights in an .npz -> mli export-c -> C lstm_cell_fx16 == mli.lstm_cell_fx16."""
    T, N, M = 9, 5, 4
    rng = np.random.default_rng(21)
    w = rng.uniform(-0.99, 0.99, (4, M, N + M))
    b = rng.uniform(-1.5, 1.5, (4, M))
    x = rng.uniform(-3.0, 3.0, (T, N))
    h0 = rng.uniform(-0.9, 0.9, M)
    c0 = rng.uniform(-2.0, 2.0, M)
    write_npz(tmp_path / "w.npz", {"w": w, "b": b, "x": x, "h0": h0, "c0": c0})
    base = tmp_path / "model"
    code = main([str(tmp_path / "w.npz"), "-o", str(base), "--frac", "w=15", "--frac", "b=14", "--frac", "x=12",
                 "--frac", "h0=15", "--frac", "c0=12", "--buffer", f"y,shape={T}x{M}",
                 "--rnn-cfg", f"cfg,mode=batch_to_batch,act=tanh,ir={4 * M}"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "wrote" in out and "cfg_ir" in out
    # the cell is an input and an output: copy it into a mutable tensor in C
    main_c = f"""#include <stdio.h>
#include <string.h>
#include "model.h"
int16_t cell_buf[{M}];
int main(void) {{
    mli_tensor cell = c0;
    memcpy(cell_buf, c0_data, sizeof cell_buf);
    cell.data = cell_buf;
    mli_status st = mli_krn_lstm_cell_fx16(&x, &h0, &w, &b, &cfg, &cell, &y);
    if (st != MLI_STATUS_OK) {{ printf("status %d\\n", (int)st); return 1; }}
    printf("%d %d %d\\n", (int)y.el_params.fx.frac_bits, (int)y.shape[0], (int)y.shape[1]);
{print_loop("y", T * M)}    for (int i = 0; i < {M}; i++) printf("%d\\n", cell_buf[i]);
    return 0;
}}
"""
    got = build_and_run(tmp_path, core_objects, base, main_c)
    q = {k: quantize(v, "fx16", f)[0] for k, v, f in (("w", w, 15), ("b", b, 14), ("x", x, 12), ("h0", h0, 15),
                                                       ("c0", c0, 12))}
    y, cell = mli.lstm_cell_fx16(mli.Tensor(q["x"], 12), mli.Tensor(q["h0"], 15), mli.Tensor(q["w"], 15),
                                 mli.Tensor(q["b"], 14), mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_BATCH,
                                                                          act=mli.RNN_ACT_TANH),
                                 mli.Tensor(q["c0"], 12))
    assert got[:3] == [y.frac_bits, T, M]
    assert got[3:3 + T * M] == y.numpy().reshape(-1).tolist()
    assert got[3 + T * M:] == cell.numpy().tolist()
    assert len(set(got[3:3 + T * M])) > 5          # a real computation, not a constant


@needs_cc
@pytest.mark.parametrize("kind", ["fx8", "fx16", "fx8w16d"])
def test_fully_connected_api_round_trip(tmp_path, core_objects, kind):
    rng = np.random.default_rng(22)
    d_el, w_el = {"fx8": ("fx8", "fx8"), "fx16": ("fx16", "fx16"), "fx8w16d": ("fx16", "fx8")}[kind]
    fw, fb, fx = (6, 5, 5) if w_el == "fx8" else (14, 13, 12)
    w = rng.uniform(-1.0, 1.0, (7, 11))
    b = rng.uniform(-1.0, 1.0, 7)
    x = rng.uniform(-1.5, 1.5, 11)
    tensors = [make_tensor("fc_w", w, el_type=w_el, frac_bits=fw), make_tensor("fc_b", b, el_type=w_el, frac_bits=fb),
               make_tensor("fc_x", x, el_type=d_el, frac_bits=fx), make_buffer("fc_y", 7, el_type=d_el, frac_bits=3)]
    base = tmp_path / "fc_model"
    c_path, h_path = export_c(base, tensors, data_attr="", include="mli_api.h")
    assert Path(c_path).name == "fc_model.c" and Path(h_path).name == "fc_model.h"
    main_c = f"""#include <stdio.h>
#include "fc_model.h"
int main(void) {{
    mli_status st = mli_krn_fully_connected_{kind}(&fc_x, &fc_w, &fc_b, &fc_y);
    if (st != MLI_STATUS_OK) {{ printf("status %d\\n", (int)st); return 1; }}
{print_loop("fc_y", 7)}    return 0;
}}
"""
    got = build_and_run(tmp_path, core_objects, base, main_c)
    t = {tt.name: mli.Tensor(tt.values, tt.frac_bits) for tt in tensors}
    want = getattr(mli, f"fully_connected_{kind}")(t["fc_x"], t["fc_w"], t["fc_b"], out_frac_bits=3)
    assert got == want.numpy().tolist()


@needs_cc
def test_basic_rnn_batch_to_last_sigm_fx8(tmp_path, core_objects):
    rng = np.random.default_rng(23)
    T, N, M = 6, 3, 5
    w = rng.integers(-128, 128, (M, N + M)).astype(np.int8)     # already quantized
    b = rng.integers(-60, 60, M).astype(np.int8)
    x = rng.integers(-128, 128, (T, N)).astype(np.int8)
    cfg, ir = make_rnn_cfg("rnn_cfg", "RNN_BATCH_TO_LAST", "sigm", M, el_type="fx8")
    tensors = [make_tensor("w", w, el_type="fx8", frac_bits=7), make_tensor("b", b, el_type="fx8", frac_bits=6),
               make_tensor("x", x, el_type="fx8", frac_bits=5), make_buffer("h0", M, el_type="fx8", frac_bits=7),
               make_buffer("y", M, el_type="fx8"), ir]
    base = tmp_path / "rnn"
    export_c(base, tensors, [cfg])
    main_c = f"""#include <stdio.h>
#include "rnn.h"
int main(void) {{
    mli_status st = mli_krn_basic_rnn_cell_fx8(&x, &h0, &w, &b, &rnn_cfg, &y);
    if (st != MLI_STATUS_OK) {{ printf("status %d\\n", (int)st); return 1; }}
{print_loop("y", M)}    return 0;
}}
"""
    got = build_and_run(tmp_path, core_objects, base, main_c)
    want = mli.basic_rnn_cell_fx8(mli.Tensor(x, 5), mli.Tensor(np.zeros(M, np.int8), 7), mli.Tensor(w, 7),
                                  mli.Tensor(b, 6), mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_LAST, act=mli.RNN_ACT_SIGM))
    assert got == want.numpy().tolist()


@needs_cc
@needs_har
def test_har_coefficients_compile_and_match_example(tmp_path, core_objects, capsys):
    """The example's float coefficients, exported at depth 16, equal quantized_16.npz
    and drive layer 2 in C exactly as in Python."""
    fr = {"L1_fc_wt": 14, "L1_fc_bias": 14, "L2_lstm_wt": 15, "L2_lstm_bias": 14, "L3_lstm_wt": 15,
          "L3_lstm_bias": 14, "L4_fc_wt": 15, "L4_fc_bias": 17}
    base = tmp_path / "har_coefs"
    argv = [str(HAR / "coefficients.npz"), "-o", str(base), "--data-attr", "_W"]
    for k, v in fr.items():
        argv += ["--frac", f"{k}={v}"]
    assert main(argv) == 0, capsys.readouterr().err
    q16 = np.load(HAR / "quantized_16.npz")
    for k in fr:
        np.testing.assert_array_equal(read_c_array(f"{base}.c", k + "_data", dtype=np.int16), q16[k].reshape(-1))
    src = Path(f"{base}.c").read_text()
    assert "const int16_t _W L2_lstm_wt_data[8192] = {" in src and ".el_params.fx.frac_bits = 17," in src
    # a firmware build defines _W (XY memory placement); here it is empty
    x = np.random.default_rng(3).integers(0, 8000, (16, 32)).astype(np.int16)
    cfg, ir = make_rnn_cfg("lcfg", "batch_to_batch", "tanh", 128)
    io_c, io_h = export_c(tmp_path / "io", [make_tensor("lx", x, frac_bits=12), make_buffer("lh", 32, frac_bits=15),
                                            make_buffer("lc", 32, frac_bits=11), make_buffer("ly", (16, 32)), ir],
                          [cfg])
    c_text, h_text = Path(io_c).read_text(), Path(io_h).read_text()
    main_c = """#include <stdio.h>
#define _W
#include "har_coefs.h"
#include "io.h"
int main(void) {
    mli_status st = mli_krn_lstm_cell_fx16(&lx, &lh, &L2_lstm_wt, &L2_lstm_bias, &lcfg, &lc, &ly);
    if (st != MLI_STATUS_OK) { printf("status %d\\n", (int)st); return 1; }
""" + print_loop("ly", 16 * 32) + "    return 0;\n}\n"
    (tmp_path / "main.c").write_text(main_c)
    exe = tmp_path / "prog"
    flags = ["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-I", str(INC), "-I", str(tmp_path), "-D_W="]
    r = subprocess.run([CC, *flags, str(tmp_path / "main.c"), f"{base}.c", str(tmp_path / "io.c"), *core_objects,
                        "-lm", "-o", str(exe)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = [int(v) for v in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()]
    want, _ = mli.lstm_cell_fx16(mli.Tensor(x, 12), mli.Tensor(np.zeros(32, np.int16), 15),
                                 mli.Tensor(q16["L2_lstm_wt"], 15), mli.Tensor(q16["L2_lstm_bias"], 14),
                                 mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_BATCH, act=mli.RNN_ACT_TANH),
                                 mli.Tensor(np.zeros(32, np.int16), 11))
    assert got == want.numpy().reshape(-1).tolist()
    assert "extern mli_rnn_cell_cfg lcfg;" in h_text and ".ir_tsr = &lcfg_ir," in c_text


# ---------------------------------------------------------------- the text
def test_struct_layout_and_designated_initialisers():
    t = make_tensor("wt", np.array([[0.5, -0.25, 1.0]]), el_type="fx16", frac_bits=14)
    c_text, h_text = render([t], header_name="m.h")
    assert "const int16_t wt_data[3] = {" in c_text and "8192, -4096, 16384" in c_text
    for line in (".data = (void *)wt_data,", ".capacity = sizeof(wt_data),", ".mem_stride = {0, 0, 0, 0},",
                 ".shape = {1, 3, 0, 0},", ".rank = 2,", ".el_type = MLI_EL_FX_16,", ".el_params.fx.frac_bits = 14,"):
        assert line in c_text
    assert "#define WT_FRAC_BITS 14" in h_text and "extern const mli_tensor wt;" in h_text
    assert '#include "mli_api.h"' in h_text and "#ifndef M_H" in h_text


def test_quantize_is_the_qmn_rule_and_rejects_nan():
    q, sat = quantize([-0.2528931797, 0.5 / 2 ** 14, -0.5 / 2 ** 14, 3.0, -3.0], "fx16", 14)
    assert q.tolist() == [-4143, 1, -1, 32767, -32768] and sat == 2
    assert quantize([0.999, -1.0], "fx8", 7)[0].tolist() == [127, -128]
    with pytest.raises(ExportError, match="NaN and infinity"):
        quantize([0.0, np.nan], "fx16", 3)
    with pytest.raises(ExportError, match="wt: value at index"):
        make_tensor("wt", [1.0, np.inf], frac_bits=3)


@pytest.mark.parametrize("kw, match", [
    (dict(name="1bad", values=[1.0], frac_bits=1), "not a valid C identifier"),
    (dict(name="int", values=[1.0], frac_bits=1), "not a valid C identifier"),
    (dict(name="w", values=[1.0]), "frac bits are required"),
    (dict(name="w", values=[1.0], frac_bits=300), "0..255"),
    (dict(name="w", values=np.array([200]), frac_bits=0, el_type="fx8"), "do not fit fx8"),
    (dict(name="w", values=np.zeros((1, 1, 1, 1, 2)), frac_bits=0), "rank 5"),
    (dict(name="w", values=[1.0], frac_bits=1, el_type="fx32"), "expected fx8 or fx16"),
])
def test_make_tensor_errors(kw, match):
    with pytest.raises(ExportError, match=match):
        make_tensor(**kw)


def test_render_errors():
    t = make_tensor("a", [1.0], frac_bits=1)
    with pytest.raises(ExportError, match="defined twice"):
        render([t, t])
    cfg, ir = make_rnn_cfg("c", "batch_to_batch", "tanh", 4)
    with pytest.raises(ExportError, match="ir tensor 'c_ir' is not exported"):
        render([t], [cfg])
    with pytest.raises(ExportError, match="mode: unknown value 'sideways'"):
        make_rnn_cfg("c", "sideways", "tanh", 4)


@pytest.mark.parametrize("argv, match", [
    (["w.npz", "-o", "out"], "no frac bits (give --frac a=N"),
    (["w.npz", "-o", "out", "--frac", "zz=3"], "--frac zz: no such array"),
    (["w.npz", "-o", "out", "--frac-all", "14"], "saturated at 14 frac bits"),
    (["w.npz", "-o", "out", "--frac-all", "3", "--type", "fx32"], "--type: expected fx8 or fx16"),
    (["nan.npy", "-o", "out", "--frac-all", "3"], "NaN and infinity"),
    (["missing.npz", "-o", "out"], "no such file"),
    (["w.npz"], "required: -o"),
    (["w.npz", "-o", "out", "--frac-all", "3", "--buffer", "buf"], "needs shape="),
    (["w.npz", "-o", "out", "--frac-all", "3", "--rnn-cfg", "c,mode=x,ir=4"], "mode: unknown value 'x'"),
    (["w.npz", "-o", "nodir/out", "--frac-all", "3"], "folder"),
])
def test_cli_errors_exit_2(tmp_path, capsys, monkeypatch, argv, match):
    monkeypatch.chdir(tmp_path)
    write_npz(tmp_path / "w.npz", {"a": np.array([1.5, -2.5])})
    np.save(tmp_path / "nan.npy", np.array([1.0, np.nan]))
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and match in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1


def test_cli_auto_frac_and_c_source(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src.c").write_text("const w_type W1[] = { WQ(0.5), WQ(-0.75), WQ(1.25) };\n")
    np.save(tmp_path / "v.npy", np.array([3.0, -1.0], np.float32))
    code = main(["src.c:W1,macro=WQ,frac=12,dtype=int16", "v.npy", "-o", "m", "--auto-frac", "--type-of", "v=fx8",
                 "--prefix", "net_"])
    out, err = capsys.readouterr()
    assert code == 0, err
    c_text = (tmp_path / "m.c").read_text()
    assert "const int16_t net_W1_data[3] = {" in c_text
    assert read_c_array(tmp_path / "m.c", "net_W1_data").tolist() == [2048, -3072, 5120]
    assert ".el_params.fx.frac_bits = 12," in c_text               # the macro's frac bits
    assert read_c_array(tmp_path / "m.c", "net_v_data").tolist() == [96, -32]   # auto frac: 3.0 fits Q5 in int8
    assert "const int8_t net_v_data[2] = {" in c_text and ".el_params.fx.frac_bits = 5," in c_text


# ------------------------------------------------------------------ MLI 2.0.2 (--mli 2)
INC2 = ROOT / "csrc" / "mli2" / "include"


@needs_cc
def test_mli2_tensors_compile_against_the_2x_headers(tmp_path, capsys, monkeypatch):
    import mli.v2 as v2
    from mli.tools.export_c2 import from_v2, make_rnn_cfg2, render2
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(3)
    np.savez("w.npz", win=rng.normal(size=(4, 3, 5)), b=np.array([[0.5, -0.25]]), x=rng.uniform(-1, 1, (6, 3)))
    code = main(["w.npz", "-o", "m", "--mli", "2", "--type", "sa8", "--sa-dim", "win=0", "--type-of", "b=sa32",
                 "--sa", "b=0,16384,20", "--asymmetric", "x", "--buffer", "out,shape=6x5,type=sa8,sa=3/16000/21",
                 "--rnn-cfg", "cfg,scratch=20,results=last,direction=backward"])
    assert code == 0, capsys.readouterr().err
    c_text = (tmp_path / "m.c").read_text()
    win = v2.Tensor.from_float(np.load("w.npz")["win"], "sa8", dim=0, symmetric=True)
    assert read_c_array(tmp_path / "m.c", "win_data").tolist() == win.numpy().reshape(-1).tolist()
    assert read_c_array(tmp_path / "m.c", "win_scale").tolist() == win.scale.tolist()
    assert read_c_array(tmp_path / "m.c", "win_scale_frac_bits").tolist() == win.scale_frac_bits.tolist()
    assert read_c_array(tmp_path / "m.c", "b_data").tolist() == [32, -16]     # v / (16384 * 2^-20) = v * 64
    assert ".mem_stride = {15, 5, 1, 0}," in c_text and ".dim = 0," in c_text
    assert ".scale = {.capacity = 0, .mem = {.i16 = 16384}}," in c_text
    assert ".zero_point = {.capacity = 0, .mem = {.i16 = 3}}," in c_text              # the buffer's own
    assert ".direction = RNN_DIR_BACKWARD," in c_text and ".results = RNN_OUT_LAST," in c_text
    assert "int32_t cfg_scratch[5];" in c_text
    x = v2.Tensor.from_float(np.load("w.npz")["x"], "sa8")
    assert f".zero_point = {{.capacity = 0, .mem = {{.i16 = {int(x.zero_point[0])}}}}}," in c_text
    # fx tensors through the API, with a negative frac
    t = from_v2("h", v2.Tensor.fx(np.array([1, -2, 3], np.int16), -2))
    c2, h2 = render2([t, from_v2("c", v2.Tensor.fx(np.zeros(3, np.int16), 11), const=False)],
                     [make_rnn_cfg2("lstm_cfg", scratch_bytes=24)], header_name="f.h")
    (tmp_path / "f.c").write_text(c2)
    (tmp_path / "f.h").write_text(h2)
    assert ".el_params.fx.frac_bits = -2," in c2 and "#define H_FRAC_BITS -2" in h2
    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-I", str(INC2)]
    for src in ("m.c", "f.c"):
        r = subprocess.run([CC, *flags, src], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    # the 1.1 headers do not know the 2.x layout: the output really is 2.x-specific
    r = subprocess.run([CC, "-std=c11", "-fsyntax-only", "-I", str(INC), "m.c"], capture_output=True, text=True)
    assert r.returncode != 0


def test_mli2_get_include_and_cli_errors(tmp_path, capsys, monkeypatch):
    import mli.v2
    assert Path(mli.v2.get_include(), "mli_api.h").is_file()
    assert main(["--print-include", "--mli", "2"]) == 0
    assert capsys.readouterr().out.strip() == mli.v2.get_include()
    monkeypatch.chdir(tmp_path)
    np.save("w.npy", np.array([1, 2], np.int8))
    assert main(["w.npy", "-o", "m", "--mli", "2", "--type", "sa8"]) == 2
    assert "need their sa parameters" in capsys.readouterr().err
    assert main(["w.npy", "-o", "m", "--sa", "w=0,1,0"]) == 2
    assert "--sa needs --mli 2" in capsys.readouterr().err
    assert main(["w.npy", "-o", "m", "--mli", "2", "--type", "sa8", "--sa", "w=0,0,3"]) == 2
    assert "scale must be 1..32767" in capsys.readouterr().err
    assert not (tmp_path / "m.c").exists()


# ------------------------------------------- the structs of the other 1.1 kernels
STRUCT_ARGS = ["--conv2d-cfg", "c1,stride=2,padding_top=1,relu=relu_6", "--pool-cfg", "p1,kernel=3,stride_width=2",
               "--permute-cfg", "pm,perm_dim=1x2x0", "--concat-cfg", "cc,tensors_num=3,axis=1",
               "--padding2d-cfg", "pd,padding=1,padding_right=2"]


@needs_cc
def test_kernel_cfg_structs_compile_with_mli_field_values(tmp_path, core_objects, capsys):
    """--conv2d-cfg ... --padding2d-cfg: const structs of MLI's types, compiled
    strictly; C reads back every field as asked."""
    np.save(tmp_path / "w.npy", np.zeros(4))
    base = tmp_path / "cfgs"
    assert main([str(tmp_path / "w.npy"), "-o", str(base), "--frac-all", "3", *STRUCT_ARGS]) == 0
    assert "5 other cfg(s)" in capsys.readouterr().out
    main_c = """#include <stdio.h>
#include "cfgs.h"
int main(void) {
    printf("%d %d %d %d %d %d %d\\n", (int)c1.relu.type, c1.stride_width, c1.stride_height, c1.padding_left,
           c1.padding_right, c1.padding_top, c1.padding_bottom);
    printf("%d %d %d %d %d %d %d %d\\n", p1.kernel_width, p1.kernel_height, p1.stride_width, p1.stride_height,
           p1.padding_left, p1.padding_right, p1.padding_top, p1.padding_bottom);
    printf("%d %d %d %d\\n", pm.perm_dim[0], pm.perm_dim[1], pm.perm_dim[2], pm.perm_dim[3]);
    printf("%d %d\\n", cc.tensors_num, cc.axis);
    printf("%d %d %d %d\\n", pd.padding_left, pd.padding_right, pd.padding_top, pd.padding_bottom);
    return 0;
}
"""
    got = build_and_run(tmp_path, core_objects, base, main_c)
    assert got == [int(mli.ReluType.RELU_6), 2, 2, 0, 0, 1, 0,
                   3, 3, 2, 1, 0, 0, 0, 0,
                   1, 2, 0, 0,
                   3, 1,
                   1, 2, 1, 1]


@pytest.mark.parametrize("flag, spec, message", [
    ("--conv2d-cfg", "c,stride=0", "--conv2d-cfg c: stride_width: expected an integer in 1..255, got '0'"),
    ("--conv2d-cfg", "c,padding=256", "padding_left: expected an integer in 0..255, got '256'"),
    ("--conv2d-cfg", "c,relu=relu_7", "--conv2d-cfg c: relu:"),
    ("--conv2d-cfg", "c,strde=1", "--conv2d-cfg c: unknown key(s) strde"),
    ("--pool-cfg", "p,stride=1", "--pool-cfg p: needs kernel_width= and kernel_height= (or kernel=N)"),
    ("--pool-cfg", "p,kernel=1.5", "kernel_width: expected an integer in 1..255, got '1.5'"),
    ("--permute-cfg", "p,perm_dim=0x0", "perm_dim: expected a permutation of 0..rank-1 (rank 1 to 4), got [0, 0]"),
    ("--permute-cfg", "p", "--permute-cfg p: needs perm_dim="),
    ("--concat-cfg", "c,tensors_num=9,axis=0", "tensors_num: expected an integer in 1..8, got '9'"),
    ("--concat-cfg", "c,tensors_num=2,axis=4", "axis: expected an integer in 0..3, got '4'"),
    ("--padding2d-cfg", "1bad,padding=1", "not a valid C identifier"),
])
def test_kernel_cfg_struct_bad_values_are_one_line_errors(tmp_path, capsys, flag, spec, message):
    np.save(tmp_path / "w.npy", np.zeros(4))
    assert main([str(tmp_path / "w.npy"), "-o", str(tmp_path / "m"), "--frac-all", "3", flag, spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mli export-c: error: ") and message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "m.c").exists() and not (tmp_path / "m.h").exists()


def test_kernel_cfg_structs_are_mli_1_only(tmp_path, capsys):
    np.save(tmp_path / "w.npy", np.zeros(4))
    assert main([str(tmp_path / "w.npy"), "-o", str(tmp_path / "m"), "--mli", "2", "--conv2d-cfg", "c,stride=1"]) == 2
    assert "--conv2d-cfg: MLI 1.1's struct" in capsys.readouterr().err


def test_kernel_cfg_struct_api_and_names():
    from mli.tools.export_structs import make_concat_cfg, make_conv2d_cfg, make_permute_cfg
    c, h = render([], [make_conv2d_cfg("conv", relu=mli.ReluType.GEN, stride_height=2),
                       make_permute_cfg("perm", (2, 0, 1)), make_concat_cfg("cat", tensors_num=2, axis=0)])
    assert "const mli_conv2d_cfg conv = {\n    .relu.type = MLI_RELU_GEN,\n    .stride_width = 1,\n" \
           "    .stride_height = 2," in c
    assert "    .perm_dim = {2, 0, 1, 0},\n" in c and "extern const mli_concat_cfg cat;" in h
    with pytest.raises(ExportError, match="conv: defined twice"):
        render([], [make_conv2d_cfg("conv"), make_conv2d_cfg("conv")])
    with pytest.raises(ExportError, match="stride_width: expected an integer in 1..255, got True"):
        make_conv2d_cfg("conv", stride_width=True)
