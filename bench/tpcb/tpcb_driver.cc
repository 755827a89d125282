// tpcb_driver.cc -- the TPC-B driver of one p2gen-generated data manager, through the
// generated public API alone (<prefix>.h). Compiled once per variant:
//
//   c++ -DP2_VARIANT=tpcb_avl_persistent -DP2_HEADER='"tpcb_avl_persistent.h"'
//       -DP2_NAME='"AVL"' -DP2_MEM='"persistent"' -DP2_PERSISTENT=1
//       -DP2_UPPER=TPCB_AVL_PERSISTENT -DTPCB_AVL_PERSISTENT_INLINE -c tpcb_driver.cc
//
// (-D<PREFIX>_INLINE: the API compiled into this file, as the README tells users to.)
//
// Each object registers its system (P2_NAME, P2_MEM) in the benchmark binary. With
// -DP2_UPPER=<PREFIX> (the prefix in capitals, as the generated macros spell it) and a
// header that defines <PREFIX>_JOURNALLED (a spec over `journal[persistent]`), every TPC-B
// transaction is one transaction of the data manager: <prefix>_begin before it,
// <prefix>_commit after it (the spec's journal(group = N) decides how often the journal is
// synced), the load is committed before the timed region, and the system registers as
// durable (run by --tpcb_durable=1, never by default). The spec
// must declare records branch {id, balance}, teller {id, branch_id, balance}, account
// {id, branch_id, balance} and history {account_id, teller_id, branch_id, delta, time}
// (more fields are fine) in containers branches, tellers, accounts (each with a key on id,
// so that find_id exists) and histories, as type_equations/tpcb/*.p2 do.
#include <cstring>
#include <string>

#include "tpcb.h"

#ifndef P2_RANK
#define P2_RANK 100
#endif

#include "../p2_variant.h"

// P2_JOURNAL: 1 if the generated header defines <PREFIX>_JOURNALLED (expands to 0 in #if
// when it does not)
#ifdef P2_UPPER
#if P2_CAT(P2_UPPER, _JOURNALLED)
#define P2_JOURNAL 1
#endif
#endif
#ifndef P2_JOURNAL
#define P2_JOURNAL 0
#endif

namespace {   // internal linkage: every variant's object defines its own Engine

struct Engine {
    static constexpr bool kData = true;
    static constexpr bool kPersistent = P2_PERSISTENT != 0;
    P2(db) *db = nullptr;
    bool failed = false;
    std::string err;
    P2(history) h;
    std::string dir;

    Engine() { std::memset(&h, 0, sizeof h); }

    bool bad(int rc, const char *what, std::string &e) {
        e = std::string(what) + ": " + (db ? P2(errmsg)(db) : "") + " (code " + std::to_string(rc) + ")";
        return false;
    }

    bool open(const std::string &d, const tpcb::Run &, bool, std::string &e) {
        dir = d;
        return p2_open(&db, dir.c_str(), [&](int rc) { bad(rc, "open", e); }) == P2_OK;
    }

    bool load(const tpcb::Run &r, std::string &e) {
        int rc;
        // Size every container for what is coming (a hint every generated container takes):
        // no regrowth while loading, no space left behind by doubling.
        if ((rc = P2(branches_reserve)(db, r.sf)) != P2_OK ||
            (rc = P2(tellers_reserve)(db, r.tellers())) != P2_OK ||
            (rc = P2(accounts_reserve)(db, r.naccounts())) != P2_OK ||
            (rc = P2(histories_reserve)(db, r.txns)) != P2_OK)
            return bad(rc, "reserve", e);
        P2(branch) b;
        std::memset(&b, 0, sizeof b);
        for (uint32_t i = 0; i < r.sf; i++) {
            b.id = i;
            if ((rc = P2(branches_insert)(db, &b, nullptr)) != P2_OK) return bad(rc, "insert branch", e);
        }
        P2(teller) t;
        std::memset(&t, 0, sizeof t);
        for (uint32_t i = 0; i < r.tellers(); i++) {
            t.id = i;
            t.branch_id = i / 10;
            if ((rc = P2(tellers_insert)(db, &t, nullptr)) != P2_OK) return bad(rc, "insert teller", e);
        }
        P2(account) a;
        std::memset(&a, 0, sizeof a);
        const uint64_t na = r.naccounts();
        for (uint64_t i = 0; i < na; i++) {
            a.id = (uint32_t)i;
            a.branch_id = (uint32_t)(i / r.accounts);
            if ((rc = P2(accounts_insert)(db, &a, nullptr)) != P2_OK) return bad(rc, "insert account", e);
        }
#if P2_JOURNAL
        // The loaded database is one durable transaction, outside the timed region. With
        // group commit its pages would be written into the file at the end of the first
        // group, inside the timed region, and nothing in the API flushes an incomplete
        // group (commit is a no-op when nothing is pending): close, which checkpoints,
        // and reopen, so that every run starts from a checkpointed file and an empty
        // journal.
        if ((rc = P2(commit)(db)) != P2_OK) return bad(rc, "commit (load)", e);
#else
        // In a durable comparison the same variant without a journal starts the same way
        // (its pages mapped afresh), so that "x no journal" is the journal's cost alone.
        if (!(kPersistent && r.reopen_loaded)) return true;
#endif
        rc = P2(close)(db);
        db = nullptr;
        if (rc != P2_OK) return bad(rc, "close (load)", e);
        if ((rc = P2(open)(&db, dir.c_str())) != P2_OK) return bad(rc, "reopen (load)", e);
        return true;
    }

    inline void fail(int rc, const char *what) {
        if (!failed) {
            failed = true;
            bad(rc, what, err);
#if P2_JOURNAL
            P2(abort)(db);   // leave nothing of the failed transaction behind
#endif
        }
    }

    // One TPC-B transaction: three keyed retrievals with in-place updates, one append.
    inline int64_t txn(const tpcb::Txn &x) {
        P2(ref) ref;
        int rc;
#if P2_JOURNAL
        if ((rc = P2(begin)(db)) != P2_OK) { fail(rc, "begin"); return 0; }
#endif
        // lookup_id: the element (or NULL) and its reference in one step
        const P2(account) *a = P2(accounts_lookup_id)(db, x.aid, &ref);
        if (!a) { fail(P2(errcode)(db), "find account"); return 0; }
        const int64_t balance = a->balance + x.delta;
        if ((rc = P2(accounts_set_balance)(db, ref, balance)) != P2_OK) { fail(rc, "update account"); return 0; }
        const P2(teller) *t = P2(tellers_lookup_id)(db, x.tid, &ref);
        if (!t) { fail(P2(errcode)(db), "find teller"); return 0; }
        if ((rc = P2(tellers_set_balance)(db, ref, t->balance + x.delta)) != P2_OK) { fail(rc, "update teller"); return 0; }
        const P2(branch) *b = P2(branches_lookup_id)(db, x.bid, &ref);
        if (!b) { fail(P2(errcode)(db), "find branch"); return 0; }
        if ((rc = P2(branches_set_balance)(db, ref, b->balance + x.delta)) != P2_OK) { fail(rc, "update branch"); return 0; }
        h.account_id = x.aid;
        h.teller_id = x.tid;
        h.branch_id = x.bid;
        h.delta = x.delta;
        h.time = x.time;
        if ((rc = P2(histories_insert)(db, &h, nullptr)) != P2_OK) { fail(rc, "append history"); return 0; }
#if P2_JOURNAL
        if ((rc = P2(commit)(db)) != P2_OK) { fail(rc, "commit"); return 0; }
#endif
        return balance;
    }

    // Every transaction was committed by txn(); a commit here is a no-op unless something
    // is pending. (With journal(group = N) the commits of an incomplete last group are
    // synced at close, outside the timed region: runs of a multiple of N transactions
    // have none.)
    bool finish(std::string &e) {
#if P2_JOURNAL
        int rc = P2(commit)(db);
        if (rc != P2_OK) return bad(rc, "commit (finish)", e);
#else
        (void)e;
#endif
        return true;
    }

    // One relation walked through its all-cursor (open, next, get: its functions), `add`
    // given every record; false (e set) if the walk failed.
    template <class Cursor, class Open, class Next, class Get, class Add>
    bool walk(Open open, Next next, Get get, const char *what, std::string &e, Add add) {
        Cursor c;
        int rc;
        if ((rc = open(db, &c)) != P2_OK) return bad(rc, what, e);
        while ((rc = next(&c)) == P2_OK) add(*get(&c));
        if (rc != P2_END) return bad(rc, what, e);
        return true;
    }

    // Walk every relation through its all-cursor.
    bool sums(tpcb::Sums &s, std::string &e) {
        if (!walk<P2(branches_all_cursor)>(P2(branches_all_open), P2(branches_all_next),
                                           P2(branches_all_get), "cursor branches", e,
                                           [&](const P2(branch) &r) { s.branch += r.balance; s.nbranch++; }) ||
            !walk<P2(tellers_all_cursor)>(P2(tellers_all_open), P2(tellers_all_next),
                                          P2(tellers_all_get), "cursor tellers", e,
                                          [&](const P2(teller) &r) { s.teller += r.balance; s.nteller++; }) ||
            !walk<P2(accounts_all_cursor)>(P2(accounts_all_open), P2(accounts_all_next),
                                           P2(accounts_all_get), "cursor accounts", e,
                                           [&](const P2(account) &r) { s.account += r.balance; s.naccount++; }) ||
            !walk<P2(histories_all_cursor)>(P2(histories_all_open), P2(histories_all_next),
                                            P2(histories_all_get), "cursor histories", e,
                                            [&](const P2(history) &r) { s.delta += r.delta; s.nhistory++; }))
            return false;
        // the containers' counts must agree with what the cursors saw
        if (P2(branches_count)(db) != s.nbranch || P2(tellers_count)(db) != s.nteller ||
            P2(accounts_count)(db) != s.naccount || P2(histories_count)(db) != s.nhistory) {
            e = "a container's count disagrees with its all-cursor";
            return false;
        }
        return true;
    }

    void close() {
        if (db) {
            int rc = P2(close)(db);
            if (rc != P2_OK && !failed) {
                failed = true;
                err = "close failed (code " + std::to_string(rc) + ")";
            }
        }
        db = nullptr;
    }

    ~Engine() { close(); }
};

tpcb::Registrar registrar({P2_NAME, P2_MEM, "p2", P2_RANK, &tpcb::run_bench<Engine>, P2_JOURNAL != 0});

}  // namespace
