// choose_winner: the fastest median, unless the first-declared variant is within the margin.
#include <cmath>

#include "kiln/tune.hpp"

namespace kiln {

size_t choose_winner(const std::vector<double>& medians, double margin) {
    if (medians.empty()) fail("choose_winner: no medians; expected one per variant");
    if (!(margin >= 0 && margin < 1))
        fail("choose_winner: margin {} is out of range; expected 0 <= margin < 1", margin);
    for (size_t i = 0; i < medians.size(); ++i)
        if (std::isnan(medians[i]) || medians[i] < 0)
            fail(
                "choose_winner: variant {} timed {} ms; timings must be real, non-negative "
                "milliseconds",
                i, medians[i]);
    size_t best = 0;
    for (size_t i = 1; i < medians.size(); ++i)
        if (medians[i] < medians[best]) best = i;
    if (best != 0 && medians[best] > medians[0] * (1 - margin)) return 0;
    return best;
}

}  // namespace kiln
