// Status and Result<T>: how errors cross subsystem boundaries (no exceptions).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace kf {

// A success, or an error with a message written for the user (what, where, how to fix).
class Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(std::string message) { return Status(std::move(message)); }

  bool is_ok() const { return !message_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const std::string& message() const {
    static const std::string kEmpty;
    return message_ ? *message_ : kEmpty;
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

// A value or an error message.
template <typename T>
class Result {
 public:
  Result(T value) : data_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {}  // NOLINT: must hold an error

  static Result error(std::string message) { return Result(Status::error(std::move(message))); }

  bool is_ok() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return is_ok(); }

  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  Status status() const { return is_ok() ? Status::ok() : std::get<Status>(data_); }
  const std::string& message() const {
    static const std::string kEmpty;
    return is_ok() ? kEmpty : std::get<Status>(data_).message();
  }

 private:
  std::variant<T, Status> data_;
};

}  // namespace kf

// Returns early from a function returning Status or Result<U> when `expr` (a Status) fails.
#define KF_RETURN_IF_ERROR(expr)                \
  do {                                          \
    ::kf::Status kf_status_ = (expr);           \
    if (!kf_status_.is_ok()) return kf_status_; \
  } while (0)
