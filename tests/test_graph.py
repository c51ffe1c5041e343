"""Unit tests of the TensorIterator / Loop drivers on hand-made bodies."""

import numpy as np
import pytest

from mli.graph import (BackEdge, Body, BodyProtocol, CallableBody, ConcatOutput, CurrentIteration,
                       GraphError, InvariantInput, LastIterationOutput, Loop, MergedInput,
                       SlicedInput, TensorIterator)

ADD = CallableBody(lambda x, acc: (acc + x,), num_inputs=2, num_outputs=1)
IDENTITY = CallableBody(lambda x: (x,), num_inputs=1, num_outputs=1)


def cumsum_ti(axis=1, in_stride=1, out_stride=1, part=1, **kw):
    """acc_k = acc_{k-1} + x_k; outputs (concat of acc, last acc)."""
    def rng(stride):
        return dict(start=0, end=-1) if stride > 0 else dict(start=-1, end=0)
    return TensorIterator(
        ADD,
        inputs=[SlicedInput(0, 0, axis, stride=in_stride, part_size=part, **rng(in_stride)),
                MergedInput(1, 1)],
        outputs=[ConcatOutput(0, 0, axis, stride=out_stride, part_size=part, **rng(out_stride)),
                 LastIterationOutput(0, 1)],
        back_edges=[BackEdge(0, 1)], **kw)


def data(shape, dtype=np.float32):
    return np.arange(np.prod(shape), dtype=dtype).reshape(shape) - 3


# --------------------------------------------------------------------------- port validation
@pytest.mark.parametrize("make, text", [
    (lambda: SlicedInput(-1, 0, 0), "SlicedInput(external=-1, internal=0): external must be >= 0"),
    (lambda: SlicedInput(0, -2, 0), "internal must be >= 0"),
    (lambda: SlicedInput(0.5, 0, 0), "external must be an integer"),
    (lambda: SlicedInput(True, 0, 0), "external must be an integer"),
    (lambda: SlicedInput(0, 0, "1"), "axis must be an integer"),
    (lambda: SlicedInput(0, 0, 1, stride=0), "stride must not be 0"),
    (lambda: SlicedInput(0, 0, 1, part_size=0), "part_size must be >= 1"),
    (lambda: SlicedInput(0, 0, 1, stride=1, part_size=2), "|stride| must equal part_size"),
    (lambda: ConcatOutput(0, 0, 1, stride=-3, part_size=2), "|stride| must equal part_size"),
    (lambda: ConcatOutput(0, -1, 1), "ConcatOutput(internal=0, external=-1): external must be"),
    (lambda: InvariantInput(0, -1), "InvariantInput(external=0, internal=-1)"),
    (lambda: MergedInput(None, 0), "MergedInput(external=None, internal=0): external must be"),
    (lambda: LastIterationOutput(-1, 0), "LastIterationOutput(internal=-1, external=0)"),
    (lambda: BackEdge(0, -1), "BackEdge(from_result=0, to_parameter=-1)"),
    (lambda: CurrentIteration(0, np.float32), "dtype must be int32 or int64"),
    (lambda: CurrentIteration(0, "nonsense"), "is not a numpy dtype"),
    (lambda: CurrentIteration(0, np.int32, (2,)), "shape must be () or (1,)"),
    (lambda: CurrentIteration(-1), "internal must be >= 0"),
])
def test_port_validation(make, text):
    with pytest.raises(GraphError) as e:
        make()
    assert text in str(e.value)


def test_ports_are_frozen_and_normalised():
    p = SlicedInput(np.int64(0), 1, axis=np.int32(2), stride=-2, part_size=2)
    assert p == SlicedInput(0, 1, 2, 0, -1, -2, 2) and type(p.external) is int
    with pytest.raises(AttributeError):
        p.axis = 0
    assert CurrentIteration(0, "int32", [1]).shape == (1,)
    assert CurrentIteration(0, "int32").dtype == np.dtype(np.int32)


# --------------------------------------------------------------------------- op validation
def ti(inputs, outputs, back_edges=(), body=ADD, **kw):
    return TensorIterator(body, inputs, outputs, back_edges, **kw)


SEQ = [SlicedInput(0, 0, 1), MergedInput(1, 1)]
OUT = [LastIterationOutput(0, 0)]
EDGE = [BackEdge(0, 1)]


@pytest.mark.parametrize("make, text", [
    (lambda: ti([BackEdge(0, 0)], OUT), "inputs[0] must be SlicedInput"),
    (lambda: ti(SEQ, [InvariantInput(0, 0)], EDGE), "outputs[0] must be ConcatOutput"),
    (lambda: ti(SEQ, OUT, [MergedInput(0, 1)]), "back_edges[0] must be a BackEdge"),
    (lambda: ti([SlicedInput(0, 0, 1), InvariantInput(1, 0)], OUT),
     "InvariantInput(external=1, internal=0): body input 0 is already fed by SlicedInput"),
    (lambda: ti([SlicedInput(0, 0, 1), MergedInput(2, 1)], OUT, EDGE),
     "external input 1 is not connected to any port"),
    (lambda: ti(SEQ, [LastIterationOutput(0, 0), ConcatOutput(0, 0, 1)], EDGE),
     "external output 0 is already produced by LastIterationOutput"),
    (lambda: ti(SEQ, [LastIterationOutput(0, 1)], EDGE),
     "external output 0 is not produced by any port"),
    (lambda: ti([SlicedInput(0, 0, 1), InvariantInput(1, 1)], OUT, EDGE),
     "BackEdge(from_result=0, to_parameter=1): target body input 1 must be fed by a "
     "MergedInput, but is fed by InvariantInput"),
    (lambda: ti([SlicedInput(0, 0, 1), MergedInput(1, 1)], OUT, EDGE + [BackEdge(0, 1)]),
     "body input 1 already has a back edge"),
    (lambda: ti(SEQ, OUT, [BackEdge(0, 5)]), "target body input 5 must be fed by a MergedInput"),
    (lambda: ti(SEQ, OUT), "MergedInput(external=1, internal=1): no BackEdge targets body input 1"),
    (lambda: ti([SlicedInput(0, 0, 1), MergedInput(1, 3)], OUT, [BackEdge(0, 3)]),
     "internal 3 out of range, body has 2 inputs"),
    (lambda: ti([SlicedInput(0, 0, 1)], OUT), "body input 1 is not fed by any port"),
    (lambda: ti([SlicedInput(0, 1, 1)], OUT, body=CallableBody(lambda *a: a)),
     "body input 0 is not fed by any port"),
    (lambda: ti(SEQ, [LastIterationOutput(1, 0)], EDGE), "body output 1 out of range"),
    (lambda: ti(SEQ, OUT, [BackEdge(2, 1)]), "body output 2 out of range"),
    (lambda: ti([InvariantInput(0, 0), MergedInput(1, 1)], OUT, EDGE),
     "no SlicedInput: num_iterations must be given"),
    (lambda: ti(SEQ, OUT, EDGE, num_iterations=-1), "num_iterations must be a non-negative int"),
    (lambda: Loop(ADD, SEQ, OUT, EDGE, current_iteration=0), "body input 0 is already fed"),
    (lambda: Loop(ADD, SEQ, OUT, EDGE, execution_condition=True), "execution_condition must be"),
    (lambda: Loop(ADD, SEQ, OUT, EDGE, execution_condition=-1), "execution_condition must be >= 0"),
    (lambda: Loop(ADD, SEQ, OUT, EDGE, execution_condition="c"), "execution_condition must be"),
    (lambda: Loop(ADD, SEQ, OUT, EDGE, execution_condition=3), "body output 3 out of range"),
    (lambda: Loop(ADD, [SlicedInput(2, 0, 1), MergedInput(4, 1)], OUT, EDGE),
     "external input 3 is not connected"),
])
def test_op_validation(make, text):
    with pytest.raises(GraphError) as e:
        make()
    assert text in str(e.value)


def test_body_must_have_run():
    with pytest.raises(TypeError, match="body must have a run"):
        TensorIterator(lambda x: x, SEQ, OUT, EDGE)
    with pytest.raises(TypeError):
        CallableBody(3)


def test_error_names_the_op():
    with pytest.raises(GraphError, match="^encoder: "):
        ti(SEQ, OUT, name="encoder")


# --------------------------------------------------------------------------- TensorIterator
def test_forward_cumsum_axis1():
    x, a0 = data((2, 5, 3)), data((2, 1, 3))
    seq, last = cumsum_ti()(x, a0)
    want = a0 + np.cumsum(x, axis=1)
    np.testing.assert_array_equal(seq, want)
    np.testing.assert_array_equal(last, want[:, -1:])
    assert seq.dtype == np.float32 and last.dtype == np.float32


@pytest.mark.parametrize("part", [1, 2])
def test_reverse_equivalences(part):
    x, a0 = data((2, 6, 3)), data((2, part, 3))
    flip = lambda v: np.flip(v, axis=1)  # noqa: E731  (chunks of `part` keep their inner order)
    chunks = lambda v: v.reshape(2, 6 // part, part, 3)  # noqa: E731
    unchunk = lambda v: v.reshape(2, 6, 3)  # noqa: E731
    cflip = lambda v: unchunk(np.flip(chunks(v), axis=1))  # noqa: E731
    fwd = cumsum_ti(part=part, in_stride=part, out_stride=part)
    rr = cumsum_ti(part=part, in_stride=-part, out_stride=-part)
    rf = cumsum_ti(part=part, in_stride=-part, out_stride=part)
    fr = cumsum_ti(part=part, in_stride=part, out_stride=-part)
    f_seq, f_last = fwd(x, a0)
    np.testing.assert_array_equal(rr(x, a0)[0], cflip(fwd(cflip(x), a0)[0]))
    np.testing.assert_array_equal(rf(x, a0)[0], fwd(cflip(x), a0)[0])
    np.testing.assert_array_equal(fr(x, a0)[0], cflip(f_seq))
    np.testing.assert_array_equal(rr(x, a0)[1], fwd(cflip(x), a0)[1])
    np.testing.assert_array_equal(f_last, f_seq[:, -part:])
    if part == 1:
        np.testing.assert_array_equal(cflip(x), flip(x))


@pytest.mark.parametrize("part", [1, 2, 3])
def test_identity_reverse_in_reverse_out_restores_positions(part):
    x = data((6, 2))
    t = TensorIterator(IDENTITY, [SlicedInput(0, 0, 0, -1, 0, -part, part)],
                       [ConcatOutput(0, 0, 0, -1, 0, -part, part)])
    np.testing.assert_array_equal(t(x)[0], x)
    fwd_out = TensorIterator(IDENTITY, [SlicedInput(0, 0, 0, -1, 0, -part, part)],
                             [ConcatOutput(0, 0, 0, stride=part, part_size=part)])
    want = np.concatenate([x[6 - (k + 1) * part:6 - k * part] for k in range(6 // part)])
    np.testing.assert_array_equal(fwd_out(x)[0], want)


def test_part_size_chunks_reach_the_body():
    seen = []
    body = CallableBody(lambda x: (seen.append(x.copy()) or x,), 1, 1)
    t = TensorIterator(body, [SlicedInput(0, 0, 1, stride=2, part_size=2)],
                       [LastIterationOutput(0, 0)])
    x = data((2, 6))
    t(x)
    assert [s.shape for s in seen] == [(2, 2)] * 3
    np.testing.assert_array_equal(seen[1], x[:, 2:4])


def test_negative_indices_and_partial_ranges():
    x = data((2, 7, 3))
    t = TensorIterator(IDENTITY, [SlicedInput(0, 0, -2, start=-6, end=-2)],
                       [ConcatOutput(0, 0, -2)])
    np.testing.assert_array_equal(t(x)[0], x[:, 1:6])
    t = TensorIterator(IDENTITY, [SlicedInput(0, 0, 1, start=5, end=2, stride=-1)],
                       [ConcatOutput(0, 0, 1)])
    np.testing.assert_array_equal(t(x)[0], x[:, 5:1:-1])
    assert t.iterations(x) == 4


def test_invariant_input_and_same_result_twice():
    body = CallableBody(lambda x, b: (np.maximum(x + b, 0) * np.float32(0.5),), 2, 1)
    x, b = data((5, 2, 3)), data((1, 2, 3))
    t = TensorIterator(body, [SlicedInput(0, 0, 0), InvariantInput(1, 1)],
                       [ConcatOutput(0, 0, 0), LastIterationOutput(0, 1)])
    seq, last = t(x, b)
    want = np.maximum(x + b, 0) * np.float32(0.5)
    np.testing.assert_array_equal(seq, want)
    np.testing.assert_array_equal(last, want[-1:])


def test_two_sliced_inputs_and_mismatch():
    body = CallableBody(lambda x, y, acc: (acc + x[0] + y[:, 0],), 3, 1)
    t = TensorIterator(body, [SlicedInput(0, 0, 0), SlicedInput(1, 1, 1), MergedInput(2, 2)],
                       [LastIterationOutput(0, 0)], [BackEdge(0, 2)])
    x, y, a = data((4, 2, 3)), data((2, 4, 3)), data((2, 3))
    np.testing.assert_array_equal(t(x, y, a)[0], a + x.sum(0) + y.sum(1))
    with pytest.raises(GraphError, match="disagree on the iteration count: "
                       r"SlicedInput\(external=0, internal=0\) gives 4, "
                       r"SlicedInput\(external=1, internal=1\) gives 3"):
        t(x, y[:, :3], a)


def test_num_iterations_without_sliced_inputs():
    body = CallableBody(lambda b, acc: (acc * 2 + b,), 2, 1)
    t = TensorIterator(body, [InvariantInput(0, 0), MergedInput(1, 1)],
                       [ConcatOutput(0, 0, 0), LastIterationOutput(0, 1)], [BackEdge(0, 1)],
                       num_iterations=3)
    seq, last = t(np.ones((1, 2), np.int32), np.zeros((1, 2), np.int32))
    np.testing.assert_array_equal(seq, [[1, 1], [3, 3], [7, 7]])
    np.testing.assert_array_equal(last, [[7, 7]])
    assert seq.dtype == np.int32
    t2 = cumsum_ti(num_iterations=4)
    with pytest.raises(GraphError, match="num_iterations gives 4, SlicedInput"):
        t2(data((2, 5, 3)), data((2, 1, 3)))


def test_rank0_values_concatenate_to_1d():
    body = CallableBody(lambda x: (x.sum(),), 1, 1)
    t = TensorIterator(body, [SlicedInput(0, 0, 0)], [ConcatOutput(0, 0, 0)])
    out = t(data((4, 3)))[0]
    assert out.shape == (4,)
    np.testing.assert_array_equal(out, data((4, 3)).sum(1))
    bad = TensorIterator(body, [SlicedInput(0, 0, 0)], [ConcatOutput(0, 0, 1)])
    with pytest.raises(GraphError, match="axis 1 is out of range for rank 1"):
        bad(data((4, 3)))


@pytest.mark.parametrize("args, text", [
    ((data((2, 5, 3)),), "expected 2 inputs, got 1"),
    ((data((2,)), data((2, 1, 3))), "axis 1 is out of range for rank 1"),
    ((np.float32(1), data((2, 1, 3))), "cannot slice a rank-0 input"),
])
def test_run_time_errors(args, text):
    with pytest.raises(GraphError, match=text):
        cumsum_ti()(*args)


def test_range_not_multiple_of_part_size():
    t = cumsum_ti(part=2, in_stride=2, out_stride=2)
    with pytest.raises(GraphError, match="range of 5 elements is not a multiple of part_size 2"):
        t(data((2, 5, 3)), data((2, 2, 3)))
    t = TensorIterator(IDENTITY, [SlicedInput(0, 0, 0, start=3, end=1)], [ConcatOutput(0, 0, 0)])
    with pytest.raises(GraphError, match="walks away from end"):
        t(data((5,)))
    t = TensorIterator(IDENTITY, [SlicedInput(0, 0, 0, start=7)], [ConcatOutput(0, 0, 0)])
    with pytest.raises(GraphError, match="out of range for an axis of length 5"):
        t(data((5,)))


def test_concat_value_checks():
    t = TensorIterator(CallableBody(lambda x: (np.concatenate([x, x], 1),), 1, 1),
                       [SlicedInput(0, 0, 1)], [ConcatOutput(0, 0, 1)])
    with pytest.raises(GraphError, match="has size 2 on axis 1, expected part_size 1"):
        t(data((2, 3)))
    t = TensorIterator(CallableBody(lambda x: (x[:, : int(x[0, 0]) % 2 + 1],), 1, 1),
                       [SlicedInput(0, 0, 0)], [ConcatOutput(0, 0, 0)])
    with pytest.raises(GraphError, match=r"is float32\[1, 1\] in iteration 1 but "
                       r"float32\[1, 2\] in iteration 0"):
        t(np.array([[1, 5], [2, 5]], np.float32))


def test_zero_length_axis_gives_zero_iterations():
    x, a0 = np.zeros((2, 0, 3), np.float32), data((2, 1, 3))
    with pytest.raises(GraphError, match="zero iterations and the body declares no output_specs"):
        cumsum_ti()(x, a0)
    body = CallableBody(ADD.fn, 2, 1, output_specs=[(np.float32, (2, 1, 3))])
    t = TensorIterator(body, [SlicedInput(0, 0, 1), MergedInput(1, 1)],
                       [ConcatOutput(0, 0, 1), LastIterationOutput(0, 1)], [BackEdge(0, 1)])
    seq, last = t(x, a0)
    assert seq.shape == (2, 0, 3) and seq.dtype == np.float32
    np.testing.assert_array_equal(last, a0)
    body = CallableBody(ADD.fn, 2, 1, output_specs=[(np.float32, (None, 1, 3))])
    t = TensorIterator(body, [SlicedInput(0, 0, 1), MergedInput(1, 1)],
                       [ConcatOutput(0, 0, 1)], [BackEdge(0, 1)])
    with pytest.raises(GraphError, match=r"shape \(None, 0, 3\) is not static"):
        t(x, a0)


def test_outputs_do_not_alias_or_modify_inputs():
    x, a0 = data((2, 4, 3)), data((2, 1, 3))
    x0, a00 = x.copy(), a0.copy()
    t = TensorIterator(CallableBody(lambda x, a: (x, a), 2, 2),
                       [SlicedInput(0, 0, 1), InvariantInput(1, 1)],
                       [LastIterationOutput(0, 0), LastIterationOutput(1, 1),
                        ConcatOutput(0, 2, 1)])
    last_x, inv, seq = t(x, a0)
    for out in (last_x, inv, seq):
        assert not np.shares_memory(out, x) and not np.shares_memory(out, a0)
    np.testing.assert_array_equal(last_x, x[:, 3:])
    np.testing.assert_array_equal(seq, x)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(a0, a00)


def test_any_object_with_run_is_a_body():
    class Twice:
        def run(self, inputs):
            return [inputs[0] * 2]

    assert isinstance(Twice(), BodyProtocol) and not isinstance(3, BodyProtocol)
    t = TensorIterator(Twice(), [SlicedInput(0, 0, 0)], [ConcatOutput(0, 0, 0)])
    np.testing.assert_array_equal(t(data((3, 1)))[0], data((3, 1)) * 2)
    with pytest.raises(NotImplementedError):
        Body().run([])


def test_bodies_accept_dicts():
    body = CallableBody(lambda x, acc: (acc - x,), 2, 1, input_names=("x", "acc"))
    out = body.run({"acc": np.array(5), 0: np.array(2)})
    np.testing.assert_array_equal(out[0], 3)
    with pytest.raises(KeyError, match="missing body input 1 \\('acc'\\)"):
        body.run({"x": np.array(1)})
    with pytest.raises(KeyError, match="unknown body input 'y'"):
        body.run({"y": np.array(1)})


def test_callable_body_output_count():
    body = CallableBody(lambda x: x, 1, 1)
    assert len(body.run([np.ones(2)])) == 1
    with pytest.raises(ValueError, match="returned 2 outputs, expected 1"):
        CallableBody(lambda x: (x, x), 1, 1).run([np.ones(2)])


# --------------------------------------------------------------------------- Loop
def acc_loop(**kw):
    """acc = acc*2 + x; cond = acc < limit (body output 1); scan of acc on axis 0."""
    body = CallableBody(lambda x, acc, lim: (acc * 2 + x, np.array((acc * 2 + x).max() < lim)),
                        3, 2, output_specs=[(np.float32, (1, 2)), (np.bool_, ())])
    return Loop(body, [InvariantInput(2, 0), MergedInput(3, 1), InvariantInput(4, 2)],
                [LastIterationOutput(0, 0), ConcatOutput(0, 1, 0)], [BackEdge(0, 1)],
                execution_condition=1, **kw)


X1 = np.ones((1, 2), np.float32)
A0 = np.zeros((1, 2), np.float32)


def run_acc(trip, cond, limit=1e9):
    return acc_loop()(trip, cond, X1, A0, np.float32(limit))


def test_loop_for_while_and_do_while():
    last, scan = run_acc(np.int64(4), True)
    np.testing.assert_array_equal(scan[:, 0], [1, 3, 7, 15])
    np.testing.assert_array_equal(last, [[15, 15]])
    last, scan = run_acc(np.int64(-1), np.array([True]), limit=7)      # while acc < 7
    np.testing.assert_array_equal(scan[:, 0], [1, 3, 7])
    last, scan = run_acc(np.array([10], np.int32), True, limit=0)      # runs once (do-while)
    np.testing.assert_array_equal(scan[:, 0], [1])
    last, scan = run_acc(np.int32(2), True, limit=7)                   # trip count first
    np.testing.assert_array_equal(scan[:, 0], [1, 3])


@pytest.mark.parametrize("trip, cond", [(np.int64(0), True), (np.int64(5), False),
                                        (np.array([3], np.int32), np.array([False]))])
def test_loop_zero_iterations(trip, cond):
    last, scan = run_acc(trip, cond)
    np.testing.assert_array_equal(last, A0)
    assert last is not A0 and scan.shape == (0, 2) and scan.dtype == np.float32


def test_zero_iterations_needs_specs_and_defined_outputs():
    body = CallableBody(lambda x, acc: (acc + x, x * 2), 2, 2)
    loop = Loop(body, [InvariantInput(2, 0), MergedInput(3, 1)],
                [LastIterationOutput(0, 0), LastIterationOutput(0, 1), ConcatOutput(1, 2, 0)],
                [BackEdge(0, 1)])
    with pytest.raises(GraphError, match="declares no output_specs"):
        loop(np.int64(0), True, X1, A0)
    loop = Loop(body, [InvariantInput(2, 0), MergedInput(3, 1)],
                [LastIterationOutput(1, 0)], [BackEdge(0, 1)])
    with pytest.raises(GraphError, match=r"LastIterationOutput\(internal=1, external=0\): body "
                       "output 1 is undefined after zero iterations"):
        loop(np.int64(0), True, X1, A0)

    class Forward(CallableBody):
        def source_parameter(self, output):
            return 0 if output == 1 else None

    loop = Loop(Forward(lambda x, acc: (acc + x, x), 2, 2),
                [InvariantInput(2, 0), MergedInput(3, 1)], [LastIterationOutput(1, 0)],
                [BackEdge(0, 1)])
    np.testing.assert_array_equal(loop(np.int64(0), True, X1, A0)[0], X1)


@pytest.mark.parametrize("trip, cond, text", [
    (np.float32(3), True, r"trip_count must be an int32/int64 scalar or \[1\] tensor, got float32"),
    (np.array([1, 2]), True, "trip_count must be .* got int64\\[2\\]"),
    (True, True, "trip_count must be .* got bool"),
    (np.int64(-2), True, "trip_count must be -1 \\(unbounded\\) or >= 0, got -2"),
    (np.int64(3), 1, "execution_condition input must be a bool scalar or \\[1\\] tensor"),
    (np.int64(3), np.array([True, True]), "execution_condition input must be a bool"),
])
def test_loop_special_input_checks(trip, cond, text):
    with pytest.raises(GraphError, match=text):
        run_acc(trip, cond)


def test_body_condition_checks():
    body = CallableBody(lambda acc: (acc + 1, acc), 1, 2)
    loop = Loop(body, [MergedInput(2, 0)], [LastIterationOutput(0, 0)], [BackEdge(0, 0)],
                execution_condition=1)
    with pytest.raises(GraphError, match=r"body output 1 \(execution_condition\) must be a bool"):
        loop(np.int64(3), True, np.zeros(1, np.int64))


@pytest.mark.parametrize("ci, dtype, shape", [(None, np.int64, ()),
                                              (CurrentIteration(1, np.int32, ()), np.int32, ()),
                                              (CurrentIteration(1, "int64", (1,)), np.int64, (1,))])
def test_current_iteration(ci, dtype, shape):
    seen = []

    def fn(acc, i):
        seen.append(i)
        return (acc + i,)

    loop = Loop(CallableBody(fn, 2, 1), [MergedInput(2, 0)], [LastIterationOutput(0, 0)],
                [BackEdge(0, 0)], current_iteration=1 if ci is None else ci)
    out = loop(np.int64(4), True, np.zeros(shape, dtype))[0]
    assert [int(v.reshape(-1)[0]) for v in seen] == [0, 1, 2, 3]
    assert all(v.dtype == dtype and v.shape == shape for v in seen)
    np.testing.assert_array_equal(out, np.full(shape, 6, dtype))


def test_back_edge_onto_current_iteration_stops_counting():
    seen = []
    body = CallableBody(lambda i: (seen.append(int(i)) or i + 10,), 1, 1)
    loop = Loop(body, [], [LastIterationOutput(0, 0)], [BackEdge(0, 0)], current_iteration=0)
    np.testing.assert_array_equal(loop(np.int64(3), True)[0], 30)
    assert seen == [0, 10, 20]


def test_loop_sliced_input():
    body = CallableBody(lambda x, acc, i: (acc + x, x * i.astype(np.float32)), 3, 2)
    loop = Loop(body, [SlicedInput(2, 0, 1), MergedInput(3, 1)],
                [LastIterationOutput(0, 0), ConcatOutput(0, 1, 1), ConcatOutput(1, 2, 1)],
                [BackEdge(0, 1)], current_iteration=2)
    x, a0 = data((2, 5, 3)), data((2, 1, 3))
    last, acc, y = loop(np.int64(5), True, x, a0)
    np.testing.assert_array_equal(acc, a0 + np.cumsum(x, axis=1))
    np.testing.assert_array_equal(y, x * np.arange(5, dtype=np.float32)[None, :, None])
    last, acc, y = loop(np.int64(3), True, x, a0)                     # fewer trips: first slices
    np.testing.assert_array_equal(acc, a0 + np.cumsum(x, axis=1)[:, :3])
    with pytest.raises(GraphError, match="iteration 5 needs chunk 5, but the input has only 5"):
        loop(np.int64(6), True, x, a0)
    with pytest.raises(GraphError, match="iteration 5 needs chunk 5"):
        loop(np.int64(-1), True, x, a0)


def test_loop_reverse_slices_and_scan():
    loop = Loop(IDENTITY, [SlicedInput(2, 0, 0, -1, 0, -1, 1)],
                [ConcatOutput(0, 0, 0, -1, 0, -1, 1), ConcatOutput(0, 1, 0)])
    x = data((4, 2))
    rev_rev, rev_fwd = loop(np.int64(4), True, x)
    np.testing.assert_array_equal(rev_rev, x)
    np.testing.assert_array_equal(rev_fwd, x[::-1])


def test_loop_port_map_may_read_trip_count_and_condition():
    body = CallableBody(lambda c, n, acc: (acc + n, ~c), 3, 2)
    loop = Loop(body, [MergedInput(1, 0), InvariantInput(0, 1), MergedInput(2, 2)],
                [LastIterationOutput(0, 0)], [BackEdge(1, 0), BackEdge(0, 2)],
                execution_condition=1)
    assert loop.num_external_inputs == 3
    np.testing.assert_array_equal(loop(np.int64(5), True, np.int64(0))[0], 5)


# --------------------------------------------------------------------------- Loop limits (issue 10)
def endless_loop():
    """acc += 1 while a condition that never turns false; concat of acc and last acc."""
    body = CallableBody(lambda acc: (acc + 1, np.array(True)), num_inputs=1, num_outputs=2)
    return Loop(body, inputs=[MergedInput(2, 0)],
                outputs=[ConcatOutput(0, 0, axis=0), LastIterationOutput(0, 1)],
                back_edges=[BackEdge(0, 0)], execution_condition=1, name="endless")


def test_loop_iteration_limit(monkeypatch):
    from mli.graph import LoopLimitError, limits
    monkeypatch.setattr(limits, "MAX_LOOP_ITERATIONS", 50)
    loop = endless_loop()
    with pytest.raises(LoopLimitError, match=r"endless: stopped before iteration 51: the limit is "
                                             r"50 iterations .*MLI_MAX_LOOP_ITERATIONS"):
        loop(np.int64(-1), np.bool_(True), np.zeros(1, np.float32))
    assert issubclass(LoopLimitError, ValueError)
    seq, last = loop(np.int64(50), np.bool_(True), np.zeros(1, np.float32))   # at the limit
    assert seq.shape == (50,) and float(last[0]) == 50.0
    monkeypatch.setattr(limits, "MAX_LOOP_ITERATIONS", None)
    monkeypatch.setenv("MLI_MAX_LOOP_ITERATIONS", "7")
    with pytest.raises(LoopLimitError, match="the limit is 7 iterations"):
        loop(np.int64(-1), np.bool_(True), np.zeros(1, np.float32))
    monkeypatch.setenv("MLI_MAX_LOOP_ITERATIONS", "zero")
    with pytest.raises(ValueError, match="MLI_MAX_LOOP_ITERATIONS: expected a count > 0"):
        loop(np.int64(1), np.bool_(True), np.zeros(1, np.float32))
    monkeypatch.delenv("MLI_MAX_LOOP_ITERATIONS")
    assert limits.max_loop_iterations() == limits.DEFAULT_MAX_LOOP_ITERATIONS == 1_000_000


def test_loop_output_size_limit(monkeypatch):
    from mli.graph import LoopLimitError, limits
    monkeypatch.setattr(limits, "MAX_LOOP_OUTPUT_BYTES", 1000)
    loop = endless_loop()
    with pytest.raises(LoopLimitError, match=r"the concatenated outputs reach 1004 bytes after "
                                             r"251 iterations, more than the limit of 1000 bytes"):
        loop(np.int64(-1), np.bool_(True), np.zeros(1, np.float32))
    monkeypatch.setattr(limits, "MAX_LOOP_OUTPUT_BYTES", None)
    monkeypatch.setenv("MLI_MAX_LOOP_OUTPUT_BYTES", "400")
    with pytest.raises(LoopLimitError, match="more than the limit of 400 bytes"):
        loop(np.int64(-1), np.bool_(True), np.zeros(1, np.float32))
