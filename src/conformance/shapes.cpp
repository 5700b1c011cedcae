// shapes: the extent generators and their per-run policy.
#include "conformance/shapes.hpp"

#include <fmt/format.h>

#include "kiln/error.hpp"

namespace kiln::conformance {

uint64_t seed_of(const std::string& name, int run, uint64_t seed) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the name, then the run and the seed
    for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
    h = (h ^ static_cast<uint64_t>(run)) * 1099511628211ull;
    return h ^ (seed * 0x9e3779b97f4a7c15ull);
}

Dim Dim::fixed(int64_t value) {
    Dim d;
    d.kind_ = Kind::fixed;
    d.lo_ = d.hi_ = value;
    return d;
}

Dim Dim::range(int64_t lo, int64_t hi) {
    if (lo < 0 || hi < lo) fail("conformance: Dim::range({}, {}): expected 0 <= lo <= hi", lo, hi);
    Dim d;
    d.kind_ = Kind::range;
    d.lo_ = lo;
    d.hi_ = hi;
    return d;
}

Dim Dim::multiple_of(int64_t step, int64_t lo, int64_t hi) {
    if (step < 1 || lo < 1 || hi / step < (lo + step - 1) / step)
        fail("conformance: Dim::multiple_of({}, {}, {}): expected a multiple of step in lo..hi",
             step, lo, hi);
    Dim d;
    d.kind_ = Kind::multiple_of;
    d.step_ = step;
    d.lo_ = (lo + step - 1) / step;
    d.hi_ = hi / step;
    return d;
}

Dim Dim::choice(std::vector<int64_t> values) {
    if (values.empty()) fail("conformance: Dim::choice: expected at least one value");
    Dim d;
    d.kind_ = Kind::choice;
    d.values_ = std::move(values);
    return d;
}

int64_t Dim::draw(Rng& rng, int run) const {
    auto uniform = [&](int64_t lo, int64_t hi) {
        return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
    };
    switch (kind_) {
        case Kind::fixed:
            return lo_;
        case Kind::range:
            if (run == 0) return hi_ % 2 == 1 || hi_ == lo_ ? hi_ : hi_ - 1;
            if (run == 1) return lo_;
            return uniform(lo_, hi_);
        case Kind::multiple_of:
            if (run == 0) return hi_ * step_;
            if (run == 1) return lo_ * step_;
            return uniform(lo_, hi_) * step_;
        case Kind::choice:
            if (run == 0) return values_.back();
            if (run == 1) return values_.front();
            return values_[static_cast<size_t>(uniform(0, int64_t(values_.size()) - 1))];
    }
    return lo_;
}

std::vector<int64_t> draw_shape(const std::vector<Dim>& dims, Rng& rng, int run) {
    std::vector<int64_t> out;
    for (const auto& d : dims) out.push_back(d.draw(rng, run));
    return out;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    return shape.empty() ? "scalar" : fmt::format("{}", fmt::join(shape, "x"));
}

}  // namespace kiln::conformance
