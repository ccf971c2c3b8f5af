//===- runtime/c_api.cpp - The runtime's C API (tessera/c/runtime.h) ------===//
//
// Thin extern "C" shims over runtime/session.h. Every entry catches every
// exception (bad_alloc included) and turns it into a status; none crosses
// into the application.
//
//===----------------------------------------------------------------------===//
#include "runtime/c_api_internal.h"

#include "plugin/registry.h"
#include "runtime/artifact.h"
#include "runtime/thread_pool.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace {

using namespace tessera::capi;

/// The bytes `t` spans from its data pointer (byte_offset included), for a
/// compact tensor; the binding itself checks compactness, dtype and shape.
uint64_t bytesSpanned(const DLTensor &t) {
  tessera::runtime::TensorInfo info;
  info.dtype = t.dtype;
  if (t.shape)
    info.shape.assign(t.shape, t.shape + std::max(t.ndim, 0));
  return t.byte_offset + info.bytes();
}

/// "input 'x'" for a model input or output `index`; "input 7" out of range
/// (the binding then reports the range).
std::string labelOf(const std::vector<tessera::runtime::TensorInfo> &list, const char *what,
                    size_t index) {
  return index < list.size() ? std::string(what) + " '" + list[index].name + "'"
                             : std::string(what) + " " + std::to_string(index);
}

/// NULL, or the error for a buffer of `bytes` bytes too short for `t`.
tessera_status_t *shortBuffer(const DLTensor &t, size_t bytes, const std::string &what) {
  const uint64_t need = bytesSpanned(t);
  if (bytes >= need)
    return nullptr;
  return statusOf(TESSERA_STATUS_INVALID_ARGUMENT,
                  what + ": the buffer has " + std::to_string(bytes) + " bytes; the tensor needs " +
                      std::to_string(need) + " (its byte_offset included)");
}

/// The code of a load error: the loader's messages are stable (see
/// runtime/session_load.cpp and runtime/artifact.cpp).
/// A load's failure: a file that is missing or not a file, a plugin or CPU
/// the artifact needs (their errors carry codes), else a damaged artifact.
tessera_status_code_t loadErrorCode(const Error &e) {
  return statusCodeOf(e, TESSERA_STATUS_DATA_LOSS);
}

tessera_status_t *
finishLoad(tessera::Expected<std::shared_ptr<const tessera::runtime::LoadedModel>> loaded,
           tessera_model_t **out_model) {
  if (!loaded.ok())
    return statusOf(loadErrorCode(loaded.error()), loaded.error().str());
  *out_model = new tessera_model{std::move(*loaded)};
  liveHandles().add(*out_model);
  return nullptr;
}

tessera_status_t *tensorInfo(const std::vector<tessera::runtime::TensorInfo> &list,
                             const char *what, size_t index, DLDataType *out_dtype,
                             int32_t *out_ndim, const int64_t **out_shape) {
  if (index >= list.size())
    return statusOf(TESSERA_STATUS_INVALID_ARGUMENT,
                    std::string(what) + " index " + std::to_string(index) +
                        " out of range (the model has " + std::to_string(list.size()) + ")");
  const auto &info = list[index];
  if (out_dtype)
    *out_dtype = info.dtype;
  if (out_ndim) // a sequence: its elements' rank (-1: any)
    *out_ndim = info.sequence ? int32_t(info.elementRank) : int32_t(info.shape.size());
  if (out_shape)
    *out_shape = info.shape.data();
  return nullptr;
}

/// `call(index)` for the session's output named `name`, or NOT_FOUND
/// naming the outputs.
template <typename F>
tessera_status_t *atOutputNamed(tessera_session_t *session, const char *name, F &&call) {
  TESSERA_STATEFUL_ENTRY(session);
  if (!name)
    return nullArgument("name");
  return guard([&]() -> tessera_status_t * {
    return atOutputNamedIn(session->session->model().outputs(), name, call);
  });
}

} // namespace

extern "C" {

tessera_status_t *tessera_model_load(const char *path, tessera_model_t **out_model) {
  if (!path)
    return nullArgument("path");
  if (!out_model)
    return nullArgument("out_model");
  return guard([&] { return finishLoad(tessera::runtime::LoadedModel::load(path), out_model); });
}

tessera_status_t *tessera_model_load_bytes(const void *data, size_t size,
                                           tessera_model_t **out_model) {
  if (!data && size > 0)
    return nullArgument("data");
  if (!out_model)
    return nullArgument("out_model");
  return guard([&] {
    std::string bytes(static_cast<const char *>(data), size);
    return finishLoad(tessera::runtime::LoadedModel::load(std::move(bytes), "<memory>"), out_model);
  });
}

tessera_status_t *tessera_set_plugin_path(const char *path) {
  if (!path)
    return nullArgument("path");
  return guard([&]() -> tessera_status_t * {
    return fromStatus(tessera::plugin::PluginRegistry::setGlobalSearchPath(
                          tessera::plugin::splitPluginPath(path)),
                      TESSERA_STATUS_FAILED_PRECONDITION);
  });
}

tessera_status_t *tessera_artifact_metadata(const char *path, char *buffer, size_t buffer_size,
                                            size_t *out_size) {
  if (!path)
    return nullArgument("path");
  if (!out_size)
    return nullArgument("out_size");
  return guard([&]() -> tessera_status_t * {
    auto artifact = tessera::runtime::Artifact::readFile(path);
    if (!artifact.ok())
      return statusOf(loadErrorCode(artifact.error()), artifact.error().str());
    auto sections = artifact->sectionsOf(tessera::runtime::SectionKind::Metadata);
    if (sections.size() != 1)
      return statusOf(TESSERA_STATUS_DATA_LOSS,
                      std::string(path) + ": " + std::to_string(sections.size()) +
                          " metadata sections (an artifact has one)");
    const std::string_view json = sections[0].bytes;
    *out_size = json.size() + 1;
    if (!buffer)
      return nullptr;
    if (buffer_size < json.size() + 1)
      return statusOf(TESSERA_STATUS_INVALID_ARGUMENT,
                      "the buffer has " + std::to_string(buffer_size) +
                          " bytes; the metadata needs " + std::to_string(json.size() + 1));
    std::memcpy(buffer, json.data(), json.size());
    buffer[json.size()] = '\0';
    return nullptr;
  });
}

void tessera_model_release(tessera_model_t *model) {
  if (model && liveHandles().remove(model))
    delete model;
}

size_t tessera_model_num_inputs(const tessera_model_t *model) {
  return liveModel(model) ? model->model->inputs().size() : 0;
}

size_t tessera_model_num_outputs(const tessera_model_t *model) {
  return liveModel(model) ? model->model->outputs().size() : 0;
}

const char *tessera_model_input_name(const tessera_model_t *model, size_t index) {
  if (!liveModel(model) || index >= model->model->inputs().size())
    return nullptr;
  return model->model->inputs()[index].name.c_str();
}

const char *tessera_model_output_name(const tessera_model_t *model, size_t index) {
  if (!liveModel(model) || index >= model->model->outputs().size())
    return nullptr;
  return model->model->outputs()[index].name.c_str();
}

tessera_status_t *tessera_model_input_info(const tessera_model_t *model, size_t index,
                                           DLDataType *out_dtype, int32_t *out_ndim,
                                           const int64_t **out_shape) {
  if (tessera_status_t *bad = badModel(model))
    return bad;
  return tensorInfo(model->model->inputs(), "input", index, out_dtype, out_ndim, out_shape);
}

tessera_status_t *tessera_model_output_info(const tessera_model_t *model, size_t index,
                                            DLDataType *out_dtype, int32_t *out_ndim,
                                            const int64_t **out_shape) {
  if (tessera_status_t *bad = badModel(model))
    return bad;
  return tensorInfo(model->model->outputs(), "output", index, out_dtype, out_ndim, out_shape);
}

int tessera_model_input_is_sequence(const tessera_model_t *model, size_t index) {
  return liveModel(model) && index < model->model->inputs().size() &&
                 model->model->inputs()[index].sequence
             ? 1
             : 0;
}

int tessera_model_output_is_sequence(const tessera_model_t *model, size_t index) {
  return liveModel(model) && index < model->model->outputs().size() &&
                 model->model->outputs()[index].sequence
             ? 1
             : 0;
}

size_t tessera_model_num_symbols(const tessera_model_t *model) {
  return liveModel(model) ? model->model->plan().symbols.size() : 0;
}

tessera_status_t *tessera_model_symbol(const tessera_model_t *model, size_t index,
                                       const char **out_name, int64_t *out_lo, int64_t *out_hi) {
  if (tessera_status_t *bad = badModel(model))
    return bad;
  const auto &symbols = model->model->plan().symbols;
  if (index >= symbols.size())
    return statusOf(TESSERA_STATUS_INVALID_ARGUMENT,
                    fmt::format("symbol index {} out of range (the model has {} symbol{})", index,
                                symbols.size(), symbols.size() == 1 ? "" : "s"));
  if (out_name)
    *out_name = symbols[index].name.c_str();
  if (out_lo)
    *out_lo = symbols[index].lo;
  if (out_hi)
    *out_hi = symbols[index].hi;
  return nullptr;
}

const char *tessera_model_metadata_json(const tessera_model_t *model) {
  return liveModel(model) ? model->model->metadataJson().c_str() : "";
}

const char *tessera_model_host_cpu(const tessera_model_t *model) {
  return liveModel(model) ? model->model->hostCpu().c_str() : "";
}

tessera_status_t *tessera_session_create(const tessera_model_t *model,
                                         const tessera_session_options_t *options,
                                         tessera_session_t **out_session) {
  if (tessera_status_t *bad = badModel(model))
    return bad;
  if (!out_session)
    return nullArgument("out_session");
  tessera::runtime::SessionOptions opts;
  if (options) {
    // Fields past the caller's struct_size keep their defaults.
    if (options->struct_size >=
        offsetof(tessera_session_options_t, num_threads) + sizeof(options->num_threads))
      opts.numThreads = options->num_threads;
  }
  if (tessera::Status st = tessera::runtime::checkNumThreads(opts.numThreads); !st.ok())
    return statusOf(TESSERA_STATUS_INVALID_ARGUMENT, "num_threads: " + st.error().str());
  return guard([&]() -> tessera_status_t * {
    auto session = tessera::runtime::Session::create(model->model, opts);
    if (!session.ok())
      return statusOf(TESSERA_STATUS_INTERNAL, session.error().str());
    *out_session = new tessera_session{std::move(*session)};
    liveHandles().add(*out_session);
    return nullptr;
  });
}

void tessera_session_release(tessera_session_t *session) {
  if (session && liveHandles().remove(session))
    delete session;
}

tessera_status_t *tessera_session_set_input(tessera_session_t *session, size_t index,
                                            const DLTensor *tensor) {
  TESSERA_STATEFUL_ENTRY(session);
  if (!tensor)
    return nullArgument("tensor");
  return guard([&] {
    return fromStatus(session->session->setInput(index, *tensor), TESSERA_STATUS_INVALID_ARGUMENT);
  });
}

tessera_status_t *tessera_session_set_input_by_name(tessera_session_t *session, const char *name,
                                                    const DLTensor *tensor) {
  TESSERA_STATEFUL_ENTRY(session);
  if (!name)
    return nullArgument("name");
  if (!tensor)
    return nullArgument("tensor");
  return guard([&]() -> tessera_status_t * {
    const auto &inputs = session->session->model().inputs();
    bool known = false;
    for (const auto &info : inputs)
      known = known || info.name == name;
    return fromStatus(session->session->setInput(std::string_view(name), *tensor),
                      known ? TESSERA_STATUS_INVALID_ARGUMENT : TESSERA_STATUS_NOT_FOUND);
  });
}

tessera_status_t *tessera_session_set_input_sequence(tessera_session_t *session, size_t index,
                                                     const DLTensor *elements, size_t count) {
  TESSERA_STATEFUL_ENTRY(session);
  if (!elements && count > 0)
    return nullArgument("elements");
  return guard([&] {
    return fromStatus(session->session->setInputSequence(
                          index, std::span<const DLTensor>(elements, elements ? count : 0)),
                      TESSERA_STATUS_INVALID_ARGUMENT);
  });
}

tessera_status_t *tessera_session_get_output_sequence(tessera_session_t *session, size_t index,
                                                      const DLTensor **out_elements,
                                                      size_t *out_count) {
  TESSERA_STATEFUL_ENTRY(session);
  if (!out_elements)
    return nullArgument("out_elements");
  if (!out_count)
    return nullArgument("out_count");
  return guard([&] {
    return elementsInto(session->session->outputSequence(index), out_elements, out_count);
  });
}

tessera_status_t *tessera_session_set_output(tessera_session_t *session, size_t index,
                                             const DLTensor *tensor) {
  TESSERA_STATEFUL_ENTRY(session);
  return guard([&] {
    return fromStatus(session->session->setOutput(index, tensor), TESSERA_STATUS_INVALID_ARGUMENT);
  });
}

tessera_status_t *tessera_session_run(tessera_session_t *session) {
  TESSERA_STATEFUL_ENTRY(session);
  return guard([&] {
    Status st = session->session->run();
    if (st.ok())
      return static_cast<tessera_status_t *>(nullptr);
    // An input not set is the caller's (its error carries the code).
    return statusOf(statusCodeOf(st.error(), TESSERA_STATUS_INTERNAL), st.error().str());
  });
}

tessera_status_t *tessera_session_get_output(tessera_session_t *session, size_t index,
                                             const DLTensor **out_tensor) {
  TESSERA_STATEFUL_ENTRY(session);
  if (!out_tensor)
    return nullArgument("out_tensor");
  return guard([&] { return viewInto(session->session->output(index), out_tensor); });
}

tessera_status_t *tessera_session_set_input_checked(tessera_session_t *session, size_t index,
                                                    const DLTensor *tensor, size_t buffer_bytes) {
  TESSERA_STATEFUL_ENTRY(session);
  if (!tensor)
    return nullArgument("tensor");
  return guard([&]() -> tessera_status_t * {
    const std::string what = labelOf(session->session->model().inputs(), "input", index);
    if (tessera_status_t *s = shortBuffer(*tensor, buffer_bytes, what))
      return s;
    return tessera_session_set_input(session, index, tensor);
  });
}

tessera_status_t *tessera_session_set_input_by_name_checked(tessera_session_t *session,
                                                            const char *name,
                                                            const DLTensor *tensor,
                                                            size_t buffer_bytes) {
  TESSERA_STATEFUL_ENTRY(session);
  if (!name)
    return nullArgument("name");
  if (!tensor)
    return nullArgument("tensor");
  return guard([&]() -> tessera_status_t * {
    if (tessera_status_t *s = shortBuffer(*tensor, buffer_bytes, "input '" + std::string(name) + "'"))
      return s;
    return tessera_session_set_input_by_name(session, name, tensor);
  });
}

tessera_status_t *tessera_session_set_output_checked(tessera_session_t *session, size_t index,
                                                     const DLTensor *tensor, size_t buffer_bytes) {
  TESSERA_STATEFUL_ENTRY(session);
  return guard([&]() -> tessera_status_t * {
    const std::string what = labelOf(session->session->model().outputs(), "output", index);
    if (tensor)
      if (tessera_status_t *s = shortBuffer(*tensor, buffer_bytes, what))
        return s;
    return tessera_session_set_output(session, index, tensor);
  });
}

tessera_status_t *tessera_session_get_output_by_name(tessera_session_t *session, const char *name,
                                                     const DLTensor **out_tensor) {
  return atOutputNamed(session, name, [&](size_t index) {
    return tessera_session_get_output(session, index, out_tensor);
  });
}

tessera_status_t *tessera_session_set_output_by_name(tessera_session_t *session, const char *name,
                                                     const DLTensor *tensor) {
  return atOutputNamed(session, name, [&](size_t index) {
    return tessera_session_set_output(session, index, tensor);
  });
}

} // extern "C"

