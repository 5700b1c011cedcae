// The CPU backend's toolchain: which C++ compiler it runs, its identity (version, what
// -march=native means here) for cache keys, and compiling generated source to a shared object.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::runtime::cpu {

// How hard the compiler optimizes: -O3, or -O1 for a build about 40 % shorter whose code runs
// about as fast (explicit SIMD loops are still vectorized) and gives the same bits.
enum class Optimization { full, short_build };

struct Toolchain {
    std::string requested;     // what was asked for: $KILN_CXX, or "c++"
    std::string path;          // the resolved executable; empty when none was found
    std::string version_line;  // first line of `--version`
    std::string version;       // "12.2.0"
    std::string family;        // "g++" or "clang++"
    std::string march;         // what -march=native resolves to ("skylake-avx512")
    std::string target_hash;   // hash of the compiler's full target-flag report for -march=native
    bool avx512 = false;       // -march=native enables AVX-512F
    std::string error;         // why the toolchain is unusable; empty when it works

    bool usable() const { return error.empty(); }
    // "g++ 12.2.0", or "none" when unusable.
    std::string compiler_name() const;
    // Everything besides the source that changes the binary. Throws kiln::Error when unusable.
    std::string id() const;
    // Throws the kiln::Error in `error` when the toolchain is unusable.
    void require() const;
};

// The flags every CPU kernel is compiled with by `toolchain` (strict IEEE float, wrapping
// integers). Register-tiled kernels are written for the whole vector register file: where the CPU
// has AVX-512, 512-bit vectors are preferred (GCC tunes some AVX-512 CPUs to 256-bit ones), and
// GCC schedules instructions before register allocation minding register pressure (without it,
// its Intel tunings hoist a tile's broadcasts and spill accumulators).
std::vector<std::string> compile_flags(const Toolchain& toolchain, Optimization level);

// Finds and interrogates the compiler: `requested` is a path or a name looked up on $PATH.
// Never throws; an unusable compiler is reported in Toolchain::error.
Toolchain probe_toolchain(const std::string& requested);

// Compiles `source` to a shared object in a private temporary directory and returns its bytes.
// Throws kiln::Error with the command line and the compiler's full diagnostics on failure.
std::vector<uint8_t> compile_shared_object(const Toolchain& toolchain, const std::string& source,
                                           std::chrono::milliseconds timeout, Optimization level);

}  // namespace kiln::runtime::cpu
