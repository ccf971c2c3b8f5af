//===- runtime/session_shared.cpp - Session::runShared and its pool ---------===//
//
// Session::runShared runs each call in state of its own: a Session of the
// same model and thread count leased from the session's pool (made when
// every one is busy, kept for later calls) and held by the RunResult until
// it goes. See session.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/session.h"
#include "runtime/session_internal.h"

#include <fmt/format.h>

#include <mutex>

namespace tessera::runtime {

namespace detail {

/// runShared's states: sessions of the same model and thread count, free
/// for the next call (made when every one is busy).
struct SessionPool {
  std::shared_ptr<const LoadedModel> model;
  SessionOptions options;
  std::mutex mutex;
  std::vector<std::unique_ptr<Session>> free;

  Expected<std::unique_ptr<Session>> acquire() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!free.empty()) {
        std::unique_ptr<Session> s = std::move(free.back());
        free.pop_back();
        return s;
      }
    }
    return Session::create(model, options);
  }
  void release(std::unique_ptr<Session> s) {
    std::lock_guard<std::mutex> lock(mutex);
    free.push_back(std::move(s));
  }
};

std::shared_ptr<SessionPool> makeSessionPool(std::shared_ptr<const LoadedModel> model,
                                             SessionOptions options) {
  auto pool = std::make_shared<SessionPool>();
  pool->model = std::move(model);
  pool->options = options;
  return pool;
}

} // namespace detail

Expected<std::unique_ptr<RunResult>> Session::runShared(std::span<const DLTensor> inputs) const {
  const auto &infos = impl_->model->inputs();
  if (inputs.size() != infos.size())
    return Error::format("{} input{} given; the model has {}", inputs.size(),
                         inputs.size() == 1 ? "" : "s", infos.size())
        .setCode(ErrorCode::InvalidArgument);
  TS_ASSIGN_OR_RETURN(std::unique_ptr<Session> state, pool_->acquire());
  // Back to the pool however this ends: a RunResult, or an error.
  std::unique_ptr<RunResult> result(new RunResult(pool_, std::move(state)));
  Session &s = *result->state_;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (infos[i].sequence)
      return Error::format("{} is a sequence ({}): bind it with setInputSequence and run()",
                           infos[i].name.empty() ? fmt::format("input {}", i)
                                                 : fmt::format("input '{}'", infos[i].name),
                           infos[i].str())
          .setCode(ErrorCode::InvalidArgument);
    // Whatever binding refuses is the caller's input.
    if (Status bound = s.setInput(i, inputs[i]); !bound.ok())
      return std::move(bound).error().setCode(ErrorCode::InvalidArgument);
  }
  TS_RETURN_IF_ERROR(s.run());
  return result;
}

RunResult::RunResult(std::shared_ptr<detail::SessionPool> pool, std::unique_ptr<Session> state)
    : pool_(std::move(pool)), state_(std::move(state)) {}

RunResult::~RunResult() {
  if (state_)
    pool_->release(std::move(state_));
}

Expected<const DLTensor *> RunResult::output(size_t index) const { return state_->output(index); }

Expected<std::span<const DLTensor>> RunResult::outputSequence(size_t index) const {
  return state_->outputSequence(index);
}

const LoadedModel &RunResult::model() const { return state_->model(); }

} // namespace tessera::runtime
