# Run at every build (cmake -P): writes OUTPUT, a header defining DTSIM_GIT_COMMIT as the commit SOURCE_DIR is at
# ("-dirty" after it when tracked files differ from it; "unknown" outside a git checkout). The file is rewritten only
# when that changes, so only what includes it is rebuilt, and only then.
set(commit "unknown")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" rev-parse HEAD OUTPUT_VARIABLE head
                  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE status ERROR_QUIET)
  if(status EQUAL 0)
    set(commit "${head}")
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" diff --quiet HEAD -- RESULT_VARIABLE dirty
                    ERROR_QUIET)
    if(NOT dirty EQUAL 0)
      set(commit "${head}-dirty")
    endif()
  endif()
endif()
set(text "#pragma once\n// Written at build time by tools/cmake/git_commit.cmake.\n#define DTSIM_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()
