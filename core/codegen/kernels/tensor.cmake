# Kernels of the tensor family: elementwise, broadcast, cast, injective,
# indexing, image ops, ... (lowerings in codegen/host_ops_tensor.cpp).
set(TK_TENSOR_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/elementwise.cpp
  ${CMAKE_CURRENT_LIST_DIR}/elementwise_where_cast.cpp
  ${CMAKE_CURRENT_LIST_DIR}/transform.cpp
  ${CMAKE_CURRENT_LIST_DIR}/index.cpp
  ${CMAKE_CURRENT_LIST_DIR}/image.cpp
)
