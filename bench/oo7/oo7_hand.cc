// oo7_hand.cc -- OO7 written by hand the way a C++ programmer would without a data manager:
// one heap struct per object, raw pointers for references, std::vector for sets and bags,
// vectors indexed by dense id for the id indexes, a std::multimap for the ordered
// buildDate index and a hash map for document titles. It is transient (nothing survives
// the process), so it is the floor the generated data managers are measured against: the
// cost of the operations themselves, without persistence, logging or a query layer.
//
// Traversals (T1-T6) and T8/T9 run on module 1 (spec section 3, "[unspec -> run on
// module 1]"); Q5, Q6 and the scans cover the whole database.
#include "oo7.h"

#include <malloc.h>
#if defined(__SANITIZE_ADDRESS__)
// from <sanitizer/allocator_interface.h>, which not every toolchain installs
extern "C" size_t __sanitizer_get_current_allocated_bytes(void);
#endif

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace oo7 {
namespace {

struct AtomicPart;
struct CompositePart;
struct ComplexAssembly;
struct BaseAssembly;
struct Module;

using DateIndex = std::multimap<int32_t, AtomicPart *>;

struct Connection {
    char type[kTypeSize];
    int32_t length;
    AtomicPart *from, *to;
};

struct AtomicPart {
    int32_t id;
    char type[kTypeSize];
    int32_t date;
    int32_t x, y, doc_id;
    std::vector<Connection *> to;     // outgoing; owned here
    std::vector<Connection *> from;   // incoming
    CompositePart *part_of;
    DateIndex::iterator date_entry;   // this part's entry in the buildDate index (for T3)
};

struct Document {
    char title[kTitleSize];
    int32_t id;
    std::string text;
    CompositePart *part;
};

struct CompositePart {
    int32_t id;
    char type[kTypeSize];
    int32_t date;
    Document *documentation = nullptr;
    std::vector<AtomicPart *> parts;
    AtomicPart *root = nullptr;
    std::vector<BaseAssembly *> used_in_priv, used_in_shar;   // bags
};

struct Assembly {
    int32_t id;
    char type[kTypeSize];
    int32_t date;
    ComplexAssembly *super;
    Module *module;
    bool is_base;
};

struct ComplexAssembly : Assembly {
    std::vector<Assembly *> subs;
};

struct BaseAssembly : Assembly {
    std::vector<CompositePart *> priv, shar;   // bags
};

struct Manual {
    char title[kTitleSize];
    int32_t id;
    std::string text;
    int32_t text_len;
    Module *mod;
};

struct Module {
    int32_t id;
    char type[kTypeSize];
    int32_t date;
    Manual *man = nullptr;
    std::vector<Assembly *> assemblies;   // owned here
    ComplexAssembly *design_root = nullptr;
};

template <class T>
Handle handle_of(T *p) { return static_cast<Handle>(reinterpret_cast<uintptr_t>(p)); }
template <class T>
T *object_of(Handle h) { return reinterpret_cast<T *>(static_cast<uintptr_t>(h)); }

template <class T>
void put_by_id(std::vector<T *> &index, int32_t id, T *obj, const char *what) {
    if (id <= 0) throw std::runtime_error(std::string("HAND: bad ") + what + " id");
    if (static_cast<size_t>(id) >= index.size()) index.resize(static_cast<size_t>(id) + 1, nullptr);
    if (index[id] != nullptr)
        throw std::runtime_error(std::string("HAND: duplicate ") + what + " id " + std::to_string(id));
    index[id] = obj;
}

template <class T>
T *get_by_id(const std::vector<T *> &index, int32_t id) {
    return id > 0 && static_cast<size_t>(id) < index.size() ? index[id] : nullptr;
}

// after a deletion, the id vectors shrink back past trailing holes, so SM1 then SM2
// leaves them as they were
template <class T>
void trim(std::vector<T *> &index) {
    while (index.size() > 1 && index.back() == nullptr) index.pop_back();
}

template <class T>
void erase_all(std::vector<T *> &bag, T *value) {
    bag.erase(std::remove(bag.begin(), bag.end(), value), bag.end());
}

void copy_fixed(char *dst, size_t size, const char *src) {
    std::memset(dst, 0, size);
    std::strncpy(dst, src, size - 1);
}

// a design object (module, assembly, composite or atomic part) with its common
// attributes set: id, type, build date
template <class T>
T *design(T *o, int32_t id, const char *type, int32_t date) {
    o->id = id;
    copy_fixed(o->type, kTypeSize, type);
    o->date = date;
    return o;
}

// a manual or document with its id, title and text set
template <class T>
T *texted(T *o, int32_t id, const char *title, const char *text, int32_t len) {
    copy_fixed(o->title, kTitleSize, title);
    o->id = id;
    o->text.assign(text, static_cast<size_t>(len));
    return o;
}

class HandDb final : public Db {
public:
    HandDb() : heap0_(heap_in_use()) {}
    ~HandDb() override {
        for (CompositePart *c : comp_by_id_)
            if (c) free_composite(c);
        for (Module *m : module_by_id_) {
            if (!m) continue;
            for (Assembly *a : m->assemblies) {
                if (a->is_base) delete static_cast<BaseAssembly *>(a);
                else delete static_cast<ComplexAssembly *>(a);
            }
            delete m->man;
            delete m;
        }
    }

    std::string name() const override { return "HAND"; }

    // -- build ---------------------------------------------------------------------------
    void begin_build(const Params &p) override {
        params_ = p;
        atomic_by_id_.reserve(static_cast<size_t>(p.total_atomic()) + 1);
        comp_by_id_.reserve(static_cast<size_t>(p.total_comp()) + 1);
        doc_by_id_.reserve(static_cast<size_t>(p.total_comp()) + 1);
        base_by_id_.reserve(static_cast<size_t>(p.total_base()) + 1);
        doc_by_title_.reserve(static_cast<size_t>(p.total_comp()));
    }

    Handle add_module(int32_t id, const char *type, int32_t date) override {
        Module *m = design(new Module, id, type, date);
        put_by_id(module_by_id_, id, m, "module");
        return handle_of(m);
    }

    void add_manual(Handle module, int32_t id, const char *title, const char *text,
                    int32_t len) override {
        Module *m = object_of<Module>(module);
        Manual *man = texted(new Manual, id, title, text, len);
        man->text_len = len;
        man->mod = m;
        delete m->man;
        m->man = man;
    }

    Handle add_complex(Handle module, Handle super, int32_t id, const char *type,
                       int32_t date) override {
        ComplexAssembly *a = new ComplexAssembly;
        init_assembly(a, module, super, id, type, date, false);
        return handle_of(a);
    }

    Handle add_base(Handle module, Handle super, int32_t id, const char *type,
                    int32_t date) override {
        BaseAssembly *a = new BaseAssembly;
        init_assembly(a, module, super, id, type, date, true);
        put_by_id(base_by_id_, id, a, "base assembly");
        return handle_of(a);
    }

    Handle add_composite(int32_t id, const char *type, int32_t date) override {
        CompositePart *c = design(new CompositePart, id, type, date);
        c->parts.reserve(static_cast<size_t>(params_.atomic_per_comp));
        put_by_id(comp_by_id_, id, c, "composite part");
        return handle_of(c);
    }

    void add_document(Handle comp, int32_t id, const char *title, const char *text,
                      int32_t len) override {
        CompositePart *c = object_of<CompositePart>(comp);
        Document *d = texted(new Document, id, title, text, len);
        d->part = c;
        if (!doc_by_title_.emplace(std::string_view(d->title), d).second) {
            delete d;
            throw std::runtime_error(std::string("HAND: duplicate document title ") + title);
        }
        put_by_id(doc_by_id_, id, d, "document");
        c->documentation = d;
    }

    Handle add_atomic(Handle comp, int32_t id, const char *type, int32_t date, int32_t x,
                      int32_t y, int32_t doc_id) override {
        CompositePart *c = object_of<CompositePart>(comp);
        AtomicPart *ap = design(new AtomicPart, id, type, date);
        ap->x = x;
        ap->y = y;
        ap->doc_id = doc_id;
        ap->to.reserve(static_cast<size_t>(params_.conn_per_atomic));
        ap->part_of = c;
        put_by_id(atomic_by_id_, id, ap, "atomic part");
        ap->date_entry = date_index_.emplace(date, ap);
        c->parts.push_back(ap);
        if (c->root == nullptr) c->root = ap;
        return handle_of(ap);
    }

    void add_connection(Handle from, Handle to, const char *type, int32_t length) override {
        Connection *k = new Connection;
        copy_fixed(k->type, kTypeSize, type);
        k->length = length;
        k->from = object_of<AtomicPart>(from);
        k->to = object_of<AtomicPart>(to);
        k->from->to.push_back(k);
        k->to->from.push_back(k);
    }

    void link_private(Handle base, Handle comp) override {
        BaseAssembly *b = object_of<BaseAssembly>(base);
        CompositePart *c = object_of<CompositePart>(comp);
        b->priv.push_back(c);
        c->used_in_priv.push_back(b);
    }

    void link_shared(Handle base, Handle comp) override {
        BaseAssembly *b = object_of<BaseAssembly>(base);
        CompositePart *c = object_of<CompositePart>(comp);
        b->shar.push_back(c);
        c->used_in_shar.push_back(b);
    }

    Handle base_by_id(int32_t id) override {
        BaseAssembly *b = get_by_id(base_by_id_, id);
        return b ? handle_of(b) : kNone;
    }

    // -- traversals ----------------------------------------------------------------------
    uint64_t t1(uint64_t *connections_examined) override {
        uint64_t parts = 0, examined = 0;
        each_private_visit([&](CompositePart *c) {
            parts += dfs(c, examined, [](AtomicPart *ap, bool) {
                do_nothing_part(ap->x, ap->y, ap->type);
            });
        });
        if (connections_examined) *connections_examined = examined;
        return parts;
    }

    // T2 and T3: T1's traversal, updating (mode a) each root part or (b, c) every part
    // (update_repeat(mode) times); the updates made
    template <class Update>
    uint64_t update_traversal(char mode, Update update) {
        int repeat = update_repeat(mode);
        uint64_t updates = 0, examined = 0;
        each_private_visit([&](CompositePart *c) {
            dfs(c, examined, [&](AtomicPart *ap, bool is_root) {
                do_nothing_part(ap->x, ap->y, ap->type);
                if (mode == 'a' && !is_root) return;
                for (int r = 0; r < repeat; r++) {
                    update(ap);
                    updates++;
                }
            });
        });
        return updates;
    }

    uint64_t t2(char mode) override {
        return update_traversal(mode, [](AtomicPart *ap) { std::swap(ap->x, ap->y); });
    }

    uint64_t t3(char mode) override {
        return update_traversal(mode, [this](AtomicPart *ap) {
            set_date(ap, ap->date % 2 != 0 ? ap->date + 1 : ap->date - 1);
        });
    }

    uint64_t t4() override {
        uint64_t found = 0;
        each_private_visit([&](CompositePart *c) {
            const std::string &text = c->documentation->text;
            found += static_cast<uint64_t>(std::count(text.begin(), text.end(), 'I'));
        });
        return found;
    }

    uint64_t t5(bool undo) override {
        static const std::string_view kPlain = "I am", kEdited = "This is";
        const std::string_view &from = undo ? kEdited : kPlain;
        const std::string_view &to = undo ? kPlain : kEdited;
        uint64_t replaced = 0;
        each_private_visit([&](CompositePart *c) {
            std::string &text = c->documentation->text;
            if (text.compare(0, from.size(), from) == 0) {
                text.replace(0, from.size(), to);
                replaced++;
            }
        });
        return replaced;
    }

    uint64_t t6() override {
        uint64_t roots = 0;
        each_private_visit([&](CompositePart *c) {
            do_nothing_part(c->root->x, c->root->y, c->root->type);
            roots++;
        });
        return roots;
    }

    uint64_t t7_from_atomic(int32_t atomic_id) override {
        AtomicPart *ap = get_by_id(atomic_by_id_, atomic_id);
        if (!ap) return 0;
        uint64_t found = 0;
        visited_.clear();
        for (BaseAssembly *b : ap->part_of->used_in_priv) {
            if (!visited_.insert(handle_of(b))) continue;
            do_nothing_assm(b->id, b->type, b->date);
            found++;
            // an ancestor already counted means all of its ancestors are counted too
            for (ComplexAssembly *s = b->super; s && visited_.insert(handle_of(s)); s = s->super) {
                do_nothing_assm(s->id, s->type, s->date);
                found++;
            }
        }
        return found;
    }

    uint64_t t8() override {
        const std::string &text = manual1().text;
        return static_cast<uint64_t>(std::count(text.begin(), text.end(), 'I'));
    }

    uint64_t t9() override {
        const std::string &text = manual1().text;
        return !text.empty() && text.front() == text.back() ? 1 : 0;
    }

    // -- queries -------------------------------------------------------------------------
    bool q1_lookup(int32_t atomic_id) override {
        AtomicPart *ap = get_by_id(atomic_by_id_, atomic_id);
        if (!ap) return false;
        do_nothing_part(ap->x, ap->y, ap->type);
        return true;
    }

    uint64_t date_range(int32_t lo, int32_t hi) override {
        uint64_t found = 0;
        for (auto it = date_index_.lower_bound(lo); it != date_index_.end() && it->first <= hi; ++it) {
            do_nothing_part(it->second->x, it->second->y, it->second->type);
            found++;
        }
        return found;
    }

    uint64_t q4_title(const char *title) override {
        auto it = doc_by_title_.find(std::string_view(title));
        if (it == doc_by_title_.end()) return 0;
        uint64_t found = 0;
        for (BaseAssembly *b : it->second->part->used_in_priv) {
            do_nothing_assm(b->id, b->type, b->date);
            found++;
        }
        return found;
    }

    uint64_t q5(uint64_t *pairs) override {
        uint64_t bases = 0, newer_pairs = 0;
        for (BaseAssembly *b : base_by_id_) {
            if (!b) continue;
            bool qualifies = false;
            for (CompositePart *c : b->priv) {
                if (c->date > b->date) {
                    newer_pairs++;
                    qualifies = true;
                }
            }
            if (qualifies) {
                do_nothing_assm(b->id, b->type, b->date);
                bases++;
            }
        }
        if (pairs) *pairs = newer_pairs;
        return bases;
    }

    uint64_t q6() override {
        uint64_t found = 0;
        for (Module *m : module_by_id_)
            if (m && m->design_root) newest_below(m->design_root, found);
        return found;
    }

    uint64_t q7() override {
        uint64_t found = 0;
        for (AtomicPart *ap : atomic_by_id_) {
            if (!ap) continue;
            do_nothing_part(ap->x, ap->y, ap->type);
            found++;
        }
        return found;
    }

    uint64_t q8() override {
        uint64_t pairs = 0;
        for (AtomicPart *ap : atomic_by_id_) {
            if (!ap) continue;
            Document *d = get_by_id(doc_by_id_, ap->doc_id);
            if (!d) continue;
            join_do_nothing(ap->id, d->id);
            pairs++;
        }
        return pairs;
    }

    bool delete_composite(int32_t id) override {
        CompositePart *c = get_by_id(comp_by_id_, id);
        if (!c) return false;
        unlink_bags(c);
        for (AtomicPart *ap : c->parts) {
            date_index_.erase(ap->date_entry);
            atomic_by_id_[ap->id] = nullptr;
        }
        doc_by_title_.erase(std::string_view(c->documentation->title));
        doc_by_id_[c->documentation->id] = nullptr;
        comp_by_id_[id] = nullptr;
        free_composite(c);
        trim(atomic_by_id_);
        trim(doc_by_id_);
        trim(comp_by_id_);
        return true;
    }

    // -- checks --------------------------------------------------------------------------
    Counts counts() override {
        Counts n;
        for (Module *m : module_by_id_) {
            if (!m) continue;
            n.modules++;
            if (m->man) n.manuals++;
            for (Assembly *a : m->assemblies) {
                if (!a->is_base) {
                    n.complex_assemblies++;
                    continue;
                }
                BaseAssembly *b = static_cast<BaseAssembly *>(a);
                n.base_assemblies++;
                n.private_links += b->priv.size();
                n.shared_links += b->shar.size();
            }
        }
        for (CompositePart *c : comp_by_id_) {
            if (!c) continue;
            n.composite_parts++;
            if (c->documentation) n.documents++;
            for (AtomicPart *ap : c->parts) {
                n.atomic_parts++;
                n.connections += ap->to.size();
            }
        }
        return n;
    }

    std::string verify() override;

    // the process's heap bytes in use: everything here lives on the heap (under
    // AddressSanitizer, whose allocator replaces malloc's, ask the sanitizer instead)
    uint64_t size_bytes() override {
        uint64_t now = heap_in_use();
        return now > heap0_ ? now - heap0_ : 0;   // what this database added since its open
    }

    // heap bytes in use: malloc's arenas and the blocks it maps (large ones); under
    // AddressSanitizer, whose allocator replaces malloc's, the sanitizer's count
    static uint64_t heap_in_use() {
#if defined(__SANITIZE_ADDRESS__)
        return static_cast<uint64_t>(__sanitizer_get_current_allocated_bytes());
#else
        struct mallinfo2 mi = mallinfo2();
        return static_cast<uint64_t>(mi.uordblks + mi.hblkhd);
#endif
    }

private:
    uint64_t heap0_ = 0;
    void init_assembly(Assembly *a, Handle module, Handle super, int32_t id, const char *type,
                       int32_t date, bool is_base) {
        Module *m = object_of<Module>(module);
        design(a, id, type, date);
        a->module = m;
        a->is_base = is_base;
        m->assemblies.push_back(a);
        if (super == kNone) {
            a->super = nullptr;
            if (is_base) throw std::runtime_error("HAND: a module's design root must be complex");
            m->design_root = static_cast<ComplexAssembly *>(a);
        } else {
            a->super = object_of<ComplexAssembly>(super);
            a->super->subs.push_back(a);
        }
    }

    static int update_repeat(char mode) {
        switch (mode) {
        case 'a':
        case 'b': return 1;
        case 'c': return kUpdateRepeatCnt;
        default: throw std::invalid_argument(std::string("HAND: update mode ") + mode);
        }
    }

    Manual &manual1() {
        Module *m = get_by_id(module_by_id_, 1);
        if (!m || !m->man) throw std::runtime_error("HAND: module 1 has no manual");
        return *m->man;
    }

    // the traversal skeleton: module 1's design root, subassemblies in stored order, every
    // element of each base assembly's componentsPriv bag, duplicates included
    template <class OnComposite>
    void each_private_visit(OnComposite &&on_composite) {
        Module *m = get_by_id(module_by_id_, 1);
        if (m && m->design_root) visit_assembly(m->design_root, on_composite);
    }

    template <class OnComposite>
    void visit_assembly(Assembly *a, OnComposite &on_composite) {
        if (a->is_base) {
            for (CompositePart *c : static_cast<BaseAssembly *>(a)->priv) on_composite(c);
        } else {
            for (Assembly *s : static_cast<ComplexAssembly *>(a)->subs) visit_assembly(s, on_composite);
        }
    }

    // DFS from c's root part along outgoing connections, each part once per call; the
    // root is reached first. Returns the parts reached.
    template <class OnPart>
    uint64_t dfs(CompositePart *c, uint64_t &examined, OnPart &&on_part) {
        visited_.clear();
        stack_.clear();
        visited_.insert(handle_of(c->root));
        stack_.push_back(c->root);
        uint64_t reached = 0;
        while (!stack_.empty()) {
            AtomicPart *ap = stack_.back();
            stack_.pop_back();
            on_part(ap, reached == 0);
            reached++;
            for (Connection *k : ap->to) {
                examined++;
                if (visited_.insert(handle_of(k->to))) stack_.push_back(k->to);
            }
        }
        return reached;
    }

    void set_date(AtomicPart *ap, int32_t date) {
        auto node = date_index_.extract(ap->date_entry);   // no reallocation
        node.key() = date;
        ap->date = date;
        ap->date_entry = date_index_.insert(std::move(node));
    }

    // Q6: the newest private composite part under `a`; counts `a` when that is newer
    // than `a` itself
    int32_t newest_below(Assembly *a, uint64_t &found) {
        int32_t newest = INT32_MIN;
        if (a->is_base) {
            for (CompositePart *c : static_cast<BaseAssembly *>(a)->priv) newest = std::max(newest, c->date);
        } else {
            for (Assembly *s : static_cast<ComplexAssembly *>(a)->subs)
                newest = std::max(newest, newest_below(s, found));
        }
        if (newest > a->date) {
            do_nothing_assm(a->id, a->type, a->date);
            found++;
        }
        return newest;
    }

    static void unlink_bags(CompositePart *c) {
        std::sort(c->used_in_priv.begin(), c->used_in_priv.end());
        c->used_in_priv.erase(std::unique(c->used_in_priv.begin(), c->used_in_priv.end()),
                              c->used_in_priv.end());
        for (BaseAssembly *b : c->used_in_priv) erase_all(b->priv, c);
        std::sort(c->used_in_shar.begin(), c->used_in_shar.end());
        c->used_in_shar.erase(std::unique(c->used_in_shar.begin(), c->used_in_shar.end()),
                              c->used_in_shar.end());
        for (BaseAssembly *b : c->used_in_shar) erase_all(b->shar, c);
        c->used_in_priv.clear();
        c->used_in_shar.clear();
    }

    // frees c, its document, atomic parts and every connection touching them (the
    // generator never connects two composite parts, but a connection that did is
    // unlinked from the other side too)
    static void free_composite(CompositePart *c) {
        // incoming from elsewhere first, while every connection inside c still exists
        for (AtomicPart *ap : c->parts) {
            for (Connection *k : ap->from) {
                if (k->from->part_of == c) continue;   // freed with its source below
                erase_all(k->from->to, k);
                delete k;
            }
        }
        for (AtomicPart *ap : c->parts) {
            for (Connection *k : ap->to) {
                if (k->to->part_of != c) erase_all(k->to->from, k);
                delete k;
            }
        }
        for (AtomicPart *ap : c->parts) delete ap;
        delete c->documentation;
        delete c;
    }

    Params params_;
    std::vector<Module *> module_by_id_{nullptr};
    std::vector<AtomicPart *> atomic_by_id_{nullptr};      // id index and the extent (Q7)
    std::vector<CompositePart *> comp_by_id_{nullptr};
    std::vector<Document *> doc_by_id_{nullptr};
    std::vector<BaseAssembly *> base_by_id_{nullptr};
    DateIndex date_index_;
    std::unordered_map<std::string_view, Document *> doc_by_title_;   // keys point into titles
    VisitedSet visited_;
    std::vector<AtomicPart *> stack_;
};

// ---------------------------------------------------------------------------------------
// verify: every structure check of spec section 5 that holds at all times (the build
// sizes of bags change with SM1, dates with T3, so those are checked by value ranges)

class Problems {
public:
    template <class... T>
    void add(const T &...parts) {
        if (count_++ >= kShown) return;
        std::ostringstream os;
        (os << ... << parts);
        text_ += (text_.empty() ? "" : "; ") + os.str();
    }
    std::string str() const {
        if (count_ <= kShown) return text_;
        return text_ + "; ... " + std::to_string(count_ - kShown) + " more";
    }

private:
    static constexpr int kShown = 8;
    int count_ = 0;
    std::string text_;
};

std::string HandDb::verify() {
    Problems bad;
    const Params &p = params_;

    // modules, manuals and assembly trees
    std::unordered_set<Assembly *> in_trees;
    size_t bases_in_trees = 0;
    for (size_t i = 1; i < module_by_id_.size(); i++) {
        Module *m = module_by_id_[i];
        if (!m) continue;
        if (m->id != static_cast<int32_t>(i)) bad.add("module index ", i, " holds id ", m->id);
        if (!m->man || m->man->mod != m || m->man->id != m->id)
            bad.add("module ", m->id, ": manual/mod inverse");
        else if (static_cast<int32_t>(m->man->text.size()) != m->man->text_len)
            bad.add("manual ", m->id, ": textLen ", m->man->text_len, " != ", m->man->text.size());
        if (!m->design_root || m->design_root->super || m->design_root->is_base) {
            bad.add("module ", m->id, ": no complex design root");
            continue;
        }
        std::vector<std::pair<Assembly *, int>> todo{{m->design_root, 1}};
        size_t tree_size = 0;
        while (!todo.empty()) {
            auto [a, level] = todo.back();
            todo.pop_back();
            tree_size++;
            if (!in_trees.insert(a).second) bad.add("assembly ", a->id, " reached twice");
            if (a->module != m) bad.add("assembly ", a->id, ": module link");
            if (a->date < kMinAssmDate || a->date > kMaxAssmDate) bad.add("assembly ", a->id, ": date");
            if (a->is_base != (level == p.assm_levels))
                bad.add("assembly ", a->id, " at level ", level, ": wrong kind");
            if (a->is_base) {
                bases_in_trees++;
                if (get_by_id(base_by_id_, a->id) != a) bad.add("base ", a->id, ": not in id index");
                continue;
            }
            ComplexAssembly *ca = static_cast<ComplexAssembly *>(a);
            if (static_cast<int>(ca->subs.size()) != p.assm_per_assm)
                bad.add("complex ", a->id, ": ", ca->subs.size(), " subassemblies");
            for (Assembly *s : ca->subs) {
                if (s->super != ca) bad.add("assembly ", s->id, ": superAssembly inverse");
                todo.push_back({s, level + 1});
            }
        }
        if (tree_size != m->assemblies.size())
            bad.add("module ", m->id, ": ", m->assemblies.size(), " assemblies, tree has ", tree_size);
        for (Assembly *a : m->assemblies)
            if (!in_trees.count(a)) bad.add("module ", m->id, ": assembly ", a->id, " not in tree");
    }
    size_t indexed_bases = 0;
    for (size_t i = 1; i < base_by_id_.size(); i++) {
        if (!base_by_id_[i]) continue;
        indexed_bases++;
        if (base_by_id_[i]->id != static_cast<int32_t>(i)) bad.add("base index ", i, ": wrong id");
    }
    if (indexed_bases != bases_in_trees)
        bad.add("base index holds ", indexed_bases, ", trees ", bases_in_trees);

    // bags: componentsPriv/usedInPriv and componentsShar/usedInShar agree with multiplicity
    std::map<std::pair<BaseAssembly *, CompositePart *>, long> priv, shar;
    for (BaseAssembly *b : base_by_id_) {
        if (!b) continue;
        for (CompositePart *c : b->priv) {
            if (!c || get_by_id(comp_by_id_, c->id) != c) {
                bad.add("base ", b->id, ": private link to a missing composite part");
                continue;
            }
            priv[{b, c}]++;
            bool original = c->id <= p.total_comp();   // SM1's parts may go anywhere
            if (original && (c->id - 1) / p.comp_per_module + 1 != b->module->id)
                bad.add("private link base ", b->id, " -> composite ", c->id, " leaves the module");
        }
        for (CompositePart *c : b->shar) shar[{b, c}]++;
    }

    // composite parts, documents, atomic parts, connections
    std::unordered_set<Connection *> outgoing;
    size_t atomic_in_parts = 0, docs = 0;
    for (size_t i = 1; i < comp_by_id_.size(); i++) {
        CompositePart *c = comp_by_id_[i];
        if (!c) continue;
        if (c->id != static_cast<int32_t>(i)) bad.add("composite index ", i, ": wrong id");
        bool young = c->id % kYoungCompFrac == 0;
        if (young ? c->date < kMinYoungCompDate || c->date > kMaxYoungCompDate
                  : c->date < kMinOldCompDate || c->date > kMaxOldCompDate)
            bad.add("composite ", c->id, ": date ", c->date);
        for (BaseAssembly *b : c->used_in_priv) priv[{b, c}]--;
        for (BaseAssembly *b : c->used_in_shar) shar[{b, c}]--;
        Document *d = c->documentation;
        if (!d || d->part != c || d->id != c->id) {
            bad.add("composite ", c->id, ": documentation/part inverse");
        } else {
            docs++;
            if (get_by_id(doc_by_id_, d->id) != d) bad.add("document ", d->id, ": not in id index");
            auto t = doc_by_title_.find(std::string_view(d->title));
            if (t == doc_by_title_.end() || t->second != d) bad.add("document ", d->id, ": not in title index");
            if (document_title(c->id) != d->title) bad.add("document ", d->id, ": title ", d->title);
        }
        size_t n = c->parts.size();
        if (static_cast<int>(n) != p.atomic_per_comp) bad.add("composite ", c->id, ": ", n, " parts");
        if (n == 0 || c->root != c->parts[0]) {
            bad.add("composite ", c->id, ": rootPart is not its first part");
            continue;
        }
        for (size_t j = 0; j < n; j++) {
            AtomicPart *ap = c->parts[j];
            atomic_in_parts++;
            if (ap->part_of != c) bad.add("atomic ", ap->id, ": partOf inverse");
            if (get_by_id(atomic_by_id_, ap->id) != ap) bad.add("atomic ", ap->id, ": not in id index");
            if (ap->date_entry->second != ap || ap->date_entry->first != ap->date)
                bad.add("atomic ", ap->id, ": buildDate index entry");
            // T3 moves a date by one at most, away from the generated range
            if (ap->date < kMinAtomicDate - 1 || ap->date > kMaxAtomicDate + 1)
                bad.add("atomic ", ap->id, ": date ", ap->date);
            if (ap->x < 0 || ap->x >= kXYRange || ap->y < 0 || ap->y >= kXYRange)
                bad.add("atomic ", ap->id, ": x/y out of range");
            if (ap->doc_id < 1 || ap->doc_id > p.total_comp()) bad.add("atomic ", ap->id, ": docId");
            if (static_cast<int>(ap->to.size()) != p.conn_per_atomic)
                bad.add("atomic ", ap->id, ": ", ap->to.size(), " outgoing connections");
            if (ap->to.empty() || ap->to[0]->to != c->parts[(j + 1) % n])
                bad.add("atomic ", ap->id, ": first connection is not the ring");
            for (Connection *k : ap->to) {
                if (k->from != ap) bad.add("atomic ", ap->id, ": connection.from inverse");
                if (!k->to || k->to->part_of != c) bad.add("atomic ", ap->id, ": connection leaves its part");
                if (k->length < 0 || k->length >= kXYRange) bad.add("connection length ", k->length);
                if (!outgoing.insert(k).second) bad.add("atomic ", ap->id, ": connection listed twice");
            }
        }
        uint64_t examined = 0;
        uint64_t reached = dfs(c, examined, [](AtomicPart *, bool) {});
        if (reached != n) bad.add("composite ", c->id, ": DFS reaches ", reached, " of ", n);
    }
    for (auto &[link, balance] : priv)
        if (balance) bad.add("private bag base ", link.first->id, " / composite ", link.second->id, " off by ", balance);
    for (auto &[link, balance] : shar)
        if (balance) bad.add("shared bag base ", link.first->id, " / composite ", link.second->id, " off by ", balance);

    // every incoming connection is exactly one part's outgoing connection, and back
    for (CompositePart *c : comp_by_id_) {
        if (!c) continue;
        for (AtomicPart *ap : c->parts) {
            for (Connection *k : ap->from) {
                if (k->to != ap) bad.add("atomic ", ap->id, ": connection.to inverse");
                if (outgoing.erase(k) != 1) bad.add("atomic ", ap->id, ": incoming connection not outgoing once");
            }
        }
    }
    if (!outgoing.empty()) bad.add(outgoing.size(), " connections missing from their target's `from`");

    // indexes hold exactly the objects
    size_t indexed_atomic = 0;
    for (size_t i = 1; i < atomic_by_id_.size(); i++) {
        if (!atomic_by_id_[i]) continue;
        indexed_atomic++;
        if (atomic_by_id_[i]->id != static_cast<int32_t>(i)) bad.add("atomic index ", i, ": wrong id");
    }
    if (indexed_atomic != atomic_in_parts)
        bad.add("atomic id index holds ", indexed_atomic, ", composite parts ", atomic_in_parts);
    if (date_index_.size() != atomic_in_parts)
        bad.add("buildDate index holds ", date_index_.size(), ", composite parts ", atomic_in_parts);
    size_t indexed_docs = 0;
    for (size_t i = 1; i < doc_by_id_.size(); i++) {
        Document *d = doc_by_id_[i];
        if (!d) continue;
        indexed_docs++;
        if (d->id != static_cast<int32_t>(i) || d->part->documentation != d)
            bad.add("document index ", i, ": wrong entry");
    }
    if (indexed_docs != docs) bad.add("document id index holds ", indexed_docs, ", parts ", docs);
    if (doc_by_title_.size() != docs) bad.add("title index holds ", doc_by_title_.size(), ", parts ", docs);
    return bad.str();
}

const Register registered(System{"HAND", "transient", 10,
                                 [](const std::string &) -> std::unique_ptr<Db> {
                                     return std::make_unique<HandDb>();
                                 },
                                 {}});

}  // namespace
}  // namespace oo7
