"""mli deploy (mli.deploy): the KWS and HAR examples' networks as firmware C
with a static arena, goldens and a host check.

* The program's steps on the package's kernels equal ``mli kws``'s network
  layer by layer (the goldens are the network's integers).
* The memory plan: no two tensors of overlapping lifetimes share a byte.
* ``make check`` prints ``bit-exact`` against the package's C core and
  against MLI 1.1's own code (../shared/oracle_c, linked as MLI_LIB), with
  -Wall -Wextra -Werror -pedantic (and ASan/UBSan in the sanitizer pass).
* The check finds a planted one-LSB change in a weight at its layer, and a
  write outside the plan.
* The folder rules: nothing written on a refusal, a non-empty folder only
  with --force, and then never a file deploy did not write.
"""
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from conftest import SHARED, needs_build
from conftest import make_check as _make

KWS = SHARED / "data" / "kws"
HAR = SHARED / "data" / "har"
ORACLE = SHARED / "oracle_c" / "libmli11_conv.so"

pytestmark = [pytest.mark.skipif(not (KWS / "quantized.npz").is_file(),
                                 reason=f"KWS data not found at {KWS} (set MLI_SHARED; CI always has it)")]


@pytest.fixture(scope="module")
def kws():
    from mli.tools.kws import features_of_wav, load_model
    from mli.tools.kws.deploy import kws_program
    model = load_model(str(KWS))
    stream = features_of_wav(str(KWS / "test.wav"))
    samples = [{"input": stream.network_input(n).reshape(1, 65, 13)} for n in (0, 7)]
    return model, kws_program(model), samples


@pytest.fixture(scope="module")
def folder(kws, tmp_path_factory):
    from mli.deploy import deploy
    _, prog, samples = kws
    d = tmp_path_factory.mktemp("deploy") / "kws"
    info = deploy(prog, d, samples)
    return d, info


def test_program_is_the_network(kws):
    from mli.tools.kws import network
    model, prog, samples = kws
    for s in samples:
        vals, _ = prog.run(s)
        ref = network.run_network(s["input"], model)
        for name in network.LAYER_OUTPUTS:
            np.testing.assert_array_equal(vals[name].reshape(-1), ref[name].numpy().reshape(-1), err_msg=name)


def test_arena_plan_never_overlaps_live_tensors(folder, kws):
    _, prog, _ = kws
    _, info = folder
    slots = info["slots"]
    assert set(slots) == {t.name for t in prog.tensors.values() if t.role != "const"}
    names = list(slots)
    for i, a in enumerate(names):
        sa = slots[a]
        assert sa.offset % 4 == 0 and sa.end <= info["arena_bytes"]
        for b in names[i + 1:]:
            sb = slots[b]
            if prog.base(a) == prog.base(b):   # a view and its parent
                continue
            if sa.overlaps_in_time(sb):
                assert sa.end <= sb.offset or sb.end <= sa.offset, (a, b, sa, sb)
    assert info["arena_bytes"] < sum(s.nbytes for s in slots.values())   # buffers are shared




@needs_build
def test_make_check_with_the_package_core(folder):
    d, _ = folder
    out = _make(d)
    assert "bit-exact (2 samples, 20 steps" in out


@needs_build
@pytest.mark.skipif(not ORACLE.is_file(), reason=f"MLI 1.1's oracle build not found at {ORACLE}")
def test_make_check_with_mli11s_own_code(folder):
    import mli
    d, _ = folder
    out = _make(d, f"MLI_INC={mli.get_include()}", f"MLI_LIB={ORACLE}", "BUILD=build_oracle")
    assert "bit-exact (2 samples, 20 steps" in out


def _copy(folder, tmp_path):
    d, _ = folder
    dst = tmp_path / "kws"
    shutil.copytree(d, dst, ignore=shutil.ignore_patterns("build*", "check_*"))
    return dst


@needs_build
def test_check_finds_a_planted_lsb(folder, tmp_path):
    d = _copy(folder, tmp_path)
    src = (d / "model.c").read_text()
    m = re.search(r"w_L2b_conv_pw_wt\[\d+\] = \{\s*(-?\d+)", src)
    v = int(m.group(1))
    planted = src[:m.start(1)] + str(v + 1 if v < 127 else v - 1) + src[m.end(1):]
    (d / "model.c").write_text(planted)
    out = _make(d, f"BUILD={folder[0] / 'build'}", expect=2)   # make reports the check's exit 1 as 2
    assert "after step 4: L2b_conv_pw_out (written by L2b_conv_pw_out) differs at element" in out, out


@needs_build
def test_check_finds_a_write_outside_the_plan(folder, tmp_path):
    """The LSTM's scratch moved past every planned region: its writes fall
    on bytes no tensor owns."""
    d = _copy(folder, tmp_path)
    h = (d / "model.h").read_text()
    size = int(re.search(r"#define MODEL_ARENA_BYTES (\d+)", h).group(1))
    h = re.sub(r"#define MODEL_ARENA_BYTES \d+", f"#define MODEL_ARENA_BYTES {size + 8640}", h)
    h = re.sub(r"#define MODEL_OFFSET_LSTM_IR \d+", f"#define MODEL_OFFSET_LSTM_IR {size}", h)
    (d / "model.h").write_text(h)
    out = _make(d, f"BUILD={folder[0] / 'build'}", expect=2)
    assert "after step 17: arena byte" in out and "outside the plan, was written" in out, out


def test_folder_rules(kws, tmp_path):
    from mli.deploy import DeployError, deploy
    _, prog, samples = kws
    d = tmp_path / "out"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    with pytest.raises(DeployError, match="is not empty"):
        deploy(prog, d, samples[:1])
    assert sorted(os.listdir(d)) == ["notes.txt"]
    deploy(prog, d, samples[:1], force=True)       # other files stay
    assert (d / "notes.txt").read_text() == "mine" and (d / "model.c").is_file()
    (d / "check.c").write_text("/* my own check */\n")
    before = {p: (d / p).read_bytes() for p in os.listdir(d)}
    with pytest.raises(DeployError, match="check.c was not written by mli deploy"):
        deploy(prog, d, samples[:1], force=True)
    assert {p: (d / p).read_bytes() for p in os.listdir(d)} == before
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(DeployError, match="not a folder"):
        deploy(prog, f, samples[:1])
    with pytest.raises(DeployError, match="prefix"):
        deploy(prog, tmp_path / "p", samples[:1], prefix="no-name")
    assert not (tmp_path / "p").exists()


def test_cli(tmp_path):
    from conftest import child_env
    env = child_env(MLI_KWS_DATA=str(KWS))
    run = tmp_path / "cwd"
    run.mkdir()
    r = subprocess.run(["python", "-m", "mli", "deploy", "--example", "kws", "-o", str(tmp_path / "k"),
                        "--samples", "1"], capture_output=True, text=True, env=env, cwd=run, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "RAM (arena)" in r.stdout and (tmp_path / "k" / "plan.json").is_file()
    r = subprocess.run(["python", "-m", "mli", "deploy", "--example", "kws", "-o", str(tmp_path / "k")],
                       capture_output=True, text=True, env=env, cwd=run, timeout=300)
    assert r.returncode == 2 and "is not empty" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run(["python", "-m", "mli", "deploy", "--example", "kws", "-o", str(tmp_path / "z"),
                        "--samples", "0"], capture_output=True, text=True, env=env, cwd=run, timeout=300)
    assert r.returncode == 2 and "--samples" in r.stderr and not (tmp_path / "z").exists()


@needs_build
def test_crosscheck_decodes_an_arena_dump(folder, tmp_path):
    """check --dump writes the arena image a target would; mli crosscheck
    --deploy maps it back through plan.json: bit-exact as it is, and a
    planted one-LSB change is found at its tensor and element."""
    from mli.tools.crosscheck import crosscheck_deploy
    from mli.tools.crosscheck import main as crosscheck_main
    d, info = folder
    if not (d / "check_core").is_file():
        _make(d)
    img = tmp_path / "arena.bin"
    r = subprocess.run([str(d / "check_core"), "--dump", str(img), "1", "4"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout
    assert img.stat().st_size == info["arena_bytes"]
    res = crosscheck_deploy(d, img, after="L2b_conv_pw_out", sample=1)
    assert res.bit_exact and {x.name for x in res.layers} >= {"L2a_dw_lrelu", "L2b_conv_pw_out"}
    raw = bytearray(img.read_bytes())
    off = info["slots"]["L2b_conv_pw_out"].offset
    raw[off + 100] = (raw[off + 100] + 1) & 0xFF
    bad = tmp_path / "planted.bin"
    bad.write_bytes(bytes(raw))
    res = crosscheck_deploy(d, bad, after="4", sample=1)
    fm = res.first_mismatch
    assert fm.name == "L2b_conv_pw_out" and fm.report.n_diff == 1 and fm.report.max_abs_diff == 1
    assert "(0, 11, 1)" in fm.report.where()          # element 100 of [64, 30, 9]
    assert crosscheck_main(["--deploy", str(d), "--arena", str(bad), "--after", "4", "--sample", "1"]) == 1
    assert crosscheck_main(["--deploy", str(d), "--arena", str(img), "--after", "L2b_conv_pw_out",
                            "--sample", "1"]) == 0
    short = tmp_path / "short.bin"
    short.write_bytes(bytes(raw[:-1]))
    assert crosscheck_main(["--deploy", str(d), "--arena", str(short)]) == 2
    assert crosscheck_main(["--deploy", str(d), "--arena", str(img), "--after", "nope"]) == 2
    assert crosscheck_main(["--deploy", str(d)]) == 2


@pytest.mark.skipif(not (HAR / "model.json").is_file(), reason=f"HAR data not found at {HAR} (set MLI_SHARED)")
@pytest.mark.parametrize("depth", [16, 816, 8])
def test_har_program_is_mli_har(depth):
    from mli.tools.har import load_har, run_har
    from mli.tools.har_deploy import har_program, har_samples
    model = load_har(str(HAR), depth)
    prog = har_program(model)
    for s in har_samples(model, 2):
        vals, _ = prog.run(s)
        ref = run_har(s["x"], depth=depth, layer3="library", model=model)
        for name in ("fc1", "relu1", "lstm2", "lstm3", "out"):
            np.testing.assert_array_equal(vals[name].reshape(-1), ref[name].numpy().reshape(-1), err_msg=name)


@needs_build
@pytest.mark.skipif(not (HAR / "model.json").is_file(), reason=f"HAR data not found at {HAR} (set MLI_SHARED)")
def test_har_make_check(folder, tmp_path):
    """HAR at depth 816 (FC1 on 128 row views, fx8w16d LSTMs): bit-exact with
    the package's core and with MLI 1.1's own code (the core's objects are
    those of the KWS folder's build)."""
    import mli
    from mli.deploy import deploy
    from mli.tools.har import load_har
    from mli.tools.har_deploy import har_program, har_samples
    model = load_har(str(HAR), 816)
    d = tmp_path / "har"
    deploy(har_program(model), d, har_samples(model, 2))
    kws_dir, _ = folder
    build = f"BUILD={kws_dir / 'build'}"
    assert "bit-exact (2 samples, 132 steps" in _make(d, build)
    if ORACLE.is_file():
        assert "bit-exact (2 samples, 132 steps" in _make(d, f"MLI_INC={mli.get_include()}", f"MLI_LIB={ORACLE}",
                                                          f"BUILD={tmp_path / 'build_oracle'}")


def test_crosscheck_deploy_refuses_hostile_plans(folder, tmp_path):
    """A plan.json that is not mli deploy's, or whose tensors do not fit the
    arena or their shapes, is refused naming the file; nothing is read past
    the arena image."""
    import json
    from mli.tools.crosscheck import CaseError, crosscheck_deploy
    d, info = folder
    dst = tmp_path / "kws"
    shutil.copytree(d, dst, ignore=shutil.ignore_patterns("build*", "check_*"))
    img = tmp_path / "arena.bin"
    img.write_bytes(bytes(info["arena_bytes"]))
    plan = json.loads((d / "plan.json").read_text())

    def refused(p, match):
        (dst / "plan.json").write_text(p if isinstance(p, str) else json.dumps(p))
        with pytest.raises(CaseError, match=match):
            crosscheck_deploy(dst, img)

    refused("[1, 2]", "not a plan written by mli deploy")
    refused("{", "plan.json")
    refused(dict(plan, generator="someone"), "not a plan written by mli deploy")
    refused(dict(plan, arena_bytes=-1), "arena_bytes")
    bad = json.loads(json.dumps(plan))
    bad["tensors"][0]["offset"] = info["arena_bytes"] - 1
    refused(bad, "does not fit its shape or the arena")
    bad = json.loads(json.dumps(plan))
    bad["tensors"][0]["shape"] = [1 << 40]
    refused(bad, "does not fit its shape or the arena")
    bad = json.loads(json.dumps(plan))
    bad["goldens"][0]["array"] = "g0_s0; system"
    refused(bad, "golden entry is malformed")
    bad = json.loads(json.dumps(plan))
    bad["goldens"][0]["to_step"] = 10 ** 9
    refused(bad, "to_step")
