# `cpack -G DEB` in the build folder: a Debian package of what `cmake --install` installs, under /usr, that lintian
# passes without errors (tests/install/install.sh runs it where installed). Read at the end of CMakeLists.txt, after
# the Python module's target exists.
set(DTSIM_PACKAGE_MAINTAINER "dtsim maintainers <maintainers@dtsim.invalid>" CACHE STRING
    "The Debian package's Maintainer field: a name and an e-mail address")

# Debian's copyright file (machine-readable format) and changelog (gzip -n, so the same text gives the same bytes).
configure_file(${CMAKE_SOURCE_DIR}/tools/package/changelog.in ${CMAKE_BINARY_DIR}/package/changelog @ONLY)
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/package/changelog.gz
  COMMAND gzip -9nc ${CMAKE_BINARY_DIR}/package/changelog > ${CMAKE_BINARY_DIR}/package/changelog.gz
  DEPENDS ${CMAKE_BINARY_DIR}/package/changelog
  COMMENT "Compressing the package's changelog")
add_custom_target(dtsim_package_changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/package/changelog.gz)
install(FILES ${CMAKE_SOURCE_DIR}/tools/package/copyright ${CMAKE_BINARY_DIR}/package/changelog.gz
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_PACKAGE_NAME dtsim)
set(CPACK_PACKAGE_VENDOR "The dtsim authors")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
# The extended description (cpack puts the summary above it as the synopsis).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "dtsim predicts what a distributed training job would do on real hardware
before it runs: iteration time, throughput, scaling, where the time goes,
memory per GPU, which links saturate, energy and the dollar cost. A JSON
scenario describes the model, the batch, the parallelism, the
synchronization strategy, the GPUs and the network; SimGrid replays the
job's execution graph with contention on the modeled cluster.")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON) # Debian ships binaries stripped (the debug information goes in a -dbgsym package)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${DTSIM_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON) # dpkg-shlibdeps names SimGrid's and fmt's library packages
if(TARGET dtsim_python)
  # The module is built for one interpreter's ABI (dtsim.cpython-311-...so): the package depends on that version.
  math(EXPR DTSIM_PYTHON_NEXT_MINOR "${Python_VERSION_MINOR} + 1")
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "python3 (>= ${Python_VERSION_MAJOR}.${Python_VERSION_MINOR}), python3 (<< ${Python_VERSION_MAJOR}.${DTSIM_PYTHON_NEXT_MINOR})")
endif()
include(CPack)
