// labflow.h -- what every LabFlow-1 replayer shares: the storage interface a system
// implements (lf::Store), and the driver that reads a benchmark log (bench/labflow/gen.py,
// format version 1), keeps the run-time dictionary, encodes and decodes the steps' typed
// payloads, writes the query output and measures the intervals.
//
// The split follows LabBase, the system LabFlow-1 measured: the fixed top level
// (materials, steps, `involves`, the newest step of each kind per material, the state
// queues) lives in the storage system under test; the bottom level (step kinds and their
// attributes, versioned) is a small run-time dictionary. The driver keeps the dictionary in
// memory (it is tiny and always hot) and writes every entry through the Store too, so that
// a reopened database carries its own schema (Store::dict_load gives it back).
//
// Every system -- the generated data managers (labflow_p2.cc, one object per variant), the
// SQLite and LMDB mappings -- answers the same primitive calls below; the driver composes
// them into the log's queries, so the query output is the same by construction wherever
// the stores agree, and bench/labflow/model.py is the oracle for all of them.
//
// Oids: the n-th MAT creates material n, the n-th STEP creates step n (from 1; 0 = none).
// Kinds and attributes are numbered from 0 in dictionary order (model.py's ids).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace lf {

// the fixed numbering of states (gen.STATES) and material kinds (gen.MATERIAL_KINDS)
enum State : uint8_t {
    RECEIVED, PREPPED, MEASURED, PASSED, NEW, AMPLIFIED, SEQUENCED, RELEASED, FAILED,
    NSTATES
};
enum MatKind : uint8_t { SAMPLE, SEGMENT, NMATKINDS };
// attribute value types (model.TYPE_CODE); a str<N> attribute has type STR and max_len N
enum AttrType : uint8_t { T_U8 = 1, T_I32 = 2, T_F32 = 3, T_STR = 4, T_VAR = 5 };

constexpr size_t kNameMax = 24;     // material names (gen.py: <= 24 characters)
constexpr size_t kDictNameMax = 24; // step kind and attribute names: the driver refuses a
                                    // longer one, so a store may keep them in fixed fields
constexpr size_t kWhoCount = 16;    // gen.WHO, index = the step's `who`

extern const char *const kStateNames[NSTATES];
extern const char *const kMatKindNames[NMATKINDS];
extern const char *const kWhoNames[kWhoCount];

// A step as stored: its fixed part and its TLV payload (model.py's encoding).
struct StepRec {
    uint32_t oid = 0;
    uint16_t kind = 0;          // step kind id
    uint16_t schema_ver = 0;    // dictionary version when it was recorded
    uint8_t who = 0;            // index into kWhoNames
    uint64_t when = 0;
    const uint32_t *mats = nullptr;     // step_insert only: the materials it involves
    uint32_t nmat = 0;                  //   (in log order; at least one)
    const uint8_t *payload = nullptr;   // step_get: valid until the next call on the Store
    uint32_t payload_len = 0;
};

struct MatRec {
    uint32_t oid = 0;
    uint8_t kind = 0;           // MatKind
    uint8_t state = 0;          // State
    uint32_t nsteps = 0;        // steps involving it so far
    char name[kNameMax + 1] = {};
};

// A store's answer to mat_get / step_get from any row holding the fields (its name, its
// payload: the caller's): oid set; a step's materials are not returned (none, nmat 0)
template <class Row>
void mat_fields(MatRec &out, uint32_t oid, const Row &r) {
    out.oid = oid;
    out.kind = r.kind;
    out.state = r.state;
    out.nsteps = r.nsteps;
}
template <class Row>
void step_fields(StepRec &out, uint32_t oid, const Row &r) {
    out.oid = oid;
    out.kind = r.kind;
    out.schema_ver = r.schema_ver;
    out.who = r.who;
    out.when = r.when;
    out.mats = nullptr;
    out.nmat = 0;
}

// dictionary entries as the Store persists them
struct KindEntry { uint16_t id; uint16_t since; uint16_t retired; /* 0: live */ std::string name; };
struct AttrEntry { uint16_t id; uint16_t kind; uint8_t type; uint8_t max_len; uint16_t since; std::string name; };

// The storage system under test. Every call either succeeds or throws std::runtime_error
// with a message that says what failed (the driver reports it and stops).
class Store {
public:
    virtual ~Store() = default;
    virtual const char *name() const = 0;
    // files the database occupies, relative to its directory (sizes, cold runs); empty
    // for a transient system
    virtual std::vector<std::string> files() const = 0;
    // the log's memory budget X (its header's memory=), given once right after a fresh
    // database is made, before any other call: a system that must size its file or map
    // up front (LMDB's map) sizes it from this; the database ends near 2X plus the writes
    // after the third interval. Others ignore it.
    virtual void size_hint(uint64_t memory_budget) { (void)memory_budget; }

    // make the work so far durable as the system commits (p2gen: <prefix>_sync or the
    // journal's commit; SQLite: COMMIT of the open transaction; LMDB: txn commit)
    virtual void commit() = 0;
    // close the database (after a commit); the object is then only destroyed
    virtual void close() = 0;

    // the dictionary: every entry once, in dictionary order; a split retires a kind by
    // writing its entry again with `retired` set
    virtual void dict_kind(const KindEntry &k) = 0;
    virtual void dict_attr(const AttrEntry &a) = 0;
    // a reopened database's dictionary, in the order written (retirements included)
    virtual void dict_load(std::vector<KindEntry> &kinds, std::vector<AttrEntry> &attrs) = 0;
    virtual uint32_t dict_version() { return 0; }   // unused by the driver; for checks

    // materials
    virtual void mat_insert(const MatRec &m) = 0;          // oid = count + 1, nsteps = 0
    virtual void mat_set_state(uint32_t oid, uint8_t state) = 0;   // moves it between queues
    virtual bool mat_get(uint32_t oid, MatRec &out) = 0;   // false: no such material
    virtual uint32_t mat_by_name(const char *name) = 0;    // 0: absent
    virtual uint32_t mat_count() = 0;

    // steps: one call records the step, its `involves` rows (one per material), the
    // newest-step-of-its-kind entry of each material (an upsert on (mat, kind)) and each
    // material's nsteps
    virtual void step_insert(const StepRec &s) = 0;
    virtual bool step_get(uint32_t oid, StepRec &out) = 0;
    virtual uint32_t step_count() = 0;
    // newest step of `kind` involving material `mat`; 0 if none
    virtual uint32_t latest(uint32_t mat, uint16_t kind) = 0;

    // the first n materials in `state`, in oid order; returns how many were written
    virtual size_t queue(uint8_t state, size_t n, uint32_t *out) = 0;
    // The visitors below are never re-entered: the driver makes no other call on the
    // Store from inside `visit` (it collects the oids first), so a store may keep a cursor
    // open across the visits.
    // the steps involving `mat`, oldest first (`when` order)
    virtual void hist(uint32_t mat, const std::function<void(uint32_t step)> &visit) = 0;
    // the materials involved in step `step`, in oid order
    virtual void step_mats(uint32_t step, const std::function<void(uint32_t mat)> &visit) = 0;

    // REPORT1: counts[kind] += 1 for every step with t0 <= when <= t1 (counts has one
    // slot per kind ever defined, zeroed by the caller)
    virtual void report1(uint64_t t0, uint64_t t1, uint64_t *counts) = 0;
    // REPORT2: for every state, its number of materials and the oldest `when` among their
    // newest steps (UINT64_MAX when no material in it has a step); the caller fills count
    // with 0 and oldest with UINT64_MAX first, so a store may just add and take minima
    virtual void report2(uint64_t count[NSTATES], uint64_t oldest[NSTATES]) = 0;
};

// A factory: creates a fresh database in `dir` (fresh = true; the directory exists and is
// empty) or opens the one there (fresh = false).
using StoreFactory = std::function<std::unique_ptr<Store>(const std::string &dir, bool fresh)>;

// Every system links itself in with a static Registration (as oo7::System does); the
// driver's --system flag picks one by name.
struct Registration {
    Registration(const char *name, bool persistent, StoreFactory make);
};
struct SystemInfo { std::string name; bool persistent; StoreFactory make; };
std::vector<SystemInfo> &systems();

}  // namespace lf
