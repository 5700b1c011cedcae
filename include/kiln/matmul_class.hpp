// The arithmetic class of a matmul (docs/numerics.md), chosen by the caller, never by the tuner.
#pragma once

#include <cstdint>

namespace kiln {

//   exact        every schedule point, device and backend gives the oracle's bits.
//   tensor_core  f16/bf16 inputs only: tensor-core mma steps on CUDA devices that have them
//                (sm_80 and later), bit-identical among the class's points on one device and
//                within a stated bound of the exact oracle; the exact class elsewhere.
enum class MatmulClass : uint8_t { exact, tensor_core };

}  // namespace kiln
