# commit.cmake: run at every build (cmake -P) to write OUT, a source file defining
# clreduce::build_commit(): the git commit SOURCE_DIR is at, with "-dirty" when tracked files differ
# from it, or "unknown" when SOURCE_DIR is not the top of a git checkout or GIT is not found. OUT
# is rewritten only when that text changes, so an unchanged commit rebuilds nothing.
set(commit unknown)
if(GIT)
  execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" rev-parse --show-toplevel
                  OUTPUT_VARIABLE top RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0 AND top)
    get_filename_component(top "${top}" REALPATH)
    get_filename_component(src "${SOURCE_DIR}" REALPATH)
  endif()
  # Only the checkout of clreduce itself: not a git repository the sources were unpacked into.
  if(rc EQUAL 0 AND top STREQUAL src)
    execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" rev-parse --verify -q HEAD
                    OUTPUT_VARIABLE rev RESULT_VARIABLE rc
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(rc EQUAL 0 AND rev MATCHES "^[0-9a-f]+$")
      set(commit "${rev}")
      execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                      OUTPUT_VARIABLE changes RESULT_VARIABLE rc ERROR_QUIET)
      if(rc EQUAL 0 AND changes)
        string(APPEND commit "-dirty")
      endif()
    endif()
  endif()
endif()
set(text "// Generated at build time by cmake/commit.cmake: the commit clreduce was built from.
#include \"clreduce/version.hpp\"

namespace clreduce {

const char* build_commit() { return \"${commit}\"; }

}  // namespace clreduce
")
file(WRITE "${OUT}.new" "${text}")
execute_process(COMMAND "${CMAKE_COMMAND}" -E copy_if_different "${OUT}.new" "${OUT}")
file(REMOVE "${OUT}.new")
