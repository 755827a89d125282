// sqlite_util.h -- what the SQLite reference systems of the benchmarks share (OO7's
// oo7_sqlite.cc, LabFlow-1's labflow_sqlite.cc): an error thrown with SQLite's message, a
// statement prepared once and reused, and one use of it (bind, step, read, reset).
#pragma once

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace benchsql {

[[noreturn]] inline void fail(sqlite3 *db, const std::string &what) {
    throw std::runtime_error("SQLite " + what + ": " + sqlite3_errmsg(db));
}

// One prepared statement, prepared once and reused. clear_bindings: each use also sets
// its parameters back to NULL when it ends (else they keep their values).
class Stmt {
public:
    Stmt() = default;
    Stmt(const Stmt &) = delete;
    Stmt &operator=(const Stmt &) = delete;
    ~Stmt() { sqlite3_finalize(st_); }

    void prepare(sqlite3 *db, const char *sql) {
        db_ = db;
        if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st_, nullptr) != SQLITE_OK)
            fail(db, std::string("prepare \"") + sql + "\"");
    }
    void finalize() {
        sqlite3_finalize(st_);
        st_ = nullptr;
    }
    sqlite3_stmt *get() const { return st_; }
    const char *sql() const { return sqlite3_sql(st_); }
    sqlite3 *db() const { return db_; }
    bool clear_bindings = false;

private:
    sqlite3 *db_ = nullptr;
    sqlite3_stmt *st_ = nullptr;
};

// One use of a statement: binds, steps, reads columns; resets the statement when it goes
// out of scope (also on an exception), so the statement is ready for the next use.
class Use {
public:
    explicit Use(Stmt &s) : s_(s), st_(s.get()) {}
    ~Use() {
        sqlite3_reset(st_);
        if (s_.clear_bindings) sqlite3_clear_bindings(st_);
    }
    Use(const Use &) = delete;
    Use &operator=(const Use &) = delete;

    Use &i(int idx, int64_t v) {
        if (sqlite3_bind_int64(st_, idx, v) != SQLITE_OK) fail(s_.db(), "bind");
        return *this;
    }
    Use &t(int idx, const char *text, size_t len) {
        if (sqlite3_bind_text(st_, idx, text, int(len), SQLITE_STATIC) != SQLITE_OK) fail(s_.db(), "bind");
        return *this;
    }
    Use &b(int idx, const void *p, size_t len) {
        // a zero-length blob must still be a blob, not NULL (NOT NULL column)
        if (sqlite3_bind_blob(st_, idx, len ? p : "", int(len), SQLITE_STATIC) != SQLITE_OK) fail(s_.db(), "bind");
        return *this;
    }
    // true: a row is ready; false: done
    bool step() {
        int rc = sqlite3_step(st_);
        if (rc == SQLITE_ROW) return true;
        if (rc == SQLITE_DONE) return false;
        fail(s_.db(), std::string("step \"") + s_.sql() + "\"");
    }
    // run a statement that returns no rows
    void exec() {
        while (step()) {
        }
    }
    int64_t col(int c) const { return sqlite3_column_int64(st_, c); }
    int32_t col32(int c) const { return sqlite3_column_int(st_, c); }
    bool null(int c) const { return sqlite3_column_type(st_, c) == SQLITE_NULL; }
    const char *text(int c) const { return reinterpret_cast<const char *>(sqlite3_column_text(st_, c)); }
    const void *blob(int c) const { return sqlite3_column_blob(st_, c); }
    int bytes(int c) const { return sqlite3_column_bytes(st_, c); }

private:
    Stmt &s_;
    sqlite3_stmt *st_;
};

}  // namespace benchsql
