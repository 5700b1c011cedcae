// CudaDevice: memory, compilation, module loading, launches and event timing on one GPU through
// the dlopen-ed driver API. Every call makes the device's primary context current first, so a
// device works from any thread.
#include "runtime/cuda/cuda_device.hpp"

#ifdef KILN_HAVE_CUDA_HEADERS

#include <atomic>
#include <cstring>
#include <limits>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "codegen/dialect.hpp"
#include "kiln/error.hpp"
#include "runtime/cuda/captured_launches.hpp"
#include "runtime/cuda/driver_api.hpp"
#include "runtime/cuda/nvrtc.hpp"

namespace kiln::cuda {

// The device's primary context, its stream and kiln's memory pool on it. Memories and modules
// hold it so that they can be freed after their device is gone.
//
// Memory is allocated and freed in stream order from the pool (cuMemAllocFromPoolAsync,
// cuMemFreeAsync): every kiln operation on the device runs on the one stream, so a block freed
// behind queued work is reused only by work queued after it. Freeing never waits for the device
// (cuMemFree synchronizes it), and the pool keeps freed blocks instead of returning them to the
// driver, so a tuned op's output allocated and freed per call costs no driver allocation. Where
// the device has no memory pools, plain cuMemAlloc / cuMemFree.
struct Context {
    CUdevice device = 0;
    CUcontext context = nullptr;
    CUstream stream = nullptr;
    CUmemoryPool pool = nullptr;
    std::string name;  // for error messages: "cuda:0 (NVIDIA H200)"

    Context(CUdevice dev, std::string device_name) : device(dev), name(std::move(device_name)) {
        const DriverApi& api = driver();
        check(api.cuDevicePrimaryCtxRetain(&context, device),
              fmt::format("cuDevicePrimaryCtxRetain on {}", name));
        CUresult r = api.cuCtxSetCurrent(context);
        if (r == CUDA_SUCCESS) r = api.cuStreamCreate(&stream, CU_STREAM_DEFAULT);
        if (r != CUDA_SUCCESS) {
            api.cuDevicePrimaryCtxRelease(device);
            check(r, fmt::format("creating the stream of {}", name));
        }
        pool = create_pool(device);
    }
    ~Context() {
        const DriverApi& api = driver();
        if (api.cuCtxSetCurrent(context) == CUDA_SUCCESS) {
            // Blocks still owed by queued frees are released when those complete.
            if (pool != nullptr) api.cuMemPoolDestroy(pool);
            api.cuStreamDestroy(stream);
        }
        api.cuDevicePrimaryCtxRelease(device);
    }
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    void make_current() const { check(driver().cuCtxSetCurrent(context), "cuCtxSetCurrent"); }

    // While CudaDevice::record captures the stream, everything the stream is given becomes part
    // of the recording. Each call that gives the stream work holds what this returns while it
    // does, so a recording cannot begin or end in the middle of it. Fails unless `what` may use
    // the stream now: anything when nothing is being recorded; while recording, only what a
    // recording can hold (`recordable`: launches, fills, copies, replays), and only from the
    // recording thread (which holds no lock: the recording is its own).
    [[nodiscard]] std::unique_lock<std::mutex> use_stream(std::string_view what,
                                                          bool recordable) const {
        if (recording_.load(std::memory_order_acquire) && std::this_thread::get_id() == recorder_) {
            if (!recordable)
                fail(
                    "{} on {} while recording: a recording holds only launches, fills and copies "
                    "of memory allocated before it",
                    what, name);
            return {};
        }
        std::unique_lock lock(recording_mutex_);
        if (recording_.load(std::memory_order_relaxed))
            fail(
                "{} on {}: another thread is recording work on this device; expected its "
                "record() to return first",
                what, name);
        return lock;
    }
    // Whether the calling thread is capturing the stream.
    bool recording_here() const {
        return recording_.load(std::memory_order_acquire) &&
               std::this_thread::get_id() == recorder_.load(std::memory_order_relaxed);
    }
    // Starts capturing the stream for this thread (see CudaDevice::record).
    void begin_recording() {
        const std::unique_lock lock = use_stream("record", false);
        recorder_.store(std::this_thread::get_id(), std::memory_order_relaxed);
        capture_log_ = {};
        check(driver().cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
              fmt::format("cuStreamBeginCapture on {}", name));
        recording_.store(true, std::memory_order_release);
    }
    // Ends the capture into *graph (null where it failed) and returns the driver's result and
    // how many buffers the recording thread freed meanwhile (memory the recorded work may
    // use); frees those and any other thread's. Never throws.
    std::pair<CUresult, size_t> end_recording(CUgraph* graph) {
        const DriverApi& api = driver();
        std::vector<std::pair<CUdeviceptr, bool>> released;
        CUresult r = api.cuCtxSetCurrent(context);  // the work may have made another current
        {
            std::lock_guard lock(recording_mutex_);
            if (r == CUDA_SUCCESS) r = api.cuStreamEndCapture(stream, graph);
            recording_.store(false, std::memory_order_release);
            released.swap(released_while_recording_);
        }
        size_t by_recorder = 0;
        for (const auto& [p, recorder] : released) {
            release(p);
            by_recorder += recorder ? 1 : 0;
        }
        return {r, by_recorder};
    }

    // What the recording thread has given the stream since its capture began; null on other
    // threads and when nothing is recorded. Taken by the recording once it ends.
    CaptureLog* capture_log() { return recording_here() ? &capture_log_ : nullptr; }
    CaptureLog take_capture_log() { return std::move(capture_log_); }

    // Waits for the stream; an asynchronous fault of earlier work surfaces here.
    void sync(std::string_view after) const {
        (void)use_stream(after, false);  // checked only: other threads may enqueue meanwhile
        check(driver().cuStreamSynchronize(stream),
              fmt::format("{} on {} (cuStreamSynchronize; the fault may come from an earlier "
                          "launch)",
                          after, name));
    }

    // `bytes` of device memory, usable by work queued on the stream from now on, aligned as
    // the CUDA dialect promises its kernels (their wide accesses rely on it).
    CUdeviceptr allocate(size_t bytes) const {
        const CUdeviceptr p = allocate_from_driver(bytes);
        const auto alignment = static_cast<CUdeviceptr>(codegen::cuda_dialect().buffer_alignment);
        if (p % alignment != 0) {
            release(p);
            fail(
                "{}: the driver gave {} bytes at {:#x}, not aligned to {} bytes as kiln's CUDA "
                "kernels need",
                name, bytes, p, alignment);
        }
        return p;
    }
    CUdeviceptr allocate_from_driver(size_t bytes) const {
        const DriverApi& api = driver();
        CUdeviceptr p = 0;
        if (pool == nullptr) {
            (void)use_stream("allocate", false);  // checked only: cuMemAlloc is not stream work
            check(api.cuMemAlloc(&p, bytes),
                  fmt::format("cuMemAlloc({} bytes) on {}", bytes, name));
            return p;
        }
        auto allocate_on_stream = [&] {
            const std::unique_lock stream_use = use_stream("allocate", false);
            return api.cuMemAllocFromPoolAsync(&p, bytes, pool, stream);
        };
        CUresult r = allocate_on_stream();
        if (r == CUDA_ERROR_OUT_OF_MEMORY) {  // give idle blocks back, then try once more
            trim("allocating memory");
            r = allocate_on_stream();
        }
        check(r, fmt::format("cuMemAllocFromPoolAsync({} bytes) on {}", bytes, name));
        return p;
    }
    // Lets the frees queued so far land, then hands the pool's idle blocks to the driver.
    void trim(std::string_view during) const {
        sync(during);
        if (pool != nullptr) check(driver().cuMemPoolTrimTo(pool, 0), "cuMemPoolTrimTo");
    }
    // Frees memory from allocate() once the work queued so far is done; never throws. While
    // the stream is being recorded the free waits for the recording's end (a free would become
    // part of it).
    void release(CUdeviceptr p) const {
        std::lock_guard lock(recording_mutex_);
        if (recording_.load(std::memory_order_relaxed)) {
            released_while_recording_.emplace_back(
                p, std::this_thread::get_id() == recorder_.load(std::memory_order_relaxed));
            return;
        }
        const DriverApi& api = driver();
        if (api.cuCtxSetCurrent(context) != CUDA_SUCCESS) return;
        if (pool == nullptr)
            api.cuMemFree(p);
        else
            api.cuMemFreeAsync(p, stream);
    }

  private:
    std::atomic<bool> recording_{false};
    std::atomic<std::thread::id> recorder_;
    mutable std::mutex recording_mutex_;
    mutable std::vector<std::pair<CUdeviceptr, bool>> released_while_recording_;
    CaptureLog capture_log_;  // the recording thread's alone while it records

    // A pool of device memory that keeps what is freed, or null where pools are unsupported.
    static CUmemoryPool create_pool(CUdevice device) {
        const DriverApi& api = driver();
        int supported = 0;
        if (api.cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                                     device) != CUDA_SUCCESS ||
            supported == 0)
            return nullptr;
        CUmemPoolProps props{};
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = device;
        CUmemoryPool pool = nullptr;
        if (api.cuMemPoolCreate(&pool, &props) != CUDA_SUCCESS) return nullptr;
        cuuint64_t keep_all = std::numeric_limits<cuuint64_t>::max();
        if (api.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all) !=
            CUDA_SUCCESS) {
            api.cuMemPoolDestroy(pool);
            return nullptr;
        }
        return pool;
    }
};

namespace {

class CudaMemory final : public DeviceMemory {
  public:
    CudaMemory(std::shared_ptr<Context> context, size_t bytes)
        : context_(std::move(context)), bytes_(bytes) {
        // A zero-byte allocation still gets one real byte, so it has a valid address.
        pointer_ = context_->allocate(bytes == 0 ? 1 : bytes);
    }
    // Memory another library owns (CudaDevice::wrap): never freed here; `owner` is let go once
    // the work queued on the stream so far, which may read the memory, is done.
    CudaMemory(std::shared_ptr<Context> context, CUdeviceptr pointer, size_t bytes,
               std::shared_ptr<void> owner)
        : context_(std::move(context)),
          bytes_(bytes),
          pointer_(pointer),
          owner_(std::move(owner)) {}
    ~CudaMemory() override {
        if (!owner_) {
            context_->release(pointer_);
            return;
        }
        // A recording's memory must outlive it (Device::record); outside one, wait for the
        // stream before the owner may free the memory. Never throws.
        if (!context_->recording_here() &&
            driver().cuCtxSetCurrent(context_->context) == CUDA_SUCCESS)
            driver().cuStreamSynchronize(context_->stream);
    }
    CudaMemory(const CudaMemory&) = delete;
    CudaMemory& operator=(const CudaMemory&) = delete;

    size_t bytes() const override { return bytes_; }
    CUdeviceptr pointer() const { return pointer_; }
    uintptr_t handle() const override { return static_cast<uintptr_t>(pointer_); }
    const Context* context() const { return context_.get(); }

  private:
    std::shared_ptr<Context> context_;
    size_t bytes_ = 0;
    CUdeviceptr pointer_ = 0;
    std::shared_ptr<void> owner_;  // set for memory another library owns
};

class CudaModule final : public Module {
  public:
    struct Function {
        CUfunction handle = nullptr;
        int max_threads = 0;  // per block, as the compiled kernel's registers allow
    };

    CudaModule(std::shared_ptr<Context> context, std::span<const uint8_t> binary)
        : context_(std::move(context)) {
        check(driver().cuModuleLoadData(&module_, binary.data()),
              fmt::format("cuModuleLoadData ({}-byte cubin) on {}", binary.size(), context_->name));
    }
    ~CudaModule() override {
        const DriverApi& api = driver();
        if (api.cuCtxSetCurrent(context_->context) == CUDA_SUCCESS) api.cuModuleUnload(module_);
    }
    CudaModule(const CudaModule&) = delete;
    CudaModule& operator=(const CudaModule&) = delete;

    const Context* context() const { return context_.get(); }

    void require_entry(const std::string& entry) override {
        context_->make_current();
        function(entry);
    }

    // The kernel named `entry`, looked up once. The context must be current.
    Function function(const std::string& entry) {
        std::lock_guard lock(mutex_);
        if (auto it = functions_.find(entry); it != functions_.end()) return it->second;
        const DriverApi& api = driver();
        Function f;
        CUresult r = api.cuModuleGetFunction(&f.handle, module_, entry.c_str());
        if (r == CUDA_ERROR_NOT_FOUND) {
            fail(
                "CUDA module has no kernel named '{}' (expected an extern \"C\" __global__ "
                "function of that name)",
                entry);
        }
        check(r, fmt::format("cuModuleGetFunction('{}')", entry));
        check(api.cuFuncGetAttribute(&f.max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                     f.handle),
              fmt::format("cuFuncGetAttribute('{}', MAX_THREADS_PER_BLOCK)", entry));
        functions_.emplace(entry, f);
        return f;
    }

  private:
    std::shared_ptr<Context> context_;
    CUmodule module_ = nullptr;
    std::mutex mutex_;
    std::unordered_map<std::string, Function> functions_;
};

const CudaMemory& as_cuda(const DeviceMemory& memory, const Context& context,
                          std::string_view what) {
    const auto* m = dynamic_cast<const CudaMemory*>(&memory);
    if (m == nullptr) fail("{}: the memory was not allocated by a CUDA device", what);
    if (m->context() != &context) {
        fail("{}: the memory belongs to another CUDA device than {}", what, context.name);
    }
    return *m;
}

// A CUDA event destroyed when the timing ends, however it ends.
class Event {
  public:
    Event() { check(driver().cuEventCreate(&event_, CU_EVENT_DEFAULT), "cuEventCreate"); }
    ~Event() { driver().cuEventDestroy(event_); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    CUevent get() const { return event_; }

  private:
    CUevent event_ = nullptr;
};

// A captured graph destroyed however the recording ends.
struct GraphOwner {
    CUgraph graph = nullptr;
    GraphOwner() = default;
    GraphOwner(const GraphOwner&) = delete;
    GraphOwner& operator=(const GraphOwner&) = delete;
    ~GraphOwner() {
        if (graph != nullptr) driver().cuGraphDestroy(graph);
    }
};

// A recorded graph, instantiated once; each replay launches it on the device's stream. It keeps
// the captured graph and its launches' arguments, so that rebind can move them to other memory
// in the instantiated graph (whose nodes are the captured graph's).
class CudaRecording final : public Recording {
  public:
    CudaRecording(std::shared_ptr<Context> context, std::unique_ptr<GraphOwner> graph,
                  CUgraphExec exec, CaptureLog log)
        : context_(std::move(context)),
          graph_(std::move(graph)),
          exec_(exec),
          log_(std::move(log)),
          movable_(find_nodes(graph_->graph, log_.launches)) {}
    ~CudaRecording() override {
        // A graph still running is freed when it completes.
        const DriverApi& api = driver();
        if (api.cuCtxSetCurrent(context_->context) == CUDA_SUCCESS) api.cuGraphExecDestroy(exec_);
    }
    CudaRecording(const CudaRecording&) = delete;
    CudaRecording& operator=(const CudaRecording&) = delete;

    void replay() override {
        context_->make_current();
        const std::unique_lock stream_use = context_->use_stream("replay", true);
        const CUresult r = driver().cuGraphLaunch(exec_, context_->stream);
        if (r != CUDA_SUCCESS)
            check(r, fmt::format("cuGraphLaunch (replay) on {}", context_->name));
    }

    bool rebind(std::span<const Move> moves) override {
        if (!movable_) return false;
        std::vector<std::pair<CUdeviceptr, CUdeviceptr>> pointers;
        pointers.reserve(moves.size());
        for (const Move& m : moves) {
            if (m.to == nullptr) fail("rebind on {}: a move to no memory", context_->name);
            pointers.emplace_back(
                static_cast<CUdeviceptr>(m.from),
                as_cuda(*m.to, *context_, "rebind (the memory moved to)").pointer());
        }
        context_->make_current();
        return move_arguments(exec_, log_, pointers);
    }

  private:
    std::shared_ptr<Context> context_;
    std::unique_ptr<GraphOwner> graph_;
    CUgraphExec exec_ = nullptr;
    CaptureLog log_;
    bool movable_ = false;  // every launch found as its node
};

int attribute(CUdevice device, CUdevice_attribute which, const char* what) {
    int value = 0;
    check(driver().cuDeviceGetAttribute(&value, which, device),
          fmt::format("cuDeviceGetAttribute({})", what));
    return value;
}

// "13.0" from the driver's 13000.
std::string version_text(int version) {
    return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

std::string sanitize(std::string_view text) {
    std::string out(text);
    for (char& c : out) {
        const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                        (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        if (!ok) c = '_';
    }
    return out;
}

// Fails unless [offset, offset + bytes) lies inside memory of `size` bytes.
void check_range(std::string_view what, size_t offset, size_t bytes, size_t size) {
    if (offset > size || bytes > size - offset) {
        fail("{}: range [{}, {} + {}) is outside the {}-byte memory", what, offset, offset, bytes,
             size);
    }
}

}  // namespace

CudaDevice::CudaDevice(int ordinal) : ordinal_(ordinal) {
    const DriverApi& api = driver();
    check(api.cuDeviceGet(&device_, ordinal), fmt::format("cuDeviceGet({})", ordinal));
    char name[256] = {};
    check(api.cuDeviceGetName(name, sizeof(name) - 1, device_), "cuDeviceGetName");
    const int major =
        attribute(device_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability");
    const int minor =
        attribute(device_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability");
    int driver_version = 0;
    check(api.cuDriverGetVersion(&driver_version), "cuDriverGetVersion");
    size_t memory = 0;
    check(api.cuDeviceTotalMem(&memory, device_), "cuDeviceTotalMem");
    const std::string nvrtc = nvrtc_version();

    info_.backend = Backend::cuda;
    info_.name = name;
    info_.arch = fmt::format("sm_{}{}", major, minor);
    info_.driver = "CUDA driver " + version_text(driver_version);
    info_.compiler = "NVRTC " + nvrtc;
    info_.memory_bytes = memory;
    info_.compute_units =
        attribute(device_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count");
    info_.warp_size = attribute(device_, CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size");
    info_.simt = true;
    info_.tensor_cores = major >= 8;
    info_.ordinal = ordinal_;
    info_.id = fmt::format("cuda-{}-{}-drv{}-nvrtc{}", sanitize(info_.name), info_.arch,
                           version_text(driver_version), nvrtc);
}

CudaDevice::~CudaDevice() = default;

std::shared_ptr<Context> CudaDevice::current() {
    std::shared_ptr<Context> context;
    {
        std::lock_guard lock(mutex_);
        if (!context_) {
            context_ = std::make_shared<Context>(device_,
                                                 fmt::format("cuda:{} ({})", ordinal_, info_.name));
        }
        context = context_;
    }
    context->make_current();
    return context;
}

std::shared_ptr<DeviceMemory> CudaDevice::allocate(size_t bytes) {
    return std::make_shared<CudaMemory>(current(), bytes);
}

std::shared_ptr<DeviceMemory> CudaDevice::wrap(uintptr_t address, size_t bytes,
                                               std::shared_ptr<void> owner) {
    const std::shared_ptr<Context> c = current();
    if (!owner)
        fail("{}: memory at {:#x} wrapped without an owner to keep it alive", c->name, address);
    const auto alignment = static_cast<uintptr_t>(codegen::cuda_dialect().buffer_alignment);
    if (address % alignment != 0)
        fail(
            "{}: memory at {:#x} is not aligned to {} bytes; kiln's CUDA kernels need it (copy "
            "it into a fresh tensor first)",
            c->name, address, alignment);
    if (bytes != 0) {
        int ordinal = -1;
        const CUresult r = driver().cuPointerGetAttribute(
            &ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, static_cast<CUdeviceptr>(address));
        if (r != CUDA_SUCCESS)
            fail(
                "{}: {:#x} is not CUDA device memory the driver knows ({}); expected memory "
                "allocated on this device",
                c->name, address, describe(r));
        if (ordinal != ordinal_)
            fail("{}: the memory at {:#x} is on cuda:{}; expected memory of cuda:{}", c->name,
                 address, ordinal, ordinal_);
    }
    return std::make_shared<CudaMemory>(c, static_cast<CUdeviceptr>(address), bytes,
                                        std::move(owner));
}

uintptr_t CudaDevice::address(const DeviceMemory& memory) {
    const std::shared_ptr<Context> c = current();
    return static_cast<uintptr_t>(as_cuda(memory, *c, "export").pointer());
}

uintptr_t CudaDevice::native_stream() {
    return reinterpret_cast<uintptr_t>(current()->stream);
}

void CudaDevice::write(DeviceMemory& dst, size_t offset, const void* src, size_t bytes) {
    const std::shared_ptr<Context> c = current();
    std::unique_lock stream_use = c->use_stream("write", false);
    const CudaMemory& m = as_cuda(dst, *c, "write");
    check_range("write", offset, bytes, m.bytes());
    if (bytes == 0) return;
    if (src == nullptr) fail("write: source pointer is null for {} bytes", bytes);
    check(driver().cuMemcpyHtoDAsync(m.pointer() + offset, src, bytes, c->stream),
          fmt::format("cuMemcpyHtoDAsync({} bytes at offset {})", bytes, offset));
    stream_use.unlock();
    c->sync("write");
}

void CudaDevice::read(const DeviceMemory& src, size_t offset, void* dst, size_t bytes) {
    const std::shared_ptr<Context> c = current();
    std::unique_lock stream_use = c->use_stream("read", false);
    const CudaMemory& m = as_cuda(src, *c, "read");
    check_range("read", offset, bytes, m.bytes());
    if (bytes == 0) return;
    if (dst == nullptr) fail("read: destination pointer is null for {} bytes", bytes);
    check(driver().cuMemcpyDtoHAsync(dst, m.pointer() + offset, bytes, c->stream),
          fmt::format("cuMemcpyDtoHAsync({} bytes at offset {})", bytes, offset));
    stream_use.unlock();
    c->sync("read");
}

void CudaDevice::fill(DeviceMemory& dst, const void* pattern, size_t pattern_bytes) {
    const std::shared_ptr<Context> c = current();
    const std::unique_lock stream_use = c->use_stream("fill", true);
    const CudaMemory& m = as_cuda(dst, *c, "fill");
    if (pattern_bytes != 1 && pattern_bytes != 2 && pattern_bytes != 4 && pattern_bytes != 8) {
        fail("fill: pattern must be 1, 2, 4 or 8 bytes, got {}", pattern_bytes);
    }
    if (pattern == nullptr) fail("fill: pattern pointer is null");
    const size_t size = m.bytes();
    if (size % pattern_bytes != 0) {
        fail("fill: memory of {} bytes is not a whole number of {}-byte patterns", size,
             pattern_bytes);
    }
    if (size == 0) return;
    const DriverApi& api = driver();
    const CUdeviceptr p = m.pointer();
    if (CaptureLog* log = c->capture_log()) log->held.push_back(p);
    const size_t count = size / pattern_bytes;
    if (pattern_bytes == 1) {
        uint8_t v = 0;
        std::memcpy(&v, pattern, 1);
        check(api.cuMemsetD8Async(p, v, count, c->stream), "cuMemsetD8Async");
    } else if (pattern_bytes == 2) {
        uint16_t v = 0;
        std::memcpy(&v, pattern, 2);
        check(api.cuMemsetD16Async(p, v, count, c->stream), "cuMemsetD16Async");
    } else if (pattern_bytes == 4) {
        uint32_t v = 0;
        std::memcpy(&v, pattern, 4);
        check(api.cuMemsetD32Async(p, v, count, c->stream), "cuMemsetD32Async");
    } else {
        uint32_t half[2] = {};
        std::memcpy(half, pattern, 8);
        if (half[0] == half[1]) {
            check(api.cuMemsetD32Async(p, half[0], count * 2, c->stream), "cuMemsetD32Async");
        } else {
            // Each half as a column of 32-bit values with an 8-byte pitch.
            check(api.cuMemsetD2D32Async(p, 8, half[0], 1, count, c->stream),
                  "cuMemsetD2D32Async (low halves)");
            check(api.cuMemsetD2D32Async(p + 4, 8, half[1], 1, count, c->stream),
                  "cuMemsetD2D32Async (high halves)");
        }
    }
}

void CudaDevice::copy(DeviceMemory& dst, const DeviceMemory& src, size_t bytes) {
    const std::shared_ptr<Context> c = current();
    const std::unique_lock stream_use = c->use_stream("copy", true);
    const CudaMemory& d = as_cuda(dst, *c, "copy (destination)");
    const CudaMemory& s = as_cuda(src, *c, "copy (source)");
    check_range("copy (destination)", 0, bytes, d.bytes());
    check_range("copy (source)", 0, bytes, s.bytes());
    if (bytes == 0 || &d == &s) return;
    if (CaptureLog* log = c->capture_log())
        log->held.insert(log->held.end(), {d.pointer(), s.pointer()});
    check(driver().cuMemcpyDtoDAsync(d.pointer(), s.pointer(), bytes, c->stream),
          fmt::format("cuMemcpyDtoDAsync({} bytes)", bytes));
}

std::string CudaDevice::toolchain_id() const {
    std::string id = fmt::format("nvrtc {} {}", nvrtc_version(), info_.arch);
    for (const std::string& option : nvrtc_options(info_.arch)) id += " " + option;
    return id;
}

std::vector<uint8_t> CudaDevice::compile(const std::string& source) {
    return nvrtc_compile(source, info_.arch, nullptr);
}

std::unique_ptr<Module> CudaDevice::load(std::span<const uint8_t> binary) {
    static constexpr uint8_t kElf[4] = {0x7f, 'E', 'L', 'F'};
    if (binary.size() < 4 || std::memcmp(binary.data(), kElf, 4) != 0) {
        fail("load: a CUDA binary must be a cubin (ELF), got {} bytes that are not", binary.size());
    }
    return std::make_unique<CudaModule>(current(), binary);
}

void CudaDevice::launch(Module& module, const std::string& entry, int64_t grid, int block,
                        std::span<const KernelArg> args) {
    if (grid < 0 || grid > std::numeric_limits<int32_t>::max()) {
        fail("launch of '{}': grid of {} blocks is outside [0, 2^31-1]", entry, grid);
    }
    if (block < 1 || block > 1024) {
        fail("launch of '{}': block of {} threads is outside [1, 1024]", entry, block);
    }
    const std::shared_ptr<Context> c = current();
    const std::unique_lock stream_use = c->use_stream("launch", true);
    auto* m = dynamic_cast<CudaModule*>(&module);
    if (m == nullptr) fail("launch of '{}': the module was not loaded by a CUDA device", entry);
    if (m->context() != c.get()) {
        fail("launch of '{}': the module was loaded on another CUDA device than {}", entry,
             c->name);
    }
    const CudaModule::Function f = m->function(entry);
    if (block > f.max_threads) {
        fail("launch of '{}': block of {} threads exceeds the {} this kernel can run per block",
             entry, block, f.max_threads);
    }
    // kernelParams[i] points at argument i's value: a CUdeviceptr for a buffer, else the
    // scalar's little-endian bytes (the low bytes of a uint64_t on this host).
    std::vector<uint64_t> values(args.size());
    std::vector<void*> params(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
        const KernelArg& arg = args[i];
        if (arg.memory != nullptr) {
            const auto* memory = dynamic_cast<const CudaMemory*>(arg.memory);
            if (memory == nullptr || memory->context() != c.get())  // as_cuda says which
                as_cuda(*arg.memory, *c, fmt::format("launch of '{}' argument {}", entry, i));
            values[i] = memory->pointer();
        } else {
            if (arg.size != 1 && arg.size != 2 && arg.size != 4 && arg.size != 8) {
                fail("launch of '{}': scalar argument {} has size {}, expected 1, 2, 4 or 8", entry,
                     i, arg.size);
            }
            values[i] = arg.scalar;
        }
        params[i] = &values[i];
    }
    if (grid == 0) return;
    if (CaptureLog* log = c->capture_log()) {
        CapturedLaunch& l = log->launches.emplace_back();
        l.function = f.handle;
        l.grid = static_cast<unsigned>(grid);
        l.block = static_cast<unsigned>(block);
        l.values = values;
        for (const KernelArg& arg : args) l.sizes.push_back(arg.memory != nullptr ? 0 : arg.size);
    }
    const CUresult r = driver().cuLaunchKernel(f.handle, static_cast<unsigned>(grid), 1, 1,
                                               static_cast<unsigned>(block), 1, 1, 0, c->stream,
                                               params.empty() ? nullptr : params.data(), nullptr);
    // The message is built only on failure: this is every launch's path.
    if (r != CUDA_SUCCESS)
        check(r, fmt::format("cuLaunchKernel('{}', grid {}, block {})", entry, grid, block));
}

bool CudaDevice::recording() const {
    std::lock_guard lock(mutex_);
    return context_ && context_->recording_here();
}

void CudaDevice::synchronize() {
    current()->sync("synchronize");
}

void CudaDevice::release_cached_memory() {
    current()->trim("release_cached_memory");
}

double CudaDevice::time_ms(const std::function<void()>& work) {
    const std::shared_ptr<Context> c = current();
    // Checked only: the timed work enqueues through the same checks.
    (void)c->use_stream("time_ms", false);
    Event start, end;
    const DriverApi& api = driver();
    check(api.cuEventRecord(start.get(), c->stream), "cuEventRecord (start)");
    work();
    c->make_current();  // `work` may have switched this thread to another context
    check(api.cuEventRecord(end.get(), c->stream), "cuEventRecord (end)");
    check(api.cuEventSynchronize(end.get()),
          fmt::format("time_ms on {} (cuEventSynchronize; the fault may come from the timed work)",
                      c->name));
    float ms = 0;
    check(api.cuEventElapsedTime(&ms, start.get(), end.get()), "cuEventElapsedTime");
    return ms;
}

std::unique_ptr<Recording> CudaDevice::record(std::function<void()> work) {
    if (!work)
        fail("record on {}: no work given; expected a function that enqueues work", info_.id);
    const std::shared_ptr<Context> c = current();
    // Thread-local capture: a call on this thread that could wait on the captured stream is an
    // error instead of a silent wait.
    c->begin_recording();
    auto captured = std::make_unique<GraphOwner>();
    try {
        work();
    } catch (...) {
        c->end_recording(&captured->graph);  // the stream leaves capture whatever the work did
        throw;
    }
    const auto [ended, freed] = c->end_recording(&captured->graph);
    if (freed > 0)
        fail(
            "record on {}: the work freed {} buffer(s) while recording, which its replays could "
            "use; expected the memory the recorded work uses to outlive the recording",
            c->name, freed);
    check(ended, fmt::format("cuStreamEndCapture on {} (the recorded work did something a CUDA "
                             "graph cannot hold)",
                             c->name));
    CUgraphExec exec = nullptr;
    check(driver().cuGraphInstantiate(&exec, captured->graph, 0),
          fmt::format("cuGraphInstantiate on {}", c->name));
    return std::make_unique<CudaRecording>(c, std::move(captured), exec, c->take_capture_log());
}

}  // namespace kiln::cuda

#endif  // KILN_HAVE_CUDA_HEADERS
