# One ctest test per GoogleTest suite instead of per test case: each test process
# pays LibTorch's start (0.85 s of dynamic loading and static initialisation on the
# 2-core machine), so a suite of 20 quick cases in one process saves 16 s of CPU.
# Slow suites (real fits, several processes) stay one ctest test per case, so
# `ctest -j2` still balances them and each case keeps its own timeout.
#
# salt_gtest_suites(<target> [PER_CASE <suite>...] [PER_CASE_ALL] [LABELS <label>...]
#                   [UNIT <suite>...] PROPERTIES <ctest properties>)
# UNIT: suites of a slow executable that are quick (no fit, no process): they also
# get the label `unit`, so `ctest -L unit` runs them. SALT_EXTRA_LABELS_FILE (set
# before the call): labels for named suites and cases (tests/extra_labels.txt).
#
# The suites are read from the executable itself (--gtest_list_tests) when ctest
# starts, as gtest_discover_tests(DISCOVERY_MODE PRE_TEST) does, and cached until the
# executable changes. A grouped suite's ctest test is named after the suite
# (`ctest -R '^Cli$'`); a per-case one `Suite.Case` as before.

set(_salt_gtest_suites_script "${CMAKE_CURRENT_LIST_DIR}/GTestSuitesDiscover.cmake")

function(salt_gtest_suites target)
  cmake_parse_arguments(ARG "PER_CASE_ALL" "" "PER_CASE;UNIT;LABELS;PROPERTIES" ${ARGN})
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites_include.cmake")
  set(tests_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites_tests.cmake")
  # Properties as `set_tests_properties` arguments, quoted for the generated script.
  set(props "")
  foreach(p IN LISTS ARG_PROPERTIES)
    string(APPEND props " [==[${p}]==]")
  endforeach()
  set(per_case "${ARG_PER_CASE}")
  if(ARG_PER_CASE_ALL)
    set(per_case "*")
  endif()
  file(GENERATE OUTPUT "${include_file}" CONTENT
"set(exe [==[$<TARGET_FILE:${target}>]==])
set(tests_file [==[${tests_file}]==])
if(NOT EXISTS \"\${exe}\")
  # Not built (a build of some targets only, as scripts/gpu_check.sh's): one failing
  # test under the target's labels, as gtest_discover_tests does, so that
  # `ctest -L <other label>` still runs.
  add_test([==[${target}_NOT_BUILT]==] [==[${target}_NOT_BUILT]==])
  set_tests_properties([==[${target}_NOT_BUILT]==] PROPERTIES LABELS [==[${ARG_LABELS}]==])
else()
  # ... or when this file changed (a suite moved to or from PER_CASE).
  if(NOT EXISTS \"\${tests_file}\" OR \"\${exe}\" IS_NEWER_THAN \"\${tests_file}\"
     OR [==[${SALT_EXTRA_LABELS_FILE}]==] IS_NEWER_THAN \"\${tests_file}\"
     OR \"\${CMAKE_CURRENT_LIST_FILE}\" IS_NEWER_THAN \"\${tests_file}\")
    set(per_case [==[${per_case}]==])
    set(labels [==[${ARG_LABELS}]==])
    set(unit [==[${ARG_UNIT}]==])
    set(work_dir [==[${CMAKE_CURRENT_BINARY_DIR}]==])
    include([==[${_salt_gtest_suites_script}]==])
    salt_write_gtest_suites(\"\${exe}\" \"\${tests_file}\" \"\${per_case}\" \"\${labels}\" \"\${unit}\" \"\${work_dir}\" [===[${props}]===]
                            [==[${SALT_EXTRA_LABELS_FILE}]==])
  endif()
  include(\"\${tests_file}\")
endif()
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
