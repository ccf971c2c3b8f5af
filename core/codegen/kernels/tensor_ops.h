//===- codegen/kernels/tensor_ops.h - Op codes of the tensor kernels ---===//
//
// The op codes that the elementwise kernels (codegen/kernels/elementwise.cpp)
// read from ia[0] and that their lowerings (codegen/host_ops_tensor.cpp)
// write. Once the kernel is inlined with its constant ia, the switch on the
// op code folds away. Also the scatter reductions and the pad / image
// modes. Plain enums: included by the kernel sources and by the compiler.
//
//===----------------------------------------------------------------------===//
#ifndef TESSERA_CODEGEN_KERNELS_TENSOR_OPS_H
#define TESSERA_CODEGEN_KERNELS_TENSOR_OPS_H

// Kernel "unary": one input, output of the same dtype (bool for the
// predicates isnan / isinf).
enum tk_unary_op {
  TK_U_ABS = 0,
  TK_U_NEG,
  TK_U_RELU,
  TK_U_LEAKY_RELU, // fa[0] = alpha
  TK_U_SIGMOID,
  TK_U_TANH,
  TK_U_HARD_SIGMOID, // fa[0] = alpha, fa[1] = beta
  TK_U_HARD_SWISH,
  TK_U_SILU,
  TK_U_GELU,      // exact (erf)
  TK_U_GELU_TANH, // tanh approximation
  TK_U_CLIP,      // fa = [min, max] (floats); ia[1], ia[2] = integer bounds
  TK_U_SQRT,
  TK_U_EXP,
  TK_U_LOG,
  TK_U_ERF,
  TK_U_FLOOR,
  TK_U_CEIL,
  TK_U_ROUND, // half to even
  TK_U_RECIPROCAL,
  TK_U_SIGN,
  TK_U_SIN,
  TK_U_COS,
  TK_U_TAN,
  TK_U_ASIN,
  TK_U_ACOS,
  TK_U_ATAN,
  TK_U_SINH,
  TK_U_COSH,
  TK_U_ASINH,
  TK_U_ACOSH,
  TK_U_ATANH,
  TK_U_ISNAN, // bool result
  TK_U_ISINF, // bool result; ia[1] = detect_positive, ia[2] = detect_negative
  TK_U_LOGICAL_NOT,
  TK_U_MISH,
  TK_U_COUNT,
};

// Kernel "binary": two broadcast inputs, output of their dtype.
enum tk_binary_op {
  TK_B_ADD = 0,
  TK_B_SUB,
  TK_B_MUL,
  TK_B_DIV,
  TK_B_POW,
  TK_B_MAX,
  TK_B_MIN,
  TK_B_MOD,  // sign of the divisor (Python %)
  TK_B_FMOD, // sign of the dividend (C fmod)
  TK_B_SHL,
  TK_B_SHR,
  TK_B_COUNT,
};

// Kernel "compare": two broadcast inputs, bool output.
enum tk_compare_op {
  TK_C_EQ = 0,
  TK_C_LT,
  TK_C_GT,
  TK_C_LE,
  TK_C_GE,
  TK_C_AND,
  TK_C_OR,
  TK_C_XOR,
  TK_C_COUNT,
};

// Scatter reductions.
enum tk_reduction {
  TK_R_NONE = 0,
  TK_R_ADD,
  TK_R_MUL,
  TK_R_MAX,
  TK_R_MIN,
};

enum tk_pad_mode {
  TK_PAD_CONSTANT = 0,
  TK_PAD_REFLECT,
  TK_PAD_EDGE,
};

enum tk_grid_mode {
  TK_GS_BILINEAR = 0,
  TK_GS_NEAREST,
  TK_GS_BICUBIC,
};

enum tk_grid_padding {
  TK_GS_ZEROS = 0,
  TK_GS_BORDER,
  TK_GS_REFLECTION,
};

// resize2d_dyn's scratch per output row or column: its taps, (outside, n,
// idx[4]) as int64 and w[4] as double.
#define TK_RESIZE_TAP_BYTES 80

#endif // TESSERA_CODEGEN_KERNELS_TENSOR_OPS_H
