# Run by ctest (cmake/GTestSuites.cmake): lists the GoogleTest executable's cases
# and writes one ctest test per suite, or per case for the suites in `per_case`
# ("*": all but the `unit` suites). Labels: `labels`, plus `unit` for the suites in `unit`. `props`: more
# set_tests_properties arguments, already quoted.

# extra_labels_file: lines `label: name...` (tests/extra_labels.txt); a name is a
# suite, Suite.Case, or (for script tests) a prefix. Sets `extra` to the labels of
# ctest test `name` (a grouped suite: also those of any listed case of it).
function(salt_extra_labels extra_labels_file bare_suite case out)
  set(result "")
  if(extra_labels_file AND EXISTS "${extra_labels_file}")
    file(STRINGS "${extra_labels_file}" label_lines REGEX "^[a-z]+:")
    foreach(label_line IN LISTS label_lines)
      string(REGEX REPLACE ":.*" "" label "${label_line}")
      string(REGEX REPLACE "^[a-z]+:" "" names "${label_line}")
      separate_arguments(names)
      set(hit FALSE)
      foreach(n IN LISTS names)
        if(n STREQUAL bare_suite OR (case AND n STREQUAL "${bare_suite}.${case}"))
          set(hit TRUE)
        elseif(NOT case)
          string(FIND "${n}" "${bare_suite}." at)
          if(at EQUAL 0)
            set(hit TRUE)
          endif()
        endif()
      endforeach()
      if(hit)
        list(APPEND result "${label}")
      endif()
    endforeach()
  endif()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# A test's labels: its own and its extra ones, where `slow` takes the place of
# `unit` (`ctest -L unit` stays the quick pass that docs/testing.md promises).
function(salt_test_labels own extra out)
  set(result ${own} ${extra})
  list(FIND extra slow is_slow)
  if(is_slow GREATER -1)
    list(REMOVE_ITEM result unit)
  endif()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

function(salt_write_gtest_suites exe tests_file per_case labels unit work_dir props extra_labels_file)
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
        salt_extra_labels("${extra_labels_file}" "${bare}" "" extra)
        salt_test_labels("${suite_labels}" "${extra}" grouped_labels)
        string(APPEND out "add_test([==[${suite}]==] [==[${exe}]==] [==[--gtest_filter=${suite}.*]==])\n"
                          "set_tests_properties([==[${suite}]==] PROPERTIES WORKING_DIRECTORY [==[${work_dir}]==] LABELS [==[${grouped_labels}]==]${props})\n")
      endif()
      continue()
    endif()
    string(STRIP "${line}" case)
    if(NOT split OR case MATCHES "^DISABLED_")
      continue()
    endif()
    set(name "${suite}.${case}")
    salt_extra_labels("${extra_labels_file}" "${bare}" "${case}" extra)
    salt_test_labels("${suite_labels}" "${extra}" case_labels)
    # GoogleTest prints "[  SKIPPED ]" for GTEST_SKIP: ctest reports the case skipped.
    string(APPEND out "add_test([==[${name}]==] [==[${exe}]==] [==[--gtest_filter=${name}]==])\n"
                      "set_tests_properties([==[${name}]==] PROPERTIES WORKING_DIRECTORY [==[${work_dir}]==] "
                      "LABELS [==[${case_labels}]==] SKIP_REGULAR_EXPRESSION [==[\\[  SKIPPED \\]]==]${props})\n")
  endforeach()
  file(WRITE "${tests_file}.tmp" "${out}")
  file(RENAME "${tests_file}.tmp" "${tests_file}")
endfunction()
