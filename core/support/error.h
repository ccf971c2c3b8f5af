//===- support/error.h - Errors as values ----------------------*- C++ -*-===//
//
// Errors inside the core are values, never asserts or aborts. An Error carries
// a message and a stack of context lines that callers add as the error rises
// ("while importing node 'conv_3'"). Expected<T> holds either a T or an Error;
// Status is Expected<void>.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <fmt/format.h>

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tessera {

/// What kind of failure an Error reports, for interfaces that hand callers a
/// code (the C API's tessera_status_code_t): given where the error is made,
/// and kept as context is added. Unknown leaves the choice to the interface
/// (a load's default is data loss, a run's an internal fault).
enum class ErrorCode { Unknown, InvalidArgument, NotFound, FailedPrecondition };

class Error {
public:
  Error() = default;
  explicit Error(std::string message) : message_(std::move(message)) {}

  template <typename... Args>
  static Error format(fmt::format_string<Args...> f, Args &&...args) {
    return Error(fmt::format(f, std::forward<Args>(args)...));
  }

  /// The innermost message, without context.
  const std::string &message() const { return message_; }
  /// The kind of failure (ErrorCode), Unknown unless set.
  ErrorCode code() const { return code_; }
  Error &setCode(ErrorCode code) & {
    code_ = code;
    return *this;
  }
  Error &&setCode(ErrorCode code) && {
    code_ = code;
    return std::move(*this);
  }
  /// Context lines, outermost last.
  const std::vector<std::string> &context() const { return context_; }

  /// Adds a context line ("while ...") that is printed before the message.
  Error &addContext(std::string line) {
    context_.push_back(std::move(line));
    return *this;
  }

  /// Adds the context line that says where the error is (an ONNX node, a
  /// position in a file) and marks the error as located, so that a caller
  /// that would add a location of its own sees that it has one.
  Error &addLocation(std::string line) {
    located_ = true;
    return addContext(std::move(line));
  }
  /// Sets the position in a text file the error is about, "FILE:LINE:COL"
  /// (the text IR's parser, a pass about a node parsed from text); str()
  /// starts with it, the way a compiler's diagnostics do. The innermost
  /// position wins (a later call changes nothing), and an empty one is
  /// ignored. Marks the error as located.
  Error &setPosition(std::string position) {
    if (position_.empty() && !position.empty()) {
      position_ = std::move(position);
      located_ = true;
    }
    return *this;
  }
  const std::string &position() const { return position_; }
  /// Whether addLocation() or setPosition() was called.
  bool located() const { return located_; }
  /// "FILE:LINE:COL: outer: inner: message", outermost context first.
  std::string str() const {
    std::string out;
    if (!position_.empty()) {
      out += position_;
      out += ": ";
    }
    for (auto it = context_.rbegin(); it != context_.rend(); ++it) {
      out += *it;
      out += ": ";
    }
    out += message_;
    return out;
  }

private:
  std::string message_;
  std::vector<std::string> context_;
  std::string position_;
  bool located_ = false;
  ErrorCode code_ = ErrorCode::Unknown;
};

/// Either a value of type T or an Error. Checked access only.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : v_(std::move(value)) {}
  Expected(Error error) : v_(std::move(error)) {}
  template <typename U>
    requires(std::is_convertible_v<U, T> && !std::is_same_v<std::decay_t<U>, T> &&
             !std::is_same_v<std::decay_t<U>, Error>)
  Expected(U &&value) : v_(T(std::forward<U>(value))) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T &value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T &value() const & {
    assert(ok());
    return std::get<0>(v_);
  }
  T &&value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T &&operator*() && { return std::move(*this).value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

  Error &error() & {
    assert(!ok());
    return std::get<1>(v_);
  }
  const Error &error() const & {
    assert(!ok());
    return std::get<1>(v_);
  }
  Error &&error() && {
    assert(!ok());
    return std::get<1>(std::move(v_));
  }

  /// Adds context to the error, if any, and passes the result on.
  Expected &&withContext(std::string line) && {
    if (!ok())
      std::get<1>(v_).addContext(std::move(line));
    return std::move(*this);
  }
  /// Adds a location to the error (Error::addLocation), if any.
  Expected &&withLocation(std::string line) && {
    if (!ok())
      std::get<1>(v_).addLocation(std::move(line));
    return std::move(*this);
  }
  /// Sets the error's position (Error::setPosition), if any.
  Expected &&withPosition(std::string position) && {
    if (!ok())
      std::get<1>(v_).setPosition(std::move(position));
    return std::move(*this);
  }

private:
  std::variant<T, Error> v_;
};

template <> class [[nodiscard]] Expected<void> {
public:
  Expected() = default;
  Expected(Error error) : error_(std::move(error)) {}

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  Error &error() & { return *error_; }
  const Error &error() const & { return *error_; }
  Error &&error() && { return std::move(*error_); }
  Expected &&withContext(std::string line) && {
    if (error_)
      error_->addContext(std::move(line));
    return std::move(*this);
  }
  Expected &&withLocation(std::string line) && {
    if (error_)
      error_->addLocation(std::move(line));
    return std::move(*this);
  }
  Expected &&withPosition(std::string position) && {
    if (error_)
      error_->setPosition(std::move(position));
    return std::move(*this);
  }

private:
  std::optional<Error> error_;
};

using Status = Expected<void>;

inline Status okStatus() { return Status(); }

} // namespace tessera

#define TS_CONCAT_IMPL(a, b) a##b
#define TS_CONCAT(a, b) TS_CONCAT_IMPL(a, b)

/// Evaluates a Status expression and returns its error from the enclosing
/// function if it failed.
#define TS_RETURN_IF_ERROR(expr)                                               \
  do {                                                                         \
    auto _ts_status = (expr);                                                  \
    if (!_ts_status.ok())                                                      \
      return std::move(_ts_status).error();                                    \
  } while (0)

/// `TS_ASSIGN_OR_RETURN(auto x, makeX())`: binds the value or returns the error.
#define TS_ASSIGN_OR_RETURN(decl, expr)                                        \
  TS_ASSIGN_OR_RETURN_IMPL(TS_CONCAT(_ts_expected_, __LINE__), decl, expr)
#define TS_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr)                              \
  auto tmp = (expr);                                                           \
  if (!tmp.ok())                                                               \
    return std::move(tmp).error();                                             \
  decl = std::move(tmp).value()
