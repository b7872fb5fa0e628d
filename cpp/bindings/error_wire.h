// The error convention of the binding (embind.cpp): every entry point runs its body in
// guarded(), which turns any C++ exception into "<ErrorClass>|<argument>|<message>" ("" on
// success), so no C++ exception ever reaches JS as a bare number; errors.js throwCoreError()
// rethrows it as the typed JS error.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "webattention/errors.h"

namespace webattention {
namespace bindings {

// "Class|argument|message": the error string the JS layer rethrows (errors.js throwCoreError(),
// which puts the C++ argument names into the caller's JS words).
inline std::string wire(const char* kind, const Error& e) {
  return std::string(kind) + "|" + e.argument() + "|" + e.what();
}

// The exception being handled as that error string (called from a catch block only). One
// function for every entry point, out of line: inlined into each, its catch clauses were most of
// the code V8 compiles for an entry point's first call.
[[gnu::noinline, gnu::cold]] inline std::string current_error() {
  try {
    throw;
  } catch (const ShapeError& e) {
    return wire("ShapeError", e);
  } catch (const StateDictError& e) {
    return wire("StateDictError", e);
  } catch (const ConfigError& e) {
    return wire("ConfigError", e);
  } catch (const MemoryError& e) {
    return wire("MemoryError", e);
  } catch (const CacheError& e) {
    return wire("CacheError", e);
  } catch (const std::bad_alloc&) {
    return "MemoryError||out of WASM memory";
  } catch (const std::exception& e) {
    return std::string("WebAttentionError||") + e.what();
  }
}

// Runs `body` and turns any exception into the error string the JS layer rethrows.
template <typename F>
std::string guarded(F&& body) {
  try {
    body();
    return "";
  } catch (...) {
    return current_error();
  }
}

}  // namespace bindings
}  // namespace webattention
