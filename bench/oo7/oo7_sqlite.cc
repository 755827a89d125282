// oo7_sqlite.cc -- OO7 mapped onto SQLite the way a competent user would: what a user
// picks instead of a generated data manager, so the reference the others are read against.
//
//   SQLITE persistent  the file <dir>/oo7.sqlite
//   SQLITE transient   ":memory:"
//
// Schema: one table per class, the rowid (INTEGER PRIMARY KEY) of each row is the Handle
// the generator passes back, and every reference is a column holding the rowid of its
// target; inverse sets are the same column read through an index (atomic_part.part_of is
// both AtomicPart.partOf and CompositePart.parts, connection.from_id/to_id are both ends
// of AtomicPart.to/from, ...). The two bags between base assemblies and composite parts
// are link tables keyed (base, pos): pos keeps the draw order and the duplicates. Texts
// are TEXT columns. Indexes as spec section 1 recommends plus the inverse directions the
// operations walk (see kSchema); connection(from_id, to_id) covers T1's edge query.
//
// Every operation runs through statements prepared once at open (reset and rebound per
// use). The traversals are driven from C++ as a user porting OO7 writes them: the
// assembly tree and the private bags through SQL, then per composite-part visit a DFS
// from rootPart, one `SELECT x, y, type ... WHERE rowid = ?` and one
// `SELECT to_id FROM connection WHERE from_id = ?` per part, the visited set of oo7.h.
// Updates are UPDATE statements (T3's buildDate index is kept right by SQLite).
//
// Durability: like the generated persistent variants (which give none) and like the TPC-B
// SQLite reference (bench/tpcb/tpcb_refs.cc), the file database runs with
// journal_mode=OFF, synchronous=OFF and locking_mode=EXCLUSIVE: no rollback journal, no
// fsync, one lock for the connection's life. A transaction then costs only writing its
// dirty pages to the file at COMMIT. The page cache is sized so the whole database stays
// cached (main-memory operation, as the other systems). SQLITE-WAL is the durable
// comparison for the journalled variants: the same file with journal_mode=WAL and
// synchronous=FULL, every run one transaction whose COMMIT appends its pages to the WAL
// and fsyncs it (SQLite's own checkpoints fold the WAL back into the file).
// SQLITE-WAL100 (durable comparison only) is the same file and settings with one SQLite
// transaction per 100 runs that wrote: commit() leaves the transaction open until the
// 100th (as the TPC-B reference of that name commits every 100 TPC-B transactions).
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "../sqlite_util.h"
#include "oo7.h"

namespace oo7 {
namespace {

// cache_size in KiB (negative pragma value): large enough for a medium database; pages
// are allocated on demand, so a small database uses only what it needs
constexpr int kCacheKiB = 2 * 1024 * 1024;

const char *const kSchema = R"SQL(
CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE module(
    rowid INTEGER PRIMARY KEY, id INTEGER NOT NULL, type TEXT NOT NULL,
    build_date INTEGER NOT NULL, design_root INTEGER);
CREATE UNIQUE INDEX module_id ON module(id);
CREATE TABLE manual(
    rowid INTEGER PRIMARY KEY, id INTEGER NOT NULL, title TEXT NOT NULL, text TEXT NOT NULL,
    text_len INTEGER NOT NULL, module INTEGER NOT NULL);
CREATE UNIQUE INDEX manual_module ON manual(module);
CREATE TABLE complex_assembly(
    rowid INTEGER PRIMARY KEY, id INTEGER NOT NULL, type TEXT NOT NULL,
    build_date INTEGER NOT NULL, super INTEGER, module INTEGER NOT NULL);
CREATE INDEX complex_assembly_super ON complex_assembly(super);
CREATE TABLE base_assembly(
    rowid INTEGER PRIMARY KEY, id INTEGER NOT NULL, type TEXT NOT NULL,
    build_date INTEGER NOT NULL, super INTEGER NOT NULL, module INTEGER NOT NULL);
CREATE INDEX base_assembly_id ON base_assembly(id);
CREATE INDEX base_assembly_super ON base_assembly(super);
CREATE TABLE composite_part(
    rowid INTEGER PRIMARY KEY, id INTEGER NOT NULL, type TEXT NOT NULL,
    build_date INTEGER NOT NULL, root_part INTEGER);
CREATE INDEX composite_part_id ON composite_part(id);
CREATE TABLE document(
    rowid INTEGER PRIMARY KEY, id INTEGER NOT NULL, title TEXT NOT NULL, text TEXT NOT NULL,
    composite INTEGER NOT NULL);
CREATE UNIQUE INDEX document_title ON document(title);
CREATE INDEX document_id ON document(id);
CREATE UNIQUE INDEX document_composite ON document(composite);
CREATE TABLE atomic_part(
    rowid INTEGER PRIMARY KEY, id INTEGER NOT NULL, type TEXT NOT NULL,
    build_date INTEGER NOT NULL, x INTEGER NOT NULL, y INTEGER NOT NULL,
    doc_id INTEGER NOT NULL, part_of INTEGER NOT NULL);
CREATE UNIQUE INDEX atomic_part_id ON atomic_part(id);
CREATE INDEX atomic_part_build_date ON atomic_part(build_date);
CREATE INDEX atomic_part_part_of ON atomic_part(part_of);
CREATE TABLE connection(
    rowid INTEGER PRIMARY KEY, from_id INTEGER NOT NULL, to_id INTEGER NOT NULL,
    type TEXT NOT NULL, length INTEGER NOT NULL);
CREATE INDEX connection_from ON connection(from_id, to_id);
CREATE INDEX connection_to ON connection(to_id);
CREATE TABLE private_link(
    base INTEGER NOT NULL, pos INTEGER NOT NULL, comp INTEGER NOT NULL,
    PRIMARY KEY(base, pos)) WITHOUT ROWID;
CREATE INDEX private_link_comp ON private_link(comp, base);
CREATE TABLE shared_link(
    base INTEGER NOT NULL, pos INTEGER NOT NULL, comp INTEGER NOT NULL,
    PRIMARY KEY(base, pos)) WITHOUT ROWID;
CREATE INDEX shared_link_comp ON shared_link(comp, base);
)SQL";

// the tables whose rows counts() reports, in Counts order
const char *const kCountSql =
    "SELECT (SELECT count(*) FROM module), (SELECT count(*) FROM manual),"
    " (SELECT count(*) FROM complex_assembly), (SELECT count(*) FROM base_assembly),"
    " (SELECT count(*) FROM composite_part), (SELECT count(*) FROM document),"
    " (SELECT count(*) FROM atomic_part), (SELECT count(*) FROM connection),"
    " (SELECT count(*) FROM private_link), (SELECT count(*) FROM shared_link)";

size_t type_len(const char *type) { return strnlen(type, kTypeSize); }

using benchsql::fail;
using benchsql::Stmt;
using benchsql::Use;

uint64_t count_char(const char *s, int n, char c) {
    uint64_t k = 0;
    for (int i = 0; i < n; i++) k += s[i] == c;
    return k;
}

class SqliteDb final : public Db {
public:
    SqliteDb(const std::string &dir, bool persistent, bool durable = false, int group = 1)
        : persistent_(persistent), durable_(durable), group_(group) {
        if (persistent) {
            mkdir(dir.c_str(), 0777);   // the driver normally made it; harmless if it exists
            path_ = dir + "/oo7.sqlite";
        } else {
            path_ = ":memory:";
        }
        if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
            SQLITE_OK) {
            std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
            sqlite3_close(db_);
            throw std::runtime_error("SQLite open " + path_ + ": " + why);
        }
        try {
            exec(std::string(durable_ ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                                      : "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;") +
                 " PRAGMA locking_mode=EXCLUSIVE; PRAGMA temp_store=MEMORY;"
                 " PRAGMA cache_size=-" + std::to_string(kCacheKiB) + ";");
            if (!has_schema()) exec(std::string("BEGIN;") + kSchema + "COMMIT;");
            prepare_all();
        } catch (...) {
            sqlite3_close_v2(db_);
            throw;
        }
    }

    ~SqliteDb() override {
        // the Db is closed without an explicit commit (e.g. after a failed run): keep what
        // was done, as the generated variants (which have no transactions) do
        if (db_ && !sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
        stmts_.clear();
        sqlite3_close_v2(db_);
    }

    std::string name() const override {
        return !durable_ ? "SQLITE" : group_ > 1 ? "SQLITE-WAL" + std::to_string(group_) : "SQLITE-WAL";
    }

    // -- build ------------------------------------------------------------------------------
    void begin_build(const Params &p) override {
        begin();
        const std::pair<const char *, int> kv[] = {
            {"atomic_per_comp", p.atomic_per_comp}, {"conn_per_atomic", p.conn_per_atomic},
            {"document_size", p.document_size},     {"manual_size", p.manual_size},
            {"comp_per_module", p.comp_per_module}, {"assm_per_assm", p.assm_per_assm},
            {"assm_levels", p.assm_levels},         {"comp_per_assm", p.comp_per_assm},
            {"modules", p.modules}};
        for (auto &e : kv) Use(*put_meta_).t(1, e.first, strlen(e.first)).i(2, e.second).exec();
    }
    void end_build() override { commit(); }

    Handle add_module(int32_t id, const char *type, int32_t date) override {
        Use(*ins_module_).i(1, id).t(2, type, type_len(type)).i(3, date).exec();
        return last_rowid();
    }
    void add_manual(Handle module, int32_t id, const char *title, const char *text, int32_t len) override {
        Use(*ins_manual_).i(1, id).t(2, title, strlen(title)).t(3, text, (size_t)len).i(4, len)
            .i(5, (int64_t)module).exec();
    }
    Handle add_complex(Handle module, Handle super, int32_t id, const char *type, int32_t date) override {
        Use u(*ins_complex_);
        u.i(1, id).t(2, type, type_len(type)).i(3, date).i(5, (int64_t)module);
        if (super != kNone) u.i(4, (int64_t)super);
        else sqlite3_bind_null(ins_complex_->get(), 4);
        u.exec();
        Handle h = last_rowid();
        if (super == kNone) Use(*set_design_root_).i(1, (int64_t)h).i(2, (int64_t)module).exec();
        return h;
    }
    Handle add_base(Handle module, Handle super, int32_t id, const char *type, int32_t date) override {
        Use(*ins_base_).i(1, id).t(2, type, type_len(type)).i(3, date).i(4, (int64_t)super)
            .i(5, (int64_t)module).exec();
        return last_rowid();
    }
    Handle add_composite(int32_t id, const char *type, int32_t date) override {
        Use(*ins_composite_).i(1, id).t(2, type, type_len(type)).i(3, date).exec();
        return last_rowid();
    }
    void add_document(Handle comp, int32_t id, const char *title, const char *text, int32_t len) override {
        Use(*ins_document_).i(1, id).t(2, title, strlen(title)).t(3, text, (size_t)len)
            .i(4, (int64_t)comp).exec();
    }
    Handle add_atomic(Handle comp, int32_t id, const char *type, int32_t date, int32_t x, int32_t y,
                      int32_t doc_id) override {
        Use(*ins_atomic_).i(1, id).t(2, type, type_len(type)).i(3, date).i(4, x).i(5, y).i(6, doc_id)
            .i(7, (int64_t)comp).exec();
        Handle h = last_rowid();
        // the first part added to a composite part is its rootPart; parts arrive grouped
        // by composite part, so the UPDATE runs once per composite part
        if (comp != last_rooted_) {
            Use(*set_root_).i(1, (int64_t)h).i(2, (int64_t)comp).exec();
            last_rooted_ = comp;
        }
        return h;
    }
    void add_connection(Handle from, Handle to, const char *type, int32_t length) override {
        Use(*ins_connection_).i(1, (int64_t)from).i(2, (int64_t)to).t(3, type, type_len(type))
            .i(4, length).exec();
    }
    void link_private(Handle base, Handle comp) override {
        Use(*ins_private_).i(1, (int64_t)base).i(2, (int64_t)comp).exec();
    }
    void link_shared(Handle base, Handle comp) override {
        Use(*ins_shared_).i(1, (int64_t)base).i(2, (int64_t)comp).exec();
    }
    Handle base_by_id(int32_t id) override {
        Use u(*base_by_id_);
        u.i(1, id);
        return u.step() ? (Handle)u.col(0) : kNone;
    }

    // -- transactions -------------------------------------------------------------------------
    void begin() override {
        if (sqlite3_get_autocommit(db_)) Use(*begin_).exec();
    }
    void commit() override {
        if (sqlite3_get_autocommit(db_)) return;
        if (group_ > 1) {
            // a group counts the transactions that wrote; one that only read ends at
            // once unless a group is open (it then reads inside that group)
            int64_t changes = sqlite3_total_changes64(db_);
            if (changes == grouped_changes_) {
                if (pending_ > 0) return;
            } else {
                grouped_changes_ = changes;
                if (++pending_ < group_) return;
            }
        }
        pending_ = 0;
        Use(*commit_).exec();
    }

    // -- traversals ---------------------------------------------------------------------------
    uint64_t t1(uint64_t *connections_examined) override {
        uint64_t parts = 0, examined = 0;
        each_private_visit([&](int64_t comp) {
            dfs(comp, &examined, [&](int64_t) { parts++; });
        });
        if (connections_examined) *connections_examined = examined;
        return parts;
    }

    uint64_t t2(char mode) override { return update_traversal(mode, *swap_xy_); }
    uint64_t t3(char mode) override { return update_traversal(mode, *toggle_date_); }

    uint64_t t4() override {
        uint64_t n = 0;
        each_private_visit([&](int64_t comp) {
            Use u(*doc_text_);
            u.i(1, comp);
            if (u.step()) n += count_char(u.text(0), u.bytes(0), 'I');
        });
        return n;
    }

    uint64_t t5(bool undo) override {
        Stmt &s = undo ? *t5_undo_ : *t5_do_;
        uint64_t n = 0;
        each_private_visit([&](int64_t comp) {
            Use(s).i(1, comp).exec();
            n += (uint64_t)sqlite3_changes(db_);
        });
        return n;
    }

    uint64_t t6() override {
        uint64_t n = 0;
        each_private_visit([&](int64_t comp) {
            int64_t root = root_of(comp);
            Use u(*part_get_);
            u.i(1, root);
            if (!u.step()) throw std::runtime_error("SQLite T6: missing root part");
            do_nothing_part(u.col32(0), u.col32(1), u.text(2));
            n++;
        });
        return n;
    }

    uint64_t t7_from_atomic(int32_t atomic_id) override {
        int64_t comp;
        {
            Use u(*atomic_part_of_);
            u.i(1, atomic_id);
            if (!u.step()) return 0;
            comp = u.col(0);
        }
        std::vector<int64_t> bases;
        {
            Use u(*users_priv_);
            u.i(1, comp);
            while (u.step()) bases.push_back(u.col(0));
        }
        uint64_t n = 0;
        std::unordered_set<int64_t> seen;
        for (int64_t b : bases) {
            int64_t up;
            {
                Use u(*base_get_);
                u.i(1, b);
                if (!u.step()) throw std::runtime_error("SQLite T7: missing base assembly");
                do_nothing_assm(u.col32(0), u.text(1), u.col32(2));
                up = u.col(3);
            }
            n++;
            while (seen.insert(up).second) {   // climb until an ancestor already counted
                Use u(*complex_get_);
                u.i(1, up);
                if (!u.step()) throw std::runtime_error("SQLite T7: missing complex assembly");
                do_nothing_assm(u.col32(0), u.text(1), u.col32(2));
                n++;
                if (u.null(3)) break;
                up = u.col(3);
            }
        }
        return n;
    }

    uint64_t t8() override {
        Use u(*manual_text_);
        u.i(1, first_module().first);
        if (!u.step()) return 0;
        return count_char(u.text(0), u.bytes(0), 'I');
    }

    uint64_t t9() override {
        Use u(*manual_text_);
        u.i(1, first_module().first);
        if (!u.step()) return 0;
        const char *s = u.text(0);
        int n = u.bytes(0);
        return n > 0 && s[0] == s[n - 1] ? 1 : 0;
    }

    // -- queries ------------------------------------------------------------------------------
    bool q1_lookup(int32_t atomic_id) override {
        Use u(*part_by_id_);
        u.i(1, atomic_id);
        if (!u.step()) return false;
        do_nothing_part(u.col32(0), u.col32(1), u.text(2));
        return true;
    }

    uint64_t date_range(int32_t lo, int32_t hi) override {
        Use u(*date_range_);
        u.i(1, lo).i(2, hi);
        uint64_t n = 0;
        while (u.step()) {
            do_nothing_part(u.col32(0), u.col32(1), u.text(2));
            n++;
        }
        return n;
    }

    uint64_t q4_title(const char *title) override {
        Use u(*q4_);
        u.t(1, title, strlen(title));
        uint64_t n = 0;
        while (u.step()) {
            do_nothing_assm(u.col32(0), u.text(1), u.col32(2));
            n++;
        }
        return n;
    }

    uint64_t q5(uint64_t *pairs) override {
        Use u(*q5_);
        uint64_t n = 0, p = 0;
        while (u.step()) {
            do_nothing_assm(u.col32(0), u.text(1), u.col32(2));
            n++;
            p += (uint64_t)u.col(3);
        }
        if (pairs) *pairs = p;
        return n;
    }

    uint64_t q6() override {
        std::vector<int64_t> roots;
        {
            Use u(*all_roots_);
            while (u.step())
                if (!u.null(0)) roots.push_back(u.col(0));
        }
        uint64_t n = 0;
        for (int64_t r : roots) {
            int32_t id, date;
            std::string type;
            {
                Use u(*complex_get_);
                u.i(1, r);
                if (!u.step()) throw std::runtime_error("SQLite Q6: missing design root");
                id = u.col32(0);
                type = u.text(1);
                date = u.col32(2);
            }
            int64_t m = q6_max(r, &n);
            if (m > date) {
                do_nothing_assm(id, type.c_str(), date);
                n++;
            }
        }
        return n;
    }

    uint64_t q7() override {
        Use u(*scan_parts_);
        uint64_t n = 0;
        while (u.step()) {
            do_nothing_part(u.col32(0), u.col32(1), u.text(2));
            n++;
        }
        return n;
    }

    uint64_t q8() override {
        Use u(*q8_);
        uint64_t n = 0;
        while (u.step()) {
            join_do_nothing(u.col32(0), u.col32(1));
            n++;
        }
        return n;
    }

    bool delete_composite(int32_t id) override {
        int64_t comp;
        {
            Use u(*comp_by_id_);
            u.i(1, id);
            if (!u.step()) return false;
            comp = u.col(0);
        }
        for (Stmt *s : {del_conn_from_, del_conn_to_, del_atomic_, del_document_, del_private_,
                        del_shared_, del_composite_})
            Use(*s).i(1, comp).exec();
        if ((Handle)comp == last_rooted_) last_rooted_ = kNone;
        return true;
    }

    // -- checks -------------------------------------------------------------------------------
    Counts counts() override {
        Use u(*counts_);
        if (!u.step()) fail(db_, "counts");
        Counts c;
        uint64_t *f[] = {&c.modules,         &c.manuals,      &c.complex_assemblies, &c.base_assemblies,
                         &c.composite_parts, &c.documents,    &c.atomic_parts,       &c.connections,
                         &c.private_links,   &c.shared_links};
        for (int i = 0; i < 10; i++) *f[i] = (uint64_t)u.col(i);
        return c;
    }

    std::string verify() override;

    uint64_t size_bytes() override {
        int64_t pages = scalar("PRAGMA page_count"), page = scalar("PRAGMA page_size");
        uint64_t in_pages = (uint64_t)(pages * page);
        if (!persistent_) return in_pages;
        uint64_t f = file_size(path_);
        // with journal_mode=OFF there is no -journal or -wal, but count them if present
        return (f > in_pages ? f : in_pages) + file_size(path_ + "-wal") + file_size(path_ + "-journal");
    }

private:
    // -- helpers ------------------------------------------------------------------------------
    void exec(const std::string &sql) {
        char *msg = nullptr;
        if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
            std::string why = msg ? msg : sqlite3_errmsg(db_);
            sqlite3_free(msg);
            throw std::runtime_error("SQLite exec: " + why);
        }
    }
    // a one-off query (checks only, never in a timed loop)
    int64_t scalar(const std::string &sql) {
        Stmt s;
        s.prepare(db_, sql.c_str());
        Use u(s);
        return u.step() ? u.col(0) : 0;
    }
    bool has_schema() {
        return scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'atomic_part'") > 0;
    }
    Handle last_rowid() { return (Handle)sqlite3_last_insert_rowid(db_); }

    Stmt *prep(const char *sql) {
        stmts_.emplace_back(new Stmt);
        stmts_.back()->prepare(db_, sql);
        return stmts_.back().get();
    }

    void prepare_all() {
        put_meta_ = prep("INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)");
        ins_module_ = prep("INSERT INTO module(id, type, build_date) VALUES (?1, ?2, ?3)");
        ins_manual_ = prep("INSERT INTO manual(id, title, text, text_len, module) VALUES (?1, ?2, ?3, ?4, ?5)");
        ins_complex_ = prep("INSERT INTO complex_assembly(id, type, build_date, super, module)"
                            " VALUES (?1, ?2, ?3, ?4, ?5)");
        set_design_root_ = prep("UPDATE module SET design_root = ?1 WHERE rowid = ?2");
        ins_base_ = prep("INSERT INTO base_assembly(id, type, build_date, super, module)"
                         " VALUES (?1, ?2, ?3, ?4, ?5)");
        ins_composite_ = prep("INSERT INTO composite_part(id, type, build_date) VALUES (?1, ?2, ?3)");
        ins_document_ = prep("INSERT INTO document(id, title, text, composite) VALUES (?1, ?2, ?3, ?4)");
        ins_atomic_ = prep("INSERT INTO atomic_part(id, type, build_date, x, y, doc_id, part_of)"
                           " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
        set_root_ = prep("UPDATE composite_part SET root_part = ?1 WHERE rowid = ?2 AND root_part IS NULL");
        ins_connection_ = prep("INSERT INTO connection(from_id, to_id, type, length) VALUES (?1, ?2, ?3, ?4)");
        // append to the bag: the next position of this base assembly (its primary key range)
        ins_private_ = prep("INSERT INTO private_link(base, pos, comp)"
                            " SELECT ?1, coalesce(max(pos), 0) + 1, ?2 FROM private_link WHERE base = ?1");
        ins_shared_ = prep("INSERT INTO shared_link(base, pos, comp)"
                           " SELECT ?1, coalesce(max(pos), 0) + 1, ?2 FROM shared_link WHERE base = ?1");
        base_by_id_ = prep("SELECT rowid FROM base_assembly WHERE id = ?1");
        begin_ = prep("BEGIN");
        commit_ = prep("COMMIT");

        first_module_ = prep("SELECT rowid, design_root FROM module ORDER BY id LIMIT 1");
        all_roots_ = prep("SELECT design_root FROM module ORDER BY id");
        sub_complex_ = prep("SELECT rowid FROM complex_assembly WHERE super = ?1 ORDER BY rowid");
        sub_base_ = prep("SELECT rowid FROM base_assembly WHERE super = ?1 ORDER BY rowid");
        priv_of_base_ = prep("SELECT comp FROM private_link WHERE base = ?1 ORDER BY pos");
        comp_root_ = prep("SELECT root_part FROM composite_part WHERE rowid = ?1");
        part_get_ = prep("SELECT x, y, type FROM atomic_part WHERE rowid = ?1");
        conn_from_ = prep("SELECT to_id FROM connection WHERE from_id = ?1");
        swap_xy_ = prep("UPDATE atomic_part SET x = y, y = x WHERE rowid = ?1");
        toggle_date_ = prep("UPDATE atomic_part SET build_date ="
                            " CASE build_date % 2 WHEN 0 THEN build_date - 1 ELSE build_date + 1 END"
                            " WHERE rowid = ?1");
        doc_text_ = prep("SELECT text FROM document WHERE composite = ?1");
        t5_do_ = prep("UPDATE document SET text = 'This is' || substr(text, 5)"
                      " WHERE composite = ?1 AND substr(text, 1, 4) = 'I am'");
        t5_undo_ = prep("UPDATE document SET text = 'I am' || substr(text, 8)"
                        " WHERE composite = ?1 AND substr(text, 1, 7) = 'This is'");
        manual_text_ = prep("SELECT text FROM manual WHERE module = ?1");
        atomic_part_of_ = prep("SELECT part_of FROM atomic_part WHERE id = ?1");
        users_priv_ = prep("SELECT DISTINCT base FROM private_link WHERE comp = ?1");
        base_get_ = prep("SELECT id, type, build_date, super FROM base_assembly WHERE rowid = ?1");
        complex_get_ = prep("SELECT id, type, build_date, super FROM complex_assembly WHERE rowid = ?1");
        part_by_id_ = prep("SELECT x, y, type FROM atomic_part WHERE id = ?1");
        date_range_ = prep("SELECT x, y, type FROM atomic_part WHERE build_date BETWEEN ?1 AND ?2");
        q4_ = prep("SELECT b.id, b.type, b.build_date FROM document d"
                   " JOIN private_link l ON l.comp = d.composite"
                   " JOIN base_assembly b ON b.rowid = l.base WHERE d.title = ?1");
        q5_ = prep("SELECT b.id, b.type, b.build_date, count(*) FROM base_assembly b"
                   " JOIN private_link l ON l.base = b.rowid"
                   " JOIN composite_part c ON c.rowid = l.comp"
                   " WHERE c.build_date > b.build_date GROUP BY b.rowid");
        q6_complex_kids_ = prep("SELECT rowid, id, type, build_date FROM complex_assembly WHERE super = ?1"
                                " ORDER BY rowid");
        q6_base_kids_ = prep("SELECT b.id, b.type, b.build_date,"
                             " (SELECT max(c.build_date) FROM private_link l"
                             "  JOIN composite_part c ON c.rowid = l.comp WHERE l.base = b.rowid)"
                             " FROM base_assembly b WHERE b.super = ?1 ORDER BY b.rowid");
        scan_parts_ = prep("SELECT x, y, type FROM atomic_part");
        q8_ = prep("SELECT a.id, d.id FROM atomic_part a JOIN document d ON d.id = a.doc_id");
        comp_by_id_ = prep("SELECT rowid FROM composite_part WHERE id = ?1");
        del_conn_from_ = prep("DELETE FROM connection WHERE from_id IN"
                              " (SELECT rowid FROM atomic_part WHERE part_of = ?1)");
        del_conn_to_ = prep("DELETE FROM connection WHERE to_id IN"
                            " (SELECT rowid FROM atomic_part WHERE part_of = ?1)");
        del_atomic_ = prep("DELETE FROM atomic_part WHERE part_of = ?1");
        del_document_ = prep("DELETE FROM document WHERE composite = ?1");
        del_private_ = prep("DELETE FROM private_link WHERE comp = ?1");
        del_shared_ = prep("DELETE FROM shared_link WHERE comp = ?1");
        del_composite_ = prep("DELETE FROM composite_part WHERE rowid = ?1");
        counts_ = prep(kCountSql);
    }

    // (module rowid, design root rowid) of the module the traversals run on: module 1
    std::pair<int64_t, int64_t> first_module() {
        Use u(*first_module_);
        if (!u.step() || u.null(1)) throw std::runtime_error("SQLite: no module with a design root");
        return {u.col(0), u.col(1)};
    }

    int64_t root_of(int64_t comp) {
        Use u(*comp_root_);
        u.i(1, comp);
        if (!u.step() || u.null(0)) throw std::runtime_error("SQLite: composite part without a root part");
        return u.col(0);
    }

    // The traversal skeleton (T1-T6): from module 1's design root through subAssemblies in
    // stored order; at each base assembly every element of componentsPriv in bag order,
    // duplicates included. Children are read into a vector before descending, so one
    // prepared statement serves every level.
    template <class F>
    void each_private_visit(F &&visit) {
        walk_complex(first_module().second, visit);
    }
    template <class F>
    void walk_complex(int64_t node, F &visit) {
        std::vector<int64_t> kids;
        {
            Use u(*sub_complex_);
            u.i(1, node);
            while (u.step()) kids.push_back(u.col(0));
        }
        for (int64_t k : kids) walk_complex(k, visit);
        kids.clear();
        {
            Use u(*sub_base_);
            u.i(1, node);
            while (u.step()) kids.push_back(u.col(0));
        }
        std::vector<int64_t> comps;
        for (int64_t b : kids) {
            comps.clear();
            {
                Use u(*priv_of_base_);
                u.i(1, b);
                while (u.step()) comps.push_back(u.col(0));
            }
            for (int64_t c : comps) visit(c);
        }
    }

    // T1's DFS inside one composite part, from rootPart along `to` connections, each part
    // DoNothing'd once (a part is marked when first seen, as oo7_hand.cc does);
    // `on_part(rowid)` runs for each part reached, root first.
    template <class F>
    void dfs(int64_t comp, uint64_t *examined, F &&on_part) {
        visited_.clear();
        stack_.clear();
        int64_t root = root_of(comp);
        visited_.insert((uint64_t)root);
        stack_.push_back(root);
        while (!stack_.empty()) {
            int64_t p = stack_.back();
            stack_.pop_back();
            {
                Use u(*part_get_);
                u.i(1, p);
                if (!u.step()) throw std::runtime_error("SQLite T1: connection to a missing atomic part");
                do_nothing_part(u.col32(0), u.col32(1), u.text(2));
            }
            on_part(p);
            Use u(*conn_from_);
            u.i(1, p);
            while (u.step()) {
                (*examined)++;
                int64_t to = u.col(0);
                if (visited_.insert((uint64_t)to)) stack_.push_back(to);
            }
        }
    }

    uint64_t update_traversal(char mode, Stmt &update) {
        if (mode != 'a' && mode != 'b' && mode != 'c') throw std::runtime_error("SQLite: bad update mode");
        int repeat = mode == 'c' ? kUpdateRepeatCnt : 1;
        uint64_t updates = 0, examined = 0;
        each_private_visit([&](int64_t comp) {
            bool first = true;
            dfs(comp, &examined, [&](int64_t part) {
                if (mode == 'a' && !first) return;
                first = false;
                for (int r = 0; r < repeat; r++) {
                    Use(update).i(1, part).exec();
                    updates++;
                }
            });
        });
        return updates;
    }

    // Q6: the largest composite-part buildDate under complex assembly `node`; counts (in
    // *n) every assembly below it whose largest part date is newer than its own
    int64_t q6_max(int64_t node, uint64_t *n) {
        struct Kid {
            int64_t rowid;
            int32_t id, date;
            std::string type;
        };
        std::vector<Kid> kids;
        {
            Use u(*q6_complex_kids_);
            u.i(1, node);
            while (u.step()) kids.push_back({u.col(0), u.col32(1), u.col32(3), u.text(2)});
        }
        int64_t best = INT64_MIN;
        for (const Kid &k : kids) {
            int64_t m = q6_max(k.rowid, n);
            if (m > k.date) {
                do_nothing_assm(k.id, k.type.c_str(), k.date);
                (*n)++;
            }
            if (m > best) best = m;
        }
        Use u(*q6_base_kids_);
        u.i(1, node);
        while (u.step()) {
            if (u.null(3)) continue;   // a base assembly with an empty private bag
            int64_t m = u.col(3);
            if (m > u.col(2)) {
                do_nothing_assm(u.col32(0), u.text(1), u.col32(2));
                (*n)++;
            }
            if (m > best) best = m;
        }
        return best;
    }

    bool persistent_;
    bool durable_;              // SQLITE-WAL: journal_mode=WAL, synchronous=FULL
    int group_;                 // SQLITE-WAL100: a COMMIT per this many transactions that wrote
    int pending_ = 0;           // transactions that wrote in the open group
    int64_t grouped_changes_ = -1;   // sqlite3_total_changes64 when the last one was counted
    std::string path_;
    sqlite3 *db_ = nullptr;
    std::vector<std::unique_ptr<Stmt>> stmts_;
    Handle last_rooted_ = kNone;
    VisitedSet visited_;
    std::vector<int64_t> stack_;

    Stmt *put_meta_, *ins_module_, *ins_manual_, *ins_complex_, *set_design_root_, *ins_base_,
        *ins_composite_, *ins_document_, *ins_atomic_, *set_root_, *ins_connection_, *ins_private_,
        *ins_shared_, *base_by_id_, *begin_, *commit_;
    Stmt *first_module_, *all_roots_, *sub_complex_, *sub_base_, *priv_of_base_, *comp_root_, *part_get_,
        *conn_from_, *swap_xy_, *toggle_date_, *doc_text_, *t5_do_, *t5_undo_, *manual_text_,
        *atomic_part_of_, *users_priv_, *base_get_, *complex_get_, *part_by_id_, *date_range_, *q4_, *q5_,
        *q6_complex_kids_, *q6_base_kids_, *scan_parts_, *q8_, *comp_by_id_, *del_conn_from_,
        *del_conn_to_, *del_atomic_, *del_document_, *del_private_, *del_shared_, *del_composite_,
        *counts_;
};

// verify(): spec section 5's structure, in SQL. In this mapping each reference is one
// column, so an inverse is the same rows read from the other side: the checks are that
// every reference names an existing row, that the 1:1 pairs are 1:1, that the shapes
// (fanout, parts per composite, the ring edge, the assembly tree) are right, that every
// index holds exactly its table's rows, and SQLite's own integrity check (which compares
// every index entry with its row).
std::string SqliteDb::verify() {
    std::string bad;
    auto check = [&](const std::string &what, const std::string &sql) {
        int64_t k = scalar(sql);
        if (k != 0) bad += what + ": " + std::to_string(k) + "\n";
    };
    auto meta = [&](const char *key) {
        return scalar(std::string("SELECT coalesce((SELECT value FROM meta WHERE key = '") + key + "'), -1)");
    };
    // references name existing rows (and with it, every inverse agrees)
    check("connections from a missing atomic part",
          "SELECT count(*) FROM connection c WHERE NOT EXISTS"
          " (SELECT 1 FROM atomic_part a WHERE a.rowid = c.from_id)");
    check("connections to a missing atomic part",
          "SELECT count(*) FROM connection c WHERE NOT EXISTS"
          " (SELECT 1 FROM atomic_part a WHERE a.rowid = c.to_id)");
    check("connections between composite parts",
          "SELECT count(*) FROM connection c JOIN atomic_part a ON a.rowid = c.from_id"
          " JOIN atomic_part b ON b.rowid = c.to_id WHERE a.part_of <> b.part_of");
    check("atomic parts of a missing composite part",
          "SELECT count(*) FROM atomic_part a WHERE NOT EXISTS"
          " (SELECT 1 FROM composite_part c WHERE c.rowid = a.part_of)");
    check("atomic parts whose docId names no document",
          "SELECT count(*) FROM atomic_part a WHERE NOT EXISTS (SELECT 1 FROM document d WHERE d.id = a.doc_id)");
    check("atomic parts with x, y or type out of range",
          "SELECT count(*) FROM atomic_part WHERE x NOT BETWEEN 0 AND 99999 OR y NOT BETWEEN 0 AND 99999"
          " OR type NOT GLOB 'type00[0-9]'");
    check("connections with length or type out of range",
          "SELECT count(*) FROM connection WHERE length NOT BETWEEN 0 AND 99999 OR type NOT GLOB 'type00[0-9]'");
    check("composite parts without exactly one document",
          "SELECT count(*) FROM composite_part c WHERE (SELECT count(*) FROM document d WHERE d.composite = c.rowid) <> 1");
    check("documents of a missing composite part",
          "SELECT count(*) FROM document d WHERE NOT EXISTS (SELECT 1 FROM composite_part c WHERE c.rowid = d.composite)");
    check("documents whose id or title does not match the composite part",
          "SELECT count(*) FROM document d JOIN composite_part c ON c.rowid = d.composite"
          " WHERE d.id <> c.id OR d.title <> printf('Composite Part %08d', c.id)");
    check("composite parts whose rootPart is not their lowest-id part",
          "SELECT count(*) FROM composite_part c WHERE c.root_part IS NULL OR"
          " (SELECT part_of FROM atomic_part WHERE rowid = c.root_part) IS NOT c.rowid OR"
          " (SELECT id FROM atomic_part WHERE rowid = c.root_part) IS NOT"
          " (SELECT min(id) FROM atomic_part WHERE part_of = c.rowid)");
    check("modules without exactly one manual",
          "SELECT count(*) FROM module m WHERE (SELECT count(*) FROM manual n WHERE n.module = m.rowid) <> 1");
    check("manuals of a missing module, or with textLen wrong",
          "SELECT count(*) FROM manual n WHERE n.text_len <> length(n.text) OR"
          " NOT EXISTS (SELECT 1 FROM module m WHERE m.rowid = n.module)");
    check("private links naming a missing row",
          "SELECT count(*) FROM private_link l WHERE NOT EXISTS (SELECT 1 FROM base_assembly b WHERE b.rowid = l.base)"
          " OR NOT EXISTS (SELECT 1 FROM composite_part c WHERE c.rowid = l.comp)");
    check("shared links naming a missing row",
          "SELECT count(*) FROM shared_link l WHERE NOT EXISTS (SELECT 1 FROM base_assembly b WHERE b.rowid = l.base)"
          " OR NOT EXISTS (SELECT 1 FROM composite_part c WHERE c.rowid = l.comp)");
    check("modules whose designRoot is not their one root complex assembly",
          "SELECT count(*) FROM module m WHERE m.design_root IS NULL OR"
          " (SELECT count(*) FROM complex_assembly c WHERE c.module = m.rowid AND c.super IS NULL) <> 1 OR"
          " (SELECT super IS NULL AND module = m.rowid FROM complex_assembly WHERE rowid = m.design_root) IS NOT 1");
    check("complex assemblies under a missing or other-module super",
          "SELECT count(*) FROM complex_assembly c WHERE c.super IS NOT NULL AND NOT EXISTS"
          " (SELECT 1 FROM complex_assembly s WHERE s.rowid = c.super AND s.module = c.module)");
    check("base assemblies under a missing or other-module super",
          "SELECT count(*) FROM base_assembly b WHERE NOT EXISTS"
          " (SELECT 1 FROM complex_assembly s WHERE s.rowid = b.super AND s.module = b.module)");

    int64_t fanout = meta("conn_per_atomic"), per_comp = meta("atomic_per_comp"), per_assm = meta("assm_per_assm"),
            levels = meta("assm_levels"), comp_per_assm = meta("comp_per_assm");
    if (fanout >= 0) {
        check("atomic parts without exactly NumConnPerAtomic outgoing connections",
              "SELECT count(*) FROM atomic_part a WHERE (SELECT count(*) FROM connection c WHERE c.from_id = a.rowid) <> " +
                  std::to_string(fanout));
        check("composite parts without exactly NumAtomicPerComp parts",
              "SELECT count(*) FROM composite_part c WHERE (SELECT count(*) FROM atomic_part a WHERE a.part_of = c.rowid) <> " +
                  std::to_string(per_comp));
        // part i's first connection goes to part (i + 1) mod N (ids are consecutive per part)
        check("atomic parts whose first connection is not the ring edge",
              "SELECT count(*) FROM atomic_part a JOIN composite_part c ON c.rowid = a.part_of"
              " JOIN atomic_part r ON r.rowid = c.root_part WHERE"
              " (SELECT t.id FROM connection k JOIN atomic_part t ON t.rowid = k.to_id WHERE k.from_id = a.rowid"
              "  ORDER BY k.rowid LIMIT 1) IS NOT r.id + (a.id - r.id + 1) % " + std::to_string(per_comp));
        check("complex assemblies without exactly NumAssmPerAssm subassemblies of one kind",
              "SELECT count(*) FROM complex_assembly c WHERE"
              " (SELECT count(*) FROM complex_assembly k WHERE k.super = c.rowid) *"
              " (SELECT count(*) FROM base_assembly k WHERE k.super = c.rowid) <> 0 OR"
              " (SELECT count(*) FROM complex_assembly k WHERE k.super = c.rowid) +"
              " (SELECT count(*) FROM base_assembly k WHERE k.super = c.rowid) <> " + std::to_string(per_assm));
        // levels: complex assemblies at 1..H-1 reached from the roots, base assemblies at H
        std::string tree = "WITH RECURSIVE t(r, lvl) AS (SELECT design_root, 1 FROM module"
                           " UNION ALL SELECT c.rowid, t.lvl + 1 FROM complex_assembly c JOIN t ON c.super = t.r"
                           " WHERE t.lvl < 64) ";
        check("complex assemblies not reached from a design root above level NumAssmLevels",
              tree + "SELECT (SELECT count(*) FROM complex_assembly) - (SELECT count(*) FROM t WHERE lvl < " +
                  std::to_string(levels) + ")");
        check("base assemblies not at level NumAssmLevels",
              tree + "SELECT (SELECT count(*) FROM base_assembly) - (SELECT count(*) FROM base_assembly b"
                     " JOIN t ON b.super = t.r WHERE t.lvl = " + std::to_string(levels - 1) + ")");
        check("base assemblies without NumCompPerAssm shared parts",
              "SELECT count(*) FROM base_assembly b WHERE (SELECT count(*) FROM shared_link l WHERE l.base = b.rowid) <> " +
                  std::to_string(comp_per_assm));
    }
    // every index holds exactly its table's rows (read through the index) ...
    const char *indexes[][3] = {
        {"atomic_part", "atomic_part_id", "id"},          {"atomic_part", "atomic_part_build_date", "build_date"},
        {"atomic_part", "atomic_part_part_of", "part_of"}, {"connection", "connection_from", "from_id"},
        {"connection", "connection_to", "to_id"},          {"document", "document_title", "title"},
        {"document", "document_id", "id"},                 {"document", "document_composite", "composite"},
        {"composite_part", "composite_part_id", "id"},     {"base_assembly", "base_assembly_id", "id"},
        {"base_assembly", "base_assembly_super", "super"}, {"complex_assembly", "complex_assembly_super", "super"},
        {"private_link", "private_link_comp", "comp"},     {"shared_link", "shared_link_comp", "comp"},
        {"module", "module_id", "id"},                     {"manual", "manual_module", "module"}};
    for (auto &ix : indexes) {
        std::string t = ix[0], i = ix[1], c = ix[2];
        check("index " + i + " entries minus " + t + " rows",
              "SELECT (SELECT count(*) FROM " + t + " INDEXED BY " + i + " WHERE " + c + " IS NOT NULL OR " + c +
                  " IS NULL) - (SELECT count(*) FROM " + t + ")");
    }
    // ... and every entry matches its row (SQLite's own check of every index)
    {
        Stmt s;
        s.prepare(db_, "PRAGMA integrity_check");
        Use u(s);
        while (u.step()) {
            std::string line = u.text(0);
            if (line != "ok") bad += "integrity_check: " + line + "\n";
        }
    }
    return bad;
}

// Registered transient first: a lookup by name alone (oo7_conform --system SQLITE) takes
// the last match, the persistent one, which also exercises the file and a reopen.
const Register kTransient(System{"SQLITE", "transient", 91,
                                 [](const std::string &dir) -> std::unique_ptr<Db> {
                                     return std::make_unique<SqliteDb>(dir, false);
                                 },
                                 {}});

const Register kPersistent(System{"SQLITE", "persistent", 90,
                                  [](const std::string &dir) -> std::unique_ptr<Db> {
                                      return std::make_unique<SqliteDb>(dir, true);
                                  },
                                  {"oo7.sqlite"}});

// The durable peer of the journalled variants (WAL, synchronous=FULL).
const Register kDurable(System{"SQLITE-WAL", "persistent", 92,
                               [](const std::string &dir) -> std::unique_ptr<Db> {
                                   return std::make_unique<SqliteDb>(dir, true, true);
                               },
                               {"oo7.sqlite"}});   // its -wal is folded back and removed at close

// The same, committing every 100 transactions that wrote: the durable comparison only.
const Register kDurable100(System{"SQLITE-WAL100", "persistent", 95,
                                  [](const std::string &dir) -> std::unique_ptr<Db> {
                                      return std::make_unique<SqliteDb>(dir, true, true, 100);
                                  },
                                  {"oo7.sqlite"}, true});
}  // namespace
}  // namespace oo7
