# Records the salt-cpp commit the binary is built from, and whether the source
# tree was dirty, into a generated source file. It runs on every build but only
# rewrites the file when the answer changes, so it does not force relinks.
set(SALT_PROVENANCE_CPP ${CMAKE_BINARY_DIR}/generated/provenance.cpp)
add_custom_target(salt_provenance
  COMMAND ${CMAKE_COMMAND} -DSRC=${CMAKE_SOURCE_DIR} -DOUT=${SALT_PROVENANCE_CPP}
          -DVERSION=${PROJECT_VERSION} -P ${CMAKE_SOURCE_DIR}/cmake/WriteProvenance.cmake
  BYPRODUCTS ${SALT_PROVENANCE_CPP}
  COMMENT "Recording salt-cpp git provenance")
