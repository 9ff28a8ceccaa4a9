# The unity build (SALT_UNITY_BUILD): each library compiles its files in batches of
# 8, one translation unit each, which parse their headers (torch's above all) and
# generate the headers' inline functions once (a cold build of the libraries: 411 s
# of CPU -> 196 s where measured). CMake's own UNITY_BUILD writes each member's
# absolute path into its batch files, so a batch compiled in one checkout never hits
# ccache in another (a fresh CI clone would rebuild every library); these batches
# name their members relative to lib/ (found through the library's include path)
# and are the same text in every checkout. Files that reach torch and files that do
# not are batched apart, so the latter keep compiling without the precompiled torch
# header (cmake/TorchPch.cmake). Names with internal linkage must then differ
# between the files of a library: tests/cmake/unity_names_test.py holds that.

# salt_unity_sources(NAME OUT FILES...): OUT is the batch files for FILES (absolute
# paths under this folder), written to <binary dir>/unity/ only when their text changes.
function(salt_unity_sources name out)
  set(torch_files)
  set(plain_files)
  foreach(file IN LISTS ARGN)
    salt_reaches_torch(${file} reaches)
    if(reaches)
      list(APPEND torch_files ${file})
    else()
      list(APPEND plain_files ${file})
    endif()
  endforeach()
  set(batches)
  foreach(kind torch plain)
    list(LENGTH ${kind}_files count)
    set(first 0)
    while(first LESS count)
      list(SUBLIST ${kind}_files ${first} 8 members)
      set(text "// A unity batch of ${name} (cmake/UnityBatches.cmake): these files as one translation unit.\n")
      foreach(member IN LISTS members)
        file(RELATIVE_PATH member ${CMAKE_CURRENT_SOURCE_DIR} ${member})
        string(APPEND text "#include \"${member}\"\n")
      endforeach()
      math(EXPR index "${first} / 8")
      set(batch ${CMAKE_CURRENT_BINARY_DIR}/unity/${name}_${kind}_${index}.cpp)
      file(CONFIGURE OUTPUT ${batch} CONTENT "${text}")
      list(APPEND batches ${batch})
      math(EXPR first "${first} + 8")
    endwhile()
  endforeach()
  set(${out} ${batches} PARENT_SCOPE)
endfunction()
