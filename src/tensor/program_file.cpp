// Writing and reading a compiled program's file (program_file.hpp).
#include "tensor/program_file.hpp"

#include <xxhash.h>

#include <cstring>
#include <fstream>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "cache/atomic_file.hpp"
#include "graph/map_op_table.hpp"
#include "kiln/error.hpp"
#include "kiln/ops/matmul.hpp"

namespace kiln::program {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'P', 'R', 'O', 'G'};
constexpr uint32_t kFormat = 1;

// Names the file stores for enum values (names, not numbers, so that reordering an enum in a
// later kiln cannot change what a file means).
constexpr const char* kPayloadNames[] = {"leaf",        "constant", "generate", "map",
                                         "fold",        "view",     "concat",   "gather",
                                         "scatter_add", "matmul",   "conv1d",   "attention"};
static_assert(std::size(kPayloadNames) == std::variant_size_v<graph::Payload>);
constexpr const char* kGenerateNames[] = {"arange", "rand", "randn"};

// The names the file stores for the enums kiln names elsewhere.
const char* name_of(graph::FoldKind k) {
    return graph::name(k);
}
const char* name_of(graph::ViewKind k) {
    return graph::name(k);
}
const char* name_of(MatmulClass c) {
    return ops::name(c);
}
const char* name_of(plan::LaunchKind k) {
    return plan::name(k);
}
constexpr int kFoldKinds = 4, kViewKinds = 5, kClasses = 2, kLaunchKinds = 9;
static_assert(int(graph::FoldKind::min) + 1 == kFoldKinds &&
              int(graph::ViewKind::pad) + 1 == kViewKinds &&
              int(MatmulClass::tensor_core) + 1 == kClasses &&
              int(plan::LaunchKind::chunk_sum) + 1 == kLaunchKinds);

class Writer {
  public:
    std::vector<uint8_t> bytes;

    void raw(const void* data, size_t n) {
        const auto* p = static_cast<const uint8_t*>(data);
        bytes.insert(bytes.end(), p, p + n);
    }
    template <typename T>
    void scalar(T v) {
        static_assert(std::is_arithmetic_v<T>);
        raw(&v, sizeof v);
    }
    void count(size_t n) { scalar<uint64_t>(n); }
    void string(const std::string& s) {
        count(s.size());
        raw(s.data(), s.size());
    }
    void blob(const std::vector<uint8_t>& b) {
        count(b.size());
        raw(b.data(), b.size());
    }
    template <typename T>
    void list(const std::vector<T>& v) {
        count(v.size());
        for (const T& x : v) scalar(x);
    }
    void dtype(DType t) { string(std::string(name(t))); }
};

class Reader {
  public:
    Reader(const std::filesystem::path& path, const uint8_t* data, size_t size)
        : path_(path), data_(data), size_(size) {}

    [[noreturn]] void bad(const std::string& what) const {
        fail(
            "program file {}: {} (at byte {} of its payload's {}); expected a file "
            "kiln::Program::save wrote",
            path_.string(), what, pos_, size_);
    }
    size_t left() const { return size_ - pos_; }
    void raw(void* out, size_t n, const char* what) {
        if (n > left()) bad(fmt::format("{} needs {} bytes and {} are left", what, n, left()));
        std::memcpy(out, data_ + pos_, n);
        pos_ += n;
    }
    template <typename T>
    T scalar(const char* what) {
        T v;
        raw(&v, sizeof v, what);
        return v;
    }
    // A count of items of at least `item_bytes` each, checked against what is left.
    size_t count(const char* what, size_t item_bytes = 1) {
        const uint64_t n = scalar<uint64_t>(what);
        if (n > left() / std::max<size_t>(item_bytes, 1))
            bad(fmt::format("{} says {} items of {} bytes; {} bytes are left", what, n, item_bytes,
                            left()));
        return size_t(n);
    }
    std::string string(const char* what) {
        std::string s(count(what), '\0');
        raw(s.data(), s.size(), what);
        return s;
    }
    std::vector<uint8_t> blob(const char* what) {
        std::vector<uint8_t> b(count(what));
        raw(b.data(), b.size(), what);
        return b;
    }
    template <typename T>
    std::vector<T> list(const char* what) {
        std::vector<T> v(count(what, sizeof(T)));
        for (T& x : v) x = scalar<T>(what);
        return v;
    }
    DType dtype(const char* what) {
        const std::string s = string(what);
        for (DType t : all_dtypes)
            if (name(t) == s) return t;
        bad(fmt::format("{} is the dtype '{}', which this kiln does not know", what, s));
    }
    // The index of `s` among `names`.
    template <size_t N>
    int named(const char* const (&names)[N], const char* what) {
        const std::string s = string(what);
        for (size_t i = 0; i < N; ++i)
            if (s == names[i]) return int(i);
        bad(fmt::format("{} is '{}', which this kiln does not know", what, s));
    }
    // The value of enum E among its first `count` whose name() is the string read.
    template <typename E>
    E named_value(int count, const char* what) {
        const std::string s = string(what);
        for (int i = 0; i < count; ++i)
            if (s == name_of(E(i))) return E(i);
        bad(fmt::format("{} is '{}', which this kiln does not know", what, s));
    }
    bool flag(const char* what) {
        const uint8_t v = scalar<uint8_t>(what);
        if (v > 1) bad(fmt::format("{} is {}; expected 0 or 1", what, v));
        return v == 1;
    }

  private:
    const std::filesystem::path& path_;
    const uint8_t* data_;
    size_t size_, pos_ = 0;
};

// ---- the graph ---------------------------------------------------------------------------------

void write_payload(Writer& w, const graph::Payload& payload) {
    w.string(kPayloadNames[payload.index()]);
    std::visit(
        [&](const auto& p) {
            using P = std::decay_t<decltype(p)>;
            namespace op = graph::op;
            if constexpr (std::is_same_v<P, op::Constant>) {
                w.scalar(p.value);
            } else if constexpr (std::is_same_v<P, op::Generate>) {
                w.string(kGenerateNames[int(p.kind)]);
                w.scalar(p.start);
                w.scalar(p.step);
                w.scalar(p.seed);
            } else if constexpr (std::is_same_v<P, op::Map>) {
                w.string(graph::name(p.op));
            } else if constexpr (std::is_same_v<P, op::Fold>) {
                w.string(graph::name(p.kind));
                w.list(p.axes);
            } else if constexpr (std::is_same_v<P, op::View>) {
                w.string(graph::name(p.kind));
                w.list(p.a);
                w.list(p.b);
                w.scalar(p.pad_value);
            } else if constexpr (std::is_same_v<P, op::Concat> ||
                                 std::is_same_v<P, op::ScatterAdd>) {
                w.scalar(p.axis);
            } else if constexpr (std::is_same_v<P, op::Gather>) {
                w.scalar(p.axis);
                w.scalar<uint8_t>(p.select);
            } else if constexpr (std::is_same_v<P, op::Matmul>) {
                w.string(name_of(p.arithmetic));
            } else if constexpr (std::is_same_v<P, op::Conv1d>) {
                w.scalar(p.stride);
                w.scalar(p.padding);
                w.scalar(p.dilation);
                w.scalar(p.groups);
                w.string(name_of(p.arithmetic));
            } else if constexpr (std::is_same_v<P, op::Attention>) {
                w.scalar<uint8_t>(p.causal);
                w.scalar(p.scale);
                w.string(name_of(p.arithmetic));
            }
        },
        payload);
}

graph::MapOp read_map_op(Reader& r) {
    const std::string s = r.string("a map's op");
    for (const graph::MapOpInfo& info : graph::map_ops())
        if (s == info.name) return info.op;
    r.bad(fmt::format("a map's op is '{}', which this kiln does not know", s));
}

graph::Payload read_payload(Reader& r) {
    namespace op = graph::op;
    switch (r.named(kPayloadNames, "a node's op")) {
        case 0:
            return op::Leaf{};
        case 1:
            return op::Constant{r.scalar<double>("a constant")};
        case 2: {
            op::Generate g{graph::op::GenerateKind(r.named(kGenerateNames, "a generator"))};
            g.start = r.scalar<double>("a generator's start");
            g.step = r.scalar<double>("a generator's step");
            g.seed = r.scalar<uint64_t>("a generator's seed");
            return g;
        }
        case 3:
            return op::Map{read_map_op(r)};
        case 4: {
            op::Fold f{r.named_value<graph::FoldKind>(kFoldKinds, "a fold's kind")};
            f.axes = r.list<int>("a fold's axes");
            return f;
        }
        case 5: {
            op::View v{r.named_value<graph::ViewKind>(kViewKinds, "a view's kind")};
            v.a = r.list<int64_t>("a view's sizes");
            v.b = r.list<int64_t>("a view's steps");
            v.pad_value = r.scalar<double>("a view's padding value");
            return v;
        }
        case 6:
            return op::Concat{r.scalar<int>("a concat's axis")};
        case 7: {
            op::Gather g{r.scalar<int>("a gather's axis")};
            g.select = r.flag("a gather's form");
            return g;
        }
        case 8:
            return op::ScatterAdd{r.scalar<int>("a scatter's axis")};
        case 9:
            return op::Matmul{r.named_value<MatmulClass>(kClasses, "a matmul's class")};
        case 10: {
            op::Conv1d c;
            c.stride = r.scalar<int64_t>("a conv1d's stride");
            c.padding = r.scalar<int64_t>("a conv1d's padding");
            c.dilation = r.scalar<int64_t>("a conv1d's dilation");
            c.groups = r.scalar<int64_t>("a conv1d's groups");
            c.arithmetic = r.named_value<MatmulClass>(kClasses, "a conv1d's class");
            return c;
        }
        default: {
            op::Attention a;
            a.causal = r.flag("an attention's mask");
            a.scale = r.scalar<float>("an attention's scale");
            a.arithmetic = r.named_value<MatmulClass>(kClasses, "an attention's class");
            return a;
        }
    }
}

void write_shape(Writer& w, const graph::Shape& shape) {
    w.list(shape);
}

graph::Shape read_shape(Reader& r, const char* what) {
    graph::Shape shape = r.list<int64_t>(what);
    int64_t elements = 1;
    for (int64_t d : shape) {
        if (d < 0) r.bad(fmt::format("{} has the extent {}; expected extents >= 0", what, d));
        if (d > 0 && elements > std::numeric_limits<int64_t>::max() / d)
            r.bad(fmt::format("{} has more than 2^63 elements", what));
        elements *= d;
    }
    return shape;
}

// The structure a planner relies on: inputs before their consumers, leaves bound to an input or
// a blob, as many inputs as the op takes.
void check_node(Reader& r, const SavedNode& n, size_t position, const SavedSignature& s,
                size_t blobs) {
    for (int in : n.inputs)
        if (in < 0 || size_t(in) >= position)
            r.bad(fmt::format("node {} reads node {}; expected an earlier node", position, in));
    const bool leaf = std::holds_alternative<graph::op::Leaf>(n.payload);
    if (leaf != (n.input >= 0 || n.blob >= 0) || (n.input >= 0 && n.blob >= 0) ||
        n.input >= int(s.inputs.size()) || n.blob >= int(blobs) || (leaf && !n.inputs.empty()))
        r.bad(fmt::format("node {} is {}a leaf bound to input {} and blob {}", position,
                          leaf ? "" : "not ", n.input, n.blob));
    size_t arity = 0;
    if (const auto* m = std::get_if<graph::op::Map>(&n.payload))
        arity = size_t(graph::arity(m->op));
    if (std::holds_alternative<graph::op::Fold>(n.payload) ||
        std::holds_alternative<graph::op::View>(n.payload))
        arity = 1;
    if (std::holds_alternative<graph::op::Matmul>(n.payload) ||
        std::holds_alternative<graph::op::Conv1d>(n.payload))
        arity = 2;
    if (std::holds_alternative<graph::op::Gather>(n.payload)) arity = 2;
    if (std::holds_alternative<graph::op::Attention>(n.payload))  // q, k, v (, key lengths)
        arity = n.inputs.size() == 4 ? 4 : 3;
    if (std::holds_alternative<graph::op::ScatterAdd>(n.payload)) arity = 3;
    if (std::holds_alternative<graph::op::Concat>(n.payload))
        arity = n.inputs.empty() ? 1 : n.inputs.size();
    if (n.inputs.size() != arity)
        r.bad(fmt::format("node {} ({}) reads {} nodes; expected {}", position,
                          kPayloadNames[n.payload.index()], n.inputs.size(), arity));
}

void write_signature_graph(Writer& w, const SavedSignature& s) {
    w.count(s.inputs.size());
    for (const auto& [dtype, shape] : s.inputs) {
        w.dtype(dtype);
        write_shape(w, shape);
    }
    w.count(s.nodes.size());
    for (const SavedNode& n : s.nodes) {
        write_payload(w, n.payload);
        w.dtype(n.dtype);
        write_shape(w, n.shape);
        w.list(n.inputs);
        w.string(n.label);
        w.scalar(n.input);
        w.scalar(n.blob);
    }
    w.list(s.outputs);
}

void read_signature_graph(Reader& r, SavedSignature& s, size_t blobs) {
    s.inputs.resize(r.count("the inputs", 9));
    for (auto& [dtype, shape] : s.inputs) {
        dtype = r.dtype("an input's dtype");
        shape = read_shape(r, "an input's shape");
    }
    s.nodes.resize(r.count("the nodes", 20));
    for (size_t i = 0; i < s.nodes.size(); ++i) {
        SavedNode& n = s.nodes[i];
        n.payload = read_payload(r);
        n.dtype = r.dtype("a node's dtype");
        n.shape = read_shape(r, "a node's shape");
        n.inputs = r.list<int>("a node's inputs");
        n.label = r.string("a node's label");
        n.input = r.scalar<int>("a leaf's input");
        n.blob = r.scalar<int>("a leaf's blob");
        check_node(r, n, i, s, blobs);
    }
    s.outputs = r.list<int>("the outputs");
    if (s.outputs.empty()) r.bad("a signature has no outputs");
    for (int o : s.outputs)
        if (o < 0 || size_t(o) >= s.nodes.size())
            r.bad(fmt::format("an output is node {} of {}", o, s.nodes.size()));
}

// ---- plans -------------------------------------------------------------------------------------

void write_schedule(Writer& w, const plan::Schedule& s) {
    for (int v : {s.block, s.per_thread, s.vector, s.threads, s.unroll, s.variant}) w.scalar(v);
    w.scalar<uint8_t>(s.cache);
}

plan::Schedule read_schedule(Reader& r) {
    plan::Schedule s;
    for (int* v : {&s.block, &s.per_thread, &s.vector, &s.threads, &s.unroll, &s.variant})
        *v = r.scalar<int>("a schedule's field");
    s.cache = r.flag("a schedule's cache switch");
    return s;
}

void write_plan(Writer& w, const SavedPlan& p) {
    w.string(p.device_id);
    w.string(p.toolchain);
    for (bool b : {p.options.race, p.options.thorough, p.options.fuse, p.options.wide_index})
        w.scalar<uint8_t>(b);
    w.count(p.plan.launches.size());
    for (const plan::Launch& l : p.plan.launches) {
        w.string(name_of(l.kind));
        w.list(l.outputs);
        w.list(l.row_steps);
        write_shape(w, l.full);
        w.list(l.axes);
        w.scalar(l.rows);
        w.scalar(l.extent);
        w.scalar(l.scatter);
        w.scalar(l.contraction);
        w.scalar(l.group);
        w.count(l.partials.size());
        for (const auto& [fold, scratch] : l.partials) {
            w.scalar(fold);
            w.scalar(scratch);
        }
        write_schedule(w, l.domain[l.chosen]);  // the point that runs, alone
        w.string(l.label);
    }
    w.count(p.plan.scratch.size());
    for (const auto& [dtype, count] : p.plan.scratch) {
        w.dtype(dtype);
        w.scalar(count);
    }
    w.list(p.plan.materialized);
    w.scalar<uint8_t>(p.plan.has_faults);
    w.count(p.units.size());
    for (const UnitBinary& u : p.units) {
        w.string(u.key);
        w.blob(u.binary);
    }
}

SavedPlan read_plan(Reader& r) {
    SavedPlan p;
    p.device_id = r.string("a plan's device");
    p.toolchain = r.string("a plan's toolchain");
    for (bool* b : {&p.options.race, &p.options.thorough, &p.options.fuse, &p.options.wide_index})
        *b = r.flag("a plan's option");
    p.plan.launches.resize(r.count("the launches", 64));
    for (plan::Launch& l : p.plan.launches) {
        l.kind = r.named_value<plan::LaunchKind>(kLaunchKinds, "a launch's kind");
        l.outputs = r.list<int>("a launch's outputs");
        l.row_steps = r.list<int>("a launch's row steps");
        l.full = read_shape(r, "a launch's rows");
        l.axes = r.list<int>("a launch's axes");
        l.rows = r.scalar<int64_t>("a launch's rows");
        l.extent = r.scalar<int64_t>("a launch's extent");
        l.scatter = r.scalar<int>("a launch's scatter");
        l.contraction = r.scalar<int>("a launch's contraction");
        l.group = r.scalar<int>("a launch's group");
        const size_t partials = r.count("a launch's partials", 8);
        for (size_t i = 0; i < partials; ++i) {
            const int fold = r.scalar<int>("a partial's fold");
            l.partials[fold] = r.scalar<int>("a partial's scratch");
        }
        l.domain = {read_schedule(r)};
        l.chosen = 0;
        l.label = r.string("a launch's label");
    }
    p.plan.scratch.resize(r.count("the scratch buffers", 9));
    for (auto& [dtype, count] : p.plan.scratch) {
        dtype = r.dtype("a scratch buffer's dtype");
        count = r.scalar<int64_t>("a scratch buffer's size");
        if (count < 0) r.bad(fmt::format("a scratch buffer has {} elements", count));
    }
    p.plan.materialized = r.list<int>("the written nodes");
    p.plan.has_faults = r.flag("the fault record's switch");
    p.units.resize(r.count("the compile units", 16));
    for (UnitBinary& u : p.units) {
        u.key = r.string("a unit's key");
        u.binary = r.blob("a unit's binary");
    }
    return p;
}

// ---- the whole file
// ------------------------------------------------------------------------------

std::vector<uint8_t> payload_of(const SavedProgram& program) {
    Writer w;
    w.string(program.annotation);
    w.count(program.buckets.size());
    for (const Bucket& b : program.buckets) {
        w.scalar<uint64_t>(b.input);
        w.scalar(b.axis);
        w.list(b.sizes);
    }
    w.count(program.blobs.size());
    for (const SavedBlob& b : program.blobs) {
        w.dtype(b.dtype);
        w.scalar(b.count);
        w.blob(b.bytes);
    }
    w.count(program.signatures.size());
    for (const SavedSignature& s : program.signatures) {
        write_signature_graph(w, s);
        w.count(s.plans.size());
        for (const SavedPlan& p : s.plans) write_plan(w, p);
    }
    return std::move(w.bytes);
}

SavedProgram program_of(Reader& r, bool keep_plans) {
    SavedProgram program;
    program.annotation = r.string("the annotation");
    program.buckets.resize(r.count("the buckets", 24));
    for (Bucket& b : program.buckets) {
        b.input = size_t(r.scalar<uint64_t>("a bucket's input"));
        b.axis = r.scalar<int64_t>("a bucket's axis");
        b.sizes = r.list<int64_t>("a bucket's sizes");
    }
    program.blobs.resize(r.count("the blobs", 24));
    for (SavedBlob& b : program.blobs) {
        b.dtype = r.dtype("a blob's dtype");
        b.count = r.scalar<uint64_t>("a blob's elements");
        b.bytes = r.blob("a blob's bytes");
        if (b.count > b.bytes.size() || b.bytes.size() != b.count * size_of(b.dtype))
            r.bad(fmt::format("a blob of {} {} elements holds {} bytes", b.count, name(b.dtype),
                              b.bytes.size()));
    }
    program.signatures.resize(r.count("the signatures", 32));
    for (SavedSignature& s : program.signatures) {
        read_signature_graph(r, s, program.blobs.size());
        const size_t plans = r.count("the plans", 32);
        for (size_t i = 0; i < plans; ++i) {
            SavedPlan p = read_plan(r);
            if (keep_plans) s.plans.push_back(std::move(p));
        }
    }
    if (r.left() != 0) r.bad(fmt::format("{} bytes follow the last signature", r.left()));
    return program;
}

uint64_t checksum(const std::vector<uint8_t>& header, const uint8_t* payload, size_t size) {
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    XXH3_64bits_update(state, header.data(), header.size());
    XXH3_64bits_update(state, payload, size);
    const uint64_t digest = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    return digest;
}

// The header before the checksum.
std::vector<uint8_t> header_of(const std::string& build, uint64_t payload_bytes) {
    Writer w;
    w.raw(kMagic, sizeof kMagic);
    w.scalar(kFormat);
    w.string(build);
    w.scalar(payload_bytes);
    return std::move(w.bytes);
}

}  // namespace

void write_program_file(const std::filesystem::path& path, const SavedProgram& program,
                        const std::string& build) {
    const std::vector<uint8_t> payload = payload_of(program);
    const std::vector<uint8_t> header = header_of(build, payload.size());
    const uint64_t digest = checksum(header, payload.data(), payload.size());
    const std::string why = cache::write_atomic(
        path,
        {header, std::span(reinterpret_cast<const uint8_t*>(&digest), sizeof digest), payload});
    if (!why.empty()) fail("compiled program: cannot save it to {}: {}", path.string(), why);
}

SavedProgram read_program_file(const std::filesystem::path& path, const std::string& build) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        fail("program file {}: {}; expected a file kiln::Program::save wrote", path.string(),
             std::filesystem::exists(path, ec) ? "is not a regular file" : "does not exist");
    const uintmax_t size = std::filesystem::file_size(path, ec);
    std::ifstream in(path, std::ios::binary);
    if (ec || !in) fail("program file {}: cannot open it", path.string());
    std::vector<uint8_t> file(static_cast<size_t>(size));
    if (!in.read(reinterpret_cast<char*>(file.data()), std::streamsize(file.size())))
        fail("program file {}: cannot read its {} bytes", path.string(), size);

    Reader head(path, file.data(), file.size());
    char magic[sizeof kMagic];
    head.raw(magic, sizeof magic, "the file's magic");
    if (std::memcmp(magic, kMagic, sizeof kMagic) != 0)
        fail(
            "program file {}: does not start with KILNPROG; expected a file kiln::Program::save "
            "wrote",
            path.string());
    const auto format = head.scalar<uint32_t>("the format");
    if (format != kFormat)
        fail(
            "program file {}: has format {}; this kiln reads format {} (save the program again "
            "with this kiln)",
            path.string(), format, kFormat);
    const std::string saved_build = head.string("the build");
    const auto payload_bytes = head.scalar<uint64_t>("the payload's size");
    const auto digest = head.scalar<uint64_t>("the checksum");
    const size_t header_bytes = file.size() - head.left() - sizeof digest;
    if (payload_bytes != head.left())
        fail("program file {}: is {} bytes long; its header says {} (truncated or appended to)",
             path.string(), file.size(), header_bytes + sizeof digest + payload_bytes);
    const std::vector<uint8_t> header(file.begin(), file.begin() + long(header_bytes));
    const uint8_t* payload = file.data() + header_bytes + sizeof digest;
    if (checksum(header, payload, size_t(payload_bytes)) != digest)
        fail("program file {}: its checksum does not match its contents (corrupted or edited)",
             path.string());
    Reader r(path, payload, size_t(payload_bytes));
    SavedProgram program = program_of(r, saved_build == build);
    program.build = saved_build;
    return program;
}

}  // namespace kiln::program
