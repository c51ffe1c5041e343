# Declarations of the C core's public headers (csrc/include), one to one.
from libc.stdint cimport int8_t, int16_t, int32_t, uint8_t, uint32_t

cdef extern from "mli_api.h" nogil:
    ctypedef enum mli_status:
        MLI_STATUS_OK
    ctypedef enum mli_element_type:
        MLI_EL_FX_8
        MLI_EL_FX_16
        MLI_EL_ASYM_I8
        MLI_EL_ASYM_I32
    ctypedef struct _mlipy_fx_params:
        uint8_t frac_bits
    ctypedef union mli_data_container:
        int32_t *pi32
        int16_t *pi16
        int8_t *pi8
        int32_t i32
        int16_t i16
        int8_t i8
    ctypedef struct _mlipy_asym_params:
        mli_data_container zero_point
        mli_data_container scale
        int32_t dim
        int8_t scale_frac_bits
    ctypedef union mli_element_params:
        _mlipy_fx_params fx
        _mlipy_asym_params asym
    ctypedef struct mli_tensor:
        void *data
        uint32_t capacity
        int32_t mem_stride[4]
        uint32_t shape[4]
        uint32_t rank
        mli_element_type el_type
        mli_element_params el_params
    ctypedef enum mli_relu_type:
        MLI_RELU_NONE
    ctypedef struct mli_relu_cfg:
        mli_relu_type type
    ctypedef enum mli_rnn_mode:
        RNN_ONE_TO_ONE
    ctypedef enum mli_rnn_out_activation:
        RNN_ACT_NONE
    ctypedef struct mli_rnn_cell_cfg:
        mli_rnn_mode mode
        mli_rnn_out_activation act
        mli_tensor *ir_tsr
    ctypedef struct mli_conv2d_cfg:
        mli_relu_cfg relu
        uint8_t stride_width
        uint8_t stride_height
        uint8_t padding_left
        uint8_t padding_right
        uint8_t padding_top
        uint8_t padding_bottom
    ctypedef struct mli_pool_cfg:
        uint8_t kernel_width
        uint8_t kernel_height
        uint8_t stride_width
        uint8_t stride_height
        uint8_t padding_left
        uint8_t padding_right
        uint8_t padding_top
        uint8_t padding_bottom
    ctypedef struct mli_permute_cfg:
        uint8_t perm_dim[4]
    ctypedef struct mli_padding2d_cfg:
        uint8_t padding_left
        uint8_t padding_right
        uint8_t padding_top
        uint8_t padding_bottom
    ctypedef struct mli_concat_cfg:
        uint8_t tensors_num
        uint8_t axis
    ctypedef struct mli_point_to_subtsr_cfg:
        uint32_t start_coord[4]
        uint8_t coord_num
        uint8_t first_out_dim_size

    mli_status mli_krn_fully_connected_fx8(const mli_tensor *, const mli_tensor *, const mli_tensor *, mli_tensor *)
    mli_status mli_krn_fully_connected_fx16(const mli_tensor *, const mli_tensor *, const mli_tensor *, mli_tensor *)
    mli_status mli_krn_fully_connected_fx8w16d(const mli_tensor *, const mli_tensor *, const mli_tensor *, mli_tensor *)
    mli_status mli_krn_basic_rnn_cell_fx8(const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *)
    mli_status mli_krn_basic_rnn_cell_fx16(const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *)
    mli_status mli_krn_basic_rnn_cell_fx8w16d(const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *)
    mli_status mli_krn_lstm_cell_fx8(const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *, mli_tensor *)
    mli_status mli_krn_lstm_cell_fx16(const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *, mli_tensor *)
    mli_status mli_krn_lstm_cell_fx8w16d(const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *, mli_tensor *)
    mli_status mli_krn_tanh_fx8(const mli_tensor *, mli_tensor *)
    mli_status mli_krn_tanh_fx16(const mli_tensor *, mli_tensor *)
    mli_status mli_krn_sigm_fx8(const mli_tensor *, mli_tensor *)
    mli_status mli_krn_sigm_fx16(const mli_tensor *, mli_tensor *)
    mli_status mli_krn_relu_fx8(const mli_tensor *, const mli_relu_cfg *, mli_tensor *)
    mli_status mli_krn_relu_fx16(const mli_tensor *, const mli_relu_cfg *, mli_tensor *)
    mli_status mli_krn_eltwise_add_fx8(const mli_tensor *, const mli_tensor *, mli_tensor *)
    mli_status mli_krn_eltwise_add_fx16(const mli_tensor *, const mli_tensor *, mli_tensor *)
    mli_status mli_krn_eltwise_sub_fx8(const mli_tensor *, const mli_tensor *, mli_tensor *)
    mli_status mli_krn_eltwise_sub_fx16(const mli_tensor *, const mli_tensor *, mli_tensor *)
    mli_status mli_krn_eltwise_mul_fx8(const mli_tensor *, const mli_tensor *, mli_tensor *)
    mli_status mli_krn_eltwise_mul_fx16(const mli_tensor *, const mli_tensor *, mli_tensor *)
    mli_status mli_krn_eltwise_max_fx8(const mli_tensor *, const mli_tensor *, mli_tensor *)
    mli_status mli_krn_eltwise_max_fx16(const mli_tensor *, const mli_tensor *, mli_tensor *)
    mli_status mli_krn_eltwise_min_fx8(const mli_tensor *, const mli_tensor *, mli_tensor *)
    mli_status mli_krn_eltwise_min_fx16(const mli_tensor *, const mli_tensor *, mli_tensor *)

    uint32_t mli_hlp_count_elem_num(const mli_tensor *, uint32_t)
    uint32_t mli_hlp_tensor_element_size(const mli_tensor *)
    mli_status mli_hlp_point_to_subtensor(const mli_tensor *, const mli_point_to_subtsr_cfg *, mli_tensor *)
    mli_status mli_hlp_convert_tensor(mli_tensor *, mli_tensor *)
    mli_status mli_hlp_float_to_fx_tensor(const float *, uint32_t, mli_tensor *)
    mli_status mli_hlp_fx_tensor_to_float(const mli_tensor *, float *, uint32_t)

    ctypedef enum mlipy_rounding_mode:
        MLIPY_ROUND_CONVERGENT
        MLIPY_ROUND_UP
    void mlipy_set_rounding(mlipy_rounding_mode)
    mlipy_rounding_mode mlipy_get_rounding()
    void mlipy_set_thread_rounding(int)
    int mlipy_get_thread_rounding()
    ctypedef struct mlipy_error_detail:
        mli_status status
        const char *function
        const char *argument
        const char *field
        const char *reason
        long long expected
        long long actual
        int has_values
        int mlipy_safety
    const mlipy_error_detail *mlipy_last_error()
    void mlipy_set_workspace(void *buf, size_t size)
    ctypedef int (*mlipy_poll_fn)() noexcept
    void mlipy_set_poll(mlipy_poll_fn fn)
    mli_status MLIPY_STATUS_INTERRUPTED
    void mlipy_set_workspace_reuse(void *buf, size_t size)
    size_t mlipy_workspace_size(int K, int N, int S)
    int mlipy_get_isa()
    int mlipy_set_isa(int isa)
    int mlipy_isa_supported(int isa)
    const char *mlipy_isa_name(int isa)

    void mlipy_lstm_gates_fx8(int8_t *, int, int)
    void mlipy_lstm_gates_fx16(int16_t *, int, int)
    void mlipy_lstm_gates_fx8w16d(int16_t *, int, int)
    void mlipy_lstm_cell_update_fx8(const int8_t *, int, int8_t *, int)
    void mlipy_lstm_cell_update_fx16(const int16_t *, int, int16_t *, int)
    void mlipy_lstm_cell_update_fx8w16d(const int16_t *, int, int16_t *, int)
    void mlipy_lstm_hidden_fx8(const int8_t *, int, const int8_t *, int, mli_rnn_out_activation, int, int8_t *)
    void mlipy_lstm_hidden_fx16(const int16_t *, int, const int16_t *, int, mli_rnn_out_activation, int, int16_t *)
    void mlipy_lstm_hidden_fx8w16d(const int16_t *, int, const int16_t *, int, mli_rnn_out_activation, int, int16_t *)
    mli_status mlipy_check_basic_rnn_cell(int kind, const mli_tensor *inp, const mli_tensor *prev_out,
                                          const mli_tensor *weights, const mli_tensor *bias,
                                          const mli_rnn_cell_cfg *cfg, const mli_tensor *out)
    mli_status mlipy_check_lstm_cell(int kind, const mli_tensor *inp, const mli_tensor *prev_out,
                                     const mli_tensor *weights, const mli_tensor *bias,
                                     const mli_rnn_cell_cfg *cfg, const mli_tensor *cell, const mli_tensor *out)
