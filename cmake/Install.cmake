# What salt needs besides its binary lives in <prefix>/share/salt (configs/,
# scripts/ort_run.js, ort/ with onnxruntime-node); the binary finds it as
# <bin>/../share/salt (lib/core/install_paths.h). No path of this tree is compiled
# in: an installed salt runs without the source tree, and ccache hits across
# checkouts.
#
# The build folder gets the same layout from links into the source tree, so
# build/app/salt finds build/share/salt, and edits to configs/ show at once. Only
# the build folder's share/salt has `source`: the tree tests and benches read
# their fixtures from (build_source_dir()).
set(SALT_BUILD_SHARE ${CMAKE_BINARY_DIR}/share/salt)
file(MAKE_DIRECTORY ${SALT_BUILD_SHARE}/scripts)
foreach(pair "configs;configs" "scripts/ort_run.js;scripts/ort_run.js" ".ort;ort" ".;source")
  list(GET pair 0 from)
  list(GET pair 1 to)
  get_filename_component(target_path ${CMAKE_SOURCE_DIR}/${from} ABSOLUTE)
  file(REMOVE ${SALT_BUILD_SHARE}/${to})
  file(CREATE_LINK ${target_path} ${SALT_BUILD_SHARE}/${to} SYMBOLIC)
endforeach()

install(PROGRAMS ${CMAKE_SOURCE_DIR}/submit/submit_slurm ${CMAKE_SOURCE_DIR}/submit/submit_htcondor
                 ${CMAKE_SOURCE_DIR}/submit/find_salt.sh
        DESTINATION share/salt/submit COMPONENT salt)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/configs/ DESTINATION share/salt/configs COMPONENT salt)
install(FILES ${CMAKE_SOURCE_DIR}/scripts/ort_run.js DESTINATION share/salt/scripts COMPONENT salt)
# onnxruntime-node (scripts/bootstrap.sh puts it in .ort/; ~290 MB): its own
# component, so `cmake --install --component salt` installs salt without it.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/.ort/node_modules DESTINATION share/salt/ort COMPONENT ort OPTIONAL)
