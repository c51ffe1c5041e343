/* Argument checks of SPEC.md section 12, in MLI 1.1's order: the first
 * failing step decides the status.  After MLI's own checks, a few mli-py
 * safety checks reject calls on which MLI would read or write outside the
 * buffers it was given (they are flagged `mlipy_safety` in the detail). */
#include <stddef.h>
#include "mli_check.h"

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

static mli_status chk_contig(const mli_tensor *t, const char *arg) {
    RETURN_IF(!mli_prv_contig_t(t), mlipy_err(MLI_STATUS_INCOMPATEBLE_TENSORS, arg, "mem_stride",
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
    /* mli-py safety checks */
    RETURN_BAD(safe_data(in, "in"));
    RETURN_BAD(safe_data(weights, "weights"));
    RETURN_BAD(safe_data(bias, "bias"));
    RETURN_BAD(safe_int_count(in, "in"));
    RETURN_BAD(safe_int_count(weights, "weights"));
    uint64_t row = weights->mem_stride[0] ? (uint64_t)weights->mem_stride[0] : weights->shape[1];
    uint64_t reach = ((uint64_t)weights->shape[0] - 1) * row + weights->shape[1];
    RETURN_IF(reach * mli_prv_elsize(weights->el_type) > weights->capacity,
              mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, "weights", "capacity",
                               "is smaller than the rows at mem_stride[0] reach"));
    return MLI_STATUS_OK;
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
static bool is_scalar(const mli_tensor *t) { return t->rank == 0 || mli_prv_count(t, 0) == 1; }

static mli_status chk_scalar(const mli_tensor *t, const char *arg) {
    if (t->rank == 0) return MLI_STATUS_OK;
    RETURN_BAD(mli_chk_tensor(t, arg));
    RETURN_IF(mli_prv_count(t, 0) != 1,
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
        RETURN_IF(!mli_prv_contig(ops[i]->shape, out->mem_stride, ops[i]->rank),
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
    uint64_t n1 = in1->rank ? mli_prv_count(in1, 0) : 1, n2 = in2->rank ? mli_prv_count(in2, 0) : 1;
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
