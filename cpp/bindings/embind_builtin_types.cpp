// Embind's built-in types, only those the binding's signatures use (embind.cpp, binding_objects.h):
// void, bool, int, unsigned long (std::uintptr_t and std::size_t), double and std::string. Emscripten's own libembind registers
// 40 at every instantiation (std::wstring, std::u16string, std::u32string, emscripten::val,
// 64-bit integers and 21 memory_views besides), each a registration in JS at every cold start,
// and their converters are glue that V8 compiles there. Defining both of its symbols here keeps
// the linker from taking libembind's bind.o at all (-lembind still brings Embind's JS runtime).
// A binding that starts to use one of the types left out fails at its first call with Embind's
// UnboundTypeError naming the type: register it here too. Mirrors Emscripten 3.1.6's
// system/lib/embind/bind.cpp, the toolchain the package is built with.
#include <emscripten/bind.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <typeinfo>

namespace {

using namespace emscripten::internal;

template <typename T>
void register_integer(const char* name) {
  _embind_register_integer(TypeID<T>::get(), name, sizeof(T), std::numeric_limits<T>::min(),
                           std::numeric_limits<T>::max());
}

template <typename T>
void register_float(const char* name) {
  _embind_register_float(TypeID<T>::get(), name, sizeof(T));
}

}  // namespace

extern "C" {

// Embind's JS asks for a type's name for its error messages (an unbound type); exported by
// CMakeLists.txt.
// Without type names, the type_info's address in hex, written by hand: snprintf("%p") would link
// printf's formatting code (~7 KB of .wasm) for this one message.
const char* __getTypeName(const std::type_info* ti) {
  if (emscripten::has_unbound_type_names) return strdup(ti->name());
  char str[2 + 2 * sizeof(std::uintptr_t) + 1] = "0x";
  const auto address = reinterpret_cast<std::uintptr_t>(ti);
  for (std::size_t i = 0; i < 2 * sizeof address; ++i) {
    str[2 + i] = "0123456789abcdef"[(address >> (4 * (2 * sizeof address - 1 - i))) & 0xf];
  }
  str[sizeof str - 1] = '\0';
  return strdup(str);
}

// libembind's name for it, run at instantiation like libembind's.
__attribute__((constructor)) void __embind_register_native_and_builtin_types() {
  _embind_register_void(TypeID<void>::get(), "void");
  _embind_register_bool(TypeID<bool>::get(), "bool", sizeof(bool), true, false);
  register_integer<signed int>("int");
  register_integer<unsigned long>("unsigned long");
  register_float<double>("double");
  _embind_register_std_string(TypeID<std::string>::get(), "std::string");
}

}  // extern "C"
