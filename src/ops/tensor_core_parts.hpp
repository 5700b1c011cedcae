// Pieces the tensor-core class's kernels (matmul's, attention's) build from: operand elements as
// u32 pairs of 16-bit values (mma's operand words), and a block's staging of an operand's lines
// into a shared pair tile, 4 pairs a load (or a copy) where the operand is a buffer contiguous
// along k, or into a k-major tile by copies where its lines are adjacent.
#pragma once

#include <functional>
#include <vector>

#include "kiln/dsl.hpp"
#include "ops/contraction.hpp"
#include "ops/kernel_parts.hpp"

namespace kiln::ops::tensor_core {

inline constexpr int kWarp = 32;

// Input elements q and q + 1 along k of an operand line as one u32 (q's bits in the low half).
// `element(q)` is the index of the line's element q. Unless `inside` (both below k, known),
// each is read clamped (always in bounds) and zero past k, so a last, padded mma step adds
// exact zeros. Where `present` is given, an element for which it is false reads as zero too
// (element(q) must still be in bounds).
Expr pair_at(const ElementRead& m, const Expr& q, const Expr& k, bool inside,
             const std::function<Expr(const Expr&)>& element,
             const std::function<Expr(const Expr&)>& present = {});

// Two f32 values rounded to `input` (f16 or bf16) as one u32, lo's bits in the low half.
Expr pack_pair(DType input, const Expr& lo, const Expr& hi);

// What a thread stages of one operand: `lines` lines (rows of A or columns of B) of a step's
// `pairs` pairs each, into a pair tile whose lines are `ld` words apart.
struct OperandShape {
    ElementRead read;
    int lines, pairs, ld;
    bool k_contiguous;  // consecutive elements along k are adjacent in memory
    int threads;
    std::function<Expr(const Expr&)> clamped_line;  // a tile line's operand line, in range
    bool gaps = false;  // some elements are absent (Staging::fetch's present): no wide loads
};

// The slots a thread fills of one operand's tile, each `width` pairs: 4 (read as one 16-byte
// vector load) where the operand is a buffer contiguous along k, else 1; and the pairs in
// flight between a step's fetch and its put.
struct Staging {
    int width = 1;
    std::vector<contraction::TileSlot> slots;
    std::vector<std::vector<Var>> pairs;  // by slot
    ElementRead read;

    // Loads the slots' pairs of the step from p0 on (`inside`: the whole step lies below
    // k_terms); element(line, q) is the index of element q of the operand line, present(line, q)
    // (where given) whether it exists (else it reads as zero).
    using LineElement = std::function<Expr(const Expr& line, const Expr& q)>;
    void fetch(KernelBuilder& k, const Expr& p0, const Expr& k_terms, bool inside,
               const LineElement& element, const LineElement& present = {});
    // Stores the pairs into the tile from `offset` (a stage's first word).
    void put(KernelBuilder& k, const Memory& tile, const Expr& offset) const;
    // Where the slots are 4 pairs wide: copies the slots of a step that lies below k, from p0
    // on, straight into the tile from `offset` (KernelBuilder::copy_to_shared: asynchronous on
    // CUDA, landing by a barrier that waits for them).
    void copy(KernelBuilder& k, const Expr& p0, const Memory& tile, const Expr& offset,
              const LineElement& element) const;
};

// Consecutive threads take consecutive pairs (or runs of 4) along the operand's contiguous
// dimension.
Staging stage_operand(KernelBuilder& k, const OperandShape& o);

// An operand whose lines are adjacent (B row-major, A transposed, attention's V), staged k-major:
// row q of a stage holds term q of the block's `lines` lines, two lines a word, rows `ld` =
// k_major_ld(lines) = lines / 2 + 4 words apart (so 8 rows of an ldmatrix hit every bank once);
// fragments are read by ldmatrix.trans. Each slot is 8 lines of one row: 16 bytes.
inline constexpr int k_major_ld(int lines) {
    return lines / 2 + 4;
}
struct KMajorStaging {
    int ld;  // k_major_ld(lines)
    ElementRead read;
    std::vector<contraction::TileSlot> slots;  // line: the slot's first (of the tile); term: row

    // Stores the step from q0 on into the tile from `offset`: a slot whose 8 lines exist (below
    // line_count from first_line) and whose term lies below k_terms (known where `inside`) is
    // copied (KernelBuilder::copy_to_shared), any other (every slot where the operand is not a
    // buffer) read element by element (zero past either end). element(line, q) is the index of
    // element q of operand line `line`.
    void issue(KernelBuilder& k, const Expr& q0, const Expr& k_terms, bool inside,
               const Expr& first_line, const Expr& line_count, const Staging::LineElement& element,
               const Memory& tile, const Expr& offset) const;
};
KMajorStaging stage_k_major(KernelBuilder& k, const ElementRead& read, int lines, int terms,
                            int threads);

// The steps at 0, step, 2 step, ... below `end` through `stages` (2 to 4) shared stages: step i
// lives in stage i % stages, its data issued (`issue(at, stage)`: copies, or loads into
// registers) stages - 1 steps ahead and summed by `sum(at, stage)`; `land(stage)` (where given)
// then stores what issue left in registers into the stage (in the prologue right after issue).
// One barrier a step: it leaves the stages - 2 later steps' copies in flight and follows every
// thread's reads of the stage that step then fills.
void staged_steps(KernelBuilder& k, int stages, const Expr& end, int step,
                  const std::function<void(const Expr& at, const Expr& stage)>& issue,
                  const std::function<void(const Expr& at, const Expr& stage)>& sum,
                  const std::function<void(const Expr& stage)>& land = {});

}  // namespace kiln::ops::tensor_core
