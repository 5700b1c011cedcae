// Host time of the smallest calls, per device: a buffer's allocation and release, a one-launch
// compiled program's call (each replay mode; outputs dropped by the next call, so their buffers
// serve again, or held, so each call makes its own), a four-launch program's call with an input
// at a new address each call (direct, or a recording moved to it) and a resolve's replay hit; on
// CUDA also the driver's own floor for each step (an empty kernel's cuLaunchKernel, a pool
// allocation and free, cuCtxSetCurrent, a one-kernel graph's cuGraphLaunch and its node's
// arguments set anew), so the program's figure can be read against what the driver alone costs.
//   bench_host_path [--device D] [--iters N] [--json FILE]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_common.hpp"
#include "kiln/buffer.hpp"
#include "kiln/device.hpp"
#include "kiln/program.hpp"
#include "kiln/tensor.hpp"

#ifdef KILN_HAVE_CUDA_HEADERS
#include "runtime/cuda/driver_api.hpp"
#endif

namespace kiln {
namespace {

using Row = std::pair<std::string, double>;

// Median over `rounds` of the mean host us of `iters` calls of `step`, the device idle before
// each round and drained after it (asynchronous work is counted where it is enqueued).
double host_us(Device& d, int iters, const std::function<void()>& step) {
    std::vector<double> rounds;
    for (int r = 0; r < 7; ++r) {
        d.synchronize();
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; ++i) step();
        const auto t1 = std::chrono::steady_clock::now();
        d.synchronize();
        rounds.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / iters);
    }
    return bench::median(rounds);
}

std::vector<Row> kiln_rows(Device& d, int iters) {
    std::vector<Row> rows;
    rows.emplace_back("buffer allocate+release (256 B)",
                      host_us(d, iters, [&] { Buffer b(d, DType::f32, 64); }));
    const Tensor x = Tensor::full({64}, 1.5, DType::f32, d);
    const auto one_launch = [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{in[0] * 2.0 + 1.0};
    };
    Tensor w = Tensor::eye(16, {}, 0, DType::f32, d);
    w.resolve();
    const auto four_launches = [&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{matmul(matmul(matmul(matmul(in[0], w), w), w), w)};
    };
    // Inputs taken in turn: more than a replay keeps recordings for or looks recent calls up in,
    // so every call's input is at an address no recording was made at.
    std::vector<Tensor> squares;
    for (int i = 0; i < 8; ++i)
        squares.push_back(Tensor::full({16, 16}, i, DType::f32, d).resolve());
    // A program per replay mode (KILN_REPLAY is read when a signature first replays); `held`
    // earlier calls' outputs are kept, so each call makes its own.
    const auto program_row = [&](const char* mode, const std::string& what, size_t held,
                                 const ProgramFunction& fn, const std::vector<Tensor>& inputs) {
        const char* before = std::getenv("KILN_REPLAY");
        const std::string saved = before ? before : "";
        setenv("KILN_REPLAY", mode, 1);
        Program program = compile(fn);
        std::vector<std::vector<Tensor>> outs(held + 1);
        for (int i = 0; i < 4; ++i) outs[0] = program({inputs[0]});  // the trace, the mode's choice
        size_t next = 0, input = 0;
        rows.emplace_back(what, host_us(d, iters, [&] {
                              next = (next + 1) % outs.size();
                              input = (input + 1) % inputs.size();
                              outs[next] = program({inputs[input]});
                          }));
        if (before)
            setenv("KILN_REPLAY", saved.c_str(), 1);
        else
            unsetenv("KILN_REPLAY");
    };
    program_row("measure", "compiled program call, 1 launch (the mode it measured faster)", 0,
                one_launch, {x});
    program_row("direct", "compiled program call, 1 launch, direct", 0, one_launch, {x});
    if (d.records_graphs())
        program_row("recorded", "compiled program call, 1 launch, recorded", 0, one_launch, {x});
    program_row("direct", "compiled program call, 1 launch, direct, 3 outputs held", 3, one_launch,
                {x});
    program_row("direct", "compiled program call, 4 launches, direct, 8 inputs in turn", 0,
                four_launches, squares);
    if (d.records_graphs()) {
        program_row("recorded", "compiled program call, 4 launches, recorded, one input", 0,
                    four_launches, {squares[0]});
        program_row("recorded",
                    "compiled program call, 4 launches, recorded, 8 inputs in turn (moved)", 0,
                    four_launches, squares);
    }
    rows.emplace_back("resolve replay hit, 1 launch (graph built each call)",
                      host_us(d, iters, [&] {
                          Tensor y = x * 2.0 + 1.0;
                          y.resolve();
                      }));
    return rows;
}

#ifdef KILN_HAVE_CUDA_HEADERS
// The driver's floors, on kiln's context (made current by the device's synchronize()).
std::vector<Row> driver_rows(Device& d, int iters) {
    using cuda::check;
    const cuda::DriverApi& api = cuda::driver();
    std::vector<Row> rows;
    d.synchronize();
    CUcontext context = nullptr;
    CUdevice device = 0;
    check(api.cuDeviceGet(&device, 0), "cuDeviceGet");
    check(api.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
    check(api.cuCtxSetCurrent(context), "cuCtxSetCurrent");
    rows.emplace_back("driver: cuCtxSetCurrent",
                      host_us(d, iters * 10, [&] { api.cuCtxSetCurrent(context); }));

    static const char* ptx =
        ".version 7.0\n.target sm_70\n.address_size 64\n"
        ".visible .entry empty(.param .u64 p) { ret; }\n";
    CUmodule module = nullptr;
    CUfunction function = nullptr;
    check(api.cuModuleLoadData(&module, ptx), "cuModuleLoadData");
    check(api.cuModuleGetFunction(&function, module, "empty"), "cuModuleGetFunction");
    CUstream stream = nullptr;
    check(api.cuStreamCreate(&stream, CU_STREAM_DEFAULT), "cuStreamCreate");
    CUdeviceptr arg = 0;
    void* params[] = {&arg};
    auto launch = [&] {
        api.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, stream, params, nullptr);
    };
    rows.emplace_back("driver: cuLaunchKernel, empty kernel", host_us(d, iters, [&] { launch(); }));

    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = device;
    CUmemoryPool pool = nullptr;
    check(api.cuMemPoolCreate(&pool, &props), "cuMemPoolCreate");
    rows.emplace_back("driver: cuMemAllocFromPoolAsync+cuMemFreeAsync", host_us(d, iters, [&] {
                          CUdeviceptr p = 0;
                          api.cuMemAllocFromPoolAsync(&p, 256, pool, stream);
                          api.cuMemFreeAsync(p, stream);
                      }));

    // kiln's own launch of an empty kernel (Device::launch: context, checks, argument packing).
    const std::vector<uint8_t> cubin = d.compile(
        "extern \"C\" __global__ void empty(unsigned long long* p, unsigned long long n) {}\n");
    const std::unique_ptr<Module> kiln_module = d.load(cubin);
    Buffer argument(d, DType::i64, 1);
    const KernelArg kiln_args[] = {KernelArg::buffer(argument.memory()), KernelArg::value(1, 8)};
    rows.emplace_back("kiln: Device::launch, empty kernel", host_us(d, iters, [&] {
                          d.launch(*kiln_module, "empty", 1, 32, kiln_args);
                      }));

    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    check(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "capture");
    launch();
    check(api.cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
    check(api.cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
    rows.emplace_back("driver: cuGraphLaunch, one empty kernel",
                      host_us(d, iters, [&] { api.cuGraphLaunch(exec, stream); }));
    // What moving a recording to other buffers costs a launch: its node's arguments set anew.
    CUgraphNode node = nullptr;
    size_t nodes = 1;
    check(api.cuGraphGetNodes(graph, &node, &nodes), "cuGraphGetNodes");
    CUDA_KERNEL_NODE_PARAMS moved{};
    moved.func = function;
    moved.gridDimX = moved.gridDimY = moved.gridDimZ = 1;
    moved.blockDimX = 32;
    moved.blockDimY = moved.blockDimZ = 1;
    moved.kernelParams = params;
    rows.emplace_back("driver: cuGraphExecKernelNodeSetParams, one node", host_us(d, iters, [&] {
                          ++arg;
                          api.cuGraphExecKernelNodeSetParams(exec, node, &moved);
                      }));
    check(api.cuStreamSynchronize(stream), "cuStreamSynchronize");
    api.cuGraphExecDestroy(exec);
    api.cuGraphDestroy(graph);
    api.cuMemPoolDestroy(pool);
    api.cuStreamDestroy(stream);
    api.cuModuleUnload(module);
    api.cuDevicePrimaryCtxRelease(device);
    return rows;
}
#endif

int run(int argc, char** argv) {
    const bench::Flags flags(argc, argv, {"--device", "--iters", "--json"},
                             "bench_host_path [--device D] [--iters N] [--json FILE]");
    const int iters = static_cast<int>(flags.integer("--iters", 2000, 1, 10000000));
    std::vector<Device*> chosen;
    if (flags.has("--device"))
        chosen.push_back(&find_device(flags.text("--device")));
    else
        for (Device* d : devices()) chosen.push_back(d);
    std::vector<std::string> objects;
    for (Device* d : chosen) {
        std::vector<Row> rows = kiln_rows(*d, iters);
#ifdef KILN_HAVE_CUDA_HEADERS
        if (d->info().backend == Backend::cuda) {
            std::vector<Row> floors = driver_rows(*d, iters);
            rows.insert(rows.end(), floors.begin(), floors.end());
        }
#endif
        fmt::print("{}\n", d->info().id);
        for (const auto& [what, us] : rows) {
            fmt::print("  {:<64} {:8.2f} us\n", what, us);
            objects.push_back(fmt::format("{{\"device\": {}, \"what\": {}, \"us\": {:.3f}}}",
                                          bench::json_quote(d->info().id), bench::json_quote(what),
                                          us));
        }
    }
    if (flags.has("--json")) bench::write_json_array(flags.text("--json"), objects);
    return 0;
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
    return kiln::bench::main_of("bench_host_path", kiln::run, argc, argv);
}
