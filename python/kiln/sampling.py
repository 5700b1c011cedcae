"""How kiln's language models pick the next token from a row of logits: greedy, or a seeded draw
with temperature, top-k and top-p, by a rule stated exactly here and in docs/llm.md, so that the
same logits give the same tokens wherever they were computed (kiln's logits are bit-identical on
every device; the draw is made on the host, in float64, from kiln's own splitmix64 stream).

The rule for one step, given the logits l (float32, one per token id) and temperature T > 0:

 1. Order the ids by logit, largest first; equal logits by the lower id first.
 2. Keep the first top_k of that order (top_k 0: all of them).
 3. Weights w_i = exp((l_i - l_0) / T) in float64 (l_0 the largest logit), and their running
    sums c_i = w_0 + ... + w_i added left to right.
 4. Keep the first n candidates, n the smallest with c_(n-1) >= top_p * c_last (at least one).
 5. Draw u in [0, 1) (the next output of the splitmix64 stream, its top 53 bits times 2^-53) and
    pick the first candidate i with c_i > u * c_(n-1) (the last one if rounding leaves none).

Every sampled step draws exactly one u, even when one candidate remains. With T = 0 the pick is
the largest logit, the lowest id among equals (kiln.argmax on the device) and nothing is drawn.
"""

import math
import numbers

import numpy as np

from . import _kiln
from ._kiln import argmax as _argmax

_MASK64 = (1 << 64) - 1


def _error(message):
    return _kiln.Error(message)


class SplitMix64:
    """The splitmix64 generator: state += 0x9E3779B97F4A7C15, then the state's bits mixed by two
    xor-shift-multiplies and a final xor-shift. `uniform()` is the top 53 bits times 2^-53."""

    def __init__(self, seed):
        self.state = seed & _MASK64

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next_u64() >> 11) * 2.0 ** -53


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_settings(temperature, top_k, top_p, seed):
    """kiln.Error naming the first setting that is out of its range."""
    if not _is_real(temperature) or not math.isfinite(temperature) or temperature < 0:
        raise _error(f"sampling: temperature is {temperature!r}; expected a finite number >= 0 "
                     "(0: greedy)")
    if not _is_int(top_k) or top_k < 0:
        raise _error(f"sampling: top_k is {top_k!r}; expected an int >= 0 (0: no limit)")
    if not _is_real(top_p) or not 0 < top_p <= 1:
        raise _error(f"sampling: top_p is {top_p!r}; expected a number in (0, 1] (1: no limit)")
    if not _is_int(seed) or not 0 <= seed <= _MASK64:
        raise _error(f"sampling: seed is {seed!r}; expected an int from 0 to 2^64 - 1")


def order_by_logit(logits32):
    """The ids of float32 logits (no NaN) by logit, largest first, the lower id first among
    equals: one sort of unique 64-bit keys, the logit's bits mapped to an unsigned order (-0.0 as
    0.0) above the id, about four times as fast as a stable argsort of 2^18 logits."""
    bits = (logits32 + np.float32(0)).view(np.uint32).astype(np.uint64)
    negative = (bits >> np.uint64(31)).astype(bool)
    ascending = np.where(negative, ~bits & np.uint64(0xFFFFFFFF), bits | np.uint64(0x80000000))
    keys = ((np.uint64(0xFFFFFFFF) - ascending) << np.uint64(32)) | \
        np.arange(len(logits32), dtype=np.uint64)
    return (np.sort(keys) & np.uint64(0xFFFFFFFF)).astype(np.int64)


class Sampler:
    """The next token of each step under one setting; a sampled one draws from its own stream,
    started from `seed`, so a fresh Sampler with the same settings repeats the same picks."""

    def __init__(self, temperature=0.0, top_k=0, top_p=1.0, seed=0):
        check_settings(temperature, top_k, top_p, seed)
        self.temperature = float(temperature)
        self.top_k = int(top_k)
        self.top_p = float(top_p)
        self.stream = SplitMix64(int(seed))

    @property
    def greedy(self):
        return self.temperature == 0

    def pick(self, logits):
        """The next token id from a kiln tensor of logits [vocab]."""
        if self.greedy:
            return int(_argmax(logits).numpy())
        return self.pick_from(logits.numpy())

    def pick_from(self, logits):
        """The next token id from the float32 logits [vocab] on the host (rule steps 1-5; other
        dtypes are rounded to float32 first)."""
        logits32 = np.asarray(logits, dtype=np.float32)
        if np.isnan(logits32).any() or not math.isfinite(logits32.max()):
            raise _error("sampling: the logits hold NaN or +inf, or are all -inf; expected "
                         "finite numbers (some may be -inf, not all)")
        candidates = self._candidates(logits32)
        sums = self._running_weights(logits32[candidates].astype(np.float64))
        kept = self._nucleus(sums)
        target = self.stream.uniform() * sums[kept - 1]
        chosen = min(int(np.searchsorted(sums[:kept], target, side="right")), kept - 1)
        return int(candidates[chosen])

    def _candidates(self, logits32):
        """Steps 1 and 2: the ids by logit, largest first, the lower id first among equals."""
        order = order_by_logit(logits32)
        return order[:self.top_k] if self.top_k else order

    def _running_weights(self, ordered_logits):
        """Step 3: the running sums of exp((l_i - l_0) / T), left to right."""
        weights = np.exp((ordered_logits - ordered_logits[0]) / self.temperature)
        return np.cumsum(weights)

    def _nucleus(self, sums):
        """Step 4: how many candidates top_p keeps."""
        if self.top_p == 1:
            return len(sums)
        return int(np.searchsorted(sums, self.top_p * sums[-1], side="left")) + 1
