//===- runtime/c_api_run.cpp - The C API's runs from many threads, profiles ===//
//
// tessera_session_run_with and its results (a session shared by threads:
// runtime.h's THREADS), and a session's profile (PROFILING). The rest of
// the C API is c_api.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/c_api_internal.h"

using namespace tessera::capi;

tessera_status_t *tessera_session_set_profiling(tessera_session_t *session, int enabled) {
  TESSERA_STATEFUL_ENTRY(session);
  return guard([&]() -> tessera_status_t * {
    session->session->setProfiling(enabled != 0);
    return nullptr;
  });
}

tessera_status_t *tessera_session_get_profile(tessera_session_t *session,
                                              const tessera_profile_record_t **out_records,
                                              size_t *out_count) {
  TESSERA_STATEFUL_ENTRY(session);
  if (!out_records || !out_count)
    return nullArgument(!out_records ? "out_records" : "out_count");
  const auto records = session->session->profile();
  *out_records = records.data();
  *out_count = records.size();
  return nullptr;
}

namespace {

tessera_status_t *badResult(const tessera_run_result_t *r) {
  return badHandle(r, "run result", "tessera_session_run_with");
}

} // namespace

tessera_status_t *tessera_session_run_with(tessera_session_t *session, const DLTensor *inputs,
                                           size_t num_inputs, tessera_run_result_t **out_result) {
  if (tessera_status_t *bad = badSession(session)) // no InUse: many threads at once
    return bad;
  if (!inputs && num_inputs > 0)
    return nullArgument("inputs");
  if (!out_result)
    return nullArgument("out_result");
  return guard([&]() -> tessera_status_t * {
    auto result =
        session->session->runShared(std::span<const DLTensor>(inputs, inputs ? num_inputs : 0));
    if (!result.ok()) {
      // Binding errors are the caller's (their errors carry the code); the
      // rest is a step's failure.
      return statusOf(statusCodeOf(result.error(), TESSERA_STATUS_INTERNAL),
                      result.error().str());
    }
    auto *r = new tessera_run_result{std::move(result).value()};
    liveHandles().add(r);
    *out_result = r;
    return nullptr;
  });
}

tessera_status_t *tessera_run_result_get_output(const tessera_run_result_t *result, size_t index,
                                                const DLTensor **out_tensor) {
  if (tessera_status_t *bad = badResult(result))
    return bad;
  if (!out_tensor)
    return nullArgument("out_tensor");
  return guard([&] { return viewInto(result->result->output(index), out_tensor); });
}

tessera_status_t *tessera_run_result_get_output_by_name(const tessera_run_result_t *result,
                                                        const char *name,
                                                        const DLTensor **out_tensor) {
  if (tessera_status_t *bad = badResult(result))
    return bad;
  if (!name)
    return nullArgument("name");
  return guard([&] {
    return atOutputNamedIn(result->result->model().outputs(), name, [&](size_t index) {
      return tessera_run_result_get_output(result, index, out_tensor);
    });
  });
}

tessera_status_t *tessera_run_result_get_output_sequence(const tessera_run_result_t *result,
                                                         size_t index,
                                                         const DLTensor **out_elements,
                                                         size_t *out_count) {
  if (tessera_status_t *bad = badResult(result))
    return bad;
  if (!out_elements || !out_count)
    return nullArgument(!out_elements ? "out_elements" : "out_count");
  return guard([&] {
    return elementsInto(result->result->outputSequence(index), out_elements, out_count);
  });
}

void tessera_run_result_release(tessera_run_result_t *result) {
  if (result && liveHandles().remove(result))
    delete result;
}
