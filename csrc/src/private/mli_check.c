/* Argument checks of SPEC.md section 12, in MLI 1.1's order: the first
 * failing step decides the status.  After MLI's own checks, a few mli-py
 * safety checks reject calls on which MLI would read or write outside the
 * buffers it was given (they are flagged `mlipy_safety` in the detail). */
#include <stddef.h>
#include "mli_check.h"
#include "mli_math.h"

static const char *const SHAPE_F[MLI_MAX_RANK] = {"shape[0]", "shape[1]", "shape[2]", "shape[3]"};
static const char *const STRIDE_F[MLI_MAX_RANK] = {"mem_stride[0]", "mem_stride[1]", "mem_stride[2]",
                                                   "mem_stride[3]"};

#define RETURN_IF(cond, expr) do { if (cond) return (expr); } while (0)
#define RETURN_BAD(st) do { mli_status st_ = (st); if (st_ != MLI_STATUS_OK) return st_; } while (0)

/* CHK_TENSOR (SPEC 12.1). */
mli_status mli_chk_tensor(const mli_tensor *t, const char *arg) {
    RETURN_IF(!t, mlipy_err(MLI_STATUS_BAD_TENSOR, arg, "", "is a NULL tensor"));
    RETURN_IF(t->rank > MLI_MAX_RANK,
              mlipy_err_val(MLI_STATUS_BAD_TENSOR, arg, "rank", "rank must be at most 4", MLI_MAX_RANK,
                            t->rank));
    bool strides_set = true;
    for (uint32_t i = 0; i < t->rank; i++) {
        RETURN_IF(t->mem_stride[i] < 0, mlipy_err_val(MLI_STATUS_BAD_TENSOR, arg, STRIDE_F[i],
                                                      "must not be negative", 0, t->mem_stride[i]));
        RETURN_IF(t->shape[i] == 0,
                  mlipy_err(MLI_STATUS_BAD_TENSOR, arg, SHAPE_F[i], "must not be 0 within the rank"));
        if (t->mem_stride[i] == 0) strides_set = false;
    }
    uint64_t size;
    if (strides_set) {
        size = 1;
        for (uint32_t i = t->rank; i-- > 0;) {
            int64_t need = (i + 1 == t->rank) ? 1 : (int64_t)t->shape[i + 1] * t->mem_stride[i + 1];
            RETURN_IF(t->mem_stride[i] < need,
                      mlipy_err_val(MLI_STATUS_BAD_TENSOR, arg, STRIDE_F[i],
                                    "is smaller than the extent of the inner dimensions", need,
                                    t->mem_stride[i]));
            /* each term < 2^63; saturate the sum instead of wrapping */
            const uint64_t term = (uint64_t)(t->shape[i] - 1) * (uint64_t)t->mem_stride[i];
            size = term > MLI_PRV_COUNT_MAX - size ? MLI_PRV_COUNT_MAX : size + term;
        }
    } else {
        size = mli_prv_count(t, 0);
    }
    uint64_t bytes = size * mli_prv_elsize(t->el_type);
    RETURN_IF((uint64_t)t->capacity < bytes,
              mlipy_err_val(MLI_STATUS_NOT_ENGH_MEM, arg, "capacity", "is smaller than its shape needs",
                            (long long)bytes, t->capacity));
    return MLI_STATUS_OK;
}

static mli_status chk_out_ptr(const mli_tensor *out) {
    RETURN_IF(!out, mlipy_err(MLI_STATUS_BAD_TENSOR, "out", "", "is a NULL tensor"));
    RETURN_IF(!out->data, mlipy_err(MLI_STATUS_BAD_TENSOR, "out", "data", "is NULL"));
    return MLI_STATUS_OK;
}

/* CONTIG(a.shape, b.mem_stride, rank) as MLI evaluates it: it reads
 * entries up to rank - 1 with no rank check, and in its tensor struct
 * (mem_stride[4], shape[4], rank, el_type) mem_stride[4 + k] is shape[k],
 * shape[4] is rank and shape[5] is el_type.  Only eltwise reaches CONTIG
 * with a rank of 5 or 6 (it merely remembers CHK_TENSOR's status); beyond 6
 * MLI reads past the struct, and mli_prv_contig's four entries stand. */
static bool contig_as_mli(const mli_tensor *a, const mli_tensor *b, uint32_t rank) {
    if (rank <= MLI_MAX_RANK || rank > MLI_MAX_RANK + 2) return mli_prv_contig(a->shape, b->mem_stride, rank);
    const uint32_t shape[MLI_MAX_RANK + 2] = {a->shape[0], a->shape[1], a->shape[2], a->shape[3], a->rank,
                                              (uint32_t)a->el_type};
    const int32_t stride[MLI_MAX_RANK + 2] = {b->mem_stride[0], b->mem_stride[1], b->mem_stride[2],
                                              b->mem_stride[3], (int32_t)b->shape[0], (int32_t)b->shape[1]};
    return mli_prv_contig_n(shape, stride, rank);
}

static mli_status chk_contig(const mli_tensor *t, const char *arg) {
    RETURN_IF(!contig_as_mli(t, t, t->rank), mlipy_err(MLI_STATUS_INCOMPATEBLE_TENSORS, arg, "mem_stride",
                                                       "must describe a contiguous layout"));
    return MLI_STATUS_OK;
}

static mli_status chk_out_contig_r(const mli_tensor *out, uint32_t rank) {
    RETURN_IF(!mli_prv_contig_r(out->mem_stride, rank),
              mlipy_err(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "mem_stride",
                        "must be zero (dense) for the output"));
    return MLI_STATUS_OK;
}

static mli_status chk_type(const mli_tensor *t, const char *arg, mli_element_type want) {
    RETURN_IF(t->el_type != want, mlipy_err_val(MLI_STATUS_TYPE_MISMATCH, arg, "el_type",
                                                "has the wrong element type for this kernel", want,
                                                t->el_type));
    return MLI_STATUS_OK;
}

/* MLI's "a and b have the same el_type" step.  The status is MLI's; the
 * detail names the one of the two that is not the kernel's type `want`. */
static mli_status chk_same_type(const mli_tensor *a, const char *a_arg, const mli_tensor *b, const char *b_arg,
                                mli_element_type want) {
    if (a->el_type == b->el_type) return MLI_STATUS_OK;
    const bool a_off = a->el_type != want;
    return mlipy_err_val(MLI_STATUS_TYPE_MISMATCH, a_off ? a_arg : b_arg, "el_type",
                         "is not the element type of this kernel",
                         want, a_off ? a->el_type : b->el_type);
}

static mli_status chk_bias_frac(const mli_tensor *in, const mli_tensor *w, const mli_tensor *b) {
    int limit = in->el_params.fx.frac_bits + w->el_params.fx.frac_bits;
    RETURN_IF(b->el_params.fx.frac_bits > limit,
              mlipy_err_val(MLI_STATUS_INCOMPATEBLE_TENSORS, "bias", "frac_bits",
                            "must not exceed in.frac_bits + weights.frac_bits", limit,
                            b->el_params.fx.frac_bits));
    return MLI_STATUS_OK;
}

static mli_status chk_shape_eq(long long expected, long long actual, const char *arg, const char *field,
                               const char *reason) {
    RETURN_IF(expected != actual,
              mlipy_err_val(MLI_STATUS_SHAPE_MISMATCH, arg, field, reason, expected, actual));
    return MLI_STATUS_OK;
}

static mli_status chk_capacity(uint64_t need, const mli_tensor *t, const char *arg) {
    RETURN_IF(need > t->capacity, mlipy_err_val(MLI_STATUS_NOT_ENGH_MEM, arg, "capacity",
                                                "is too small for the result", (long long)need,
                                                t->capacity));
    return MLI_STATUS_OK;
}

/* mli-py safety: MLI never looks at the data pointer of its inputs (a
 * rank-0 eltwise operand, whose data field holds a value, is not passed here). */
static mli_status safe_data(const mli_tensor *t, const char *arg) {
    RETURN_IF(t->data == NULL,
              mlipy_err_safety(MLI_STATUS_BAD_TENSOR, arg, "data", "is NULL"));
    return MLI_STATUS_OK;
}

/* mli-py safety: MLI's dense kernels count elements in C int; 2^31
 * elements or more overflow them (no ARC memory holds such tensors). */
static mli_status safe_int_count(const mli_tensor *t, const char *arg) {
    RETURN_IF(mli_prv_count(t, 0) >= ((uint64_t)1 << 31),
              mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, arg, "shape",
                               "has 2^31 elements or more (MLI's int element counters overflow)"));
    return MLI_STATUS_OK;
}

/* MLI dereferences cfg without a test.  mode and act are never compared
 * with their enums (SPEC 12.3): other values compute, in bounds. */
static mli_status safe_rnn_cfg(const mli_rnn_cell_cfg *cfg) {
    RETURN_IF(!cfg, mlipy_err_safety(MLI_STATUS_BAD_FUNC_CFG, "cfg", "", "is NULL"));
    return MLI_STATUS_OK;
}

/* The output rank whose layout MLI checks: the bias's (one-to-one,
 * batch-to-last) or 2 (batch-to-batch and any other mode value). */
static uint32_t rnn_out_rank(const mli_rnn_cell_cfg *cfg, uint32_t single) {
    return cfg->mode == RNN_ONE_TO_ONE || cfg->mode == RNN_BATCH_TO_LAST ? single : 2;
}

/* ---------------------------------------------------------------- FC -- */
/* MLI's FC checks after the type checks (tensors, shapes, layouts, output
 * capacity), shared by the fx kinds and sa8. */
static mli_status chk_fc_shapes(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                                const mli_tensor *out) {
    RETURN_BAD(mli_chk_tensor(in, "in"));
    RETURN_BAD(mli_chk_tensor(weights, "weights"));
    RETURN_BAD(mli_chk_tensor(bias, "bias"));
    RETURN_BAD(chk_out_ptr(out));
    RETURN_BAD(chk_shape_eq(2, weights->rank, "weights", "rank", "must be 2"));
    RETURN_BAD(chk_shape_eq(1, bias->rank, "bias", "rank", "must be 1"));
    RETURN_BAD(chk_shape_eq((long long)mli_prv_count(in, 0), weights->shape[1], "weights", "shape[1]",
                            "must equal the element count of in"));
    RETURN_BAD(chk_shape_eq(weights->shape[0], bias->shape[0], "bias", "shape[0]",
                            "must equal weights.shape[0]"));
    RETURN_BAD(chk_contig(in, "in"));
    RETURN_IF(weights->mem_stride[1] > 1,
              mlipy_err(MLI_STATUS_INCOMPATEBLE_TENSORS, "weights", "mem_stride[1]", "must be 0 or 1"));
    RETURN_BAD(chk_contig(bias, "bias"));
    RETURN_BAD(chk_out_contig_r(out, 1));
    RETURN_BAD(chk_capacity((uint64_t)weights->shape[0] * mli_prv_elsize(in->el_type), out, "out"));
    return MLI_STATUS_OK;
}

/* mli-py safety checks of an FC call whose weight rows are `row` elements
 * apart (the last row reaches row * (K - 1) + N elements). */
static mli_status safe_fc(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias, uint64_t row) {
    RETURN_BAD(safe_data(in, "in"));
    RETURN_BAD(safe_data(weights, "weights"));
    RETURN_BAD(safe_data(bias, "bias"));
    RETURN_BAD(safe_int_count(in, "in"));
    RETURN_BAD(safe_int_count(weights, "weights"));
    uint64_t reach = ((uint64_t)weights->shape[0] - 1) * row + weights->shape[1];
    RETURN_IF(reach * mli_prv_elsize(weights->el_type) > weights->capacity,
              mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, "weights", "capacity",
                               "is smaller than the rows at mem_stride[0] reach"));
    return MLI_STATUS_OK;
}

mli_status mli_chk_fully_connected(const mli_tensor *in, const mli_tensor *weights,
                                   const mli_tensor *bias, const mli_tensor *out, mli_chk_kind k) {
    /* MLI reads these before checking them; a NULL would crash it. */
    RETURN_BAD(in ? MLI_STATUS_OK : mli_chk_tensor(in, "in"));
    RETURN_BAD(weights ? MLI_STATUS_OK : mli_chk_tensor(weights, "weights"));
    RETURN_BAD(bias ? MLI_STATUS_OK : mli_chk_tensor(bias, "bias"));
    RETURN_BAD(chk_type(in, "in", k.data));
    RETURN_BAD(chk_type(weights, "weights", k.weights));
    RETURN_BAD(chk_type(bias, "bias", k.weights));
    RETURN_BAD(chk_bias_frac(in, weights, bias));
    RETURN_BAD(chk_fc_shapes(in, weights, bias, out));
    /* mli-py safety checks */
    return safe_fc(in, weights, bias, weights->mem_stride[0] ? (uint64_t)weights->mem_stride[0] : weights->shape[1]);
}

/* ------------------------------------------------------- convolution -- */
/* SPEC_MLI11_MORE.md section 10.  MLI checks the output (which no tensor
 * check has validated) in 32-bit unsigned arithmetic; these two restate it
 * exactly, wrap-arounds included, for that tensor and the output shape the
 * call computes. */
static bool conv_contig_u32(const uint32_t *shape, const int32_t *stride, uint32_t rank) {
    for (uint32_t i = 0; i < rank; i++)
        if (stride[i] == 0) return true;
    uint32_t prev_shape = 1, prev_stride = 1;
    for (uint32_t i = rank; i-- > 0;) {
        if ((uint32_t)stride[i] != prev_shape * prev_stride) return false;
        prev_shape = shape[i];
        prev_stride = (uint32_t)stride[i];
    }
    return true;
}

static mli_status conv_chk_out_shape(const uint32_t shape[3], const mli_tensor *out) {
    for (uint32_t i = 0; i < 3; i++) {
        RETURN_IF(out->mem_stride[i] < 0, mlipy_err_val(MLI_STATUS_BAD_TENSOR, "out", STRIDE_F[i],
                                                        "must not be negative", 0, out->mem_stride[i]));
        RETURN_IF(shape[i] == 0, mlipy_err(MLI_STATUS_BAD_TENSOR, "out", SHAPE_F[i],
                                           "would be 0: the input with its padding is smaller than the kernel"));
    }
    const bool set = out->mem_stride[0] && out->mem_stride[1] && out->mem_stride[2];
    uint32_t size = 1;
    if (set) {
        uint32_t prev_shape = 1, prev_stride = 1;
        for (uint32_t i = 3; i-- > 0;) {
            RETURN_IF((uint32_t)out->mem_stride[i] < prev_shape * prev_stride,
                      mlipy_err_val(MLI_STATUS_BAD_TENSOR, "out", STRIDE_F[i],
                                    "is smaller than the extent of the inner dimensions of the result",
                                    (long long)(prev_shape * prev_stride), out->mem_stride[i]));
            prev_shape = shape[i];
            prev_stride = (uint32_t)out->mem_stride[i];
            size += (prev_shape - 1) * prev_stride;
        }
    } else {
        size = shape[0] * shape[1] * shape[2];
    }
    size *= mli_prv_elsize(out->el_type);
    RETURN_IF(out->capacity < size, mlipy_err_val(MLI_STATUS_NOT_ENGH_MEM, "out", "capacity",
                                                  "is too small for the result", size, out->capacity));
    return MLI_STATUS_OK;
}

/* MLI's CEIL_DIV((int)in + pad + pad - kernel + 1, stride), as uint32. */
static uint32_t conv_out_dim(uint32_t in, unsigned pad_a, unsigned pad_b, uint32_t kernel, unsigned stride) {
    const int num = (int)in + (int)pad_a + (int)pad_b - (int)kernel + 1;
    return (uint32_t)((num + (int)stride - 1) / (int)stride);
}

/* mli-py safety: MLI reads these pointers before any test. */
static mli_status safe_conv_ptrs(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias) {
    static const char *const why = "is NULL; MLI 1.1 dereferences it before any check (it crashes)";
    RETURN_IF(!in, mlipy_err_safety(MLI_STATUS_BAD_TENSOR, "in", "", why));
    RETURN_IF(!weights, mlipy_err_safety(MLI_STATUS_BAD_TENSOR, "weights", "", why));
    RETURN_IF(!bias, mlipy_err_safety(MLI_STATUS_BAD_TENSOR, "bias", "", why));
    return MLI_STATUS_OK;
}

static mli_status conv_chk_cfg(const mli_conv2d_cfg *cfg, uint32_t kh, uint32_t kw) {
    RETURN_IF(!cfg, mlipy_err_safety(MLI_STATUS_BAD_FUNC_CFG, "cfg", "",
                                     "is NULL; MLI 1.1 dereferences it here (it crashes)"));
    RETURN_IF((int)cfg->padding_left >= (int)kw || (int)cfg->padding_right >= (int)kw,
              mlipy_err_val(MLI_STATUS_BAD_FUNC_CFG, "cfg", cfg->padding_left >= cfg->padding_right ? "padding_left" : "padding_right",
                            "must be smaller than the kernel width", (long long)kw,
                            cfg->padding_left >= cfg->padding_right ? cfg->padding_left : cfg->padding_right));
    RETURN_IF((int)cfg->padding_top >= (int)kh || (int)cfg->padding_bottom >= (int)kh,
              mlipy_err_val(MLI_STATUS_BAD_FUNC_CFG, "cfg", cfg->padding_top >= cfg->padding_bottom ? "padding_top" : "padding_bottom",
                            "must be smaller than the kernel height", (long long)kh,
                            cfg->padding_top >= cfg->padding_bottom ? cfg->padding_top : cfg->padding_bottom));
    RETURN_IF(cfg->stride_height == 0, mlipy_err(MLI_STATUS_BAD_FUNC_CFG, "cfg", "stride_height", "must be at least 1"));
    RETURN_IF(cfg->stride_width == 0, mlipy_err(MLI_STATUS_BAD_FUNC_CFG, "cfg", "stride_width", "must be at least 1"));
    return MLI_STATUS_OK;
}

/* mli-py safety: the rank of out indexes its mem_stride in MLI's layout checks. */
static mli_status safe_out_rank(const mli_tensor *out, bool zero_too) {
    RETURN_IF(out->rank > MLI_MAX_RANK || (zero_too && out->rank == 0),
              mlipy_err_safety(MLI_STATUS_BAD_TENSOR, "out", "rank",
                               "is outside 1..4; MLI 1.1 then reads mem_stride outside the array "
                               "(other fields of the struct, or beyond it)"));
    return MLI_STATUS_OK;
}

mli_status mli_chk_conv2d_chw(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                              const mli_conv2d_cfg *cfg, const mli_tensor *out, mli_chk_kind k, bool depthwise) {
    RETURN_BAD(safe_conv_ptrs(in, weights, bias));
    RETURN_BAD(chk_type(in, "in", k.data));
    RETURN_BAD(chk_type(weights, "weights", k.weights));
    RETURN_BAD(chk_type(bias, "bias", k.weights));
    RETURN_BAD(chk_bias_frac(in, weights, bias));
    RETURN_BAD(mli_chk_tensor(in, "in"));
    RETURN_BAD(mli_chk_tensor(weights, "weights"));
    RETURN_BAD(mli_chk_tensor(bias, "bias"));
    RETURN_BAD(chk_out_ptr(out));
    RETURN_BAD(chk_shape_eq(3, in->rank, "in", "rank", "must be 3 ([C, H, W])"));
    RETURN_BAD(chk_shape_eq(4, weights->rank, "weights", "rank", "must be 4"));
    RETURN_BAD(chk_shape_eq(1, bias->rank, "bias", "rank", "must be 1"));
    if (depthwise) {
        RETURN_BAD(chk_shape_eq(1, weights->shape[1], "weights", "shape[1]", "must be 1 ([C, 1, KH, KW])"));
        RETURN_BAD(chk_shape_eq(in->shape[0], weights->shape[0], "weights", "shape[0]",
                                "must equal in.shape[0] (the channels)"));
    } else {
        RETURN_BAD(chk_shape_eq(in->shape[0], weights->shape[1], "weights", "shape[1]",
                                "must equal in.shape[0] (the input channels)"));
    }
    RETURN_BAD(chk_shape_eq(weights->shape[0], bias->shape[0], "bias", "shape[0]", "must equal weights.shape[0]"));
    /* MLI tests these together (conv2d: in, weights, out as given, bias) */
    RETURN_BAD(chk_contig(in, "in"));
    RETURN_BAD(chk_contig(weights, "weights"));
    RETURN_BAD(chk_contig(bias, "bias"));
    if (!depthwise) {
        RETURN_BAD(safe_out_rank(out, false));
        RETURN_IF(!conv_contig_u32(out->shape, out->mem_stride, out->rank),
                  mlipy_err(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "mem_stride",
                            "must describe a contiguous layout"));
    }
    RETURN_BAD(conv_chk_cfg(cfg, weights->shape[2], weights->shape[3]));
    const uint32_t shape[3] = {weights->shape[0],
                               conv_out_dim(in->shape[1], cfg->padding_top, cfg->padding_bottom, weights->shape[2],
                                            cfg->stride_height),
                               conv_out_dim(in->shape[2], cfg->padding_left, cfg->padding_right, weights->shape[3],
                                            cfg->stride_width)};
    RETURN_IF(!conv_contig_u32(shape, out->mem_stride, 3),
              mlipy_err(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "mem_stride",
                        "must be 0 or describe a contiguous layout of the result"));
    RETURN_BAD(conv_chk_out_shape(shape, out));
    RETURN_BAD(safe_data(in, "in"));
    RETURN_BAD(safe_data(weights, "weights"));
    RETURN_BAD(safe_data(bias, "bias"));
    RETURN_BAD(safe_int_count(in, "in"));
    RETURN_BAD(safe_int_count(weights, "weights"));
    return MLI_STATUS_OK;
}

static mli_status chk_inner_stride(const mli_tensor *t, const char *arg) {
    const int32_t s = t->mem_stride[t->rank - 1];
    RETURN_IF(s != 0 && s != 1, mlipy_err_val(MLI_STATUS_INCOMPATEBLE_TENSORS, arg, STRIDE_F[t->rank - 1],
                                              "must be 0 or 1 (channels contiguous)", 1, s));
    return MLI_STATUS_OK;
}

mli_status mli_chk_conv2d_hwc(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                              const mli_conv2d_cfg *cfg, const mli_tensor *out, mli_chk_kind k, bool types) {
    if (types) { /* fx16 skips these steps (MLI 1.1 calls the type-free checker) */
        RETURN_BAD(safe_conv_ptrs(in, weights, bias));
        RETURN_BAD(chk_type(in, "in", k.data));
        RETURN_BAD(chk_type(weights, "weights", k.weights));
        RETURN_BAD(chk_type(bias, "bias", k.weights));
        RETURN_BAD(chk_bias_frac(in, weights, bias));
    }
    RETURN_BAD(mli_chk_tensor(in, "in"));
    RETURN_BAD(mli_chk_tensor(weights, "weights"));
    RETURN_BAD(mli_chk_tensor(bias, "bias"));
    RETURN_BAD(chk_out_ptr(out));
    RETURN_BAD(chk_shape_eq(3, in->rank, "in", "rank", "must be 3 ([H, W, C])"));
    RETURN_BAD(chk_shape_eq(4, weights->rank, "weights", "rank", "must be 4"));
    RETURN_BAD(chk_shape_eq(1, bias->rank, "bias", "rank", "must be 1"));
    RETURN_BAD(chk_shape_eq(in->shape[2], weights->shape[3], "weights", "shape[3]",
                            "must equal in.shape[2] (the input channels)"));
    RETURN_BAD(chk_shape_eq(weights->shape[0], bias->shape[0], "bias", "shape[0]", "must equal weights.shape[0]"));
    RETURN_BAD(chk_inner_stride(in, "in"));
    RETURN_BAD(chk_inner_stride(weights, "weights"));
    RETURN_BAD(chk_inner_stride(bias, "bias"));
    RETURN_BAD(safe_out_rank(out, true));
    RETURN_BAD(chk_inner_stride(out, "out"));
    RETURN_BAD(conv_chk_cfg(cfg, weights->shape[1], weights->shape[2]));
    const uint32_t shape[3] = {conv_out_dim(in->shape[0], cfg->padding_top, cfg->padding_bottom, weights->shape[1],
                                            cfg->stride_height),
                               conv_out_dim(in->shape[1], cfg->padding_left, cfg->padding_right, weights->shape[2],
                                            cfg->stride_width),
                               weights->shape[0]};
    RETURN_BAD(conv_chk_out_shape(shape, out));
    RETURN_BAD(safe_data(in, "in"));
    RETURN_BAD(safe_data(weights, "weights"));
    RETURN_BAD(safe_data(bias, "bias"));
    RETURN_BAD(safe_int_count(in, "in"));
    RETURN_BAD(safe_int_count(weights, "weights"));
    return MLI_STATUS_OK;
}
/* --------------------------------------------------- end convolution -- */

/* ------------------------------------------------- relu, tanh, sigm -- */
mli_status mli_chk_activation(const mli_tensor *in, const mli_tensor *out, mli_element_type type) {
    RETURN_BAD(mli_chk_tensor(in, "in"));
    RETURN_BAD(chk_out_ptr(out));
    RETURN_BAD(chk_contig(in, "in"));
    RETURN_IF(!mli_prv_contig(in->shape, out->mem_stride, in->rank),
              mlipy_err(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "mem_stride",
                        "must describe a contiguous layout of in's shape"));
    RETURN_BAD(chk_capacity(mli_prv_count(in, 0) * mli_prv_elsize(in->el_type), out, "out"));
    RETURN_BAD(chk_type(in, "in", type));
    RETURN_BAD(safe_data(in, "in"));
    return MLI_STATUS_OK;
}

/* ----------------------------------------------------------- eltwise -- */
/* An operand's element count as MLI's eltwise takes it: the product of
 * shape[0..rank-1] with no rank check, so that for a rank of 5 or 6 it reads
 * past the array into the struct (see contig_as_mli): shape[4] is the rank,
 * shape[5] the el_type.  Saturated as mli_prv_count; beyond 6 MLI reads past
 * the struct (mli_prv_count's product of the four entries). */
static uint64_t elt_count(const mli_tensor *t) {
    uint64_t n = mli_prv_count(t, 0);
    if (t->rank < MLI_MAX_RANK + 1 || t->rank > MLI_MAX_RANK + 2) return n;
    const uint64_t more[2] = {t->rank, (uint32_t)t->el_type};
    for (uint32_t i = 0; i + MLI_MAX_RANK < t->rank; i++) {
        if (more[i] == 0) return 0;
        n = n > MLI_PRV_COUNT_MAX / more[i] ? MLI_PRV_COUNT_MAX : n * more[i];
    }
    return n;
}

static bool is_scalar(const mli_tensor *t) { return t->rank == 0 || elt_count(t) == 1; }

static mli_status chk_scalar(const mli_tensor *t, const char *arg) {
    if (t->rank == 0) return MLI_STATUS_OK;
    RETURN_BAD(mli_chk_tensor(t, arg));
    RETURN_IF(elt_count(t) != 1,
              mlipy_err(MLI_STATUS_SHAPE_MISMATCH, arg, "shape", "a scalar must have one element"));
    return MLI_STATUS_OK;
}

mli_status mli_chk_eltwise(const mli_tensor *in1, const mli_tensor *in2, const mli_tensor *out,
                           bool same_frac, mli_element_type type) {
    RETURN_BAD(in1 ? MLI_STATUS_OK : mli_chk_tensor(in1, "in1"));
    RETURN_BAD(in2 ? MLI_STATUS_OK : mli_chk_tensor(in2, "in2"));
    const bool s1 = is_scalar(in1), s2 = is_scalar(in2);
    if (s1 && chk_scalar(in1, "in1") != MLI_STATUS_OK) return mlipy_err(MLI_STATUS_BAD_TENSOR, "in1", "", "is not a valid scalar");
    if (s2 && chk_scalar(in2, "in2") != MLI_STATUS_OK) return mlipy_err(MLI_STATUS_BAD_TENSOR, "in2", "", "is not a valid scalar");
    RETURN_BAD(chk_out_ptr(out));
    RETURN_BAD(chk_contig(in1, "in1"));
    RETURN_BAD(chk_contig(in2, "in2"));
    RETURN_IF(in1->rank == 0 && in2->rank == 0,
              mlipy_err(MLI_STATUS_NOT_SUPPORTED, "in1", "rank", "two rank-0 operands are not supported"));
    /* MLI keeps only the last non-scalar operand's tensor status (in2 over in1). */
    mli_status remembered = MLI_STATUS_OK;
    mlipy_error_detail saved = *mlipy_last_error();
    const mli_tensor *ops[2] = {in1, in2};
    const char *names[2] = {"in1", "in2"};
    for (int i = 0; i < 2; i++) {
        if (i == 0 ? s1 : s2) continue;
        remembered = mli_chk_tensor(ops[i], names[i]);
        if (remembered != MLI_STATUS_OK) saved = *mlipy_last_error();
        RETURN_IF(!contig_as_mli(ops[i], out, ops[i]->rank),
                  mlipy_err(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "mem_stride",
                            "must describe a contiguous layout of the operands' shape"));
    }
    if (remembered != MLI_STATUS_OK) {
        mlipy_err(saved.status, saved.argument, saved.field, saved.reason);
        return remembered;
    }
    RETURN_IF(in1->el_type != in2->el_type,
              mlipy_err_val(MLI_STATUS_INCOMPATEBLE_TENSORS, "in2", "el_type",
                            "must equal in1.el_type", in1->el_type, in2->el_type));
    RETURN_IF(same_frac && in1->el_params.fx.frac_bits != in2->el_params.fx.frac_bits,
              mlipy_err_val(MLI_STATUS_INCOMPATEBLE_TENSORS, "in2", "frac_bits",
                            "must equal in1.frac_bits for this operation", in1->el_params.fx.frac_bits,
                            in2->el_params.fx.frac_bits));
    if (!s1 && !s2) {
        RETURN_BAD(chk_shape_eq(in1->rank, in2->rank, "in2", "rank", "must equal in1.rank"));
        for (uint32_t i = 0; i < in1->rank; i++)
            RETURN_BAD(chk_shape_eq(in1->shape[i], in2->shape[i], "in2", SHAPE_F[i],
                                    "must equal the same entry of in1.shape"));
    }
    uint64_t n1 = in1->rank ? elt_count(in1) : 1, n2 = in2->rank ? elt_count(in2) : 1;
    RETURN_BAD(chk_capacity((n1 > n2 ? n1 : n2) * mli_prv_elsize(in1->el_type), out, "out"));
    RETURN_BAD(chk_type(in1, "in1", type));
    RETURN_BAD(chk_type(in2, "in2", type));
    /* mli-py safety: the in2-over-in1 quirk above can hide a bad in1, which
     * MLI then reads as count(in1) dense elements (its strides ignored):
     * refused only where those reach beyond its capacity. */
    for (int i = 0; i < 2; i++) {
        if (ops[i]->rank == 0) continue;
        const uint64_t need = mli_prv_count(ops[i], 0) * mli_prv_elsize(ops[i]->el_type);
        RETURN_IF(need > ops[i]->capacity,
                  mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, names[i], "capacity",
                                   "is smaller than the elements MLI reads"));
        RETURN_BAD(safe_data(ops[i], names[i]));
    }
    return MLI_STATUS_OK;
}

/* -------------------------------------------------------- basic RNN -- */
mli_status mli_chk_basic_rnn_cell(const mli_tensor *in, const mli_tensor *prev_out,
                                  const mli_tensor *weights, const mli_tensor *bias,
                                  const mli_rnn_cell_cfg *cfg, const mli_tensor *out,
                                  mli_chk_kind k, bool *skip_compute) {
    *skip_compute = false;
    RETURN_BAD(mli_chk_tensor(in, "in"));
    RETURN_BAD(mli_chk_tensor(prev_out, "prev_out"));
    RETURN_BAD(mli_chk_tensor(weights, "weights"));
    RETURN_BAD(mli_chk_tensor(bias, "bias"));
    RETURN_BAD(chk_out_ptr(out));
    RETURN_BAD(chk_contig(in, "in"));
    RETURN_BAD(chk_contig(prev_out, "prev_out"));
    RETURN_BAD(chk_contig(weights, "weights"));
    RETURN_BAD(chk_contig(bias, "bias"));
    RETURN_BAD(safe_rnn_cfg(cfg)); /* MLI dereferences cfg here without a test */
    RETURN_BAD(chk_out_contig_r(out, rnn_out_rank(cfg, bias->rank)));
    RETURN_IF(cfg->mode == RNN_BATCH_TO_LAST && (!cfg->ir_tsr || !cfg->ir_tsr->data),
              mlipy_err(MLI_STATUS_BAD_FUNC_CFG, "cfg", "ir_tsr",
                        "RNN_BATCH_TO_LAST needs an ir_tsr with data"));
    RETURN_IF(cfg->mode != RNN_ONE_TO_ONE && in->rank < 2,
              mlipy_err_val(MLI_STATUS_BAD_FUNC_CFG, "in", "rank",
                            "must be at least 2 (a batch of inputs) in this mode", 2, in->rank));
    const uint64_t K = mli_prv_count(bias, 0), M = mli_prv_count(prev_out, 0);
    const uint64_t N = cfg->mode == RNN_ONE_TO_ONE ? mli_prv_count(in, 0) : mli_prv_count(in, 1);
    if (cfg->mode == RNN_ONE_TO_ONE && weights->rank == 3) {
        RETURN_BAD(chk_shape_eq(2, bias->rank, "bias", "rank", "must be 2 with stacked weights"));
        RETURN_BAD(chk_shape_eq(weights->shape[0], bias->shape[0], "bias", "shape[0]",
                                "must equal weights.shape[0]"));
        RETURN_BAD(chk_shape_eq(weights->shape[1], bias->shape[1], "bias", "shape[1]",
                                "must equal weights.shape[1]"));
        RETURN_BAD(chk_shape_eq((long long)M, bias->shape[1], "bias", "shape[1]",
                                "must equal the element count of prev_out"));
        RETURN_BAD(chk_shape_eq((long long)(N + M), weights->shape[2], "weights", "shape[2]",
                                "must equal the input size plus the state size"));
    } else {
        RETURN_BAD(chk_shape_eq(2, weights->rank, "weights", "rank", "must be 2"));
        RETURN_BAD(chk_shape_eq(1, bias->rank, "bias", "rank", "must be 1"));
        RETURN_BAD(chk_shape_eq(weights->shape[0], bias->shape[0], "bias", "shape[0]",
                                "must equal weights.shape[0]"));
        RETURN_BAD(chk_shape_eq((long long)M, bias->shape[0], "bias", "shape[0]",
                                "must equal the element count of prev_out"));
        RETURN_BAD(chk_shape_eq((long long)(N + M), weights->shape[1], "weights", "shape[1]",
                                "must equal the input size plus the state size"));
    }
    RETURN_BAD(chk_shape_eq(1, prev_out->rank, "prev_out", "rank", "must be 1"));
    RETURN_BAD(chk_same_type(weights, "weights", bias, "bias", k.weights));
    RETURN_BAD(chk_same_type(in, "in", prev_out, "prev_out", k.data));
    RETURN_BAD(chk_bias_frac(in, weights, bias));
    const uint64_t el = mli_prv_elsize(in->el_type);
    if (cfg->mode == RNN_BATCH_TO_LAST) {
        RETURN_BAD(chk_capacity(K * el, out, "out"));
        RETURN_BAD(chk_capacity(K * el, cfg->ir_tsr, "cfg.ir_tsr"));
    } else {
        const uint64_t B = cfg->mode == RNN_BATCH_TO_BATCH ? in->shape[0] : 1;
        /* MLI 1.1 detects this but returns OK and overruns `out`; mli-py
         * returns OK too (as the reference cases expect) but writes nothing. */
        if (K * B * el > out->capacity) *skip_compute = true;
    }
    RETURN_BAD(chk_type(in, "in", k.data));
    RETURN_BAD(chk_type(prev_out, "prev_out", k.data));
    RETURN_BAD(chk_type(weights, "weights", k.weights));
    RETURN_BAD(chk_type(bias, "bias", k.weights));
    RETURN_BAD(safe_data(in, "in"));
    RETURN_BAD(safe_data(prev_out, "prev_out"));
    RETURN_BAD(safe_data(weights, "weights"));
    RETURN_BAD(safe_data(bias, "bias"));
    RETURN_BAD(safe_int_count(in, "in"));
    RETURN_BAD(safe_int_count(weights, "weights"));
    if (*skip_compute)
        mlipy_err_safety(MLI_STATUS_OK, "out", "capacity",
                         "is too small; MLI 1.1 returns OK here and overruns the buffer, "
                         "mli-py returns OK and writes nothing");
    return MLI_STATUS_OK;
}

/* ------------------------------------------------------------- LSTM -- */
mli_status mli_chk_lstm_cell(const mli_tensor *in, const mli_tensor *prev_out,
                             const mli_tensor *weights, const mli_tensor *bias,
                             const mli_rnn_cell_cfg *cfg, const mli_tensor *cell,
                             const mli_tensor *out, mli_chk_kind k) {
    RETURN_BAD(mli_chk_tensor(in, "in"));
    RETURN_BAD(mli_chk_tensor(prev_out, "prev_out"));
    RETURN_BAD(mli_chk_tensor(weights, "weights"));
    RETURN_BAD(mli_chk_tensor(bias, "bias"));
    RETURN_BAD(mli_chk_tensor(cell, "cell"));
    RETURN_BAD(chk_out_ptr(out));
    RETURN_IF(!cfg, mlipy_err(MLI_STATUS_BAD_FUNC_CFG, "cfg", "", "is NULL"));
    RETURN_IF(!cfg->ir_tsr, mlipy_err(MLI_STATUS_BAD_FUNC_CFG, "cfg", "ir_tsr", "is NULL"));
    RETURN_IF(!cfg->ir_tsr->data, mlipy_err(MLI_STATUS_BAD_FUNC_CFG, "cfg", "ir_tsr.data", "is NULL"));
    RETURN_IF(cfg->mode != RNN_ONE_TO_ONE && in->rank < 2,
              mlipy_err_val(MLI_STATUS_BAD_FUNC_CFG, "in", "rank",
                            "must be at least 2 (a batch of inputs) in this mode", 2, in->rank));
    const uint64_t M = mli_prv_count(prev_out, 0);
    const uint64_t N = cfg->mode == RNN_ONE_TO_ONE ? mli_prv_count(in, 0) : mli_prv_count(in, 1);
    RETURN_BAD(chk_shape_eq(3, weights->rank, "weights", "rank", "must be 3 ([4, M, N+M])"));
    RETURN_BAD(chk_shape_eq(2, bias->rank, "bias", "rank", "must be 2 ([4, M])"));
    RETURN_BAD(chk_shape_eq(4, weights->shape[0], "weights", "shape[0]", "must be 4 (gates i, g, f, o)"));
    RETURN_BAD(chk_shape_eq(4, bias->shape[0], "bias", "shape[0]", "must be 4 (gates i, g, f, o)"));
    RETURN_BAD(chk_shape_eq(weights->shape[1], bias->shape[1], "bias", "shape[1]",
                            "must equal weights.shape[1]"));
    RETURN_BAD(chk_shape_eq((long long)M, bias->shape[1], "bias", "shape[1]",
                            "must equal the element count of prev_out"));
    RETURN_BAD(chk_shape_eq((long long)(N + M), weights->shape[2], "weights", "shape[2]",
                            "must equal the input size plus the state size"));
    RETURN_BAD(chk_shape_eq(1, cell->rank, "cell", "rank", "must be 1"));
    RETURN_BAD(chk_shape_eq(1, prev_out->rank, "prev_out", "rank", "must be 1"));
    RETURN_BAD(chk_shape_eq(prev_out->shape[0], cell->shape[0], "cell", "shape[0]",
                            "must equal prev_out.shape[0]"));
    RETURN_BAD(chk_contig(in, "in"));
    RETURN_BAD(chk_contig(prev_out, "prev_out"));
    RETURN_BAD(chk_contig(weights, "weights"));
    RETURN_BAD(chk_contig(bias, "bias"));
    RETURN_BAD(safe_rnn_cfg(cfg));
    RETURN_BAD(chk_out_contig_r(out, rnn_out_rank(cfg, 1)));
    RETURN_BAD(chk_same_type(weights, "weights", bias, "bias", k.weights));
    RETURN_BAD(chk_same_type(in, "in", prev_out, "prev_out", k.data));
    RETURN_BAD(chk_same_type(in, "in", cell, "cell", k.data));
    RETURN_BAD(chk_bias_frac(in, weights, bias));
    const uint64_t el = mli_prv_elsize(in->el_type);
    const uint64_t B = cfg->mode == RNN_BATCH_TO_BATCH ? in->shape[0] : 1;
    RETURN_BAD(chk_capacity(4 * M * el, cfg->ir_tsr, "cfg.ir_tsr"));
    RETURN_BAD(chk_capacity(B * M * el, out, "out"));
    RETURN_BAD(chk_type(in, "in", k.data));
    RETURN_BAD(chk_type(prev_out, "prev_out", k.data));
    RETURN_BAD(chk_type(weights, "weights", k.weights));
    RETURN_BAD(chk_type(bias, "bias", k.weights));
    RETURN_BAD(safe_data(in, "in"));
    RETURN_BAD(safe_data(prev_out, "prev_out"));
    RETURN_BAD(safe_data(weights, "weights"));
    RETURN_BAD(safe_data(bias, "bias"));
    RETURN_BAD(safe_data(cell, "cell"));
    RETURN_BAD(safe_int_count(in, "in"));
    RETURN_BAD(safe_int_count(weights, "weights"));
    return MLI_STATUS_OK;
}

/* ------------------------------------------- the checks alone (mlipy_) -- */
static const mli_chk_kind CHK_KIND[3] = {
    {MLI_EL_FX_8, MLI_EL_FX_8}, {MLI_EL_FX_16, MLI_EL_FX_16}, {MLI_EL_FX_16, MLI_EL_FX_8}};
static const char *const RNN_NAME[3] = {"mli_krn_basic_rnn_cell_fx8", "mli_krn_basic_rnn_cell_fx16",
                                        "mli_krn_basic_rnn_cell_fx8w16d"};
static const char *const LSTM_NAME[3] = {"mli_krn_lstm_cell_fx8", "mli_krn_lstm_cell_fx16",
                                         "mli_krn_lstm_cell_fx8w16d"};

mli_status mlipy_check_basic_rnn_cell(int kind, const mli_tensor *in, const mli_tensor *prev_out,
                                      const mli_tensor *weights, const mli_tensor *bias,
                                      const mli_rnn_cell_cfg *cfg, const mli_tensor *out) {
    if (kind < 0 || kind > 2) {
        mlipy_err_reset("mlipy_check_basic_rnn_cell");
        return mlipy_err_val(MLI_STATUS_ARGUMENT_ERROR, "kind", "", "must be 0 (fx8), 1 (fx16) or 2 (fx8w16d)", 0,
                             kind);
    }
    mlipy_err_reset(RNN_NAME[kind]);
    bool skip = false;
    return mli_chk_basic_rnn_cell(in, prev_out, weights, bias, cfg, out, CHK_KIND[kind], &skip);
}

mli_status mlipy_check_lstm_cell(int kind, const mli_tensor *in, const mli_tensor *prev_out,
                                 const mli_tensor *weights, const mli_tensor *bias,
                                 const mli_rnn_cell_cfg *cfg, const mli_tensor *cell, const mli_tensor *out) {
    if (kind < 0 || kind > 2) {
        mlipy_err_reset("mlipy_check_lstm_cell");
        return mlipy_err_val(MLI_STATUS_ARGUMENT_ERROR, "kind", "", "must be 0 (fx8), 1 (fx16) or 2 (fx8w16d)", 0,
                             kind);
    }
    mlipy_err_reset(LSTM_NAME[kind]);
    return mli_chk_lstm_cell(in, prev_out, weights, bias, cfg, cell, out, CHK_KIND[kind]);
}

/* ================================================================ *
 * The rest of MLI 1.1's API (SPEC_MLI11_MORE 10): pooling, the sa8
 * kernels, leaky ReLU, permute, concat, padding2d.  Each checker runs
 * MLI's steps in MLI's order; where MLI itself would crash on the
 * argument (a NULL it dereferences, a division by zero) the call is
 * refused with a safety detail instead.
 * ================================================================ */

/* A NULL that MLI dereferences before any check of it. */
static mli_status safe_not_null(const void *p, const char *arg, const char *reason) {
    RETURN_IF(!p, mlipy_err_safety(MLI_STATUS_BAD_TENSOR, arg, "", reason));
    return MLI_STATUS_OK;
}

/* MLI's "innermost stride is 0 or 1" reads t.mem_stride[t.rank - 1]
 * without checking the rank: ranks 5 to 8 read shape[rank - 5], 9 the rank
 * and 10 the el_type (the struct's layout); 0 and above 10 read outside
 * what the struct defines. */
static mli_status innermost_stride(const mli_tensor *t, const char *arg, int64_t *v) {
    if (t->rank >= 1 && t->rank <= MLI_MAX_RANK) *v = t->mem_stride[t->rank - 1];
    else if (t->rank >= 5 && t->rank <= 8) *v = (int32_t)t->shape[t->rank - 5];
    else if (t->rank == 9) *v = 9;
    else if (t->rank == 10) *v = (int32_t)t->el_type;
    else
        return mlipy_err_safety(MLI_STATUS_INCOMPATEBLE_TENSORS, arg, "rank",
                                t->rank == 0 ? "is 0: MLI reads mem_stride[-1] (the word before the array)"
                                             : "is above 10: MLI reads mem_stride[rank - 1] from the struct's "
                                               "padding or element parameters (platform-dependent) or beyond it");
    return MLI_STATUS_OK;
}

/* MLI's layout step of the hwc convolutions and the pools: the innermost
 * stride of every tensor in `ts` must be 0 or 1.  MLI reads all of them
 * before it decides, so an undefined read wins over a failure. */
static mli_status chk_innermost(const mli_tensor *const *ts, const char *const *args, int n) {
    int64_t v[4];
    for (int i = 0; i < n; i++) RETURN_BAD(innermost_stride(ts[i], args[i], &v[i]));
    for (int i = 0; i < n; i++)
        RETURN_IF(v[i] != 0 && v[i] != 1,
                  mlipy_err_val(MLI_STATUS_INCOMPATEBLE_TENSORS, args[i], "mem_stride",
                                "the innermost stride must be 0 or 1", 1, v[i]));
    return MLI_STATUS_OK;
}

/* MLI's tensor check of the output for the 3-d shape the kernel will give
 * it, with out's mem_stride and capacity and the element size of out's
 * current el_type, in MLI's 32-bit unsigned arithmetic. */
static mli_status chk_out_shape3(const mli_tensor *out, const uint32_t shape[3]) {
    for (int i = 0; i < 3; i++) {
        RETURN_IF(out->mem_stride[i] < 0, mlipy_err_val(MLI_STATUS_BAD_TENSOR, "out", STRIDE_F[i],
                                                        "must not be negative", 0, out->mem_stride[i]));
        RETURN_IF(shape[i] == 0, mlipy_err(MLI_STATUS_BAD_TENSOR, "out", SHAPE_F[i],
                                           "the output size computed from the arguments is 0 here"));
    }
    const bool set = out->mem_stride[0] && out->mem_stride[1] && out->mem_stride[2];
    uint32_t size = 1;
    if (set) {
        uint32_t prev_shape = 1, prev_stride = 1;
        for (int i = 2; i >= 0; i--) {
            RETURN_IF((uint32_t)out->mem_stride[i] < prev_shape * prev_stride,
                      mlipy_err_val(MLI_STATUS_BAD_TENSOR, "out", STRIDE_F[i],
                                    "is smaller than the extent of the inner dimensions of the output",
                                    (long long)(prev_shape * prev_stride), out->mem_stride[i]));
            prev_shape = shape[i];
            prev_stride = (uint32_t)out->mem_stride[i];
            size += (prev_shape - 1) * prev_stride;
        }
    } else {
        for (int i = 2; i >= 0; i--) size *= shape[i];
    }
    size *= mli_prv_elsize(out->el_type);
    RETURN_IF(out->capacity < size, mlipy_err_val(MLI_STATUS_NOT_ENGH_MEM, "out", "capacity",
                                                  "is smaller than the output needs", size, out->capacity));
    return MLI_STATUS_OK;
}

/* The output size of one direction in MLI's int arithmetic, as the uint32
 * MLI's output check sees. */
static uint32_t out_size_u32(uint32_t in_size, int pad_a, int pad_b, int64_t kernel, int stride) {
    const int64_t num = (int64_t)mli_math_wrap32(in_size) + pad_a + pad_b - kernel + 1;
    return (uint32_t)mli_math_wrap32((num + stride - 1) / stride);
}

/* MLI's cfg step of the pools and convolutions: each padding smaller than
 * the kernel, strides positive. */
static mli_status chk_window_cfg(int kw, int kh, int sw, int sh, int pl, int pr, int pt, int pb) {
    RETURN_IF(pl >= kw, mlipy_err_val(MLI_STATUS_BAD_FUNC_CFG, "cfg", "padding_left",
                                      "must be smaller than the kernel width", kw - 1, pl));
    RETURN_IF(pr >= kw, mlipy_err_val(MLI_STATUS_BAD_FUNC_CFG, "cfg", "padding_right",
                                      "must be smaller than the kernel width", kw - 1, pr));
    RETURN_IF(pt >= kh, mlipy_err_val(MLI_STATUS_BAD_FUNC_CFG, "cfg", "padding_top",
                                      "must be smaller than the kernel height", kh - 1, pt));
    RETURN_IF(pb >= kh, mlipy_err_val(MLI_STATUS_BAD_FUNC_CFG, "cfg", "padding_bottom",
                                      "must be smaller than the kernel height", kh - 1, pb));
    RETURN_IF(sh <= 0, mlipy_err(MLI_STATUS_BAD_FUNC_CFG, "cfg", "stride_height", "must be at least 1"));
    RETURN_IF(sw <= 0, mlipy_err(MLI_STATUS_BAD_FUNC_CFG, "cfg", "stride_width", "must be at least 1"));
    return MLI_STATUS_OK;
}

/* MLI's quantization-axis step: `want` >= 0 is the axis required, < 0 any
 * negative dim (per-tensor quantization). */
static mli_status chk_asym_dim(const mli_tensor *t, const char *arg, int32_t want) {
    const int32_t dim = t->el_params.asym.dim;
    RETURN_IF(want >= 0 ? dim != want : dim >= 0,
              mlipy_err_val(MLI_STATUS_INCOMPATEBLE_TENSORS, arg, "el_params.asym.dim",
                            want >= 0 ? "must be the per-channel axis" : "must be negative (per-tensor quantization)",
                            want, dim));
    return MLI_STATUS_OK;
}

/* ----------------------------------------------------------- pooling -- */
mli_status mli_chk_pool(const mli_tensor *in, const mli_pool_cfg *cfg, const mli_tensor *out, bool hwc,
                        bool out_checked, mli_element_type type) {
    RETURN_BAD(mli_chk_tensor(in, "in"));
    RETURN_BAD(chk_out_ptr(out));
    RETURN_BAD(chk_shape_eq(3, in->rank, "in", "rank", "must be 3"));
    const mli_tensor *ts[2] = {in, out};
    const char *args[2] = {"in", "out"};
    RETURN_BAD(chk_innermost(ts, args, 2));
    RETURN_IF(!cfg, mlipy_err_safety(MLI_STATUS_BAD_FUNC_CFG, "cfg", "", "is NULL (MLI dereferences it)"));
    RETURN_BAD(chk_window_cfg(cfg->kernel_width, cfg->kernel_height, cfg->stride_width, cfg->stride_height,
                              cfg->padding_left, cfg->padding_right, cfg->padding_top, cfg->padding_bottom));
    const uint32_t h = in->shape[hwc ? 0 : 1], w = in->shape[hwc ? 1 : 2], c = in->shape[hwc ? 2 : 0];
    const uint32_t ho = out_size_u32(h, cfg->padding_top, cfg->padding_bottom, cfg->kernel_height, cfg->stride_height);
    const uint32_t wo = out_size_u32(w, cfg->padding_left, cfg->padding_right, cfg->kernel_width, cfg->stride_width);
    const uint32_t chw[3] = {c, ho, wo}, hwc_shape[3] = {ho, wo, c};
    /* avepool_hwc computes this status and returns OK anyway (SPEC_MLI11_MORE 6) */
    if (out_checked) RETURN_BAD(chk_out_shape3(out, hwc ? hwc_shape : chw));
    RETURN_BAD(chk_type(in, "in", type));
    if (type == MLI_EL_ASYM_I8) RETURN_BAD(chk_asym_dim(in, "in", -1));
    RETURN_BAD(safe_int_count(in, "in"));
    return MLI_STATUS_OK;
}

/* ----------------------------------------------------- sa8 (asym) -- */
static int16_t asym_zero_point(const mli_tensor *t) { return t->el_params.asym.zero_point.i16; }

static mli_status chk_zero_point(const mli_tensor *t, const char *arg) {
    RETURN_IF(asym_zero_point(t) == INT16_MIN,
              mlipy_err_val(MLI_STATUS_INCOMPATEBLE_TENSORS, arg, "el_params.asym.zero_point",
                            "must not be -32768", INT16_MIN + 1, INT16_MIN));
    return MLI_STATUS_OK;
}

/* MLI's first check, one short-circuit condition over the three types: a
 * wrong type stops it before it reads the next tensor. */
static mli_status chk_sa8_types(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias) {
    RETURN_BAD(safe_not_null(in, "in", "is NULL (MLI reads its type before any check)"));
    RETURN_BAD(chk_type(in, "in", MLI_EL_ASYM_I8));
    RETURN_BAD(safe_not_null(weights, "weights", "is NULL (MLI reads its type before any check)"));
    RETURN_BAD(chk_type(weights, "weights", MLI_EL_ASYM_I8));
    RETURN_BAD(safe_not_null(bias, "bias", "is NULL (MLI reads its type before any check)"));
    RETURN_BAD(chk_type(bias, "bias", MLI_EL_ASYM_I32));
    return MLI_STATUS_OK;
}

/* MLI's check that the bias is in the accumulator's format: for each scale
 * |(in.scale * w.scale, a wrapping 32-bit product) shifted by in.sfb +
 * w.sfb - bias.sfb - bias.scale| <= 1.  MLI shifts a long long right for a
 * positive count and left for any other; counts outside 0..63 are C's
 * undefined shifts, which the x86 build performs with the count mod 64. */
static mli_status chk_bias_scale_asym(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias) {
    const bool per_axis = weights->el_params.asym.dim >= 0;
    const uint32_t n = per_axis ? weights->shape[weights->el_params.asym.dim] : 1;
    const int32_t *ws = per_axis ? weights->el_params.asym.scale.pi32 : &weights->el_params.asym.scale.i32;
    const int32_t *bs = per_axis ? bias->el_params.asym.scale.pi32 : &bias->el_params.asym.scale.i32;
    RETURN_IF(n > 0 && !ws, mlipy_err_safety(MLI_STATUS_INCOMPATEBLE_TENSORS, "weights", "el_params.asym.scale",
                                             "is a NULL array (MLI reads it)"));
    RETURN_IF(n > 0 && !bs, mlipy_err_safety(MLI_STATUS_INCOMPATEBLE_TENSORS, "bias", "el_params.asym.scale",
                                             "is a NULL array (MLI reads it)"));
    const int64_t shift = (int64_t)in->el_params.asym.scale_frac_bits + weights->el_params.asym.scale_frac_bits -
                          bias->el_params.asym.scale_frac_bits;
    for (uint32_t i = 0; i < n; i++) {
        int64_t e = mli_math_wrap32((int64_t)in->el_params.asym.scale.i32 * ws[i]);
        e = shift > 0 ? e >> (shift & 63) : (int64_t)((uint64_t)e << ((uint64_t)shift & 63));
        const int64_t diff = (int64_t)((uint64_t)e - (uint64_t)(int64_t)bs[i]);
        RETURN_IF(diff > 1 || diff < -1,
                  mlipy_err_val(MLI_STATUS_INCOMPATEBLE_TENSORS, "bias", "el_params.asym.scale",
                                "must equal in.scale * weights.scale at the bias's scale_frac_bits (within 1)",
                                e, bs[i]));
    }
    return MLI_STATUS_OK;
}

/* MLI's checks of conv2d_hwc (conv2d_nhwc) and depthwise_conv2d_hwc. */
static mli_status chk_conv_hwc(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                               const mli_conv2d_cfg *cfg, const mli_tensor *out, bool depthwise) {
    RETURN_BAD(mli_chk_tensor(in, "in"));
    RETURN_BAD(mli_chk_tensor(weights, "weights"));
    RETURN_BAD(mli_chk_tensor(bias, "bias"));
    RETURN_BAD(chk_out_ptr(out));
    /* MLI evaluates the whole group, the division by in's channels too */
    RETURN_IF(depthwise && in->shape[2] == 0,
              mlipy_err_safety(MLI_STATUS_SHAPE_MISMATCH, "in", "shape[2]",
                               "is 0: MLI divides by it (a crash) before it sees that in.rank is not 3"));
    RETURN_BAD(chk_shape_eq(3, in->rank, "in", "rank", "must be 3"));
    RETURN_BAD(chk_shape_eq(4, weights->rank, "weights", "rank", "must be 4"));
    RETURN_BAD(chk_shape_eq(1, bias->rank, "bias", "rank", "must be 1"));
    if (depthwise) {
        RETURN_BAD(chk_shape_eq(1, weights->shape[0], "weights", "shape[0]", "must be 1"));
        RETURN_BAD(chk_shape_eq(weights->shape[3], bias->shape[0], "bias", "shape[0]",
                                "must equal weights.shape[3]"));
        RETURN_IF(weights->shape[3] % in->shape[2] != 0 || weights->shape[3] / in->shape[2] == 0,
                  mlipy_err_val(MLI_STATUS_SHAPE_MISMATCH, "weights", "shape[3]",
                                "must be a positive multiple of in.shape[2]", in->shape[2], weights->shape[3]));
    } else {
        RETURN_BAD(chk_shape_eq(in->shape[2], weights->shape[3], "weights", "shape[3]", "must equal in.shape[2]"));
        RETURN_BAD(chk_shape_eq(weights->shape[0], bias->shape[0], "bias", "shape[0]",
                                "must equal weights.shape[0]"));
    }
    const mli_tensor *ts[4] = {in, weights, bias, out};
    const char *args[4] = {"in", "weights", "bias", "out"};
    RETURN_BAD(chk_innermost(ts, args, 4));
    RETURN_IF(!cfg, mlipy_err_safety(MLI_STATUS_BAD_FUNC_CFG, "cfg", "", "is NULL (MLI dereferences it)"));
    const int32_t kw = mli_math_wrap32(weights->shape[2]), kh = mli_math_wrap32(weights->shape[1]);
    RETURN_BAD(chk_window_cfg(kw, kh, cfg->stride_width, cfg->stride_height, cfg->padding_left,
                              cfg->padding_right, cfg->padding_top, cfg->padding_bottom));
    const uint32_t shape[3] = {
        out_size_u32(in->shape[0], cfg->padding_top, cfg->padding_bottom, kh, cfg->stride_height),
        out_size_u32(in->shape[1], cfg->padding_left, cfg->padding_right, kw, cfg->stride_width),
        weights->shape[depthwise ? 3 : 0]};
    return chk_out_shape3(out, shape);
}

static mli_status chk_sa8_dims(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                               int32_t w_dim, int32_t b_dim) {
    RETURN_BAD(chk_asym_dim(weights, "weights", w_dim));
    RETURN_BAD(chk_asym_dim(bias, "bias", b_dim));
    return chk_asym_dim(in, "in", -1);
}

mli_status mli_chk_conv2d_nhwc_sa8(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                                   const mli_conv2d_cfg *cfg, const mli_tensor *out) {
    RETURN_BAD(chk_sa8_types(in, weights, bias));
    RETURN_BAD(chk_zero_point(in, "in"));
    RETURN_BAD(safe_not_null(out, "out", "is NULL (MLI reads its zero point before any check)"));
    RETURN_BAD(chk_zero_point(out, "out"));
    RETURN_BAD(chk_conv_hwc(in, weights, bias, cfg, out, false));
    RETURN_BAD(chk_sa8_dims(in, weights, bias, 0, 0));
    return chk_bias_scale_asym(in, weights, bias);
}

mli_status mli_chk_depthwise_hwcn_sa8(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                                      const mli_conv2d_cfg *cfg, const mli_tensor *out) {
    RETURN_BAD(chk_sa8_types(in, weights, bias));
    RETURN_BAD(chk_conv_hwc(in, weights, bias, cfg, out, true));
    RETURN_BAD(chk_sa8_dims(in, weights, bias, 3, 0));
    RETURN_BAD(chk_zero_point(in, "in"));
    RETURN_BAD(chk_zero_point(out, "out"));
    return chk_bias_scale_asym(in, weights, bias);
}

mli_status mli_chk_fully_connected_sa8(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                                       const mli_tensor *out) {
    RETURN_BAD(chk_sa8_types(in, weights, bias));
    RETURN_BAD(chk_fc_shapes(in, weights, bias, out));
    RETURN_BAD(chk_sa8_dims(in, weights, bias, -1, -1));
    RETURN_BAD(chk_bias_scale_asym(in, weights, bias));
    /* mli-py safety: MLI reads out's zero point and scale as per-tensor
     * values and divides by the scale (the bias's scale, which it also
     * divides by, goes unused: that division is dead code in MLI's build) */
    RETURN_IF(out->el_params.asym.dim >= 0,
              mlipy_err_safety(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "el_params.asym.dim",
                               "is not negative: MLI reads out's zero point and scale as per-tensor values"));
    RETURN_IF(out->el_params.asym.scale.i32 == 0,
              mlipy_err_safety(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "el_params.asym.scale",
                               "is 0: MLI divides by it (a crash)"));
    /* mli-py safety: with fewer than 8 inputs MLI reads the rows back to back */
    const uint32_t n = weights->shape[1];
    const uint64_t row = n < 8 || !weights->mem_stride[0] ? n : (uint64_t)weights->mem_stride[0];
    return safe_fc(in, weights, bias, row);
}

/* --------------------------------------------------------- leaky ReLU -- */
mli_status mli_chk_leaky_relu(const mli_tensor *in, const mli_tensor *slope, const mli_tensor *out,
                              mli_element_type type) {
    RETURN_BAD(mli_chk_tensor(in, "in"));
    RETURN_BAD(chk_out_ptr(out));
    RETURN_BAD(chk_contig(in, "in"));
    RETURN_IF(!mli_prv_contig(in->shape, out->mem_stride, in->rank),
              mlipy_err(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "mem_stride",
                        "must describe a contiguous layout of in's shape"));
    RETURN_IF(!slope, mlipy_err(MLI_STATUS_BAD_TENSOR, "slope_coeff", "", "is a NULL tensor"));
    RETURN_BAD(chk_scalar(slope, "slope_coeff"));
    RETURN_IF(slope->el_type != in->el_type,
              mlipy_err_val(MLI_STATUS_TYPE_MISMATCH, "slope_coeff", "el_type", "must equal in.el_type",
                            in->el_type, slope->el_type));
    RETURN_BAD(chk_capacity(mli_prv_count(in, 0) * mli_prv_elsize(in->el_type), out, "out"));
    RETURN_BAD(chk_type(in, "in", type));
    RETURN_BAD(chk_type(slope, "slope_coeff", type));
    RETURN_BAD(safe_data(in, "in"));
    if (slope->rank != 0) RETURN_BAD(safe_data(slope, "slope_coeff"));
    return MLI_STATUS_OK;
}

/* ------------------------------------------ permute, concat, padding2d -- */
mli_status mli_chk_permute(const mli_tensor *in, const mli_permute_cfg *cfg, const mli_tensor *out,
                           mli_element_type type) {
    RETURN_BAD(mli_chk_tensor(in, "in"));
    RETURN_BAD(chk_out_ptr(out));
    RETURN_BAD(chk_contig(in, "in"));
    RETURN_BAD(chk_out_contig_r(out, in->rank));
    RETURN_IF(!cfg, mlipy_err(MLI_STATUS_BAD_FUNC_CFG, "cfg", "", "is NULL"));
    for (uint32_t i = 0; i < in->rank; i++) {
        RETURN_IF(cfg->perm_dim[i] >= in->rank,
                  mlipy_err_val(MLI_STATUS_BAD_FUNC_CFG, "cfg", "perm_dim", "must be smaller than in.rank",
                                in->rank - 1, cfg->perm_dim[i]));
        for (uint32_t j = i + 1; j < in->rank; j++)
            RETURN_IF(cfg->perm_dim[i] == cfg->perm_dim[j],
                      mlipy_err_val(MLI_STATUS_BAD_FUNC_CFG, "cfg", "perm_dim", "must not repeat a dimension",
                                    -1, cfg->perm_dim[i]));
    }
    RETURN_BAD(chk_capacity(mli_prv_count(in, 0) * mli_prv_elsize(in->el_type), out, "out"));
    RETURN_BAD(chk_type(in, "in", type));
    RETURN_BAD(safe_data(in, "in"));
    return MLI_STATUS_OK;
}

mli_status mli_chk_concat(const mli_tensor **inputs, const mli_concat_cfg *cfg, const mli_tensor *out,
                          mli_element_type type) {
    RETURN_IF(!inputs, mlipy_err(MLI_STATUS_BAD_TENSOR, "inputs", "", "is a NULL array"));
    RETURN_BAD(mli_chk_tensor(inputs[0], "inputs[0]"));
    RETURN_BAD(chk_out_ptr(out));
    const mli_tensor *a = inputs[0];
    RETURN_BAD(chk_out_contig_r(out, a->rank));
    RETURN_IF(!cfg, mlipy_err(MLI_STATUS_BAD_FUNC_CFG, "cfg", "", "is NULL"));
    RETURN_IF(cfg->axis >= a->rank, mlipy_err_val(MLI_STATUS_BAD_FUNC_CFG, "cfg", "axis",
                                                  "must be smaller than inputs[0].rank", (long long)a->rank - 1,
                                                  cfg->axis));
    RETURN_IF(cfg->tensors_num > MLI_CONCAT_MAX_TENSORS || cfg->tensors_num == 0,
              mlipy_err_val(MLI_STATUS_BAD_FUNC_CFG, "cfg", "tensors_num", "must be 1 to 8", MLI_CONCAT_MAX_TENSORS,
                            cfg->tensors_num));
    static const char *const NAMES[MLI_CONCAT_MAX_TENSORS] = {"inputs[0]", "inputs[1]", "inputs[2]", "inputs[3]",
                                                              "inputs[4]", "inputs[5]", "inputs[6]", "inputs[7]"};
    uint64_t total = mli_prv_count(a, 0);
    for (int i = 1; i < cfg->tensors_num; i++) {
        const mli_tensor *t = inputs[i];
        RETURN_BAD(mli_chk_tensor(t, NAMES[i]));
        RETURN_IF(t->el_type != a->el_type, mlipy_err_val(MLI_STATUS_INCOMPATEBLE_TENSORS, NAMES[i], "el_type",
                                                          "must equal inputs[0].el_type", a->el_type, t->el_type));
        RETURN_IF(t->el_params.fx.frac_bits != a->el_params.fx.frac_bits,
                  mlipy_err_val(MLI_STATUS_INCOMPATEBLE_TENSORS, NAMES[i], "frac_bits",
                                "must equal inputs[0].frac_bits", a->el_params.fx.frac_bits,
                                t->el_params.fx.frac_bits));
        RETURN_IF(t->rank != a->rank, mlipy_err_val(MLI_STATUS_INCOMPATEBLE_TENSORS, NAMES[i], "rank",
                                                    "must equal inputs[0].rank", a->rank, t->rank));
        RETURN_BAD(chk_contig(t, NAMES[i]));
        for (uint32_t d = 0; d < a->rank; d++)
            RETURN_IF(d != cfg->axis && t->shape[d] != a->shape[d],
                      mlipy_err_val(MLI_STATUS_SHAPE_MISMATCH, NAMES[i], SHAPE_F[d],
                                    "must equal inputs[0]'s except on the axis", a->shape[d], t->shape[d]));
        total += mli_prv_count(t, 0);
    }
    RETURN_BAD(chk_capacity(total * mli_prv_elsize(a->el_type), out, "out"));
    RETURN_BAD(chk_type(a, "inputs[0]", type));
    for (int i = 0; i < cfg->tensors_num; i++) RETURN_BAD(safe_data(inputs[i], NAMES[i]));
    return MLI_STATUS_OK;
}

mli_status mli_chk_padding2d(const mli_tensor *in, const mli_padding2d_cfg *cfg, const mli_tensor *out, bool hwc,
                             mli_element_type type) {
    RETURN_BAD(mli_chk_tensor(in, "in"));
    RETURN_BAD(chk_out_ptr(out));
    RETURN_BAD(chk_shape_eq(3, in->rank, "in", "rank", "must be 3"));
    RETURN_BAD(chk_contig(in, "in"));
    RETURN_BAD(chk_out_contig_r(out, in->rank));
    RETURN_IF(!cfg, mlipy_err(MLI_STATUS_BAD_FUNC_CFG, "cfg", "", "is NULL"));
    const uint32_t c = in->shape[hwc ? 2 : 0], h = in->shape[hwc ? 0 : 1], w = in->shape[hwc ? 1 : 2];
    const uint32_t hp = h + cfg->padding_top + cfg->padding_bottom, wp = w + cfg->padding_left + cfg->padding_right;
    const uint32_t el = mli_prv_elsize(in->el_type), mli_bytes = c * hp * wp * el; /* MLI's unsigned arithmetic */
    RETURN_IF(mli_bytes > out->capacity, mlipy_err_val(MLI_STATUS_NOT_ENGH_MEM, "out", "capacity",
                                                       "is smaller than the padded input", mli_bytes, out->capacity));
    RETURN_BAD(chk_type(in, "in", type));
    RETURN_BAD(safe_data(in, "in"));
    RETURN_IF((uint64_t)c * hp * wp * el > out->capacity,
              mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, "out", "capacity",
                               "is smaller than the padded input (MLI's 32-bit size wraps and it writes beyond)"));
    return MLI_STATUS_OK;
}
