# Writes the fuzzers' seed corpora from the repository's files (cmake -DSOURCE_DIR=... -DOUT=... -P seed_corpus.cmake):
#   scenario/      every shipped scenario
#   overrides/     the --set assignments the override tests and the documents use, one a file and all in one
#   measurements/  the measurement files of the measurement tests, and the format document's example
#   nccl_tests/    the nccl-tests outputs of the parser's tests
#   chakra/        none here: tests/fuzz.sh adds the traces `dtsim export` writes (binary, so not kept as files)
#   kineto/        the PyTorch profiler traces written out in the trace reader's tests
# The seeds only start the search: a malformed one is fine, a missing one only makes the search slower.
cmake_minimum_required(VERSION 3.25)

file(REMOVE_RECURSE ${OUT}/scenario ${OUT}/overrides ${OUT}/measurements ${OUT}/nccl_tests ${OUT}/chakra
     ${OUT}/kineto)
file(MAKE_DIRECTORY ${OUT}/scenario ${OUT}/overrides ${OUT}/measurements ${OUT}/nccl_tests ${OUT}/chakra
     ${OUT}/kineto)

file(GLOB scenarios ${SOURCE_DIR}/scenarios/*.json)
file(COPY ${scenarios} DESTINATION ${OUT}/scenario)

# Every C++ raw string literal R"delim(...)delim" of `file` whose text starts with `prefix`, one file each in `dir`.
function(write_raw_strings file prefix dir)
  file(READ ${file} text)
  get_filename_component(stem ${file} NAME_WE)
  set(count 0)
  while(TRUE)
    string(FIND "${text}" "R\"" at)
    if(at EQUAL -1)
      break()
    endif()
    # Not a raw string when the R ends an identifier ("DIR"), or when no '(' follows a short delimiter.
    set(before "")
    if(at GREATER 0)
      math(EXPR prev "${at} - 1")
      string(SUBSTRING "${text}" ${prev} 1 before)
    endif()
    math(EXPR start "${at} + 2")
    string(SUBSTRING "${text}" ${start} -1 text)
    string(FIND "${text}" "(" paren)
    if(paren EQUAL -1 OR paren GREATER 16 OR before MATCHES "[A-Za-z0-9_]")
      continue()
    endif()
    string(SUBSTRING "${text}" 0 ${paren} delim)
    if(NOT delim MATCHES "^[A-Za-z0-9_]*$")
      continue()
    endif()
    math(EXPR body "${paren} + 1")
    string(SUBSTRING "${text}" ${body} -1 text)
    string(FIND "${text}" ")${delim}\"" end)
    if(end EQUAL -1)
      break()
    endif()
    string(SUBSTRING "${text}" 0 ${end} literal)
    string(SUBSTRING "${text}" ${end} -1 text)
    string(FIND "${literal}" "${prefix}" first)
    if(first EQUAL 0)
      math(EXPR count "${count} + 1")
      file(WRITE ${dir}/${stem}-${count} "${literal}")
    endif()
  endwhile()
endfunction()

write_raw_strings(${SOURCE_DIR}/tests/calibration/measurements_test.cpp "{" ${OUT}/measurements)
write_raw_strings(${SOURCE_DIR}/tests/calibration/nccl_tests_test.cpp "#" ${OUT}/nccl_tests)
write_raw_strings(${SOURCE_DIR}/tests/kineto/kineto_test.cpp "" ${OUT}/kineto)

# The format document's example: as written (with comments, which the reader must refuse cleanly) and without them.
file(READ ${SOURCE_DIR}/docs/measurement-format.md doc)
string(FIND "${doc}" "```jsonc\n" open)
if(NOT open EQUAL -1)
  math(EXPR open "${open} + 9")
  string(SUBSTRING "${doc}" ${open} -1 doc)
  string(FIND "${doc}" "```" close)
  string(SUBSTRING "${doc}" 0 ${close} example)
  file(WRITE ${OUT}/measurements/format-example-commented "${example}")
  string(REGEX REPLACE "//[^\n]*" "" example "${example}")
  file(WRITE ${OUT}/measurements/format-example "${example}")
endif()

# Assignments: string literals "path=value" in the override tests, and `--set path=value` in README.md and docs/.
file(READ ${SOURCE_DIR}/tests/scenario/overrides_test.cpp tests)
string(REGEX MATCHALL "\"[a-z_][a-z_0-9.]*=([^\"\\\n]|\\\\.)*\"" quoted "${tests}")
file(GLOB documents ${SOURCE_DIR}/README.md ${SOURCE_DIR}/docs/*.md)
set(readme "")
foreach(document IN LISTS documents)
  file(READ ${document} text)
  string(APPEND readme "${text}")
endforeach()
string(REGEX MATCHALL "--set [a-z_][a-z_0-9.]*=[^ `\n]+" flags "${readme}")
set(all "")
set(count 0)
foreach(assignment IN LISTS quoted flags)
  string(REGEX REPLACE "^\"|\"$|^--set " "" assignment "${assignment}")
  string(REPLACE "\\\"" "\"" assignment "${assignment}") # a C++ literal's \" is a quote
  math(EXPR count "${count} + 1")
  file(WRITE ${OUT}/overrides/assignment-${count} "${assignment}")
  string(APPEND all "${assignment}\n")
endforeach()
file(WRITE ${OUT}/overrides/all "${all}")
