// tpcb_peers.cc -- the C++ containers a programmer would reach for instead of a generated
// data manager, on the same random stream and through the same benchmark loop
// (tpcb.h) as every other system:
//   STD-UMAP transient       std::unordered_map<uint32_t, Account> (and Branch, Teller) on
//                            the heap; libstdc++ hashes integers by identity, the same
//                            structure as HASH1 (chained buckets, identity hash)
//   BOOST-HASHED transient   Boost.MultiIndex, one hashed_unique index on id, heap
//   BOOST-HASHED persistent  the same in a Boost.Interprocess managed_mapped_file
//   BOOST-ORDERED transient  Boost.MultiIndex, one ordered_unique index on id (a red-black
//                            tree), heap
//   BOOST-ORDERED persistent the same in a managed_mapped_file
// Each relation is one container keyed by id, sized for what is coming (reserve, as the
// driver does for the generated ones); the history is a vector reserved to N. A
// transaction finds each record by key (a missing one is an error, as in the generated
// driver) and updates the balance in place: for Boost through modify(), its documented
// way of changing an element (it re-checks the index, as the generated setters re-check
// their element); std::unordered_map's mapped value is mutable. Like the generated
// managers, no atomicity or durability; the mapped file is not synced.
#include <boost/interprocess/allocators/allocator.hpp>
#include <boost/interprocess/containers/vector.hpp>
#include <boost/interprocess/managed_mapped_file.hpp>
#include <boost/multi_index/hashed_index.hpp>
#include <boost/multi_index/member.hpp>
#include <boost/multi_index/ordered_index.hpp>
#include <boost/multi_index_container.hpp>

#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "tpcb.h"

namespace {

using tpcb::Account;
using tpcb::Branch;
using tpcb::History;
using tpcb::Teller;

// ---------------------------------------------------------------------------------------
// STD-UMAP: std::unordered_map keyed by id, heap
struct StdMap {
    static constexpr bool kData = true;
    static constexpr bool kPersistent = false;
    bool failed = false;
    std::string err;
    std::unordered_map<uint32_t, Branch> br;
    std::unordered_map<uint32_t, Teller> te;
    std::unordered_map<uint32_t, Account> ac;
    std::vector<History> hi;

    bool open(const std::string &, const tpcb::Run &, bool, std::string &) { return true; }

    bool load(const tpcb::Run &r, std::string &) {
        br.reserve(r.sf);
        te.reserve(r.tellers());
        ac.reserve(r.naccounts());
        hi.reserve(r.txns);
        for (uint32_t i = 0; i < r.sf; i++) br.emplace(i, Branch{i, 0, {}});
        for (uint32_t i = 0; i < r.tellers(); i++) te.emplace(i, Teller{i, i / 10, 0, {}});
        for (uint64_t i = 0, n = r.naccounts(); i < n; i++)
            ac.emplace((uint32_t)i, Account{(uint32_t)i, (uint32_t)(i / r.accounts), 0, {}});
        return true;
    }

    template <class Map>
    inline typename Map::mapped_type *get(Map &m, uint32_t id, const char *what) {
        auto it = m.find(id);
        if (it == m.end()) {
            if (!failed) failed = true, err = std::string(what) + " " + std::to_string(id) + " not found";
            return nullptr;
        }
        return &it->second;
    }

    inline int64_t txn(const tpcb::Txn &t) {
        Account *a = get(ac, t.aid, "account");
        Teller *te_ = get(te, t.tid, "teller");
        Branch *b = get(br, t.bid, "branch");
        if (!a || !te_ || !b) return 0;
        a->balance += t.delta;
        te_->balance += t.delta;
        b->balance += t.delta;
        hi.push_back(History{t.aid, t.tid, t.bid, t.delta, t.time, {}});
        return a->balance;
    }

    bool finish(std::string &) { return true; }

    bool sums(tpcb::Sums &s, std::string &) {
        for (auto &x : br) s.branch += x.second.balance, s.nbranch++;
        for (auto &x : te) s.teller += x.second.balance, s.nteller++;
        for (auto &x : ac) s.account += x.second.balance, s.naccount++;
        for (auto &h : hi) s.delta += h.delta, s.nhistory++;
        return true;
    }

    void close() {
        std::unordered_map<uint32_t, Branch>().swap(br);
        std::unordered_map<uint32_t, Teller>().swap(te);
        std::unordered_map<uint32_t, Account>().swap(ac);
        std::vector<History>().swap(hi);
    }
};

// ---------------------------------------------------------------------------------------
// BOOST-HASHED / BOOST-ORDERED: Boost.MultiIndex with one unique index on id, on the heap
// (std::allocator) or in a Boost.Interprocess managed_mapped_file (its allocator and
// offset pointers; the containers are named objects of the segment, found again on reopen).
namespace bip = boost::interprocess;
namespace bmi = boost::multi_index;

template <bool Hashed, bool Persistent>
struct BoostMI {
    static constexpr bool kData = true;
    static constexpr bool kPersistent = Persistent;
    using Seg = bip::managed_mapped_file;
    template <class T>
    using Alloc = std::conditional_t<Persistent, bip::allocator<T, Seg::segment_manager>, std::allocator<T>>;
    template <class Rec>
    using Key = bmi::member<Rec, uint32_t, &Rec::id>;
    template <class Rec>
    using Index = std::conditional_t<Hashed, bmi::hashed_unique<Key<Rec>>, bmi::ordered_unique<Key<Rec>>>;
    template <class Rec>
    using MI = bmi::multi_index_container<Rec, bmi::indexed_by<Index<Rec>>, Alloc<Rec>>;
    using HVec = std::conditional_t<Persistent, bip::vector<History, Alloc<History>>, std::vector<History>>;

    bool failed = false;
    std::string err;
    std::unique_ptr<Seg> seg;
    MI<Branch> *br = nullptr;
    MI<Teller> *te = nullptr;
    MI<Account> *ac = nullptr;
    HVec *hi = nullptr;

    template <class T>
    T *make(const char *name) {
        if constexpr (Persistent)
            return seg->construct<T>(name)(typename T::allocator_type(seg->get_segment_manager()));
        else
            return new T();
    }
    template <class T>
    T *find(const char *name) {
        return seg->find<T>(name).first;
    }

    bool open(const std::string &dir, const tpcb::Run &r, bool fresh, std::string &e) {
        try {
            if constexpr (Persistent) {
                std::string path = dir + "/boost.mmf";
                if (fresh) {
                    // room for every node (record + index links + the segment's own
                    // bookkeeping), the bucket arrays and the history; the file is sparse
                    uint64_t recs = (uint64_t)r.sf * 11 + r.naccounts();
                    uint64_t bytes = recs * 256 + (r.txns + 1) * 64 + (4u << 20);
                    seg.reset(new Seg(bip::create_only, path.c_str(), bytes + bytes / 4));
                    br = make<MI<Branch>>("branches");
                    te = make<MI<Teller>>("tellers");
                    ac = make<MI<Account>>("accounts");
                    hi = make<HVec>("histories");
                } else {
                    seg.reset(new Seg(bip::open_only, path.c_str()));
                    br = find<MI<Branch>>("branches");
                    te = find<MI<Teller>>("tellers");
                    ac = find<MI<Account>>("accounts");
                    hi = find<HVec>("histories");
                    if (!br || !te || !ac || !hi) {
                        e = "a container is missing from " + path;
                        return false;
                    }
                }
            } else {
                (void)dir, (void)fresh, (void)r;
                br = make<MI<Branch>>("branches");
                te = make<MI<Teller>>("tellers");
                ac = make<MI<Account>>("accounts");
                hi = make<HVec>("histories");
            }
        } catch (const std::exception &x) {
            e = std::string("open: ") + x.what();
            return false;
        }
        return true;
    }

    bool load(const tpcb::Run &r, std::string &e) {
        try {
            if constexpr (Hashed) {
                br->reserve(r.sf);
                te->reserve(r.tellers());
                ac->reserve(r.naccounts());
            }
            hi->reserve(r.txns);
            for (uint32_t i = 0; i < r.sf; i++) br->insert(Branch{i, 0, {}});
            for (uint32_t i = 0; i < r.tellers(); i++) te->insert(Teller{i, i / 10, 0, {}});
            for (uint64_t i = 0, n = r.naccounts(); i < n; i++)
                ac->insert(Account{(uint32_t)i, (uint32_t)(i / r.accounts), 0, {}});
        } catch (const std::exception &x) {
            e = std::string("load: ") + x.what();
            return false;
        }
        return true;
    }

    // find by key, change the balance through modify(); the new balance
    template <class C>
    inline int64_t add(C &c, uint32_t id, int32_t delta, const char *what) {
        auto it = c.find(id);
        if (it == c.end()) {
            if (!failed) failed = true, err = std::string(what) + " " + std::to_string(id) + " not found";
            return 0;
        }
        int64_t bal = 0;
        // (modify erases an element whose key it broke: never here, balance is no key)
        if (!c.modify(it, [delta, &bal](typename C::value_type &x) { bal = x.balance += delta; })) {
            if (!failed) failed = true, err = std::string(what) + " " + std::to_string(id) + " erased by modify";
        }
        return bal;
    }

    inline int64_t txn(const tpcb::Txn &t) {
        int64_t bal = add(*ac, t.aid, t.delta, "account");
        add(*te, t.tid, t.delta, "teller");
        add(*br, t.bid, t.delta, "branch");
        try {
            hi->push_back(History{t.aid, t.tid, t.bid, t.delta, t.time, {}});
        } catch (const std::exception &x) {
            if (!failed) failed = true, err = std::string("append history: ") + x.what();
        }
        return bal;
    }

    bool finish(std::string &) { return true; }

    bool sums(tpcb::Sums &s, std::string &) {
        for (auto &x : *br) s.branch += x.balance, s.nbranch++;
        for (auto &x : *te) s.teller += x.balance, s.nteller++;
        for (auto &x : *ac) s.account += x.balance, s.naccount++;
        for (auto &h : *hi) s.delta += h.delta, s.nhistory++;
        return true;
    }

    void close() {
        if constexpr (Persistent) {
            seg.reset();   // unmaps; the containers live on in the file
        } else {
            delete br;
            delete te;
            delete ac;
            delete hi;
        }
        br = nullptr;
        te = nullptr;
        ac = nullptr;
        hi = nullptr;
    }
    ~BoostMI() { close(); }
};

using tpcb::Registrar;
using tpcb::run_bench;
Registrar p0({"STD-UMAP", "transient", "reference", 3, &run_bench<StdMap>, false});
Registrar p1({"BOOST-HASHED", "persistent", "reference", 4, &run_bench<BoostMI<true, true>>, false});
Registrar p2({"BOOST-HASHED", "transient", "reference", 4, &run_bench<BoostMI<true, false>>, false});
Registrar p3({"BOOST-ORDERED", "persistent", "reference", 5, &run_bench<BoostMI<false, true>>, false});
Registrar p4({"BOOST-ORDERED", "transient", "reference", 5, &run_bench<BoostMI<false, false>>, false});

}  // namespace
