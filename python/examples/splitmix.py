"""splitmix.py - the engine's portable random source (engine/model/rng.h), in Python.

plexus-train draws its parameter init and its training batches from splitmix64 (Steele, Lea,
Flood 2014) and Box-Muller normals, never from a library RNG, so a seed means the same numbers
on every platform. Reproducing those few lines here lets the PyTorch example start from the
engine's exact initial weights and read the engine's exact batches.

splitmix64 is counter-based: output k (k = 1, 2, ...) of a generator seeded with s is
finalize(s + k * GOLDEN) (mod 2^64), so a whole stream can be computed at once with numpy.
"""
import numpy as np

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15  # SplitMix64::next's increment
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB


def _finalize(z):
    """splitmix64's output function on one Python int (mod 2^64)."""
    z = ((z ^ (z >> 30)) * _M1) & MASK64
    z = ((z ^ (z >> 27)) * _M2) & MASK64
    return z ^ (z >> 31)


def mix(x):
    """The first output of SplitMix64(x): the well-mixed hash text_dataset.cpp calls mix()."""
    return _finalize((x + GOLDEN) & MASK64)


def normal_stream(seed, n):
    """The first n values of NormalSampler(seed) (rng.h) as float64.

    NormalSampler takes two uniforms u1, u2 in (0, 1] per pair (the top 53 bits plus one ulp)
    and yields r cos(theta), then r sin(theta), with r = sqrt(-2 ln u1), theta = 2 pi u2.
    """
    pairs = (n + 1) // 2
    k = np.arange(1, 2 * pairs + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):  # uint64 arithmetic wraps mod 2^64, as in C++
        z = np.uint64(seed & MASK64) + k * np.uint64(GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(_M1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(_M2)
        z = z ^ (z >> np.uint64(31))
    uniform = ((z >> np.uint64(11)).astype(np.float64) + 1.0) * 2.0**-53
    r = np.sqrt(-2.0 * np.log(uniform[0::2]))
    theta = 6.283185307179586 * uniform[1::2]
    out = np.empty(2 * pairs, dtype=np.float64)
    out[0::2] = r * np.cos(theta)
    out[1::2] = r * np.sin(theta)
    return out[:n]
