"""A user's script, typed: tests/test_typing.py runs ``mypy --strict`` over
it, so every public name it uses must be visible to type checkers with its
types (the kernels are made in loops at run time; mli/*.pyi declare them).
It runs as well (the test executes it), so what it declares is also true."""
from __future__ import annotations

import numpy as np
import numpy.typing as npt

import mli
from mli import RnnCellConfig, Tensor


def rnn_sequence(x_f: npt.NDArray[np.float64], w_f: npt.NDArray[np.float64],
                 b_f: npt.NDArray[np.float64]) -> tuple[Tensor, npt.NDArray[np.float32]]:
    x = Tensor.from_float(x_f, "fx16", mli.frac_bits_for(x_f, "fx16"))
    h0 = Tensor(np.zeros(w_f.shape[0], np.int16), frac_bits=15)
    w = Tensor.from_float(w_f, mli.EL_FX_16, 14)
    b = Tensor.from_float(b_f, "fx16", 14)
    cfg = RnnCellConfig(mode=mli.RNN_BATCH_TO_BATCH, act=mli.RNN_ACT_TANH)
    y: Tensor = mli.basic_rnn_cell_fx16(x, h0, w, b, cfg)
    with mli.rounding("up"):
        y_up = mli.basic_rnn_cell(x, h0, w, b, cfg, out_frac_bits=None)
    assert y_up.shape == y.shape
    return y, y.to_float()


def lstm_step(x: Tensor, h: Tensor, w: Tensor, b: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    cfg = mli.RnnCellConfig(mode=mli.RnnMode.ONE_TO_ONE, act="tanh")
    out, cell = mli.lstm_cell_fx16(x, h, w, b, cfg, c)
    step = mli.prepare(mli.lstm_cell_fx16, x, h, w, b, cfg, c, out=out)
    step()
    return out, cell


def main() -> int:
    rng = np.random.default_rng(0)
    T, N, M = 6, 3, 4
    y, yf = rnn_sequence(rng.uniform(-1, 1, (T, N)), rng.normal(0, .2, (M, N + M)), rng.normal(0, .1, M))
    assert y.shape == (T, M) and yf.dtype == np.float32
    x = Tensor.from_float(rng.uniform(-1, 1, N), "fx16", 12)
    h = Tensor(np.zeros(M, np.int16), 15)
    c = Tensor(np.zeros(M, np.int16), 12)
    w = Tensor.from_float(rng.normal(0, .2, (4, M, N + M)), "fx16", 14)
    b = Tensor.from_float(rng.normal(0, .1, (4, M)), "fx16", 14)
    out, cell = lstm_step(x, h, w, b, c)
    r = mli.relu(out, mli.ReluType.GEN)
    s = mli.eltwise_add_fx16(r, mli.tanh(out))
    n: int = mli.count_elem_num(s) + mli.tensor_element_size(s)
    kind: str = mli.kind_of(x, w)
    isa: str = mli.isa()
    paths: list[str] = list(mli.supported_isas())
    with mli.use_isa("scalar"):
        mli.sigm_fx16(x)
    try:
        mli.fully_connected_fx16(x, w, b)
    except mli.MliError as e:
        status: mli.Status = e.status
        assert status.c_name.startswith("MLI_STATUS_")
    sub = mli.point_to_subtensor(w, [1], 1)
    conv = mli.convert_tensor(sub, "fx8", 7)
    include: str = mli.get_include()
    version: str = mli.__version__
    print(kind, isa in paths, n, conv.el_type == mli.EL_FX_8, cell.frac_bits, include.endswith("include"),
          version == mli.__version__, mli.get_rounding())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
