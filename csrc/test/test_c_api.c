/* Proves the C core is usable from C alone: builds against csrc/include
 * only and runs the worked examples of SPEC.md sections 4 and 10. */
#include <stdio.h>
#include <string.h>
#include "mli_api.h"

static int fails = 0;
#define EXPECT(cond) do { if (!(cond)) { printf("FAIL %s:%d %s\n", __FILE__, __LINE__, #cond); fails++; } } while (0)

static mli_tensor fx16(void *data, uint32_t n, uint32_t rank, uint32_t s0, uint32_t s1, uint32_t s2, uint8_t frac) {
    mli_tensor t = {0};
    t.data = data;
    t.capacity = n * 2;
    t.rank = rank;
    t.shape[0] = s0; t.shape[1] = s1; t.shape[2] = s2;
    t.el_type = MLI_EL_FX_16;
    t.el_params.fx.frac_bits = frac;
    return t;
}

int main(void) {
    /* SPEC 4: fx16 fully connected, one output */
    int16_t x[5] = {12000, -3000, 700, -32768, 5}, w[5] = {16000, -20000, 300, 1000, 32767}, b[1] = {-1234}, y[1];
    mli_tensor in = fx16(x, 5, 1, 5, 0, 0, 12), wt = fx16(w, 5, 2, 1, 5, 0, 15), bt = fx16(b, 1, 1, 1, 0, 0, 14);
    mli_tensor out = fx16(y, 1, 0, 0, 0, 0, 10);
    EXPECT(mli_krn_fully_connected_fx16(&in, &wt, &bt, &out) == MLI_STATUS_OK);
    EXPECT(y[0] == 1598 && out.rank == 1 && out.shape[0] == 1);

    /* SPEC 10: fx16 LSTM one-to-one, act TANH, N = M = 1 */
    int16_t lx[1] = {8192}, lh[1] = {-16384}, lw[8] = {16384, 8192, -8192, 16384, 4096, 4096, 32767, -16384};
    int16_t lb[4] = {512, -256, 8192, 0}, lc[1] = {1000}, lir[4], lo[1];
    mli_tensor li = fx16(lx, 1, 1, 1, 0, 0, 14), lp = fx16(lh, 1, 1, 1, 0, 0, 15);
    mli_tensor lwt = fx16(lw, 8, 3, 4, 1, 2, 15), lbt = fx16(lb, 4, 2, 4, 1, 0, 14);
    mli_tensor lct = fx16(lc, 1, 1, 1, 0, 0, 11), lirt = fx16(lir, 4, 0, 0, 0, 0, 0), lot = fx16(lo, 1, 0, 0, 0, 0, 0);
    mli_rnn_cell_cfg cfg = {RNN_ONE_TO_ONE, RNN_ACT_TANH, &lirt};
    EXPECT(mli_krn_lstm_cell_fx16(&li, &lp, &lwt, &lbt, &cfg, &lct, &lot) == MLI_STATUS_OK);
    EXPECT(lc[0] == 212 && lo[0] == 2294 && lot.el_params.fx.frac_bits == 15);
    EXPECT(lir[0] == 17661 && lir[1] == -12179 && lir[2] == 20397 && lir[3] == 22255);

    /* a 2x2 convolution of a 3x3 input (stride 1, no padding): the dispatcher
     * picks the ch1_str1 specialisation */
    int16_t cx[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, cw[4] = {1, 1, 1, 1}, cb[1] = {0}, cy[4] = {0};
    mli_tensor ci = fx16(cx, 9, 3, 1, 3, 3, 0), cwt = fx16(cw, 4, 4, 1, 1, 2, 0), cbt = fx16(cb, 1, 1, 1, 0, 0, 0);
    cwt.shape[3] = 2;
    mli_tensor co = fx16(cy, 4, 3, 0, 0, 0, 0);
    mli_conv2d_cfg ccfg = {{MLI_RELU_NONE}, 1, 1, 0, 0, 0, 0};
    const char *picked = mli_debug_krn_conv2d_chw_fx16(&ci, &cwt, &cbt, &ccfg, &co);
    EXPECT(picked && strcmp(picked, "mli_krn_conv2d_chw_fx16_ch1_str1") == 0);
    EXPECT(mli_krn_conv2d_chw_fx16(&ci, &cwt, &cbt, &ccfg, &co) == MLI_STATUS_OK);
    EXPECT(cy[0] == 12 && cy[1] == 16 && cy[2] == 24 && cy[3] == 28);
    EXPECT(co.rank == 3 && co.shape[0] == 1 && co.shape[1] == 2 && co.shape[2] == 2);
    /* a 1x1 input with a 2x2 kernel padded on the left and top: MLI 1.1 would
     * run its one-sided border loops, mli-py refuses it as unsafe */
    ci.shape[1] = ci.shape[2] = 1;
    ci.capacity = 2;
    ccfg.padding_left = ccfg.padding_top = 1;
    EXPECT(mli_krn_conv2d_chw_fx16_generic(&ci, &cwt, &cbt, &ccfg, &co) != MLI_STATUS_OK);
    EXPECT(mlipy_last_error()->mlipy_safety == 1);

    /* a failing check names the argument */
    lp.shape[0] = 2;
    EXPECT(mli_krn_lstm_cell_fx16(&li, &lp, &lwt, &lbt, &cfg, &lct, &lot) != MLI_STATUS_OK);
    printf("last error: %s %s.%s: %s\n", mlipy_last_error()->function, mlipy_last_error()->argument,
           mlipy_last_error()->field, mlipy_last_error()->reason);

    /* SPEC_MLI11_MORE 6: an average over 3 values is a multiplication by
     * 21845 and a rounding shift by 16; the dispatcher picks k3x1_nopad */
    int16_t px[3] = {300, 301, 302}, py[1];
    mli_tensor pin = fx16(px, 3, 3, 1, 1, 3, 7), pout = fx16(py, 1, 3, 0, 0, 0, 0);
    mli_pool_cfg pc = {3, 1, 1, 1, 0, 0, 0, 0};
    EXPECT(strcmp(mli_debug_krn_avepool_chw_fx16(&pin, &pc, &pout), "mli_krn_avepool_chw_fx16_k3x1_nopad") == 0);
    EXPECT(mli_krn_avepool_chw_fx16(&pin, &pc, &pout) == MLI_STATUS_OK);
    EXPECT(py[0] == 301 && pout.shape[2] == 1 && pout.el_params.fx.frac_bits == 7);

    /* SPEC_MLI11_MORE 5: sa8 fully connected, (10 * 64 - 20 * 64) at shift 18 */
    int8_t sx[2] = {10, -20}, sw[2] = {64, 64}, sy[1];
    int32_t sb[1] = {0};
    mli_tensor sin = {sx, 2, {0}, {2}, 1, MLI_EL_ASYM_I8, {{0}}};
    mli_tensor swt = {sw, 2, {0}, {1, 2}, 2, MLI_EL_ASYM_I8, {{0}}};
    mli_tensor sbt = {sb, 4, {0}, {1}, 1, MLI_EL_ASYM_I32, {{0}}};
    mli_tensor sout = {sy, 1, {0}, {0}, 1, MLI_EL_ASYM_I8, {{0}}};
    mli_tensor *const sa8[4] = {&sin, &swt, &sbt, &sout};
    const int8_t sfb[4] = {14, 14, 28, 8};
    const int32_t scale[4] = {1 << 14, 1 << 14, 1 << 28, 1 << 14};
    for (int i = 0; i < 4; i++) {
        sa8[i]->el_params.asym.dim = -1;
        sa8[i]->el_params.asym.zero_point.i16 = 0;
        sa8[i]->el_params.asym.scale.i32 = scale[i];
        sa8[i]->el_params.asym.scale_frac_bits = sfb[i];
    }
    EXPECT(mli_krn_fully_connected_sa8_sa8_sa32(&sin, &swt, &sbt, &sout) == MLI_STATUS_OK);
    EXPECT(sy[0] == -10 && sout.rank == 1 && sout.shape[0] == 1);

    printf("%s\n", fails ? "C API test FAILED" : "C API test passed");
    return fails != 0;
}
