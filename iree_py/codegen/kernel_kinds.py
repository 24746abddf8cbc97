"""The one table of kernel kinds: what each kind takes (its bindings, inputs then outputs), the
attributes it reads and what it computes. Every backend's builder table is checked against it
(tests/codegen/test_backends.py). Dims may be ints or symbolic Exprs (docs/dynamic_shapes.md);
quantized kinds have the semantics and attributes of their IR ops (docs/ir.md, "Quantized ops")."""
from __future__ import annotations

KERNEL_KINDS: dict[str, str] = {
    # --- dense linear algebra and windows
    "conv2d": "X[N,C,H,W], W[M,C/group,KH,KW], optional B[M] -> Y[N,M,OH,OW]; attrs strides[2], pads[4] (top, "
              "left, bottom, right), dilations[2], group; an epilogue of elementwise ops",
    "matmul": "A[..., M, K], B[..., K, N] (batch dims broadcast numpy-style) -> [..., M, N]; an epilogue",
    "conv_transpose": "X[N,C,*in] (1..3 spatial axes), W[C,M/group,*kernel], optional B[M]; attrs strides, "
                      "dilations, pads [begins..., ends...] (a crop of the full result; negative end: extended), group",
    "maxpool": "X[N,C,H,W] (f32, i8, u8); attrs kernel[2], strides[2], pads[4], dilations[2], ceil_mode (0/1)",
    "maxpool_index": "as maxpool plus storage_order (0/1) -> i64: the flat index in X of each window's first "
                     "maximum (ONNX MaxPool's Indices)",
    "avgpool": "as maxpool plus count_include_pad (0/1)",
    "lppool": "as maxpool (dilations too) plus p (integer >= 1): (sum of |x|^p over the window)^(1/p)",
    "globalavgpool": "X[N,C,...] -> Y[N,C,1,...]",
    "lstm": "X[seq,batch,in], W, R, B, sequence_lens (i32), initial_h, initial_c, P: the IR op LSTM (docs/ir.md "
            "\"Recurrent ops\"), every time step in one dispatch; attrs direction, hidden_size, activations, "
            "activation_alpha/beta, clip, result (Y, Y_h, Y_c: the one output), input_forget; weights_transposed: "
            "W and R come as WT[dirs,in,4H], RT[dirs,H,4H] (the CPU plan step transposes constant ones)",
    "gru": "as lstm without initial_c and P, the IR op GRU; plus linear_before_reset",
    "rnn": "as gru without linear_before_reset, the IR op RNN",
    # --- elementwise, normalizations, scans
    "elementwise": "inputs broadcast numpy-style to the output shape; attrs expr, an Expr (any dtype per step)",
    "softmax": "attrs axis (>= 0): softmax over that one axis",
    "logsoftmax": "attrs axis (>= 0): x - max - log(sum(exp(x - max))) over that one axis",
    "hardmax": "attrs axis (>= 0): 1.0 at the first maximum along the axis, 0.0 elsewhere",
    "lrn": "X[N,C,...]; attrs size, alpha, beta, bias (ONNX LRN)",
    "cumsum": "f32, f64, i32, i64; attrs axis, exclusive, reverse (0/1)",
    "cumprod": "as cumsum, running products",
    # --- reductions and selections
    "reduce": "attrs kind (sum mean max min prod l1 l2 logsum logsumexp sumsquare), axes (sorted, >= 0, one "
              "contiguous run once size-1 dims are dropped), keepdims (0/1)",
    "reduce_rt": "X f32 or f64 (any rank), mask i64[rank] (1 = reduced, known at run time) -> Y over the kept axes; "
                 "attrs kind (as reduce), keepdims",
    "argmax": "f32 in, i64 out; attrs axis, select_last_index (ties: the first index, or the last)",
    "argmin": "as argmax, for the minimum",
    "topk": "f32, f64 or integers in; attrs axis, k, largest, result (\"values\": the input's dtype out, "
            "\"indices\": i64 out); sorted, ties: the lower index first",
    # --- data movement
    "transpose": "any dtype; attrs perm",
    "slice": "any dtype; attrs starts, ends, steps per axis (normalized: >= 0, within the dims)",
    "concat": "any number of inputs; attrs axis (>= 0)",
    "expand": "attrs shape: the input broadcast numpy-style to shape",
    "pad": "any dtype; attrs mode (constant reflect edge wrap symmetric), pads [begins..., ends...] (negative: "
           "crops), value (constant mode)",
    "bitcast": "any dtype -> attrs to, a dtype of the same size: the bytes unchanged",
    "resize": "X (f32; any dtype with <= 1 tap per axis), index table (i32), weight table (f32); attrs sizes, taps "
              "(per axis, 0 = copied), extrapolation_value: gather-and-blend (iree_py/ir/resize_math.py)",
    "resize_rt": "X, scales f32[K], roi f32[2K]: Resize with coordinates and weights computed per output index "
                 "(iree_py/ir/ops/resize.py)",
    # --- indexing (an index out of range fails the dispatch, status 3)
    "gather": "data, indices (i32/i64); attrs axis: out[a, i, c] = data[a, idx[i], c]; negative indices wrap",
    "gather_elements": "data, indices (same rank); attrs axis: out[p] = data[p with p[axis] = idx[p]]",
    "gather_nd": "data, indices [..., k]; attrs batch_dims (ONNX GatherND)",
    "scatter_elements": "data, indices, updates; attrs axis, reduction (none add mul max min): out = data, then "
                        "the updates in order",
    "scatter_nd": "data, indices [..., k], updates; attrs reduction (ONNX ScatterND)",
    # --- data-dependent sizes (iree_py/ir/ops/data_dependent.py, detection.py)
    "nonzero_count": "the count of NonZero's result, as i64[1] (read into a symbol)",
    "nonzero": "NonZero's result at its counted size (checks the count first)",
    "unique_count": "the count of Unique's result, as i64[1] (read into a symbol)",
    "unique": "Unique's results at their counted size (checks the count first)",
    "nms_select": "NonMaxSuppression's selection (padded, 1-based)",
    "nms_output": "NonMaxSuppression's [n, 3] result from the selection",
    "roi_align": "X[N,C,H,W], rois[R,4], batch_indices[R]: ONNX RoiAlign (avg or max, both coordinate modes)",
    # --- quantized
    "quantize": "X f32 -> i8/u8; attrs axis (-1: per tensor), scale[], zero_point[], dtype, rounding",
    "dequantize": "X i8/u8/i32 -> f32; attrs axis, scale[], zero_point[]",
    "qconv": "as conv2d on i8/u8 X, W with optional i32 bias[M], plus the requantization attrs (x/w/y_zero_point, "
             "out_dtype, act_min, act_max, requant, multiplier, shift, scale; requant \"none\": the int32 sums); "
             "attrs operands (optional) name the bindings x, w, bias, x_zero_point, w_zero_point (run-time zero "
             "points replacing the attributes: codegen/llvm/requant.py)",
    "qconv_dot": "qconv with one group and weight zero point 0 whose weight is packed W'[Mp, Kp] "
                 "(codegen/llvm/qconv_packing.py); extra attrs weight_shape (M, C, KH, KW), dot, dot_bytes, "
                 "x_offset, w_offset, w_sum[M]",
    "qdwconv": "qconv with group = C = M (depthwise, multiplier 1): one kernel per channel plane",
    "qconv_transpose": "as conv_transpose (2-D) on i8/u8 X, W with optional i32 bias[M], plus the requantization "
                       "attrs",
    "qmatmul": "A[..., M, K] i8/u8, B[K, N] or B[..., K, N] i8/u8, optional i32 bias[N]; requantization attrs and "
               "operands as qconv (MatMulInteger: x_zero_point per tensor or per row)",
    "qadd": "TFLite's int8 ADD of two broadcasting i8/u8 inputs (attrs as the QAdd op)",
    "qavgpool": "as avgpool on i8/u8 with TFLite's integer rounding, plus act_min, act_max",
    "qsoftmax": "X[..., D] i8/u8 -> i8/u8: TFLite's fixed-point SOFTMAX over the last axis (attrs input_multiplier, "
                "input_left_shift, diff_min, out_dtype)",
    "qlookup": "X i8/u8 -> i8/u8: y = table[x & 0xFF]; attrs table (256 ints), out_dtype (TFLite's int8 LUTs)",
    "qlstm": "XW[dirs,seq,batch,4H] f32, R[dirs,H,4H] i8/u8, R_scale[dirs,4H], B, sequence_lens (i32), initial_h, "
             "initial_c, P: the IR op QLSTM (onnxruntime's DynamicQuantizeLSTM recurrence); attrs as lstm plus "
             "r_zero_point (per direction), finished_as_zero",
    # --- strings (docs/strings.md)
    "string_equal": "A, B packed strings -> bool, numpy broadcasting; the offsets are checked first",
}
