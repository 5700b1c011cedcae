// einsum: the subscripts parsed and checked ('...' as labels of its own), a label repeated
// within an operand taken as its diagonal (a strided view), then the contraction written with
// existing ops: two float operands that share a summed label as one batched matmul
// (each operand's private summed labels summed first), anything else as the broadcast product of
// the operands, summed over the labels the output lacks.
#include <algorithm>
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

// The axes a '...' stands for get the labels 1, 2, ... (below every letter, so numpy's implicit
// output, sorted, puts them first), numbered from the left of the widest '...'; a narrower one
// takes the last of them (numpy's right-aligned broadcasting).
bool is_ellipsis(char c) {
    return c >= 1 && c < 32;
}
std::string describe(char c) {
    return is_ellipsis(c) ? fmt::format("the '...' axis {}", c - 1) : fmt::format("label '{}'", c);
}

// The letters of a term (a '...' taken out) and where its '...' stood, if it has one.
struct Term {
    Labels letters;
    size_t ellipsis = std::string::npos;
};

// `unique`: each letter at most once (the output; an operand may repeat one: its diagonal).
Term split_term(const std::string& text, const std::string& term, const std::string& what,
                bool unique) {
    Term t;
    t.ellipsis = term.find("...");
    t.letters = term;
    if (t.ellipsis != std::string::npos) t.letters.erase(t.ellipsis, 3);
    for (size_t i = 0; i < t.letters.size(); ++i) {
        if (!std::isalpha(static_cast<unsigned char>(t.letters[i])))
            fail(
                "einsum: '{}': '{}' in {} is not a letter; expected letters a-z, A-Z and at most "
                "one '...'",
                text, t.letters[i], what);
        if (unique && t.letters.find(t.letters[i], i + 1) != Labels::npos)
            fail("einsum: '{}': {} names '{}' twice; expected each output label once", text, what,
                 t.letters[i]);
    }
    return t;
}

// The term's labels with its '...' standing for `count` of the `widest` ellipsis labels.
Labels with_ellipsis(const Term& t, int64_t count, int64_t widest) {
    if (t.ellipsis == std::string::npos) return t.letters;
    Labels middle;
    for (int64_t d = widest - count; d < widest; ++d) middle += static_cast<char>(1 + d);
    return t.letters.substr(0, t.ellipsis) + middle + t.letters.substr(t.ellipsis);
}

Equation parse(const std::string& text, const std::vector<Tensor>& operands) {
    Equation eq;
    std::string s;
    for (char c : text)
        if (c != ' ') s += c;
    const size_t arrow = s.find("->");
    const std::string lhs = s.substr(0, arrow);
    std::vector<std::string> terms;
    for (size_t start = 0;;) {
        const size_t comma = lhs.find(',', start);
        terms.push_back(lhs.substr(start, comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    if (terms.size() != operands.size())
        fail("einsum: '{}' names {} operands; got {}", text, terms.size(), operands.size());
    std::vector<Term> parsed;
    std::vector<int64_t> counts;  // the axes each operand's '...' stands for
    int64_t widest = 0;
    for (size_t i = 0; i < operands.size(); ++i) {
        const std::string what = fmt::format("operand {} '{}'", i, terms[i]);
        parsed.push_back(split_term(text, terms[i], what, false));
        const auto rank = static_cast<int64_t>(operands[i].rank());
        const auto letters = static_cast<int64_t>(parsed[i].letters.size());
        const bool ellipsis = parsed[i].ellipsis != std::string::npos;
        if (ellipsis ? letters > rank : letters != rank)
            fail("einsum: '{}': {} has {} labels for a tensor of rank {} ({})", text, what, letters,
                 rank, graph::to_string(operands[i].shape()));
        counts.push_back(ellipsis ? rank - letters : 0);
        widest = std::max(widest, counts.back());
    }
    if (widest > 30) fail("einsum: '{}': '...' stands for {} axes; at most 30", text, widest);
    for (size_t i = 0; i < operands.size(); ++i) {
        eq.inputs.push_back(with_ellipsis(parsed[i], counts[i], widest));
        for (size_t a = 0; a < eq.inputs[i].size(); ++a) {
            const char c = eq.inputs[i][a];
            const int64_t n = operands[i].shape()[a];
            const auto [it, fresh] = eq.sizes.emplace(c, n);
            if (fresh || it->second == n) continue;
            if (is_ellipsis(c) && (n == 1 || it->second == 1)) {  // broadcast
                it->second = std::max(n, it->second);
                continue;
            }
            fail(
                "einsum: '{}': {} has extent {} in operand {} '{}' and {} before; expected one "
                "extent",
                text, describe(c), n, i, terms[i], it->second);
        }
    }
    if (arrow == std::string::npos) {  // numpy's: the '...' axes, then the labels seen once, sorted
        for (const auto& [c, n] : eq.sizes) {
            int64_t count = 0;
            for (const Labels& l : eq.inputs) count += std::count(l.begin(), l.end(), c);
            if (is_ellipsis(c) || count == 1) eq.output += c;
        }
        return eq;
    }
    const std::string out = s.substr(arrow + 2);
    const Term t = split_term(text, out, fmt::format("the output '{}'", out), true);
    if (widest > 0 && t.ellipsis == std::string::npos)
        fail("einsum: '{}': the output has no '...'; expected one where the operands have it",
             text);
    eq.output = with_ellipsis(t, widest, widest);
    for (char c : t.letters)
        if (!eq.sizes.count(c))
            fail("einsum: '{}': the output label '{}' is in no operand", text, c);
    return eq;
}

// x's diagonal over the axes whose label `labels` repeats (numpy's "ii->i"): the two axes moved
// last and seen as one of n * n, every (n + 1)-th element, a view; `labels` loses the repeats.
Tensor diagonals(Tensor x, Labels& labels) {
    for (size_t p = 0; p < labels.size(); ++p) {
        const size_t q = labels.find(labels[p], p + 1);
        if (q == Labels::npos) continue;
        std::vector<int64_t> order;
        Labels rest;
        for (size_t a = 0; a < labels.size(); ++a)
            if (a != p && a != q) {
                order.push_back(static_cast<int64_t>(a));
                rest += labels[a];
            }
        order.push_back(static_cast<int64_t>(p));
        order.push_back(static_cast<int64_t>(q));
        const int64_t n = x.shape()[p];
        Shape flat(x.rank() - 1, 0);
        for (size_t a = 0; a + 2 < order.size(); ++a) flat[a] = x.shape()[size_t(order[a])];
        flat.back() = n * n;
        x = x.permute(order).reshape(flat).slice(-1, 0, n * n, n + 1);
        labels = rest + labels[p];
        return diagonals(x, labels);  // the next repeat, if any
    }
    return x;
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

Tensor einsum(const std::string& equation, const std::vector<Tensor>& given) {
    if (given.empty()) fail("einsum: no operands; expected at least one tensor");
    for (const Tensor& t : given)
        if (t.dtype() != given[0].dtype())
            fail("einsum: operands of {} and {}; expected one dtype", name(given[0].dtype()),
                 name(t.dtype()));
    if (given[0].dtype() == DType::boolean) fail("einsum: bool operands; expected a numeric dtype");
    const Equation eq = parse(equation, given);
    // '...' axes of extent 1 broadcast to the others', and diagonals taken: each operand's
    // labels are unique from here on.
    std::vector<Tensor> operands;
    std::vector<Labels> labels = eq.inputs;
    for (size_t i = 0; i < given.size(); ++i)
        operands.push_back(diagonals(given[i].expand(shape_of(eq, eq.inputs[i])), labels[i]));
    Labels contracted;  // in the inputs, not in the output
    for (const auto& [c, n] : eq.sizes)
        if (!has(eq.output, c)) contracted += c;
    if (operands.size() == 2 && is_float(operands[0].dtype())) {
        for (char c : contracted)
            if (has(labels[0], c) && has(labels[1], c))
                return as_matmul(eq, operands[0], labels[0], operands[1], labels[1]);
    }
    // Each operand laid out along every label (output's, then contracted), extent 1 where it
    // lacks one; their product broadcast; the contracted axes summed.
    const Labels all = eq.output + contracted;
    Tensor product;
    for (size_t i = 0; i < operands.size(); ++i) {
        Labels mine;
        Shape shape;
        for (char c : all) {
            if (has(labels[i], c)) mine += c;
            shape.push_back(has(labels[i], c) ? eq.sizes.at(c) : 1);
        }
        const Tensor t = arrange(operands[i], labels[i], mine).reshape(shape);
        product = i == 0 ? t : product * t;
    }
    Labels left = all;
    return sum_unkept(product, left, eq.output);
}

}  // namespace kiln
