# The precompiled torch header, and which translation units get it.
#
# Loading the 580 MB header costs ~5 s a file, and torch's many operator
# overloads slow down every `<<` and `==` of the file after it: a file that never
# includes torch compiled with it takes 2-3x as long as without (submit_htcondor.cpp:
# 22 s against 10 s). So only the files whose includes reach torch get it; the
# others of the same target skip it. The scan is only a speed hint: a file put on
# the wrong side still compiles, since each file includes what it uses.

# salt_torch_pch(NAME): an object library that builds the precompiled torch header
# with the flags of the current directory (e.g. the tests' -O0: GCC only uses a
# precompiled header built with the same optimisation level).
function(salt_torch_pch name)
  add_library(${name} OBJECT ${PROJECT_SOURCE_DIR}/lib/pch/pch_anchor.cpp)
  target_link_libraries(${name} PUBLIC ${TORCH_LIBRARIES})
  target_compile_options(${name} PUBLIC ${SALT_TORCH_CXX_FLAGS})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/lib)
  # Only what nearly every torch file needs, named with <>: CMake's generated
  # cmake_pch.hxx then holds no path of this checkout, which ccache needs to reuse
  # another checkout's compiles (cmake/ccache_launcher.sh).
  target_precompile_headers(${name} PUBLIC <torch/torch.h> <map> <memory> <string> <vector>)
endfunction()

# Folders quoted includes resolve against after the including file's own folder,
# in the order of the include paths of the targets.
set(SALT_INCLUDE_ROOTS ${PROJECT_SOURCE_DIR}/tests ${PROJECT_SOURCE_DIR}/lib)

# salt_reaches_torch(FILE OUT): OUT is TRUE when FILE includes <torch/...>, <ATen/...>
# or <c10/...>, directly or through the quoted includes of our own headers.
# Answers are cached per file for the whole configure run.
function(salt_reaches_torch file out)
  get_property(known GLOBAL PROPERTY "salt_torch:${file}" SET)
  if(known)
    get_property(answer GLOBAL PROPERTY "salt_torch:${file}")
    set(${out} ${answer} PARENT_SCOPE)
    return()
  endif()
  set_property(GLOBAL PROPERTY "salt_torch:${file}" FALSE)  # include cycles end here
  file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  get_filename_component(own_dir ${file} DIRECTORY)
  set(answer FALSE)
  foreach(line IN LISTS includes)
    if(answer)
      break()
    endif()
    if(line MATCHES "<(torch|ATen|c10)/")
      set(answer TRUE)
    elseif(line MATCHES "\"([^\"]+)\"")
      set(name ${CMAKE_MATCH_1})
      foreach(root ${own_dir} ${SALT_INCLUDE_ROOTS})
        if(EXISTS ${root}/${name})
          get_filename_component(header ${root}/${name} ABSOLUTE)
          salt_reaches_torch(${header} answer)
          break()
        endif()
      endforeach()
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY "salt_torch:${file}" ${answer})
  set(${out} ${answer} PARENT_SCOPE)
endfunction()

# salt_use_torch(TARGET [PCH pch_target]): links torch and gives the precompiled
# header (salt_pch unless named) to the target's files that reach torch. Call it
# after the target's sources are all added.
function(salt_use_torch target)
  cmake_parse_arguments(ARG "" "PCH" "" ${ARGN})
  if(NOT ARG_PCH)
    set(ARG_PCH salt_pch)
  endif()
  target_link_libraries(${target} PUBLIC ${TORCH_LIBRARIES})
  target_compile_options(${target} PUBLIC ${SALT_TORCH_CXX_FLAGS})
  target_precompile_headers(${target} REUSE_FROM ${ARG_PCH})
  salt_skip_pch_without_torch(${target})
endfunction()

# salt_skip_pch_without_torch(TARGET): the target's files that never include torch
# are compiled without the precompiled header.
function(salt_skip_pch_without_torch target)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  foreach(source IN LISTS sources)
    get_filename_component(path ${source} ABSOLUTE BASE_DIR ${source_dir})
    if(path MATCHES "\\.cpp$" AND EXISTS ${path})
      salt_reaches_torch(${path} reaches)
      if(NOT reaches)
        set_source_files_properties(${path} TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
      endif()
    endif()
  endforeach()
endfunction()
