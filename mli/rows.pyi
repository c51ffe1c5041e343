# Types of mli.rows: batched rows (an mli-py extension beyond MLI 1.1).
from collections.abc import Sequence

from .kernels import RnnCellConfig
from .tensor import Tensor

__all__ = ["lstm_cell_rows_fx8", "lstm_cell_rows_fx16", "lstm_cell_rows_fx8w16d", "basic_rnn_cell_rows_fx8",
           "basic_rnn_cell_rows_fx16", "basic_rnn_cell_rows_fx8w16d", "lstm_cell_rows", "basic_rnn_cell_rows"]

MAX_ROWS: int

# x: [B, N] / [B, T, N] (or one tensor per row); prev_out, cell: [B, M] or [M] shared (prev_out also a list)
_Rows = Tensor | Sequence[Tensor]

def lstm_cell_rows_fx8(x: _Rows, prev_out: _Rows, weights: Tensor, bias: Tensor, cfg: RnnCellConfig, cell: Tensor, *,
        out: Tensor | None = None, cell_out: Tensor | None = None) -> tuple[Tensor, Tensor]: ...
def lstm_cell_rows_fx16(x: _Rows, prev_out: _Rows, weights: Tensor, bias: Tensor, cfg: RnnCellConfig, cell: Tensor, *,
        out: Tensor | None = None, cell_out: Tensor | None = None) -> tuple[Tensor, Tensor]: ...
def lstm_cell_rows_fx8w16d(x: _Rows, prev_out: _Rows, weights: Tensor, bias: Tensor, cfg: RnnCellConfig,
        cell: Tensor, *, out: Tensor | None = None, cell_out: Tensor | None = None) -> tuple[Tensor, Tensor]: ...
def basic_rnn_cell_rows_fx8(x: _Rows, prev_out: _Rows, weights: Tensor, bias: Tensor, cfg: RnnCellConfig, *,
        out: Tensor | None = None, out_frac_bits: int | None = None) -> Tensor: ...
def basic_rnn_cell_rows_fx16(x: _Rows, prev_out: _Rows, weights: Tensor, bias: Tensor, cfg: RnnCellConfig, *,
        out: Tensor | None = None, out_frac_bits: int | None = None) -> Tensor: ...
def basic_rnn_cell_rows_fx8w16d(x: _Rows, prev_out: _Rows, weights: Tensor, bias: Tensor, cfg: RnnCellConfig, *,
        out: Tensor | None = None, out_frac_bits: int | None = None) -> Tensor: ...
def lstm_cell_rows(x: _Rows, prev_out: _Rows, weights: Tensor, bias: Tensor, cfg: RnnCellConfig, cell: Tensor, *,
        out: Tensor | None = None, cell_out: Tensor | None = None) -> tuple[Tensor, Tensor]: ...
def basic_rnn_cell_rows(x: _Rows, prev_out: _Rows, weights: Tensor, bias: Tensor, cfg: RnnCellConfig, *,
        out: Tensor | None = None, out_frac_bits: int | None = None) -> Tensor: ...
