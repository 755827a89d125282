// range.h -- what the range-scan benchmark's objects share: the configuration, the systems'
// interface and their registry, and the relation every system holds.
//
// The relation: `rows` rows (key k: u32, payload v: u64 and 88 bytes of padding, ~100 bytes
// a row), keys 0 .. rows-1, inserted in a seeded random order (so that trees have the
// shapes random inserts give them). A walk is a cursor over lo <= k < hi in key order that
// reads every row's payload v: it counts the rows, sums v and checks that the keys come
// out as lo, lo+1, ... . v is a fixed function of k (payload_of), so the sum of a walk is
// known in closed form (payload_sum) and a walk that skipped, repeated or invented a row
// is caught.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace range {

struct Config {
    uint64_t rows = 200000;                         // relation size
    std::vector<uint64_t> lengths{10, 1000, 100000};  // rows per cursor
    uint64_t seed = 1;
    double min_time = 0.2;                          // seconds per benchmark (Google Benchmark's MinTime)
    std::string dir;                                // where database files go
    bool keep_loaded = false;                       // every system stays loaded (interleaved runs)
    bool sorted_load = false;                       // every system loads in key order instead
    bool inject_fault = false;                      // (tests) every walk one row too long
    bool list = false;
};
Config &config();

// the payload of key k: odd multiplier, so distinct keys give distinct payloads
inline uint64_t payload_of(uint32_t k) { return (uint64_t)k * 0x9E3779B97F4A7C15ull; }

// the sum of payload_of(k) for lo <= k < lo + n (mod 2^64)
inline uint64_t payload_sum(uint64_t lo, uint64_t n) {
    uint64_t a = n, b = 2 * lo + n - 1;   // sum of k = n (2 lo + n - 1) / 2; one of a, b is even
    if (a % 2 == 0) a /= 2; else b /= 2;
    return a * b * 0x9E3779B97F4A7C15ull;
}

// How a system loads the relation. Random: in the seeded random order. Sorted: in key order
// (a sorted array looks the same however it was filled; inserting at random would memmove
// half of it per row). Scattered: in key order into storage slots freed in random order
// (a key-ordered list inserted at random walks half the list per row; this gives it the
// layout random inserts would: neighbours in key order are far apart in memory).
enum class Load { Random, Sorted, Scattered };

class Engine {
public:
    virtual ~Engine() {}
    // create an empty relation (files under dir)
    virtual bool open(const std::string &dir, std::string &e) = 0;
    // insert the relation: keys in `order` (a permutation of 0 .. rows-1)
    virtual bool load(const std::vector<uint32_t> &order, Load how, std::string &e) = 0;
    // walk lo <= k < hi in key order: *rows counted, *sum of the payloads, *disorder
    // nonzero if a key was not lo + (its position in the walk)
    virtual bool walk(uint32_t lo, uint32_t hi, uint64_t *rows, uint64_t *sum, uint32_t *disorder,
                      std::string &e) = 0;
    virtual bool close(std::string &e) = 0;
};

struct System {
    std::string name;   // BTREE, ..., SQLITE, LMDB
    std::string mem;    // persistent | transient
    bool p2;            // a generated data manager (else a reference)
    Load load;
    int rank;           // registration order
    std::function<std::unique_ptr<Engine>()> make;
};
std::vector<System> &registry();

struct Registrar {
    explicit Registrar(System s) { registry().push_back(std::move(s)); }
};

}  // namespace range
