# Kernels of the nn family: conv, pooling, dense/matmul, norms, softmax,
# reductions, ... (lowerings in codegen/host_ops_nn.cpp).
set(TK_NN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/nn_conv.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nn_linalg.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nn_pool.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nn_norm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nn_recurrent.cpp
  ${CMAKE_CURRENT_LIST_DIR}/reduce.cpp
)
