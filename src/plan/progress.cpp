// Progress: one line on a terminal's standard error, rewritten per step (progress.hpp).
#include "plan/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kiln::plan {

namespace {

bool progress_wanted() {
    const char* env = std::getenv("KILN_PROGRESS");
    if (env && std::strcmp(env, "0") == 0) return false;
    return isatty(STDERR_FILENO) == 1;
}

}  // namespace

Progress::Progress() : enabled_(progress_wanted()) {}

Progress::~Progress() {
    if (!shown_) return;
    std::fputs("\r\033[K", stderr);  // back to the line's start, erased
    std::fflush(stderr);
}

void Progress::step(const std::string& what) {
    if (!enabled_) return;
    std::fprintf(stderr, "\r\033[Kkiln: %s", what.c_str());
    std::fflush(stderr);
    shown_ = true;
}

}  // namespace kiln::plan
