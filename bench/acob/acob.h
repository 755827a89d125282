// acob.h -- what the ACOB driver's parts share: the record as the benchmark sees it, the
// engine interface every architecture's driver implements (acob_driver.cc, compiled once
// per variant), and the registry main() (acob_main.cc) runs them from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace acob {

constexpr uint32_t RECORDS_PER_OBJECT = 7;
constexpr uint32_t OBJECTS_PER_PAGE = 5;
constexpr uint32_t RECORDS_PER_PAGE = RECORDS_PER_OBJECT * OBJECTS_PER_PAGE;   // 35
constexpr uint64_t PAGE = 4096;
constexpr uint64_t REC_BLOCK = 112;   // a rec element's allocator block (the spec's head)
constexpr uint64_t PAD_BLOCK = 64;    // a pad element's

// One record of a complex object (type_equations/acob/*.p2: record rec)
struct Rec {
    uint32_t key;          // the object's key, 1..objects
    uint32_t pos;          // place in the object's tree: 0 root, 1-2 interior, 3-6 leaves
    uint64_t left, right;  // references: children, or a leaf's two components' roots
    char filler[64];
};

// The counters of a server segment (p2_server_stats), as deltas
struct Stats {
    uint64_t reads = 0, writes = 0, flushes = 0, bytes_read = 0, bytes_written = 0,
             misses = 0, hits = 0, evictions = 0, writebacks = 0, rewrites = 0, bundled = 0,
             inflight = 0;   // the most requests in flight at once (not a delta: since the reset)
};

class Engine {
public:
    virtual ~Engine() {}
    virtual bool open(const std::string &dir, std::string &e) = 0;
    virtual bool insert(const Rec &r, uint64_t *ref, std::string &e) = 0;
    virtual bool insert_pad(uint64_t *ref, std::string &e) = 0;     // one PAD_BLOCK
    virtual bool read(uint64_t ref, Rec *out, std::string &e) = 0;  // a copy of the record
    virtual bool rewrite(uint64_t ref, const Rec &r, std::string &e) = 0;
    virtual bool commit(std::string &e) = 0;                // one transaction per query and set
    virtual bool drop(std::string &e) = 0;                  // an empty client cache
    virtual bool stats(Stats *s) = 0;                       // false: no server
    virtual void reset_stats() = 0;                         // rewrites count from here
    virtual void close() = 0;
};

struct System {
    std::string name;   // LOCAL, PAGESERVER, OBJSERVER
    int rank;           // order of the runs
    Engine *(*make)();
};

std::vector<System> &registry();

struct Registrar {
    Registrar(const char *name, int rank, Engine *(*make)()) {
        registry().push_back(System{name, rank, make});
    }
};

}  // namespace acob
