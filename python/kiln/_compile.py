"""kiln.compile: a Python function of tensors traced once per signature (each argument's device,
dtype and shape) and then replayed at the cost of its kernels (docs/programs.md)."""

import functools
import weakref

from . import _kiln


class CompiledFunction:
    """What kiln.compile returns: call it as the function it wraps (tensors as positional
    arguments). The function returns a tensor, or a tuple or list of tensors, the same form for
    every signature."""

    def __init__(self, fn, buckets=None):
        if not callable(fn):
            raise TypeError(f"kiln.compile: {type(fn).__name__} is not callable; expected a "
                            "function of tensors")
        self._fn = fn
        self._form = None  # tensor, tuple or list: what the first trace returned
        # The C++ program holds its function; through a weak reference to this object, so that
        # the pair is freed with this object (a cycle through C++ is invisible to Python's GC).
        own = weakref.ref(self)
        self._program = _kiln.Program(lambda inputs: own()._trace(inputs), _bucket_list(buckets))
        functools.update_wrapper(self, fn)

    def _trace(self, inputs):
        out = self._fn(*inputs)
        form = _kiln.Tensor if isinstance(out, _kiln.Tensor) else type(out)
        if form not in (_kiln.Tensor, tuple, list):
            raise TypeError(f"kiln.compile: the function returned {type(out).__name__}; expected "
                            "a tensor, or a tuple or list of tensors")
        outs = [out] if form is _kiln.Tensor else list(out)
        for i, t in enumerate(outs):
            if not isinstance(t, _kiln.Tensor):
                raise TypeError(f"kiln.compile: output {i} is {type(t).__name__}; expected a "
                                "kiln.Tensor")
        if self._form is not None and form is not self._form:
            raise TypeError(f"kiln.compile: the function returned a {form.__name__} for these "
                            f"arguments and a {self._form.__name__} before; expected one form")
        self._form = form
        return outs

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError("kiln.compile: a compiled function takes tensors as positional "
                            f"arguments; got keywords {sorted(kwargs)} (bind other values with "
                            "functools.partial or a closure)")
        for i, a in enumerate(args):
            if not isinstance(a, _kiln.Tensor):
                raise TypeError(f"kiln.compile: argument {i} is {type(a).__name__}; a compiled "
                                "function takes kiln.Tensor arguments (bind other values with "
                                "functools.partial or a closure)")
        outs = self._program(list(args))
        if self._form is _kiln.Tensor:
            return outs[0]
        return self._form(outs)

    def stats(self):
        """traces, replays, signatures kept, and the launches of the last call's program."""
        return self._program.stats()


def _bucket_list(buckets):
    """{input: {axis: sizes}} as the (input, axis, sizes) triples kiln::ProgramOptions takes."""
    if buckets is None:
        return []
    if not isinstance(buckets, dict):
        raise TypeError(f"kiln.compile: buckets is {type(buckets).__name__}; expected a dict "
                        "{argument index: {axis: [sizes]}}")
    out = []
    for index, axes in buckets.items():
        if not isinstance(index, int) or index < 0 or not isinstance(axes, dict):
            raise TypeError(f"kiln.compile: buckets[{index!r}] must map a non-negative argument "
                            "index to a dict {axis: [sizes]}")
        for axis, sizes in axes.items():
            if (not isinstance(axis, int) or not isinstance(sizes, (list, tuple)) or
                    not all(isinstance(n, int) for n in sizes)):
                raise TypeError(f"kiln.compile: buckets[{index}][{axis!r}] must map an axis to a "
                                "list of sizes (ints)")
            out.append((index, axis, list(sizes)))
    return out


def compile(fn=None, *, buckets=None):
    """Compiles a function of tensors: `kiln.compile(fn)`, or as a decorator `@kiln.compile` or
    `@kiln.compile(buckets=...)`.

    buckets: {argument index: {axis: [sizes]}}, dimensions that vary between calls; each is
    padded with zeros at its end to the smallest of its sizes that holds it, so its sizes share
    a few traces. The function must give its answer with that padding present (the real extent
    passed as data: a mask, lengths); its outputs are the padded call's (docs/programs.md)."""
    if fn is None:
        return lambda f: CompiledFunction(f, buckets)
    return CompiledFunction(fn, buckets)
