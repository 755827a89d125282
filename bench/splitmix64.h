// splitmix64.h -- the random stream of the benchmark drivers (bench/acob, bench/oo7,
// bench/range, bench/social): splitmix64 (Steele, Lea, Flood 2014), one add and a mix;
// passes BigCrush, and its whole state is one word, so "reseed before every run" is an
// assignment. The Python models of the drivers (tests/bench/acob_model.py) draw the same.
#pragma once

#include <stdint.h>

namespace benchmain {

struct SplitMix64 {
    uint64_t s;
    explicit SplitMix64(uint64_t seed = 1) : s(seed) {}
    uint64_t next() {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint32_t rnd(uint32_t n) { return (uint32_t)(next() % n); }   // next() % n
};

}  // namespace benchmain
