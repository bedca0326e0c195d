"""R's template draws without R: ``set.seed(seed, kind = "Mersenne-Twister", normal.kind =
"Inversion", sample.kind = "Rejection"); sample.int(n, n, replace = TRUE)``, vectorised over seeds.

The bootstrap of both engines draws the templates of resample b this way (R code:
``earnest_draw`` in R/glmm.R), so the laplace engine, which runs without R, fits exactly the
resamples the lme4 engine fits. R's algorithm (src/main/RNG.c): the seed is scrambled by 50 steps of
the LCG ``s = 69069 s + 1`` (mod 2^32), the 625 words of the Mersenne-Twister state are the next 625
LCG values, the first of them replaced by the position 624; each uniform is a tempered MT19937 word
times 2^-32; ``R_unif_index(n)`` takes ``bits = ceil(log2(n))`` bits, 16 per uniform
(``floor(u * 65536)``), and rejects values >= n.
"""

from __future__ import annotations

import numpy as np

_N, _M = 624, 397
_UPPER, _LOWER, _MATRIX_A = np.uint32(0x80000000), np.uint32(0x7FFFFFFF), np.uint32(0x9908B0DF)


def _seed_states(seeds: np.ndarray) -> np.ndarray:
    """MT state words (len(seeds), 624) as R's set.seed leaves them."""
    s = np.asarray(seeds, dtype=np.int64).astype(np.uint32)
    with np.errstate(over="ignore"):
        for _ in range(50):
            s = s * np.uint32(69069) + np.uint32(1)
        s = s * np.uint32(69069) + np.uint32(1)      # dummy[0] (mti), replaced by 624
        mt = np.empty((s.size, _N), dtype=np.uint32)
        for j in range(_N):
            s = s * np.uint32(69069) + np.uint32(1)
            mt[:, j] = s
    return mt


def _twist(mt: np.ndarray) -> np.ndarray:
    """The next 624 words of every state (MT19937's generation step), in place."""
    mag = lambda y: np.where((y & np.uint32(1)) != 0, _MATRIX_A, np.uint32(0))  # noqa: E731
    # kk in [0, N-M): uses old mt[kk+1] and old mt[kk+M]: all still unmodified
    y = (mt[:, : _N - _M] & _UPPER) | (mt[:, 1: _N - _M + 1] & _LOWER)
    mt[:, : _N - _M] = mt[:, _M:] ^ (y >> np.uint32(1)) ^ mag(y)
    # kk in [N-M, N-1): mt[kk + M - N] was updated above (chunks of N-M keep the dependency order)
    kk = _N - _M
    while kk < _N - 1:
        hi = min(kk + (_N - _M), _N - 1)
        y = (mt[:, kk:hi] & _UPPER) | (mt[:, kk + 1: hi + 1] & _LOWER)
        mt[:, kk:hi] = mt[:, kk + _M - _N: hi + _M - _N] ^ (y >> np.uint32(1)) ^ mag(y)
        kk = hi
    y = (mt[:, _N - 1] & _UPPER) | (mt[:, 0] & _LOWER)
    mt[:, _N - 1] = mt[:, _M - 1] ^ (y >> np.uint32(1)) ^ mag(y)
    return mt


def _temper(y: np.ndarray) -> np.ndarray:
    y = y ^ (y >> np.uint32(11))
    y = y ^ ((y << np.uint32(7)) & np.uint32(0x9D2C5680))
    y = y ^ ((y << np.uint32(15)) & np.uint32(0xEFC60000))
    return y ^ (y >> np.uint32(18))


def r_sample_draws(seeds, n: int) -> np.ndarray:
    """0-based template positions drawn by R for each seed: shape (len(seeds), n)."""
    seeds = np.atleast_1d(np.asarray(seeds, dtype=np.int64))
    if n < 1:
        raise ValueError(f"cannot draw from {n} templates")
    if n > 2 ** 31 - 1:
        raise ValueError("too many templates")
    bits = int(np.ceil(np.log2(n))) if n > 1 else 0
    chunks = bits // 16 + 1                           # uniforms per attempt: for (k = 0; k <= bits; k += 16)
    mask = (1 << bits) - 1
    mt = _seed_states(seeds)
    words = np.empty((seeds.size, 0), dtype=np.uint32)
    out = np.empty((seeds.size, n), dtype=np.int64)
    filled = np.zeros(seeds.size, dtype=np.int64)
    pos = np.zeros(seeds.size, dtype=np.int64)       # next unused word of `words`
    while (filled < n).any():
        need = (n - filled).max() * chunks * 2 + chunks
        while words.shape[1] - pos.min() < need:
            mt = _twist(mt)
            words = np.concatenate([words, _temper(mt.copy())], axis=1)
        rows = np.flatnonzero(filled < n)
        for b in rows:                                # rejection sampling: short per-seed loop
            w = words[b, pos[b]:]
            k = (w.size // chunks) * chunks
            v16 = (w[:k] >> np.uint32(16)).astype(np.int64).reshape(-1, chunks)
            vals = np.zeros(v16.shape[0], dtype=np.int64)
            for c in range(chunks):
                vals = vals * 65536 + v16[:, c]
            vals &= mask
            ok = np.flatnonzero(vals < n)
            need_b = n - filled[b]
            take = ok[:need_b]
            out[b, filled[b]: filled[b] + take.size] = vals[take]
            filled[b] += take.size
            pos[b] += (int(take[-1]) + 1) * chunks if take.size == need_b else k
    return out


def template_counts(seeds, n: int) -> np.ndarray:
    """How often each of the n templates is drawn per seed: shape (len(seeds), n), rows sum to n."""
    draws = r_sample_draws(seeds, n)
    counts = np.zeros((draws.shape[0], n), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(draws.shape[0]), n), draws.ravel()), 1)
    return counts
