// Progress of a graph's first run on a terminal: what is being compiled or raced and how much
// remains, as one line on standard error rewritten in place and erased when the run is done.
// Silent where standard error is not a terminal, or with KILN_PROGRESS=0 (docs/graph.md).
#pragma once

#include <string>

namespace kiln::plan {

class Progress {
  public:
    Progress();   // enabled where standard error is a terminal and KILN_PROGRESS is not 0
    ~Progress();  // erases the line, if one was written
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    // Shows "kiln: <what>" in place of the previous step.
    void step(const std::string& what);

  private:
    bool enabled_ = false;
    bool shown_ = false;
};

}  // namespace kiln::plan
