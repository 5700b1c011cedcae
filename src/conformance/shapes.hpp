// Shapes for conformance cases, drawn per run from small generators seeded by the case's name,
// the run index and the suite's seed, so a failure names a case anyone can reproduce
// (`kiln conformance --filter NAME --seed S --runs N`).
//
// Run 0 of every case draws each extent's ragged value (the largest odd value a range allows,
// the largest multiple, the last choice: sizes that fill and overflow every block), run 1 its
// smallest (1 where the generator allows it); later runs draw uniformly.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace kiln::conformance {

// The random source of one run of one case.
using Rng = std::mt19937_64;

// 64-bit seed of (case name, run, suite seed).
uint64_t seed_of(const std::string& name, int run, uint64_t seed);

class Dim {
  public:
    static Dim fixed(int64_t value);
    static Dim range(int64_t lo, int64_t hi);                      // lo..hi inclusive
    static Dim multiple_of(int64_t step, int64_t lo, int64_t hi);  // step*k in lo..hi
    static Dim choice(std::vector<int64_t> values);
    int64_t draw(Rng& rng, int run) const;

  private:
    enum class Kind { fixed, range, multiple_of, choice };
    Kind kind_ = Kind::fixed;
    int64_t lo_ = 1, hi_ = 1, step_ = 1;
    std::vector<int64_t> values_;
};

// One extent per Dim.
std::vector<int64_t> draw_shape(const std::vector<Dim>& dims, Rng& rng, int run);

// "3x17x1"
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace kiln::conformance
