"""Issue 10, sections 3.3, 4.1, 4.2, 5.1-5.2 (command line) and 6.1: the
``mli`` commands never overwrite their sources, never leave a half-written
export, stop on Ctrl-C with one line and the results so far, leave quietly
when the reader of stdout goes away, obey the size limit, and answer bad
sizes with a usage error instead of a traceback."""

import os
import queue
import resource
import select
import signal
import subprocess
import tempfile
import sys
import threading

import numpy as np
import pytest

import mli
import mli.tools.cli as cli
import mli.tools.crosscheck.cli
import mli.tools.demo
import mli.tools.export_c
import mli.tools.har
from mli.tools.export_c import main as export_main

MLI_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(mli.__file__)))


def mli_env(**extra):
    env = dict(os.environ, PYTHONPATH=MLI_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env.pop("MLI_MAX_ARRAY_BYTES", None)
    env.update(extra)
    return env


def cap_memory():
    # a command that would allocate gigabytes fails with MemoryError instead of taking the machine
    if "asan" not in os.environ.get("LD_PRELOAD", ""):  # ASan reserves terabytes of address space
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def run_mli(*argv, cwd=None, timeout=120, **env):
    # cwd outside the source tree unless given: `python -m` puts the cwd first on sys.path
    r = subprocess.run([sys.executable, "-m", "mli", *map(str, argv)], capture_output=True, text=True,
                       cwd=cwd or tempfile.gettempdir(),
                       env=mli_env(**env), preexec_fn=cap_memory, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


# --------------------------------------------------- 4.1 export-c and its sources
WEIGHTS_C = "const float wt[4] = {0.5, -0.25, 0.125, 1.0};\n"


def test_export_c_refuses_to_overwrite_its_source_issue_command(tmp_path):
    (tmp_path / "weights.c").write_text(WEIGHTS_C)
    for out in ("weights", "weights.c"):
        code, stdout, err = run_mli("export-c", "weights.c", "-o", out, "--frac-all", 14, cwd=tmp_path)
        assert (code, stdout) == (2, "")
        assert err == "mli export-c: error: -o: writing weights.c would overwrite the source weights.c\n"
    assert (tmp_path / "weights.c").read_text() == WEIGHTS_C
    assert sorted(os.listdir(tmp_path)) == ["weights.c"]


@pytest.mark.parametrize("link, out, source, target", [
    (None, "./weights", "c:weights.c:wt", "./weights.c"),
    (None, "sub/../weights.h", "weights.c", "sub/../weights.c"),
    ("hard", "hl", "weights.c", "hl.c"),            # another name of the same file
    ("sym", "sl", "weights.c", "sl.h"),             # a symbolic link to the source
])
def test_export_c_compares_files_not_names(tmp_path, monkeypatch, capsys, link, out, source, target):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "weights.c").write_text(WEIGHTS_C)
    (tmp_path / "sub").mkdir()
    if link == "hard":
        os.link("weights.c", "hl.c")
    elif link == "sym":
        os.symlink("weights.c", "sl.h")
    before = sorted(os.listdir(tmp_path))
    assert export_main([source, "-o", out, "--frac-all", "14"]) == 2
    path = source.split(":")[1] if source.startswith("c:") else source
    assert capsys.readouterr() == ("", f"mli export-c: error: -o: writing {target} would overwrite the source "
                                       f"{path}\n")
    assert (tmp_path / "weights.c").read_text() == WEIGHTS_C
    assert sorted(os.listdir(tmp_path)) == before


# --------------------------------------------------- 4.2 export-c writes both or nothing
def export_setup(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "w.npy", np.array([0.5, -0.25], np.float32))
    return ["w.npy", "-o", "model", "--frac-all", "14"]


def test_export_c_header_path_is_a_folder_changes_nothing(tmp_path, monkeypatch, capsys):
    argv = export_setup(tmp_path, monkeypatch)
    (tmp_path / "model.c").write_text("/* the previous good model.c */\n")
    (tmp_path / "model.h").mkdir()
    before = sorted(os.listdir(tmp_path))
    assert export_main(argv) == 2
    assert capsys.readouterr() == ("", "mli export-c: error: -o: model.h is a folder\n")
    assert (tmp_path / "model.c").read_text() == "/* the previous good model.c */\n"
    assert sorted(os.listdir(tmp_path)) == before          # no temporary file left


@pytest.mark.parametrize("existed", [True, False])
def test_export_c_failed_second_rename_restores_the_first(tmp_path, monkeypatch, capsys, existed):
    argv = export_setup(tmp_path, monkeypatch)
    if existed:
        (tmp_path / "model.c").write_text("old c\n")
        (tmp_path / "model.h").write_text("old h\n")
    before = sorted(os.listdir(tmp_path))
    real_replace = os.replace

    def replace(src, dst, *a, **kw):     # the .h cannot be put in place (a full disk, a permission)
        if str(dst) == "model.h" and str(src).endswith(".tmp"):
            raise PermissionError(13, "Permission denied", dst)
        return real_replace(src, dst, *a, **kw)

    monkeypatch.setattr(mli.tools.export_c.os, "replace", replace)
    assert export_main(argv) == 2
    monkeypatch.setattr(mli.tools.export_c.os, "replace", real_replace)
    assert capsys.readouterr() == ("", "mli export-c: error: -o: cannot write model.h: Permission denied; "
                                       "nothing was changed\n")
    assert sorted(os.listdir(tmp_path)) == before
    if existed:
        assert (tmp_path / "model.c").read_text() == "old c\n"
        assert (tmp_path / "model.h").read_text() == "old h\n"


def test_export_c_success_replaces_both_and_leaves_no_temporary(tmp_path, monkeypatch, capsys):
    argv = export_setup(tmp_path, monkeypatch)
    (tmp_path / "model.c").write_text("old c\n")
    assert export_main(argv) == 0
    capsys.readouterr()
    assert sorted(os.listdir(tmp_path)) == ["model.c", "model.h", "w.npy"]
    assert "const int16_t w_data[2] = {" in (tmp_path / "model.c").read_text()
    assert "extern const mli_tensor w;" in (tmp_path / "model.h").read_text()
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(tmp_path / "model.h").st_mode & 0o777 == 0o666 & ~umask   # as a plain open() makes it


# --------------------------------------------------- 5.1 / 5.2 the limit on the command line
def test_export_c_zero_fill_bomb_exits_2(tmp_path):
    (tmp_path / "z.c").write_text("".join(f"const int16_t a{i}[67108864] = {{0}};\n" for i in range(40)))
    code, out, err = run_mli("export-c", "z.c", "-o", "zz", "--frac-all", 3, cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err == ("mli export-c: error: z.c:9: array a8: the arrays up to this one declare 1207959552 bytes "
                   "together, more than the limit of 1073741824 bytes (MLI_MAX_ARRAY_BYTES)\n")
    assert sorted(os.listdir(tmp_path)) == ["z.c"]


def test_cli_size_limit_from_the_environment(tmp_path):
    np.save(tmp_path / "w.npy", np.zeros(600))
    code, out, err = run_mli("export-c", "w.npy", "-o", "m", "--frac-all", 3, cwd=tmp_path,
                             MLI_MAX_ARRAY_BYTES="1000")
    assert (code, out) == (2, "")
    assert err == ("mli export-c: error: w.npy: the array is 4800 bytes (shape (600,) of float64), more than "
                   "the limit of 1000 bytes (MLI_MAX_ARRAY_BYTES)\n")
    code, out, err = run_mli("crosscheck", "--kernel", "relu_fx16", "--in", "w.npy", "--in-frac", 3,
                             "--firmware", "w.npy", cwd=tmp_path, MLI_MAX_ARRAY_BYTES="1000")
    assert (code, out) == (2, "")
    assert err == ("mli crosscheck: error: --in: w.npy: the array is 4800 bytes (shape (600,) of float64), more "
                   "than the limit of 1000 bytes (MLI_MAX_ARRAY_BYTES)\n")


def test_crosscheck_case_file_from_a_device_is_bounded():
    code, out, err = run_mli("crosscheck", "/dev/zero", MLI_MAX_ARRAY_BYTES=str(1 << 20))
    assert (code, out) == (2, "")
    assert err == ("mli crosscheck: error: /dev/zero: the stream holds more than the limit of 1048576 bytes "
                   "(MLI_MAX_ARRAY_BYTES)\n")


# --------------------------------------------------- 3.3 Ctrl-C and closed pipes
N_VECTORS = 200_000      # a minute of work: the test stops it after a few lines


def relu_data_set(tmp_path):
    x = np.random.default_rng(1).integers(-128, 128, (N_VECTORS, 8)).astype(np.int8)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "fw.npy", np.maximum(x, 0))
    argv = [sys.executable, "-m", "mli", "crosscheck", "--kernel", "relu_fx8", "--in", "x.npy", "--in-frac", "5",
            "--firmware", "fw.npy", "--vectors"]
    return subprocess.Popen(argv, cwd=tmp_path, env=mli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=cap_memory)


def line_reader(stream):
    q = queue.Queue()

    def run():
        for line in stream:
            q.put(line)
        q.put(None)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return q, t


def test_crosscheck_ctrl_c_keeps_the_lines_done_and_prints_one_line(tmp_path):
    p = relu_data_set(tmp_path)
    try:
        q, t = line_reader(p.stdout)
        first = [q.get(timeout=60) for _ in range(3)]     # lines come as each vector is done
        assert None not in first, p.stderr.read()
        p.send_signal(signal.SIGINT)
        code = p.wait(timeout=60)
        t.join(timeout=60)
        rest = []
        while (line := q.get(timeout=5)) is not None:
            rest.append(line)
        err = p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    lines = first + rest
    assert code == 130
    assert err == "mli crosscheck: interrupted\n"
    assert 3 <= len(lines) < N_VECTORS
    assert lines == [f"vector {i}: bit-exact (1 output)\n" for i in range(len(lines))]


def test_crosscheck_reader_gone_exits_quietly(tmp_path):
    p = relu_data_set(tmp_path)
    try:
        ready, _, _ = select.select([p.stdout], [], [], 60)
        assert ready, "no output within 60 s"
        assert os.read(p.stdout.fileno(), 4096).decode().startswith("vector 0: bit-exact (1 output)")
        p.stdout.close()            # what `| head -1` does
        code = p.wait(timeout=60)
        err = p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert (code, err) == (141, "")


@pytest.mark.parametrize("cmd, module, func", [
    ("demo", mli.tools.demo, "_run"), ("crosscheck", mli.tools.crosscheck.cli, "_run"),
    ("export-c", mli.tools.export_c, "_run"),
    ("har", mli.tools.har, "main")])
@pytest.mark.parametrize("exc, code, err", [
    (KeyboardInterrupt, 130, "mli {cmd}: interrupted\n"),
    (BrokenPipeError, 141, ""),
])
def test_every_command_interrupt_and_broken_pipe(monkeypatch, capsys, cmd, module, func, exc, code, err):
    def boom(*a, **kw):
        raise exc()

    monkeypatch.setattr(module, func, boom)
    silenced = []
    monkeypatch.setattr(cli, "_silence_stdout", lambda: silenced.append(True))
    assert cli.main([cmd]) == code
    assert capsys.readouterr() == ("", err.format(cmd=cmd))
    assert silenced == ([True] if exc is BrokenPipeError else [])


# --------------------------------------------------- 6.1 mli demo options
@pytest.mark.parametrize("argv, message", [
    (["--seed", "-5"], "--seed: expected an integer >= 0, got -5"),
    (["--inputs", "100000000"], "--inputs: expected 1..1024, got 100000000"),
    (["--state", "1025"], "--state: expected 1..1024, got 1025"),
    (["--steps", "10001"], "--steps: expected 1..10000, got 10001"),
    (["--steps", "0"], "--steps: expected 1..10000, got 0"),
    (["--inputs", "-3"], "--inputs: expected 1..1024, got -3"),
    (["--seed", "x"], "argument --seed: invalid int value: 'x' (see mli demo --help)"),
])
def test_demo_bad_options_are_usage_errors(argv, message):
    code, out, err = run_mli("demo", *argv, timeout=60)
    assert (code, out, err) == (2, "", f"mli demo: error: {message}\n")


def test_demo_help_states_the_maxima_and_a_small_run_works():
    code, out, err = run_mli("demo", "--help")
    assert code == 0 and err == ""
    for text in ("input size N, 1..1024", "state size M, 1..1024", "sequence length T, 1..10000", ">= 0"):
        assert text in " ".join(out.split()), text
    code, out, err = run_mli("demo", "--inputs", 4, "--state", 3, "--steps", 2, "--seed", 7)
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == "mli demo: synthetic tanh RNN, N=4 M=3 T=2 seed=7"
