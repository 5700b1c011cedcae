// break_switch: reads KILN_CONFORMANCE_BREAK.
#include "base/break_switch.hpp"

#include "base/env_list.hpp"

namespace kiln {

bool break_switch(std::string_view what) {
    return env_list_has("KILN_CONFORMANCE_BREAK", what);
}

}  // namespace kiln
