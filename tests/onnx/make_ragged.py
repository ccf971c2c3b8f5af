"""A scripted model returning a Python list of tensors of different lengths,
shared by the Python API's tests (python/tests) and the control-flow e2e
(tests/e2e/check_control_flow.py).

torch.onnx exports `for i in range(n): outs.insert(0, x[:i + 1] * 2)` after a
given list `prefix` as a Loop over n carrying the sequence, its body slicing x
at a run-time end and inserting; the sequence and its length are outputs.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper


def ragged_list_model():
    """The model: inputs n i64[], x f32[8], prefix seq(f32[_]); outputs parts
    seq(f32[_]) and count i64[]."""
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    body = helper.make_graph(
        [helper.make_node("Add", ["i", "one"], ["end"]),
         helper.make_node("Unsqueeze", ["end", "axes"], ["ends"]),
         helper.make_node("Slice", ["x", "starts", "ends"], ["part"]),
         helper.make_node("Mul", ["part", "two"], ["doubled"]),
         helper.make_node("SequenceInsert", ["seq_in", "doubled", "zero"], ["seq_out"]),
         helper.make_node("Identity", ["c"], ["c_out"])],
        "body", [helper.make_tensor_value_info("i", i64, []),
                 helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                 helper.make_tensor_sequence_value_info("seq_in", f32, [None])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("seq_out", f32, [None])],
        [numpy_helper.from_array(np.array(1, np.int64), "one"),
         numpy_helper.from_array(np.array([0], np.int64), "axes"),
         numpy_helper.from_array(np.array([0], np.int64), "starts"),
         numpy_helper.from_array(np.array(0, np.int64), "zero"),
         numpy_helper.from_array(np.array(2, np.float32), "two")])
    g = helper.make_graph(
        [helper.make_node("Loop", ["n", "", "prefix"], ["parts"], body=body),
         helper.make_node("SequenceLength", ["parts"], ["count"])],
        "ragged", [helper.make_tensor_value_info("n", i64, []),
                   helper.make_tensor_value_info("x", f32, [8]),
                   helper.make_tensor_sequence_value_info("prefix", f32, [None])],
        [helper.make_tensor_sequence_value_info("parts", f32, [None]),
         helper.make_tensor_value_info("count", i64, [])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
