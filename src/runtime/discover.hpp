// Device discovery, one function per backend. Each returns the devices it found, or none and a
// reason ("CUDA unavailable: libcuda.so.1 not found") when the backend cannot run here.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/device.hpp"

namespace kiln::runtime {

std::vector<std::unique_ptr<Device>> discover_cpu(std::string* reason);
std::vector<std::unique_ptr<Device>> discover_cuda(std::string* reason);
std::vector<std::unique_ptr<Device>> discover_opencl(std::string* reason);

}  // namespace kiln::runtime
