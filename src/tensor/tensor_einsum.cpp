// einsum: the subscripts parsed and checked, then the contraction written with existing ops: two
// float operands that share a summed label as one batched matmul (each operand's private summed
// labels summed first), anything else as the broadcast product of the operands, summed over the
// labels the output lacks.
#include <cctype>
#include <map>
#include <string>

#include <fmt/format.h>

#include "graph/build.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

namespace {

using Labels = std::string;  // one letter an axis

struct Equation {
    std::vector<Labels> inputs;
    Labels output;
    std::map<char, int64_t> sizes;
};

bool has(const Labels& l, char c) {
    return l.find(c) != Labels::npos;
}

Equation parse(const std::string& text, const std::vector<Tensor>& operands) {
    Equation eq;
    std::string s;
    for (char c : text)
        if (c != ' ') s += c;
    const size_t arrow = s.find("->");
    const std::string lhs = s.substr(0, arrow);
    size_t start = 0;
    while (true) {
        const size_t comma = lhs.find(',', start);
        eq.inputs.push_back(lhs.substr(start, comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    if (eq.inputs.size() != operands.size())
        fail("einsum: '{}' names {} operands; got {}", text, eq.inputs.size(), operands.size());
    const auto check_letters = [&](const Labels& l, const std::string& what) {
        for (size_t i = 0; i < l.size(); ++i) {
            if (!std::isalpha(static_cast<unsigned char>(l[i])))
                fail(
                    "einsum: '{}': '{}' in {} is not a letter; expected letters a-z, A-Z ('...' "
                    "and repeated labels within one operand are not supported)",
                    text, l[i], what);
            if (l.find(l[i], i + 1) != Labels::npos)
                fail(
                    "einsum: '{}': {} names '{}' twice; expected each label once (diagonals are "
                    "not supported)",
                    text, what, l[i]);
        }
    };
    for (size_t i = 0; i < operands.size(); ++i) {
        const Labels& l = eq.inputs[i];
        const std::string what = fmt::format("operand {} '{}'", i, l);
        check_letters(l, what);
        if (l.size() != operands[i].rank())
            fail("einsum: '{}': {} has {} labels for a tensor of rank {} ({})", text, what,
                 l.size(), operands[i].rank(), graph::to_string(operands[i].shape()));
        for (size_t a = 0; a < l.size(); ++a) {
            const int64_t n = operands[i].shape()[a];
            const auto [it, fresh] = eq.sizes.emplace(l[a], n);
            if (!fresh && it->second != n)
                fail(
                    "einsum: '{}': label '{}' has extent {} in {} and {} before; expected one "
                    "extent",
                    text, l[a], n, what, it->second);
        }
    }
    if (arrow == std::string::npos) {  // numpy's implicit output: labels seen once, sorted
        for (const auto& [c, n] : eq.sizes) {
            int count = 0;
            for (const Labels& l : eq.inputs) count += has(l, c);
            if (count == 1) eq.output += c;
        }
    } else {
        eq.output = s.substr(arrow + 2);
        check_letters(eq.output, fmt::format("the output '{}'", eq.output));
        for (char c : eq.output)
            if (!eq.sizes.count(c))
                fail("einsum: '{}': the output label '{}' is in no operand", text, c);
    }
    return eq;
}

// x with its axes (labels `from`) in the order of `to` (a permutation of them).
Tensor arrange(const Tensor& x, const Labels& from, const Labels& to) {
    std::vector<int64_t> order;
    for (char c : to) order.push_back(static_cast<int64_t>(from.find(c)));
    return x.permute(order);
}

// x summed over its labels that `keep` lacks; `labels` becomes what is left.
Tensor sum_unkept(const Tensor& x, Labels& labels, const Labels& keep) {
    std::vector<int64_t> axes;
    Labels left;
    for (size_t a = 0; a < labels.size(); ++a) {
        if (has(keep, labels[a]))
            left += labels[a];
        else
            axes.push_back(static_cast<int64_t>(a));
    }
    labels = left;
    return axes.empty() ? x : sum(x, axes);
}

int64_t extent(const Equation& eq, const Labels& labels) {
    int64_t n = 1;
    for (char c : labels) n *= eq.sizes.at(c);
    return n;
}

Shape shape_of(const Equation& eq, const Labels& labels) {
    Shape s;
    for (char c : labels) s.push_back(eq.sizes.at(c));
    return s;
}

// a [batch, m, k] · b [batch, k, n] as one matmul, the labels grouped so.
Tensor as_matmul(const Equation& eq, Tensor a, Labels la, Tensor b, Labels lb) {
    a = sum_unkept(a, la, lb + eq.output);
    b = sum_unkept(b, lb, la + eq.output);
    Labels batch, m, n, k;
    for (char c : eq.output) (has(la, c) && has(lb, c) ? batch : has(la, c) ? m : n) += c;
    for (char c : la)
        if (has(lb, c) && !has(eq.output, c)) k += c;
    const int64_t nb = extent(eq, batch), nm = extent(eq, m), nn = extent(eq, n),
                  nk = extent(eq, k);
    const Tensor am = arrange(a, la, batch + m + k).reshape({nb, nm, nk});
    const Tensor bm = arrange(b, lb, batch + k + n).reshape({nb, nk, nn});
    const Tensor r = matmul(am, bm).reshape(shape_of(eq, batch + m + n));
    return arrange(r, batch + m + n, eq.output);
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
    if (operands.empty()) fail("einsum: no operands; expected at least one tensor");
    for (const Tensor& t : operands)
        if (t.dtype() != operands[0].dtype())
            fail("einsum: operands of {} and {}; expected one dtype", name(operands[0].dtype()),
                 name(t.dtype()));
    if (operands[0].dtype() == DType::boolean)
        fail("einsum: bool operands; expected a numeric dtype");
    const Equation eq = parse(equation, operands);
    Labels contracted;  // in the inputs, not in the output
    for (const auto& [c, n] : eq.sizes)
        if (!has(eq.output, c)) contracted += c;
    if (operands.size() == 2 && is_float(operands[0].dtype())) {
        for (char c : contracted)
            if (has(eq.inputs[0], c) && has(eq.inputs[1], c))
                return as_matmul(eq, operands[0], eq.inputs[0], operands[1], eq.inputs[1]);
    }
    // Each operand laid out along every label (output's, then contracted), extent 1 where it
    // lacks one; their product broadcast; the contracted axes summed.
    const Labels all = eq.output + contracted;
    Tensor product;
    for (size_t i = 0; i < operands.size(); ++i) {
        Labels mine;
        Shape shape;
        for (char c : all) {
            if (has(eq.inputs[i], c)) mine += c;
            shape.push_back(has(eq.inputs[i], c) ? eq.sizes.at(c) : 1);
        }
        const Tensor t = arrange(operands[i], eq.inputs[i], mine).reshape(shape);
        product = i == 0 ? t : product * t;
    }
    Labels labels = all;
    return sum_unkept(product, labels, eq.output);
}

}  // namespace kiln
