"""mli/_variants_more.py, the one table of the rest-of-MLI-1.1 functions, and
what is made from it: the generated C lists and public headers are current,
every function of the table is exported by the built core and declared in
csrc/include, and the table's dispatch rule is the C dispatchers' (their
mli_debug_krn_ twins)."""
import importlib.util
import shutil
import subprocess

import numpy as np
import pytest

from mli11_more_harness import HAVE_BRIDGE, ROOT, VM, mli11

CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def _generator():
    spec = importlib.util.spec_from_file_location("gen_variants_more", ROOT / "csrc" / "tools" / "gen_variants_more.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generated_files_are_current():
    for path, text in _generator().outputs().items():
        assert path.read_text() == text, f"{path} is stale: run python csrc/tools/gen_variants_more.py"


def test_table_counts():
    fs = VM.functions()
    assert len({f.name for f in fs}) == len(fs)
    count = {}
    for f in fs:
        count[f.family] = count.get(f.family, 0) + (f.role != "debug")
    # MLI 1.1: 64 / 66 chw pools, 18 / 18 hwc pools, 7 + 6 sa8 convolutions (SPEC_MLI11_MORE 1)
    assert (count["avepool_chw"], count["maxpool_chw"], count["avepool_hwc"], count["maxpool_hwc"]) == (64, 66, 18, 18)
    assert (count["conv2d_nhwc"], count["depthwise_conv2d_hwcn"], count["fully_connected"]) == (7, 6, 1)
    assert sum(f.role == "debug" for f in fs) == 12


@pytest.mark.skipif(not HAVE_BRIDGE, reason="the ctypes bridge mli11.py of ../shared is needed for MLI's names")
def test_table_has_mli_names():
    for fam, (kinds, _, variants) in VM.VARIANT_FAMILIES.items():
        for kind in kinds:
            assert sorted([""] + [v.suffix for v in variants]) == sorted(mli11().VARIANTS[fam][kind]), (fam, kind)


def test_every_function_exported():
    from mli11_more_harness import Core

    assert Core().missing == []


C_TYPES = {"pool": "mli_status (*)(const mli_tensor *, const mli_pool_cfg *, mli_tensor *)",
           "conv": "mli_status (*)(const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_conv2d_cfg *, "
                   "mli_tensor *)",
           "leaky_relu": "mli_status (*)(const mli_tensor *, const mli_tensor *, mli_tensor *)",
           "softmax": "mli_status (*)(const mli_tensor *, mli_tensor *)",
           "permute": "mli_status (*)(const mli_tensor *, const mli_permute_cfg *, mli_tensor *)",
           "concat": "mli_status (*)(const mli_tensor **, const mli_concat_cfg *, mli_tensor *)",
           "padding2d": "mli_status (*)(const mli_tensor *, const mli_padding2d_cfg *, mli_tensor *)",
           "fully_connected": "mli_status (*)(const mli_tensor *, const mli_tensor *, const mli_tensor *, mli_tensor *)"}


@pytest.mark.skipif(CC is None, reason="no C compiler on this machine")
def test_every_function_declared_with_its_prototype(tmp_path):
    """A C file that takes every function's address as a pointer of its
    prototype compiles against csrc/include alone, warnings as errors."""
    lines = ['#include "mli_api.h"']
    for i, f in enumerate(VM.functions()):
        t = C_TYPES[f.arguments]
        if f.role == "debug":
            t = "char *" + t[len("mli_status "):]
        ptr = t.replace("(*)", f"(*f{i})", 1)
        lines.append(f"{ptr} = {f.name};")
    src = tmp_path / "decl.c"
    src.write_text("\n".join(lines) + "\n")
    r = subprocess.run([CC, "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c", "-I",
                        str(ROOT / "csrc" / "include"), str(src), "-o", str(tmp_path / "decl.o")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:3000]


@pytest.mark.skipif(not HAVE_BRIDGE, reason="the ctypes bridge mli11.py of ../shared is needed for the structs")
def test_dispatch_rule_is_the_c_dispatchers():
    import ctypes as C

    from mli11_more_harness import Core

    core, m = Core(), mli11()
    rng = np.random.default_rng(7)
    for fam, (kinds, args, _) in VM.VARIANT_FAMILIES.items():
        for kind in kinds:
            fn = core.fn(f"mli_debug_krn_{fam}_{kind}")
            for _ in range(300):
                kw, kh = (int(x) for x in rng.integers(1, 12, 2))
                sw, sh = (int(x) for x in rng.choice([1, 1, 2, 3], 2))
                pads = [int(rng.integers(0, k)) if rng.random() < 0.5 else 0 for k in (kh, kh, kw, kw)]
                want = VM.func_name(fam, kind, VM.dispatch(fam, kw, kh, sw, sh, *pads))
                if args == "pool":
                    cfg = m.PoolCfg(kw, kh, sw, sh, pads[2], pads[3], pads[0], pads[1])
                    got = fn(None, C.pointer(cfg), None)
                else:
                    w = m.MliTensor()
                    w.shape[1], w.shape[2] = kh, kw
                    cfg = m.Conv2dCfg(m.ReluCfg(0), sw, sh, pads[2], pads[3], pads[0], pads[1])
                    got = fn(None, C.pointer(w), None, C.pointer(cfg), None)
                assert got.decode() == want, (fam, kind, kw, kh, sw, sh, pads)
