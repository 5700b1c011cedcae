// Dialect: what differs between the C-family languages kiln emits. The emitter is one; each
// backend is this table (for the CPU, with the threads-as-loops form of a block).
#pragma once

#include <string>
#include <string_view>

namespace kiln::codegen {

// How vector loads and stores (ir::stmt::LoadVector, StoreVector) are written.
enum class VectorLoad {
    elements,             // one access per element
    aligned_or_elements,  // CUDA: one uint4-style access where the address is aligned to it
    vload,                // OpenCL: vloadN / vstoreN (any element-aligned address)
};

// How a kernel's entry point is declared and receives its arguments (src/runtime/ABI.md).
enum class EntryAbi {
    argument_array,  // CPU: a plain function over a range of blocks, arguments as an array
    cuda_global,     // CUDA: extern "C" __global__ with __launch_bounds__
    opencl_kernel,   // OpenCL: __kernel with reqd_work_group_size
};

struct Dialect {
    std::string name;          // "cpu", "cuda", "opencl"
    std::string prelude;       // fixed-width ints, KILN_FN, kiln_f32_bits / kiln_bits_f32
    std::string global_space;  // qualifier of buffer pointers ("__global ")
    std::string restrict_kw;   // "__restrict__" or "restrict"
    std::string shared_space;  // qualifier of shared tiles ("__shared__ ", "__local ")
    // Qualifier of per-thread arrays kept in memory (ir::ArrayInfo::in_memory): "volatile " where
    // the compiler would otherwise promote them to registers; empty where it may.
    std::string memory_array;
    std::string thread_index;  // expression giving the thread's index in its block (i32)
    std::string block_index;
    std::string grid_size;
    std::string barrier;       // statement
    std::string warp_barrier;  // statement syncing 32 threads; empty: use `barrier`
    std::string sqrt_f32;      // correctly rounded sqrt function
    std::string device_exp2;   // the hardware's 2^x of an f32 (kiln::device_exp2); empty: none
    std::string fma_f32;       // fused multiply-add function
    std::string dp4a;          // packed int8 dot product with i32 accumulate
    // f32 to f16 / bf16 bits by the hardware, bit for bit the semantics file's kiln_f32_to_f16 /
    // kiln_f32_to_bf16 (defined in the prelude); empty: those.
    std::string f32_to_f16, f32_to_bf16;
    // Two f32 values as f16 / bf16 bits packed into one u32 (the first in the low half), bit for
    // bit two of those conversions, as a function "..{}.." of the half type's name ("f16",
    // "bf16"); empty: the conversions, shifted and or'ed.
    std::string pack_halves;
    EntryAbi entry_abi = EntryAbi::opencl_kernel;
    bool threads_as_loops = false;  // CPU: run a block's threads as loops (codegen/cpu_threads.hpp)
    bool has_shuffle = false;       // CUDA: __shfl_xor_sync
    // CUDA: tensor-core steps (ir::stmt::Mma) as kiln_mma_f16 / kiln_mma_bf16 of the prelude,
    // defined for sm_80 and later.
    bool has_mma = false;
    // CUDA: copying vector stores (ir::StoreVector::from) as kiln_copy16(tile address, buffer
    // address) where both are 16-byte aligned, and a barrier's wait for copy groups as
    // kiln_copies_wait(n) before it; empty: the values are stored, barriers as they are. Warp
    // matrix loads (ir::stmt::LoadMatrix) as kiln_ldmatrix_x1/x2/x4 come with has_mma.
    std::string async_copy;
    std::string async_wait;
    int warp_size = 1;
    VectorLoad vector_load = VectorLoad::elements;
    // OpenCL: in a kernel with barriers, `if (c) A else B` is written as two ifs on a volatile
    // copy of c, so each if's false edge reaches the code after it. PoCL 5's work-group compiler
    // aborts (region_entry_barrier != NULL) on an if/else whose arms both end in control flow
    // right before a barrier; the volatile copy keeps LLVM from merging the ifs back.
    bool split_if_else = false;
    // OpenCL: in a kernel with barriers, the block index is read once through a volatile. PoCL 5
    // (LLVM 16) computed wrong results for a staged attention kernel whose block index was
    // divided and reduced by one constant (a graph launch: q blocks of (batch, head) = index / 3
    // and index % 3); through the volatile copy it computes the kernel as written.
    bool opaque_block_index = false;
    // Bytes every buffer parameter's first element is aligned to (the runtime checks it when it
    // allocates); 0: not known. With it, a vector access at an index known to be a multiple of
    // its width (ir/divisibility.hpp) needs no run-time alignment test.
    int buffer_alignment = 0;
    // Bytes every shared tile is declared aligned to, by `tile_align` written before its type
    // ("__align__(16) "); 0: not declared. A vector access of a tile at an index known to be a
    // multiple of its width then needs no run-time alignment test either.
    int tile_alignment = 0;
    std::string tile_align;
    // CPU: each tile is an array named sh{i}_tile read and written through `sh{i}`, a restrict
    // pointer to it. GCC 12 keeps a strip's values that a loop carries from trip to trip in
    // memory (a load and a store each trip) when the loop also reads a tile declared as an
    // array; through the pointer they stay in vector registers.
    bool tile_through_pointer = false;
    // Loads and stores of streaming buffers (ir::CacheHint::streaming): {0} is the element's
    // address (and {1} the stored value). Empty: written as plain loads and stores.
    std::string streaming_load;
    std::string streaming_store;
    // Loads of kept buffers (ir::CacheHint::keep): {0} is the element's (or vector's) address.
    // Empty: written as plain loads.
    std::string keep_load;
    // Checked mode: the body of `bool kiln_claim_fault(uint32_t* word, uint32_t site)`, an
    // atomic compare-and-swap of *word from 0 to site, true where this thread swapped it; and
    // how the function of the rare fault path is declared (not inlined where the driver allows).
    std::string claim_fault;
    std::string cold_function;
};

const Dialect& cpu_dialect();
const Dialect& cuda_dialect();
const Dialect& opencl_dialect();

// The text of include/kiln/scalar_semantics.h, embedded at build time.
extern const std::string_view scalar_semantics_source;

}  // namespace kiln::codegen
