#pragma once
// Shared by the libFuzzer harnesses: what counts as a finding. A reader may refuse an input only with its own
// documented error type; anything else it lets escape (std::out_of_range from a library call, a bare
// std::exception, a non-standard throw) is a bug the user would see as an unexplained crash, so it aborts here with
// the exception's message, and libFuzzer saves the input.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

namespace dtsim::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "\n==FINDING== %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Runs `read`; returns true if it returned, false if it threw `Allowed`; any other exception is a finding.
template <class Allowed, class Read> bool reads_or_refuses(const char* reader, Read&& read) {
  try {
    read();
    return true;
  } catch (const Allowed&) {
    return false;
  } catch (const std::exception& e) {
    finding(std::string(reader) + " threw " + typeid(e).name() + " (not its documented error type): " + e.what());
  } catch (...) {
    finding(std::string(reader) + " threw something that is not a std::exception");
  }
}

// Runs `step`, which must not throw at all (a step on an input the reader accepted); any exception is a finding.
template <class Step> void must_succeed(const char* what, Step&& step) {
  try {
    step();
  } catch (const std::exception& e) {
    finding(std::string(what) + " threw " + typeid(e).name() + ": " + e.what());
  } catch (...) {
    finding(std::string(what) + " threw something that is not a std::exception");
  }
}

} // namespace dtsim::fuzz
