"""kiln.compile: a Python function of tensors traced once per signature (each argument's device,
dtype and shape) and then replayed at the cost of its kernels (docs/programs.md)."""

import functools
import os
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

    def save(self, path):
        """Writes every signature traced so far to one file at `path`, with the data the function
        captured (weights) and, per device model it ran on, its plan and kernel binaries;
        kiln.load_program reads it (docs/programs.md, Ahead of time)."""
        if self._form is None:
            raise _kiln.Error("kiln.compile: nothing to save yet; call the function once first "
                             "(each signature is traced by its first call)")
        self._program.save(os.fspath(path), _FORMS[self._form])


_FORMS = {_kiln.Tensor: "tensor", tuple: "tuple", list: "list"}


class LoadedFunction:
    """What kiln.load_program returns: the saved function's signatures, called as it was (tensors
    as positional arguments, the same output form). It cannot trace: a call whose arguments'
    dtypes and shapes no saved signature takes is a kiln.Error naming the saved ones."""

    def __init__(self, path):
        self._program = _kiln.Program.load(os.fspath(path))
        forms = {name: form for form, name in _FORMS.items()}
        self._form = forms.get(self._program.annotation)
        if self._form is None:
            raise _kiln.Error(f"kiln.load_program: {os.fspath(path)} was not saved by "
                             "kiln.compile's save (its annotation is "
                             f"{self._program.annotation!r}); expected 'tensor', 'tuple' or "
                             "'list'")

    def __call__(self, *args):
        for i, a in enumerate(args):
            if not isinstance(a, _kiln.Tensor):
                raise TypeError(f"kiln.load_program: argument {i} is {type(a).__name__}; a "
                                "loaded function takes kiln.Tensor arguments")
        outs = self._program(list(args))
        return outs[0] if self._form is _kiln.Tensor else self._form(outs)

    def stats(self):
        """As CompiledFunction.stats: a first call on a device counts as a trace."""
        return self._program.stats()

    def save(self, path):
        """Writes the loaded signatures, and the plans made since on other devices, to `path`."""
        self._program.save(os.fspath(path), self._program.annotation)


def load_program(path):
    """A function saved by a compiled function's save(path): on the device model it was saved on
    its first call builds the saved plan from the saved binaries (no planning, racing or
    compiling); elsewhere it plans there from the saved graph. A truncated, edited or foreign
    file is a kiln.Error. A program file holds compiled code: load only files you trust."""
    return LoadedFunction(path)


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
