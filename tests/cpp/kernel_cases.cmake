# The kernel-level cases of tests/cases/kernel_cases.json as a GoogleTest executable for the
# kernel family the build has: `scalar` natively and in the scalar module, the SIMD128 kernels
# (named `relaxed` in a relaxed-SIMD module) in the others. Included by CMakeLists.txt inside
# its test block.
#
# The list becomes a header at configure time (kernel_cases.h in the build folder): the WASM
# tests run under node with no mapping of the repository's files. Per op of the list's "ops"
# table, a struct of its fields (camelCase names in snake_case) and `k<Op>Cases`, its test-mode
# cases; `kTypeSets` the type sets. A field the op does not have fails the configure, as
# tests/cases/cases.mjs fails the JS runners.

set(kernel_case_common_fields op mode name benches quick)

# A JSON value of schema type `type` (`text`, as string(JSON GET) returns it) as C++ source.
function(kernel_case_value type text out)
  if(type STREQUAL "bool")
    if(text)
      set(text true)
    else()
      set(text false)
    endif()
  elseif(type STREQUAL "string")
    string(REPLACE "\\" "\\\\" text "${text}")
    string(REPLACE "\"" "\\\"" text "${text}")
    set(text "\"${text}\"")
  elseif(type STREQUAL "ints")
    string(REGEX REPLACE "[][\n]" "" text "${text}")
    set(text "{${text}}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# kvHeads -> kv_heads; L stays L.
function(kernel_case_member field out)
  string(REGEX REPLACE "([a-z0-9])([A-Z])" "\\1_\\2" snake "${field}")
  if(NOT snake STREQUAL field)
    string(TOLOWER "${snake}" snake)
  endif()
  set(${out} "${snake}" PARENT_SCOPE)
endfunction()

# The struct and the test-mode cases of one op.
function(kernel_case_op list op out)
  set(cpp_types_int int)
  set(cpp_types_float double)
  set(cpp_types_bool bool)
  set(cpp_types_string std::string)
  set(cpp_types_ints std::vector<int>)
  string(SUBSTRING "${op}" 0 1 first)
  string(TOUPPER "${first}" first)
  string(SUBSTRING "${op}" 1 -1 rest)
  set(type_name "${first}${rest}Case")
  string(JSON field_count LENGTH "${list}" ops ${op})
  math(EXPR last_field "${field_count} - 1")
  set(fields "")
  set(text "struct ${type_name} {\n  std::string name;\n")
  foreach(f RANGE ${last_field})
    string(JSON field MEMBER "${list}" ops ${op} ${f})
    string(JSON type GET "${list}" ops ${op} ${field} 0)
    kernel_case_member(${field} member)
    string(APPEND text "  ${cpp_types_${type}} ${member};\n")
    list(APPEND fields ${field})
  endforeach()
  string(APPEND text "};\ninline const std::vector<${type_name}> k${first}${rest}Cases = {\n")
  string(JSON case_count LENGTH "${list}" cases)
  math(EXPR last_case "${case_count} - 1")
  foreach(i RANGE ${last_case})
    string(JSON c GET "${list}" cases ${i})
    string(JSON case_op GET "${c}" op)
    string(JSON mode GET "${c}" mode)
    if(NOT case_op STREQUAL op OR NOT mode STREQUAL "test")
      continue()
    endif()
    string(JSON name GET "${c}" name)
    string(JSON member_count LENGTH "${c}")
    math(EXPR last_member "${member_count} - 1")
    foreach(m RANGE ${last_member})
      string(JSON given MEMBER "${c}" ${m})
      if(NOT given IN_LIST fields AND NOT given IN_LIST kernel_case_common_fields)
        message(FATAL_ERROR "tests/cases/kernel_cases.json: ${op} case '${name}': unknown field '${given}'")
      endif()
    endforeach()
    kernel_case_value(string "${name}" value)
    set(values "${value}")
    foreach(field ${fields})
      string(JSON type GET "${list}" ops ${op} ${field} 0)
      string(JSON value ERROR_VARIABLE missing GET "${c}" ${field})
      if(missing)
        string(JSON default_type TYPE "${list}" ops ${op} ${field} 1)
        if(default_type STREQUAL "NULL")
          message(FATAL_ERROR "tests/cases/kernel_cases.json: ${op} case '${name}': missing '${field}'")
        endif()
        string(JSON value GET "${list}" ops ${op} ${field} 1)
      endif()
      kernel_case_value(${type} "${value}" value)
      string(APPEND values ", ${value}")
    endforeach()
    string(APPEND text "    {${values}},\n")
  endforeach()
  string(APPEND text "};\n")
  # Printed by name (GoogleTest prints a failing case's parameters).
  string(APPEND text "inline std::ostream& operator<<(std::ostream& os, const ${type_name}& c) {\n")
  string(APPEND text "  return os << \"'\" << c.name << \"'\";\n}\n\n")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# Writes `header` from the list at `json`; re-run when the list changes.
function(kernel_cases_header json header)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${json}")
  file(READ "${json}" list)
  set(text "// Generated from tests/cases/kernel_cases.json by tests/cpp/kernel_cases.cmake at configure\n")
  string(APPEND text "// time: edit the list, not this file.\n#pragma once\n\n#include <ostream>\n#include <string>\n#include <vector>\n\n")
  string(APPEND text "namespace webattention::cases {\n\nstruct TypeSet {\n  std::string weights, kv, io, act;\n};\n")
  string(APPEND text "inline const std::vector<TypeSet> kTypeSets = {\n")
  string(JSON set_count LENGTH "${list}" typeSets)
  math(EXPR last_set "${set_count} - 1")
  foreach(i RANGE ${last_set})
    string(JSON weights GET "${list}" typeSets ${i} weights)
    string(JSON kv GET "${list}" typeSets ${i} kv)
    string(JSON io GET "${list}" typeSets ${i} io)
    string(JSON act GET "${list}" typeSets ${i} act)
    string(APPEND text "    {\"${weights}\", \"${kv}\", \"${io}\", \"${act}\"},\n")
  endforeach()
  string(APPEND text "};\ninline std::ostream& operator<<(std::ostream& os, const TypeSet& t) {\n")
  string(APPEND text "  return os << \"weights \" << t.weights << \", kv \" << t.kv << \", io \" << t.io << \", act \" << t.act;\n}\n\n")
  string(JSON op_count LENGTH "${list}" ops)
  math(EXPR last_op "${op_count} - 1")
  foreach(i RANGE ${last_op})
    string(JSON op MEMBER "${list}" ops ${i})
    kernel_case_op("${list}" ${op} op_text)
    string(APPEND text "${op_text}")
  endforeach()
  string(APPEND text "}  // namespace webattention::cases\n")
  file(WRITE "${header}.new" "${text}")
  # Rewritten only when it changes, so that a reconfigure does not rebuild the tests.
  file(COPY_FILE "${header}.new" "${header}" ONLY_IF_DIFFERENT)
endfunction()

kernel_cases_header("${PROJECT_SOURCE_DIR}/tests/cases/kernel_cases.json"
                    "${CMAKE_BINARY_DIR}/kernel_cases/kernel_cases.h")

# The family: the core as built (WEBATTENTION_KERNEL_FAMILY): the scalar kernels natively and in
# the scalar module, the SIMD128 ones in the SIMD modules (`relaxed` in the relaxed ones). The
# scalar kernels as WASM are the scalar module's to check: a second core of them in each SIMD
# build, for code no SIMD module ships, was about 90 s of the 325 s of compiling and linking in
# each of four builds.
set(family ${WEBATTENTION_KERNEL_FAMILY})
set(target kernel_cases_${family})
add_executable(${target}
  tests/cpp/kernel_cases_test.cpp
  tests/cpp/kernel_cases_cache_test.cpp
  tests/cpp/kernel_reference.cpp
  cpp/reference/storage_reference.cpp)
target_include_directories(${target} PRIVATE "${CMAKE_BINARY_DIR}/kernel_cases" cpp/include cpp)
target_compile_definitions(${target} PRIVATE WEBATTENTION_KERNEL_FAMILY="${family}")
target_link_libraries(${target} PRIVATE webattention_core)
webattention_gtest(${target})
