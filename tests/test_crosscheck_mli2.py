"""mli crosscheck on MLI 2.0.2 kernels: cases rebuilt from MLI 2.0.2's own x86
outputs (../shared/vectors/mli20) as firmware dumps must be bit-exact in the
rounding mode they were made with, and diagnosed as such in the other."""
import json
import os
from pathlib import Path

import numpy as np
import pytest

from mli.tools.crosscheck import CaseError, crosscheck, main, run_case

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MLI_SHARED") or ROOT.parent / "shared")
MLI20 = SHARED / "vectors" / "mli20"
needs_mli20 = pytest.mark.skipif(not MLI20.is_dir(), reason=f"MLI 2.0.2 vectors not found at {MLI20} (set MLI_SHARED)")

_ROLES = {"lstm_cell": ("in", "prev_out", "weights_in", "weights_out", "bias", "cell"),
          "gru_cell": ("in", "prev_out", "weights_in", "weights_out", "bias"),
          "fully_connected": ("in", "weights", "bias"), "tanh": ("in",), "sigm": ("in",)}


def _dense(meta, role):
    shape = meta[f"{role}_shape"][:meta[f"{role}_rank"]]
    st, acc = [], 1
    for d in reversed(shape):
        st.insert(0, acc)
        acc *= d
    return shape, st == meta[f"{role}_mem_stride"][:len(shape)]


def _usable(meta):
    if meta["kernel"] not in _ROLES or meta["expected_status"] != 0 or meta.get("out_aliases_in"):
        return False
    if any("lut" in t for t in meta.get("tags", [])) or meta.get("lut_from", meta["kernel"]) != meta["kernel"]:
        return False                   # a LUT object other than the kernel's own: not a firmware run
    for role in _ROLES[meta["kernel"]]:
        if meta.get(f"{role}_null") or meta.get(f"{role}_data_null") or not _dense(meta, role)[1]:
            return False
    return "expected_out_data" in meta.get("_files", [])


def mli20_case(path, tmp_path, firmware_key="expected_out_data"):
    """An ``"mli": 2`` crosscheck case dict (files in tmp_path) for a dense mli20 case, or None."""
    z = np.load(path, allow_pickle=False)
    meta = json.loads(str(z["meta_json"]))
    meta["_files"] = z.files
    if not _usable(meta):
        return None
    case = {"mli": 2, "kernel": f"{meta['kernel']}_{meta['kind']}"}
    for role in _ROLES[meta["kernel"]]:
        shape, _ = _dense(meta, role)
        key = "input" if role == "in" else role
        n = int(np.prod(shape))
        np.save(tmp_path / f"{key}.npy", z[f"{role}_data"][:n].reshape(shape))
        case[key] = f"{key}.npy"
        if meta[f"{role}_el_type"] in (0x108, 0x120):
            dim = meta.get(f"{role}_sa_dim", -1)
            zp, sc, fb = (meta[f"{role}_{k}"] for k in ("zero_point", "scale", "scale_frac_bits"))
            if dim >= 0:
                case[f"{key}_dim"] = dim
            else:
                zp, sc, fb = zp[0], sc[0], fb[0]
            case[f"{key}_zp"], case[f"{key}_scale"], case[f"{key}_scale_frac"] = zp, sc, fb
        else:
            case[f"{key}_frac"] = meta[f"{role}_frac_bits"]
    if meta["kernel"] not in ("tanh", "sigm"):
        if meta["out_el_type"] in (0x108, 0x120):
            case["out_zp"], case["out_scale"], case["out_scale_frac"] = (
                meta[f"out_{k}"][0] for k in ("zero_point", "scale", "scale_frac_bits"))
        else:
            case["out_frac"] = meta["out_frac_bits"]
    if meta["kernel"] in ("lstm_cell", "gru_cell"):
        case["direction"] = meta["cfg_direction_name"][8:].lower()
        case["results"] = meta["cfg_results_name"][8:].lower()
        case["act"] = meta["cfg_act_name"][8:].lower()
    if meta["kernel"] == "fully_connected":
        case["relu"] = meta["cfg_relu_type_name"].lower()
    np.save(tmp_path / "fw.npy", z[firmware_key])
    case["firmware"] = "fw.npy"
    if meta["kernel"] == "lstm_cell":
        ck = firmware_key.replace("out", "cell")
        np.save(tmp_path / "fw_cell.npy", z[ck if ck in z.files else "expected_cell_data"])
        case["firmware_cell"] = "fw_cell.npy"
    return case, meta, z


def _first_cases(limit_per_kind=2):
    """Up to `limit_per_kind` usable case files per kernel and kind."""
    if not MLI20.is_dir():
        return []
    seen, out = {}, []
    for f in sorted(MLI20.glob("*.npz")):
        with np.load(f, allow_pickle=False) as z:
            meta = json.loads(str(z["meta_json"]))
            meta["_files"] = z.files
        k = (meta["kernel"], meta["kind"])
        if _usable(meta) and seen.get(k, 0) < limit_per_kind:
            seen[k] = seen.get(k, 0) + 1
            out.append(f)
    return out


CASES = _first_cases()


@needs_mli20
@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_mli20_outputs_are_bit_exact(path, tmp_path):
    case, meta, z = mli20_case(path, tmp_path)
    res = crosscheck(case, base_dir=str(tmp_path))
    assert res.bit_exact, res.format()
    assert [r.name for r in res.layers] == [meta["kernel"]] + (["lstm_cell.cell"] if meta["kernel"] == "lstm_cell"
                                                                  else [])
    assert res.layers[0].kernel == f"mli2 {meta['kernel']}_{meta['kind']}"
    outs = run_case(case, base_dir=str(tmp_path))
    np.testing.assert_array_equal(outs[meta["kernel"]].numpy().reshape(-1), z["expected_out_data"].reshape(-1))
    up = z["expected_out_data_if_round_up"] if "expected_out_data_if_round_up" in z.files else None
    if up is not None and not np.array_equal(up, z["expected_out_data"]):
        case2, _, _ = mli20_case(path, tmp_path, "expected_out_data_if_round_up")
        res2 = crosscheck(case2, base_dir=str(tmp_path))
        assert not res2.bit_exact and res2.layers[0].alt.bit_exact
        assert "bit-exact with rounding 'up'" in res2.diagnosis()


@needs_mli20
def test_mli20_cases_cover_every_kernel():
    kinds = {tuple(p.stem.split("_", 1)[1].split("_", 2)[:2]) for p in CASES}
    names = {p.stem.split("_", 1)[1] for p in CASES}
    for k in ("lstm_cell_fx16", "lstm_cell_sa8_sa8_sa32", "gru_cell_fx16_fx8_fx8", "gru_cell_sa8_sa8_sa32",
              "fully_connected_sa8_sa8_sa32", "tanh_sa8", "sigm_fx16"):
        assert k in names, (k, sorted(names))
    assert kinds


@needs_mli20
def test_cli_kernel_flags_and_mismatch(tmp_path, capsys):
    path = next(p for p in CASES if "gru_cell_fx16" in p.stem and "fx8" not in p.stem)
    case, meta, z = mli20_case(path, tmp_path)
    fw = np.load(tmp_path / "fw.npy")
    argv = ["--kernel", case["kernel"], "--in", str(tmp_path / "input.npy"), "--in-frac", str(case["input_frac"]),
            "--prev-out", str(tmp_path / "prev_out.npy"), "--prev-out-frac", str(case["prev_out_frac"]),
            "--weights-in", str(tmp_path / "weights_in.npy"), "--weights-in-frac", str(case["weights_in_frac"]),
            "--weights-out", str(tmp_path / "weights_out.npy"), "--weights-out-frac", str(case["weights_out_frac"]),
            "--bias", str(tmp_path / "bias.npy"), "--bias-frac", str(case["bias_frac"]),
            "--out-frac", str(case["out_frac"]), "--direction", case["direction"], "--results", case["results"],
            "--firmware", str(tmp_path / "fw.npy")]
    assert main(argv) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    assert "mli2 gru_cell_fx16" in out and "bit-exact" in out
    bad = fw.copy()
    bad.reshape(-1)[-1] += 3
    np.save(tmp_path / "bad.npy", bad)
    assert main(argv[:-1] + [str(tmp_path / "bad.npy")]) == 1
    out = capsys.readouterr().out
    T, M = fw.shape
    assert f"1 of {fw.size} elements differ" in out and f"at step {T - 1}, unit {M - 1}" in out
    # the kernel name is ambiguous without --mli 2 only for the shared names: gru_cell is 2.x anyway
    assert main(argv + ["--mli", "1"]) == 2
    assert "is an MLI 2.x kernel" in capsys.readouterr().err


def test_sa8_flags_and_errors(tmp_path, capsys):
    """A tanh_sa8 run from flags: per-tensor parameters with --sa, the answer checked against mli.v2."""
    import mli.v2 as v2
    x = np.arange(-128, 128, 7, dtype=np.int8)
    np.save(tmp_path / "x.npy", x)
    want = v2.tanh_sa8(v2.Tensor.sa(x, -3, 20000, 19)).numpy()
    np.save(tmp_path / "fw.npy", want)
    argv = ["--kernel", "tanh_sa8", "--in", str(tmp_path / "x.npy"), "--sa", "input=-3,20000,19",
            "--firmware", str(tmp_path / "fw.npy"), "--time-axis", "none"]
    assert main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["--kernel", "tanh_sa8", "--in", str(tmp_path / "x.npy"), "--firmware", str(tmp_path / "fw.npy")]) == 2
    assert "input_scale" in capsys.readouterr().err
    assert main(argv + ["--sa", "bogus=1,2,3"]) == 2
    assert "--sa" in capsys.readouterr().err
    with pytest.raises(CaseError, match="lstm_cell has no fx8 variant"):
        crosscheck({"mli": 2, "kernel": "lstm_cell_fx8", "input": "x.npy", "firmware": "fw.npy"},
                   base_dir=str(tmp_path))
    with pytest.raises(CaseError, match="out_frac"):
        crosscheck({"mli": 2, "kernel": "fully_connected_fx16", "input": "x.npy", "input_frac": 7,
                    "weights": "x.npy", "weights_frac": 7, "bias": "x.npy", "bias_frac": 1, "firmware": "fw.npy"},
                   base_dir=str(tmp_path))
