// Errors thrown by the public C++ API. Every message names the argument, what was expected and
// what was given, so the JS binding can pass it on unchanged.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace webattention {

// Base of every error the library throws on bad input. `argument` is the name of the offending
// argument in the public API ("query", "attn_mask", "in_proj_weight", ...).
class Error : public std::invalid_argument {
 public:
  Error(std::string argument, const std::string& message)
      : std::invalid_argument(message), argument_(std::move(argument)) {}
  const std::string& argument() const noexcept { return argument_; }

 private:
  std::string argument_;
};

// A tensor or parameter whose shape does not match what the call requires.
class ShapeError : public Error {
 public:
  using Error::Error;
};

// A configuration value (embed_dim, num_heads, ...) that is out of range or inconsistent.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A state-dict entry that is missing, unknown or misshaped.
class StateDictError : public Error {
 public:
  using Error::Error;
};

// A request whose sizes this build cannot address (a wasm32 size_t is 32 bits): refused before
// any size is computed in size_t, so nothing wraps.
class MemoryError : public Error {
 public:
  using Error::Error;
};

// A KV cache used wrongly: appended past its max_length, or used with a module it was not made by.
class CacheError : public Error {
 public:
  using Error::Error;
};

// "[2, 5, 16]": shapes are printed the same way everywhere, in C++ and in JS.
std::string format_shape(const std::vector<int>& shape);

}  // namespace webattention
