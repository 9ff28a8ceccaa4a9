# Run by ctest (cmake/GTestSuites.cmake): lists the GoogleTest executable's cases
# and writes one ctest test per suite, or per case for the suites in `per_case`
# ("*": all but the `unit` suites). Labels: `labels`, plus `unit` for the suites in `unit`. `props`: more
# set_tests_properties arguments, already quoted.

function(salt_write_gtest_suites exe tests_file per_case labels unit work_dir props)
  execute_process(COMMAND "${exe}" --gtest_list_tests
                  WORKING_DIRECTORY "${work_dir}"
                  TIMEOUT 60
                  OUTPUT_VARIABLE listing
                  ERROR_VARIABLE errors
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${exe} --gtest_list_tests failed (${rc}): ${errors}")
  endif()
  string(REPLACE ";" "\\;" listing "${listing}")
  string(REPLACE "\n" ";" lines "${listing}")
  set(out "")
  set(suite "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE " *#.*" "" line "${line}")  # "  # GetParam() = ..." / "  # TypeParam = ..."
    if(line STREQUAL "")
      continue()
    endif()
    if(NOT line MATCHES "^ " AND NOT line MATCHES "\\.$")
      continue()  # "Running main() from gtest_main.cc"
    endif()
    if(NOT line MATCHES "^ ")
      string(REGEX REPLACE "\\.$" "" suite "${line}")
      string(REGEX REPLACE "^.*/" "" bare "${suite}")
      set(split FALSE)
      set(suite_labels "${labels}")
      # list(FIND), not if(IN_LIST): ctest reads this under CMake's oldest policies
      list(FIND unit "${bare}" in_unit)
      if(in_unit GREATER -1)
        list(APPEND suite_labels unit)
      endif()
      list(FIND per_case "${bare}" bare_split)
      list(FIND per_case "${suite}" suite_split)
      if((per_case STREQUAL "*" AND in_unit EQUAL -1) OR bare_split GREATER -1 OR suite_split GREATER -1)
        set(split TRUE)
      endif()
      if(NOT split AND NOT bare MATCHES "^DISABLED_")
        string(APPEND out "add_test([==[${suite}]==] [==[${exe}]==] [==[--gtest_filter=${suite}.*]==])\n"
                          "set_tests_properties([==[${suite}]==] PROPERTIES WORKING_DIRECTORY [==[${work_dir}]==] LABELS [==[${suite_labels}]==]${props})\n")
      endif()
      continue()
    endif()
    string(STRIP "${line}" case)
    if(NOT split OR case MATCHES "^DISABLED_")
      continue()
    endif()
    set(name "${suite}.${case}")
    # GoogleTest prints "[  SKIPPED ]" for GTEST_SKIP: ctest reports the case skipped.
    string(APPEND out "add_test([==[${name}]==] [==[${exe}]==] [==[--gtest_filter=${name}]==])\n"
                      "set_tests_properties([==[${name}]==] PROPERTIES WORKING_DIRECTORY [==[${work_dir}]==] "
                      "LABELS [==[${suite_labels}]==] SKIP_REGULAR_EXPRESSION [==[\\[  SKIPPED \\]]==]${props})\n")
  endforeach()
  file(WRITE "${tests_file}.tmp" "${out}")
  file(RENAME "${tests_file}.tmp" "${tests_file}")
endfunction()
