#!/usr/bin/env python3
"""Lists the includes in src/ that run back up kiln's layers (docs/architecture.md).

Each folder of src/ and each public header of include/kiln/ belongs to one layer; a file may
include its own layer and those below it, and a public header only other public headers (an
installed kiln has nothing else). Prints every include that runs up or that a public header
cannot reach, and exits 1 when there are more than --allow of them (the count the docs state),
so a new one fails the tests:

    scripts/check_layers.py [--allow N]
"""
import argparse
import pathlib
import re
import sys

# Bottom to top. A layer uses only itself and the layers before it.
LAYERS = [
    ("base", ["src/base", "kiln/dtype", "kiln/error", "kiln/semantics", "kiln/scalar_semantics",
              "kiln/matmul_class"]),
    ("ir", ["src/ir", "kiln/ir"]),
    ("codegen", ["src/codegen"]),
    ("cache", ["src/cache"]),
    ("runtime", ["src/runtime", "kiln/device", "kiln/buffer"]),
    ("dsl", ["src/dsl", "kiln/dsl", "kiln/math", "kiln/host_math"]),
    ("core", ["src/core", "kiln/compile", "kiln/interpret"]),
    ("tune", ["src/tune", "kiln/tune"]),
    ("ops", ["src/ops", "kiln/ops"]),
    ("oracle", ["src/oracle"]),
    ("graph", ["src/graph"]),
    ("plan", ["src/plan"]),
    ("tensor", ["src/tensor", "kiln/tensor", "kiln/program"]),
    ("io", ["src/io", "kiln/safetensors", "kiln/gguf"]),
    ("workloads", ["src/workloads"]),
    ("conformance", ["src/conformance"]),
]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def layer_of(path: str):
    """The layer index of a repo path (src/...) or an include name (kiln/..., ir/...)."""
    stem = re.sub(r"\.(hpp|h|cpp)$", "", path)
    if not stem.startswith(("src/", "kiln/")):
        stem = "src/" + stem
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if stem == prefix or stem.startswith(prefix + "/"):
                return index
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--allow", type=int, default=None,
                        help="fail when more includes than this run up")
    args = parser.parse_args()
    root = pathlib.Path(__file__).resolve().parent.parent
    upward, unknown = [], []
    sources = sorted((root / "src").rglob("*")) + sorted((root / "include" / "kiln").rglob("*"))
    for file in sources:
        if file.suffix not in (".cpp", ".hpp", ".h"):
            continue
        rel = file.relative_to(root).as_posix()
        public = rel.startswith("include/")
        own = layer_of(rel.removeprefix("include/"))
        if own is None:
            unknown.append(rel)
            continue
        for name in INCLUDE.findall(file.read_text(encoding="utf-8")):
            target = layer_of(name)
            if public and not name.startswith("kiln/"):
                upward.append(f"{rel} (public) includes {name}, which is not installed")
            elif target is not None and target > own:
                upward.append(f"{rel} ({LAYERS[own][0]}) includes {name} ({LAYERS[target][0]})")
    for line in upward:
        print(line)
    for rel in unknown:
        print(f"{rel}: in no layer; add its folder to scripts/check_layers.py", file=sys.stderr)
    print(f"{len(upward)} includes run back up")
    if unknown or (args.allow is not None and len(upward) > args.allow):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
