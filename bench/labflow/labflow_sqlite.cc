// labflow_sqlite.cc -- SQLITE: LabFlow-1's fixed top level mapped onto SQLite the way a
// competent user would, the relational peer the generated variants are read against.
//
//   SQLITE persistent  the file <dir>/labflow.sqlite
//
// Schema (kSchema): one table per relation of the workload's model, the oid as the
// INTEGER PRIMARY KEY (rowid) of material and step; involves and latest are WITHOUT ROWID
// tables clustered on the keys the queries walk: involves on (mat, at, step) -- a
// material's history is one range in `when` order (HIST, the history's newest step) -- with
// an index on (step, mat) for STEPMATS; latest on (mat, kind), written with an upsert (INSERT
// .. ON CONFLICT DO UPDATE). material carries nsteps and the `when` of its newest step
// (updated with each step; REPORT2 is one scan of the table); its state index (state, rowid)
// is the queue: QUEUE is `WHERE state = ? ORDER BY oid LIMIT n`, and SQLite maintains it on
// every STATE update. step has an index on (at, kind) for REPORT1's range. The payload is a
// BLOB column. `at` is the step's `when` (a keyword in SQL). The dictionary is two tables
// in the order written (dict_load reads them back by their rowid).
//
// Every call runs statements prepared once at open (reset and rebound per use).
// Durability as the generated persistent variants and the other SQLite peers
// (bench/oo7/oo7_sqlite.cc, bench/tpcb/tpcb_refs.cc): journal_mode=OFF, synchronous=OFF,
// locking_mode=EXCLUSIVE; one transaction is always open and Store::commit is its COMMIT
// (and the next BEGIN). [choice] SQLite's own page cache is kept to an eighth of the
// memory budget (size_hint; at least 2 MiB): the database file's pages then live in the
// operating system's page cache, which a memory cap bounds and evicts as it does the
// generated variants' mapped files, instead of in the process heap, where a cache larger
// than the cap is an out-of-memory kill rather than paging.
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "../sqlite_util.h"
#include "labflow.h"

namespace lf {
namespace {

const char *const kFile = "labflow.sqlite";

const char *const kSchema = R"SQL(
CREATE TABLE dict_kind(
    seq INTEGER PRIMARY KEY, id INTEGER NOT NULL, since INTEGER NOT NULL,
    retired INTEGER NOT NULL, name TEXT NOT NULL);
CREATE TABLE dict_attr(
    seq INTEGER PRIMARY KEY, id INTEGER NOT NULL, kind INTEGER NOT NULL, type INTEGER NOT NULL,
    max_len INTEGER NOT NULL, since INTEGER NOT NULL, name TEXT NOT NULL);
CREATE TABLE material(
    oid INTEGER PRIMARY KEY, kind INTEGER NOT NULL, state INTEGER NOT NULL,
    nsteps INTEGER NOT NULL, last_at INTEGER, name TEXT NOT NULL);
CREATE UNIQUE INDEX material_name ON material(name);
CREATE INDEX material_state ON material(state);
CREATE TABLE step(
    oid INTEGER PRIMARY KEY, kind INTEGER NOT NULL, schema_ver INTEGER NOT NULL,
    who INTEGER NOT NULL, at INTEGER NOT NULL, payload BLOB NOT NULL);
CREATE INDEX step_at ON step(at, kind);
CREATE TABLE involves(
    mat INTEGER NOT NULL, at INTEGER NOT NULL, step INTEGER NOT NULL,
    PRIMARY KEY(mat, at, step)) WITHOUT ROWID;
CREATE INDEX involves_step ON involves(step, mat);
CREATE TABLE latest(
    mat INTEGER NOT NULL, kind INTEGER NOT NULL, step INTEGER NOT NULL,
    PRIMARY KEY(mat, kind)) WITHOUT ROWID;
)SQL";

using benchsql::fail;
using benchsql::Use;

// A statement each use of which sets its parameters back to NULL when it ends.
struct Stmt : benchsql::Stmt {
    Stmt() { clear_bindings = true; }
};

class SqliteStore final : public Store {
public:
    SqliteStore(const std::string &dir, bool fresh) {
        std::string path = dir + "/" + kFile;
        struct stat sb;
        if (fresh && ::stat(path.c_str(), &sb) == 0) throw std::runtime_error(path + " exists");
        int flags = SQLITE_OPEN_READWRITE | (fresh ? SQLITE_OPEN_CREATE : 0);
        if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
            std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
            sqlite3_close(db_);
            db_ = nullptr;
            throw std::runtime_error("SQLite open " + path + ": " + msg);
        }
        try {
            exec("PRAGMA journal_mode=OFF");
            exec("PRAGMA synchronous=OFF");
            exec("PRAGMA locking_mode=EXCLUSIVE");
            set_cache(0);
            if (fresh) {
                exec("BEGIN");
                exec(kSchema);
                exec("COMMIT");
            }
            prepare();
            exec("BEGIN");
            in_txn_ = true;
            nkinds_ = count(nkinds_stmt_);
        } catch (...) {
            shut();
            throw;
        }
    }
    ~SqliteStore() override { shut(); }

    const char *name() const override { return "SQLITE"; }
    std::vector<std::string> files() const override { return {kFile}; }
    void size_hint(uint64_t memory) override { set_cache(memory / 8); }

    void commit() override {
        exec("COMMIT");
        in_txn_ = false;
        exec("BEGIN");
        in_txn_ = true;
    }
    void close() override {
        if (in_txn_) exec("COMMIT");
        in_txn_ = false;
        shut();
    }

    void dict_kind(const KindEntry &k) override {
        nkinds_ = std::max<uint32_t>(nkinds_, uint32_t(k.id) + 1);
        Use(ins_kind_).i(1, k.id).i(2, k.since).i(3, k.retired).t(4, k.name.data(), k.name.size()).exec();
    }
    void dict_attr(const AttrEntry &a) override {
        Use(ins_attr_)
            .i(1, a.id)
            .i(2, a.kind)
            .i(3, a.type)
            .i(4, a.max_len)
            .i(5, a.since)
            .t(6, a.name.data(), a.name.size())
            .exec();
    }
    void dict_load(std::vector<KindEntry> &kinds, std::vector<AttrEntry> &attrs) override {
        kinds.clear();
        attrs.clear();
        {
            Use u(sel_kinds_);
            while (u.step())
                kinds.push_back(KindEntry{uint16_t(u.col(0)), uint16_t(u.col(1)), uint16_t(u.col(2)), u.text(3)});
        }
        Use u(sel_attrs_);
        while (u.step())
            attrs.push_back(AttrEntry{uint16_t(u.col(0)), uint16_t(u.col(1)), uint8_t(u.col(2)), uint8_t(u.col(3)),
                                      uint16_t(u.col(4)), u.text(5)});
    }

    void mat_insert(const MatRec &m) override {
        Use(ins_mat_).i(1, m.oid).i(2, m.kind).i(3, m.state).t(4, m.name, strnlen(m.name, kNameMax)).exec();
    }
    void mat_set_state(uint32_t oid, uint8_t state) override {
        Use(set_state_).i(1, state).i(2, oid).exec();
        if (sqlite3_changes(db_) != 1) throw std::runtime_error("SQLite: no material " + std::to_string(oid));
    }
    bool mat_get(uint32_t oid, MatRec &out) override {
        Use u(get_mat_);
        u.i(1, oid);
        if (!u.step()) return false;
        out.oid = oid;
        out.kind = uint8_t(u.col(0));
        out.state = uint8_t(u.col(1));
        out.nsteps = uint32_t(u.col(2));
        std::memset(out.name, 0, sizeof out.name);
        std::memcpy(out.name, u.text(3), std::min<size_t>(size_t(u.bytes(3)), kNameMax));
        return true;
    }
    uint32_t mat_by_name(const char *name) override {
        Use u(mat_by_name_);
        u.t(1, name, strnlen(name, kNameMax + 1));
        return u.step() ? uint32_t(u.col(0)) : 0;
    }
    uint32_t mat_count() override { return count(count_mat_); }

    void step_insert(const StepRec &s) override {
        Use(ins_step_).i(1, s.oid).i(2, s.kind).i(3, s.schema_ver).i(4, s.who).i(5, int64_t(s.when))
            .b(6, s.payload, s.payload_len)
            .exec();
        for (uint32_t i = 0; i < s.nmat; i++) {
            uint32_t m = s.mats[i];
            Use(bump_mat_).i(1, int64_t(s.when)).i(2, m).exec();
            if (sqlite3_changes(db_) != 1) throw std::runtime_error("SQLite: no material " + std::to_string(m));
            Use(ins_inv_).i(1, m).i(2, int64_t(s.when)).i(3, s.oid).exec();
            Use(up_latest_).i(1, m).i(2, s.kind).i(3, s.oid).exec();
        }
    }
    bool step_get(uint32_t oid, StepRec &out) override {
        Use u(get_step_);
        u.i(1, oid);
        if (!u.step()) return false;
        out.oid = oid;
        out.kind = uint16_t(u.col(0));
        out.schema_ver = uint16_t(u.col(1));
        out.who = uint8_t(u.col(2));
        out.when = uint64_t(u.col(3));
        out.mats = nullptr;
        out.nmat = 0;
        const uint8_t *p = static_cast<const uint8_t *>(u.blob(4));
        payload_.assign(p, p + u.bytes(4));
        out.payload = payload_.data();
        out.payload_len = uint32_t(payload_.size());
        return true;
    }
    uint32_t step_count() override { return count(count_step_); }
    uint32_t latest(uint32_t mat, uint16_t kind) override {
        Use u(get_latest_);
        u.i(1, mat).i(2, kind);
        return u.step() ? uint32_t(u.col(0)) : 0;
    }

    size_t queue(uint8_t state, size_t n, uint32_t *out) override {
        Use u(queue_);
        u.i(1, state).i(2, int64_t(n));
        size_t k = 0;
        while (k < n && u.step()) out[k++] = uint32_t(u.col(0));
        return k;
    }
    void hist(uint32_t mat, const std::function<void(uint32_t)> &visit) override {
        Use u(hist_);
        u.i(1, mat);
        while (u.step()) visit(uint32_t(u.col(0)));
    }
    void step_mats(uint32_t step, const std::function<void(uint32_t)> &visit) override {
        Use u(step_mats_);
        u.i(1, step);
        while (u.step()) visit(uint32_t(u.col(0)));
    }

    void report1(uint64_t t0, uint64_t t1, uint64_t *counts) override {
        Use u(report1_);
        u.i(1, int64_t(t0)).i(2, int64_t(t1));
        // the range of the covering index (at, kind), counted here: a GROUP BY would sort
        // the range in a temporary B-tree first
        while (u.step()) {
            int64_t k = u.col(0);   // `counts` has a slot per kind of the dictionary
            if (k < 0 || k >= int64_t(nkinds_)) throw std::runtime_error("SQLite: a step of no kind");
            counts[k]++;
        }
    }
    void report2(uint64_t count[NSTATES], uint64_t oldest[NSTATES]) override {
        for (int s = 0; s < NSTATES; s++) count[s] = 0, oldest[s] = UINT64_MAX;
        // one scan of the table, summed here: a GROUP BY would walk the state index and
        // look every row up by its rowid for last_at
        Use u(report2_);
        while (u.step()) {
            int64_t s = u.col(0);
            if (s < 0 || s >= NSTATES) throw std::runtime_error("SQLite: a material in no state");
            count[s]++;
            if (!u.null(1)) oldest[s] = std::min(oldest[s], uint64_t(u.col(1)));
        }
    }

private:
    void exec(const char *sql) {
        char *err = nullptr;
        if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
            std::string msg = err ? err : "?";
            sqlite3_free(err);
            throw std::runtime_error(std::string("SQLite \"") + std::string(sql).substr(0, 60) + "\": " + msg);
        }
    }
    void set_cache(uint64_t bytes) {
        uint64_t kib = std::max<uint64_t>(bytes / 1024, 2048);
        exec(("PRAGMA cache_size=-" + std::to_string(kib)).c_str());
    }
    uint32_t count(Stmt &s) {
        Use u(s);
        if (!u.step()) fail(db_, "count");
        return uint32_t(u.col(0));
    }
    void prepare() {
        ins_kind_.prepare(db_, "INSERT INTO dict_kind(id, since, retired, name) VALUES(?, ?, ?, ?)");
        ins_attr_.prepare(db_, "INSERT INTO dict_attr(id, kind, type, max_len, since, name) VALUES(?, ?, ?, ?, ?, ?)");
        sel_kinds_.prepare(db_, "SELECT id, since, retired, name FROM dict_kind ORDER BY seq");
        sel_attrs_.prepare(db_, "SELECT id, kind, type, max_len, since, name FROM dict_attr ORDER BY seq");
        ins_mat_.prepare(db_, "INSERT INTO material(oid, kind, state, nsteps, last_at, name) VALUES(?, ?, ?, 0, NULL, ?)");
        set_state_.prepare(db_, "UPDATE material SET state = ? WHERE oid = ?");
        get_mat_.prepare(db_, "SELECT kind, state, nsteps, name FROM material WHERE oid = ?");
        mat_by_name_.prepare(db_, "SELECT oid FROM material WHERE name = ?");
        count_mat_.prepare(db_, "SELECT count(*) FROM material");
        nkinds_stmt_.prepare(db_, "SELECT coalesce(max(id) + 1, 0) FROM dict_kind");
        ins_step_.prepare(db_, "INSERT INTO step(oid, kind, schema_ver, who, at, payload) VALUES(?, ?, ?, ?, ?, ?)");
        bump_mat_.prepare(db_, "UPDATE material SET nsteps = nsteps + 1, last_at = ? WHERE oid = ?");
        ins_inv_.prepare(db_, "INSERT INTO involves(mat, at, step) VALUES(?, ?, ?)");
        up_latest_.prepare(db_, "INSERT INTO latest(mat, kind, step) VALUES(?, ?, ?) "
                                "ON CONFLICT(mat, kind) DO UPDATE SET step = excluded.step");
        get_step_.prepare(db_, "SELECT kind, schema_ver, who, at, payload FROM step WHERE oid = ?");
        count_step_.prepare(db_, "SELECT count(*) FROM step");
        get_latest_.prepare(db_, "SELECT step FROM latest WHERE mat = ? AND kind = ?");
        queue_.prepare(db_, "SELECT oid FROM material WHERE state = ? ORDER BY oid LIMIT ?");
        hist_.prepare(db_, "SELECT step FROM involves WHERE mat = ? ORDER BY at, step");
        step_mats_.prepare(db_, "SELECT mat FROM involves WHERE step = ? ORDER BY mat");
        report1_.prepare(db_, "SELECT kind FROM step WHERE at BETWEEN ? AND ?");
        report2_.prepare(db_, "SELECT state, last_at FROM material");
    }
    void shut() {
        for (Stmt *s : {&ins_kind_, &ins_attr_, &sel_kinds_, &sel_attrs_, &ins_mat_, &set_state_, &get_mat_,
                        &mat_by_name_, &count_mat_, &nkinds_stmt_, &ins_step_, &bump_mat_, &ins_inv_, &up_latest_, &get_step_,
                        &count_step_, &get_latest_, &queue_, &hist_, &step_mats_, &report1_, &report2_})
            s->finalize();
        if (db_) {
            // a store dropped without close(): keep what was done, as the other systems do
            if (in_txn_) sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
            sqlite3_close(db_);
        }
        db_ = nullptr;
        in_txn_ = false;
    }

    sqlite3 *db_ = nullptr;
    bool in_txn_ = false;
    uint32_t nkinds_ = 0;   // kinds in the dictionary: REPORT1's counts have a slot each
    std::vector<uint8_t> payload_;
    Stmt nkinds_stmt_, ins_kind_, ins_attr_, sel_kinds_, sel_attrs_, ins_mat_, set_state_, get_mat_, mat_by_name_, count_mat_,
        ins_step_, bump_mat_, ins_inv_, up_latest_, get_step_, count_step_, get_latest_, queue_, hist_, step_mats_,
        report1_, report2_;
};

Registration reg("SQLITE", true, [](const std::string &dir, bool fresh) {
    return std::unique_ptr<Store>(new SqliteStore(dir, fresh));
});

}  // namespace
}  // namespace lf
