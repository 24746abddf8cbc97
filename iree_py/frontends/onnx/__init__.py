"""The ONNX frontend: `import_onnx(model, dims)` -> a graph of normalized ops (docs/ir.md).

One file per concept; each op's conversion (static, on symbolic dims, with inputs given at run time)
is in the file of its family, which ends with its table (CONVERTERS, and SYMBOLIC_CONVERTERS /
SHAPE_INPUTS where the op has a symbolic or run-time form). registry.py joins the tables.

  importer.py        load the model, the converter context (OnnxContext), convert node by node
  registry.py        THE table: ONNX op type -> converter (one entry per op), the symbolic table
  dims.py            dims as converters see them (ints, or Exprs for symbolic dims)
  symbolic.py        unknown input dims, known values (shapes folded from symbolic dims), dim
                     comparisons, symbols read from run-time tensors, small i64 ops on run-time params
  compose.py         helpers for converters that compose several ops (reshape, reduce over axes, ...)
  elementwise.py     Add Sub Mul Div Sum Mean Min Max Mod Pow Clip PRelu, Relu Sigmoid Tanh, the unary
                     math ops, HardSigmoid Elu Selu Celu ThresholdedRelu Gelu, Swish Shrink SwiGLU
  logic.py           comparisons, And Or Xor Not, Where, BitShift, IsNaN IsInf, Bitwise*
  dtypes.py          Cast CastLike BitCast, ONNX element types, bf16 operands of float ops
  tensor_ops.py      Identity Dropout Constant ConstantOfShape Shape Size EyeLike Range
  layout.py          Reshape Flatten Squeeze Unsqueeze Transpose Concat Expand Tile DepthToSpace
                     SpaceToDepth
  slicing.py         Slice Split
  indexing.py        Gather* Scatter* TensorScatter Trilu NonZero Compress ReverseSequence OneHot
  reduce.py          Reduce* ArgMax ArgMin CumSum CumProd
  sorting.py         TopK Unique
  linear_algebra.py  Gemm MatMul Einsum Det
  conv.py            Conv ConvTranspose DeformConv CausalConvWithState (and the window attributes)
  pool.py            MaxPool AveragePool LpPool Global*Pool MaxUnpool
  normalization.py   BatchNormalization (inference and training) Layer/RMS/Group/Instance/
                     MeanVariance/LpNormalization LRN Softmax LogSoftmax Hardmax
  attention.py       Attention LinearAttention RotaryEmbedding
  recurrent.py       LSTM GRU RNN, com.microsoft DynamicQuantizeLSTM
  quantization.py    QuantizeLinear DequantizeLinear DynamicQuantizeLinear (all element types)
  quantized_ops.py   QLinearConv QLinearMatMul ConvInteger MatMulInteger
  resize.py          Resize Upsample
  pad.py             Pad
  image_ops.py       GridSample AffineGrid CenterCropPad Col2Im
  detection.py       NonMaxSuppression RoiAlign
  signal.py          DFT HannWindow HammingWindow BlackmanWindow
  loss.py            NegativeLogLikelihoodLoss SoftmaxCrossEntropyLoss
  text.py            TfIdfVectorizer
  control_flow.py    If Loop Scan (opset 8 and 9+)
  sequences.py       the sequence and optional ops
  strings.py         string tensors (Equal on strings; every other op refuses them)
"""
from iree_py.frontends.onnx.importer import import_onnx

__all__ = ["import_onnx"]
