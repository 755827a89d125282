# p2genConfig.cmake -- p2gen's CMake package: find_package(p2gen) gives p2gen_add_spec().
#
#   cmake -Dp2gen_DIR="$(p2gen cmake-dir)" ...          (or CMAKE_PREFIX_PATH)
#
#   find_package(p2gen REQUIRED)
#   p2gen_add_spec(bank bank.p2)                   # a static library target `bank`
#   target_link_libraries(app PRIVATE bank)        # its include directory comes with it
#
# p2gen_add_spec(<target> <spec.p2> [PREFIX <name>] [OUTPUT_DIR <dir>])
#   Runs `p2gen build --no-compile` at build time whenever the spec (or p2gen) changed,
#   writing <prefix>.h and <prefix>.c (prefix: the spec file's name unless PREFIX) into
#   OUTPUT_DIR (default ${CMAKE_CURRENT_BINARY_DIR}/p2gen/<target>), and makes <target>, a
#   static library of <prefix>.c compiled by CMake's C compiler with the project's flags,
#   which links p2gen::runtime (the runtime every spec shares, built once per project) and
#   puts OUTPUT_DIR on its users' include path. To compile the API into a file of your own
#   as static inline functions, define <PREFIX>_INLINE for it
#   (target_compile_definitions(app PRIVATE BANK_INLINE)); still link <target>.
#
# Variables: P2GEN_EXECUTABLE (the p2gen command; found on PATH or beside this package's
# Python environment, or set it), P2GEN_RUNTIME_DIR (p2_runtime.c and p2_runtime.h).
include_guard(GLOBAL)

get_filename_component(_p2gen_package "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
# installed: p2gen/cmake beside p2gen/runtime; a checkout (pip install -e): generator/cmake
# and runtime/ side by side
find_path(P2GEN_RUNTIME_DIR p2_runtime.c
    PATHS "${_p2gen_package}/runtime" "${_p2gen_package}/../runtime"
    NO_DEFAULT_PATH DOC "p2gen's runtime sources (p2_runtime.c, p2_runtime.h)")
if(NOT P2GEN_RUNTIME_DIR)
    set(p2gen_FOUND FALSE)
    set(p2gen_NOT_FOUND_MESSAGE "p2gen: no p2_runtime.c beside ${CMAKE_CURRENT_LIST_DIR}")
    return()
endif()

# site-packages/p2gen/cmake -> the environment's bin directory (a virtualenv not activated)
find_program(P2GEN_EXECUTABLE p2gen
    HINTS "${_p2gen_package}/../../../../bin" "${_p2gen_package}/../../../bin"
    DOC "the p2gen command")
if(NOT P2GEN_EXECUTABLE)
    set(p2gen_FOUND FALSE)
    set(p2gen_NOT_FOUND_MESSAGE "p2gen: the p2gen command is not on PATH: set P2GEN_EXECUTABLE")
    return()
endif()

get_property(_p2gen_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
if(NOT "C" IN_LIST _p2gen_languages)
    enable_language(C)            # the generated code and the runtime are C
endif()

if(NOT TARGET p2gen_runtime)
    add_library(p2gen_runtime STATIC "${P2GEN_RUNTIME_DIR}/p2_runtime.c")
    target_include_directories(p2gen_runtime PUBLIC "${P2GEN_RUNTIME_DIR}")
    target_compile_features(p2gen_runtime PRIVATE c_std_11)
    set_target_properties(p2gen_runtime PROPERTIES POSITION_INDEPENDENT_CODE ON)
    add_library(p2gen::runtime ALIAS p2gen_runtime)
endif()

function(p2gen_add_spec target spec)
    cmake_parse_arguments(P2 "" "PREFIX;OUTPUT_DIR" "" ${ARGN})
    if(P2_UNPARSED_ARGUMENTS)
        message(FATAL_ERROR "p2gen_add_spec: unknown arguments ${P2_UNPARSED_ARGUMENTS}")
    endif()
    get_filename_component(spec "${spec}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${spec}")
        message(FATAL_ERROR "p2gen_add_spec: no spec ${spec}")
    endif()
    if(NOT P2_PREFIX)
        get_filename_component(P2_PREFIX "${spec}" NAME_WE)
    endif()
    if(NOT P2_OUTPUT_DIR)
        set(P2_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/p2gen/${target}")
    endif()
    set(header "${P2_OUTPUT_DIR}/${P2_PREFIX}.h")
    set(source "${P2_OUTPUT_DIR}/${P2_PREFIX}.c")
    add_custom_command(
        OUTPUT "${header}" "${source}"
        COMMAND "${P2GEN_EXECUTABLE}" build -q --no-compile --prefix "${P2_PREFIX}"
                -o "${P2_OUTPUT_DIR}" "${spec}"
        # p2gen leaves files whose text did not change untouched: mark them made
        COMMAND "${CMAKE_COMMAND}" -E touch_nocreate "${header}" "${source}"
        DEPENDS "${spec}" "${P2GEN_EXECUTABLE}"
        COMMENT "p2gen: ${P2_PREFIX}.h and ${P2_PREFIX}.c from ${spec}"
        VERBATIM)
    add_library(${target} STATIC "${source}" "${header}")
    target_include_directories(${target} PUBLIC "${P2_OUTPUT_DIR}")
    target_link_libraries(${target} PUBLIC p2gen::runtime)
    target_compile_features(${target} PRIVATE c_std_11)
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON
                          P2GEN_PREFIX "${P2_PREFIX}" P2GEN_SPEC "${spec}")
endfunction()

set(p2gen_FOUND TRUE)
