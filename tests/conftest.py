"""Shared fixtures: where ../shared is, hypothesis profiles, the float_figures mark."""
import os
import pathlib
import shutil

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("MLI_SHARED", ROOT.parent / "shared"))
MLI11 = SHARED / "vectors" / "mli11"
NEEDS_SHARED = pytest.mark.skipif(
    not MLI11.is_dir(), reason=f"reference data not found at {SHARED} (set MLI_SHARED; CI always has it)")

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile("ci", max_examples=200, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("dev", max_examples=60, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
except ImportError:  # hypothesis is a test extra
    pass


def manifest_cases(folder, what):
    """(folder path, the cases of its manifest.json) of shared/vectors/`folder`;
    skips the calling test module, naming `what`, where the folder is absent."""
    import json

    path = SHARED / "vectors" / folder
    if not (path / "manifest.json").is_file():
        pytest.skip(f"{what} not found at {path} (set MLI_SHARED to the shared folder; CI always has it)",
                    allow_module_level=True)
    return path, json.loads((path / "manifest.json").read_text(encoding="utf-8"))["cases"]


def mli11_cases():
    return sorted(p.stem for p in MLI11.glob("*.npz")) if MLI11.is_dir() else []


# Test modules whose results include float figures (S/N, dB, float IR outputs,
# OpenVINO references, float reports).  .ci/run runs them once more with
# numpy's AVX-512 code paths disabled, so that a figure that depends on
# numpy's SIMD dispatch (or is compared more tightly than its stated
# tolerance) fails in CI on every machine, not only on some.
FLOAT_FIGURE_MODULES = {
    "test_har_example", "test_shared_vectors", "test_metrics", "test_demo", "test_readme",
    "test_ov_real", "test_ov_vectors", "test_ir", "test_ir_ops", "test_ir_float_rnn", "test_ir_plan", "test_ir_lifted",
    "test_fixed_point", "test_gru", "test_graph", "test_kernel_body", "test_crosscheck",
    "test_crosscheck_mli2", "test_rows_callers", "test_kws",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.module is not None and item.module.__name__.rsplit(".", 1)[-1] in FLOAT_FIGURE_MODULES:
            item.add_marker(pytest.mark.float_figures)


# Child processes of the tests that attack the package with claimed sizes:
# the mli under test on their path, one BLAS thread, no size-limit override,
# and an address-space cap (not under ASan, which reserves terabytes).
ASAN = "asan" in os.environ.get("LD_PRELOAD", "")
CHILD_MEMORY_LIMIT = 3 << 30


def child_env(**extra):
    import mli

    parent = os.path.dirname(os.path.dirname(os.path.abspath(mli.__file__)))
    env = dict(os.environ, PYTHONPATH=parent + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env.pop("MLI_MAX_ARRAY_BYTES", None)
    env.pop("MLI_DEBUG", None)
    env.update(extra)
    return env


def cap_child_memory():
    if not ASAN:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_LIMIT, CHILD_MEMORY_LIMIT))


# ``make check`` of a folder ``mli deploy`` wrote (test_deploy, test_deploy_model): warnings as
# errors, and ASan/UBSan in the sanitizer pass
_CC = shutil.which("cc") or shutil.which("gcc")
_MAKE = shutil.which("make")
needs_build = pytest.mark.skipif(_CC is None or _MAKE is None, reason="no C compiler or make")
DEPLOY_CFLAGS = "-O1 -std=c11 -Wall -Wextra -Werror -pedantic" + (
    " -fsanitize=address,undefined -fno-sanitize-recover=all" if ASAN else "")


def make_check(d, *extra, expect=0):
    """``make -C d check *extra``: its stdout, asserting its exit code (make reports the
    check's exit 1 as 2)."""
    import subprocess

    env = dict(os.environ, CFLAGS=DEPLOY_CFLAGS)
    r = subprocess.run([_MAKE, "-s", "-j2", "-C", str(d), "check", *extra], capture_output=True, text=True,
                       env=env, timeout=1200)
    assert r.returncode == expect, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout
