# `cmake --install`: the dtsim binary, its man page (generated from --help by help2man), bash and zsh completion, the
# documentation, the shipped scenarios and the validation cases (`dtsim validate` finds them beside the binary:
# PREFIX/share/dtsim). `cpack -G DEB` in the build folder makes a Debian package of the same files.
include(GNUInstallDirs)

install(TARGETS dtsim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The man page: help2man runs the built binary's --help and --version, and each subcommand's --help goes in its
# COMMANDS section; tools/cmake/dtsim.h2m adds EXAMPLES and EXIT STATUS (Debian's help2man; without it there is no man
# page, and a STATUS line says so).
find_program(DTSIM_HELP2MAN help2man)
if(DTSIM_HELP2MAN)
  add_custom_command(
    OUTPUT ${CMAKE_BINARY_DIR}/dtsim.1
    COMMAND ${CMAKE_SOURCE_DIR}/tools/cmake/man_commands.sh $<TARGET_FILE:dtsim> ${CMAKE_BINARY_DIR}/dtsim.commands.h2m
    COMMAND ${DTSIM_HELP2MAN} --no-info --section=1 --name "simulate distributed deep-learning training on a modeled cluster"
            --include=${CMAKE_BINARY_DIR}/dtsim.commands.h2m --include=${CMAKE_SOURCE_DIR}/tools/cmake/dtsim.h2m
            --output=${CMAKE_BINARY_DIR}/dtsim.1 $<TARGET_FILE:dtsim>
    DEPENDS dtsim ${CMAKE_SOURCE_DIR}/tools/cmake/man_commands.sh ${CMAKE_SOURCE_DIR}/tools/cmake/dtsim.h2m
    COMMENT "Generating the dtsim(1) man page from dtsim --help")
  # Installed compressed, as Debian's policy has manual pages (gzip -n: no name or time in the header, so the same
  # page gives the same bytes).
  add_custom_command(
    OUTPUT ${CMAKE_BINARY_DIR}/dtsim.1.gz
    COMMAND gzip -9nc ${CMAKE_BINARY_DIR}/dtsim.1 > ${CMAKE_BINARY_DIR}/dtsim.1.gz
    DEPENDS ${CMAKE_BINARY_DIR}/dtsim.1
    COMMENT "Compressing the dtsim(1) man page")
  add_custom_target(dtsim_man ALL DEPENDS ${CMAKE_BINARY_DIR}/dtsim.1 ${CMAKE_BINARY_DIR}/dtsim.1.gz)
  install(FILES ${CMAKE_BINARY_DIR}/dtsim.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "man page skipped: help2man not found (tools/setup.sh installs it)")
endif()

install(FILES ${CMAKE_SOURCE_DIR}/tools/completion/dtsim.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME dtsim)
install(FILES ${CMAKE_SOURCE_DIR}/tools/completion/_dtsim DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/scenarios DESTINATION ${CMAKE_INSTALL_DATADIR}/dtsim)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/calibration/validation ${CMAKE_SOURCE_DIR}/calibration/measurements
                  ${CMAKE_SOURCE_DIR}/calibration/profiles DESTINATION ${CMAKE_INSTALL_DATADIR}/dtsim/calibration)

# The Debian package (cpack -G DEB) is described in tools/cmake/package.cmake, read at the end of CMakeLists.txt once
# it is known whether the Python module is built (it then depends on the interpreter).
