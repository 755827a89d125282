// labflow_main.cc -- the LabFlow-1 replay driver: reads a benchmark log (bench/labflow/gen.py,
// format version 1), replays it on one storage system (lf::Store, labflow.h), writes the
// query output (byte for byte what bench/labflow/model.py writes) and measures the three
// intervals under Google Benchmark.
//
// The log is untrusted input: it is read through one fixed line buffer of gen.MAX_LINE
// bytes, every token is checked (numbers, oids against the counts so far, kind and
// attribute names against the dictionary, string lengths against their types) and the
// interval structure is checked as model.py checks it. A malformed log stops the replay
// with "<log>: line <n>: <what>" and exit status 1; it never reaches a Store unchecked.
// [choice] The driver is stricter than model.py on tokens the generator never writes: an
// empty token, a non-printable byte, a '+' sign, a float not written as [-]digits[.digits],
// a material name over 24 characters or a kind/attribute name over kDictNameMax, and extra
// tokens after a request's arguments are errors here. Besides each request's own calls, the
// driver checks through the Store what the log cannot be trusted with: MAT looks its name
// up first (mat_by_name: names are unique), STATE reads the material (mat_get: its line's
// states, and whether it is in a terminal one); every system pays the same.
//
// Benchmarks: labflow/<system>/<0.5X|1X|2X>, one per interval in log order, Iterations(1),
// manual time. Each body continues the replay where the previous one stopped: the build
// part before the interval is replayed untimed, the time is MARK k 4 BASELINE to MARK k 7
// MEASURE (the interval's requests and its two reports, reading and parsing the log and
// writing the query output included, as the paper's replayer did). Counters: user_s, sys_s,
// majflt, minflt (getrusage over that span), backlog_commit_s (Store::commit at marker 2),
// interval_commit_s (at marker 9), file_bytes and alloc_bytes (st_size and st_blocks*512
// summed over Store::files() at marker 11) and requests (the interval's requests, reports
// not counted). After the benchmarks the rest of the log is replayed up to END, whose
// totals are checked against the Store's counts.
//
// Options (besides Google Benchmark's --benchmark_*):
//   --labflow_log=PATH      the benchmark log (required)
//   --labflow_system=NAME   the system to replay on (--labflow_list names them)
//   --labflow_out=PATH      where the query output goes (default: formatted and dropped)
//   --labflow_dir=DIR       the database directory: created, or an empty one (default: a
//                           new directory in $TMPDIR, removed at exit)
//   --labflow_verify        after END: commit, check the workload's invariants through the
//                           Store and compute a digest of every record; a persistent system
//                           is then closed, reopened (its dictionary from dict_load) and
//                           the digest recomputed: it must be the same (the digests and
//                           what failed go to stderr, so a JSON report on stdout stays whole)
//   --labflow_deadline=S    stop a replay still running S seconds after the start (a run
//                           that thrashes), cleanly: the intervals measured so far are
//                           reported, the one under way fails "not continued"; exit status 4
//   --labflow_list          print the registered systems and exit
//   --benchmark_list_tests  the benchmarks' names (of --labflow_system's, or of every
//                           system), without a log or a replay
//   --labflow_inject_fault=queue|reopen   (tests) a Store wrapper gets one answer wrong
//                           (FaultyStore): the verify mode must fail
// Exit status: 0; 1 a malformed log or a Store error; 2 usage; 3 a failed check; 4 past
// the deadline.
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "labflow.h"
#include "../bench_main.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxLine = 1024;                   // gen.MAX_LINE, the newline included
constexpr size_t kMaxTokens = kMaxLine / 2 + 1;     // non-empty tokens, one space apart
constexpr int kIntervals = 3;
const char *const kCutNames[kIntervals] = {"0.5X", "1X", "2X"};
constexpr uint32_t kMaxId = 65535;                  // kinds, attributes, versions are u16

// A malformed log: the replayer adds the line number.
struct LogError : std::runtime_error {
    using std::runtime_error::runtime_error;
};
[[noreturn]] void bad(const std::string &msg) { throw LogError(msg); }

struct Tok {
    const char *p = nullptr;
    size_t n = 0;
    // a literal: its length is known at compile time (the request dispatch compares many)
    template <size_t N>
    bool is(const char (&s)[N]) const { return N - 1 == n && std::memcmp(p, s, n) == 0; }
    bool is(const std::string &s) const { return s.size() == n && std::memcmp(p, s.data(), n) == 0; }
    bool is_c(const char *s) const { return std::strncmp(p, s, n) == 0 && s[n] == 0; }
    std::string str() const { return std::string(p, n); }
};

// a decimal number without sign, at most `max`
uint64_t num(const Tok &t, const char *what, uint64_t max = UINT64_MAX) {
    if (t.n == 0 || t.n > 20) bad(std::string("not a number for ") + what + ": '" + t.str() + "'");
    uint64_t v = 0;
    for (size_t i = 0; i < t.n; i++) {
        char c = t.p[i];
        if (c < '0' || c > '9') bad(std::string("not a number for ") + what + ": '" + t.str() + "'");
        uint64_t d = uint64_t(c - '0');
        if (v > (UINT64_MAX - d) / 10) bad(std::string("number too large for ") + what);
        v = v * 10 + d;
    }
    if (v > max) bad(std::string(what) + " " + t.str() + " out of range (at most " + std::to_string(max) + ")");
    return v;
}

int state_of(const Tok &t) {
    for (int s = 0; s < lf::NSTATES; s++)
        if (t.is_c(lf::kStateNames[s])) return s;
    bad("no state " + t.str());
}

bool terminal(int s) { return s == lf::PASSED || s == lf::RELEASED || s == lf::FAILED; }
bool state_of_line(int kind, int s) {
    if (s == lf::FAILED) return true;
    return kind == lf::SAMPLE ? s <= lf::PASSED : (s >= lf::NEW && s <= lf::RELEASED);
}

// -- formatting and parsing of values (the query output's hot path) ----------------------

void app_u(std::string &o, uint64_t v) {
    char b[24];
    char *e = b + sizeof b, *p = e;
    do {
        *--p = char('0' + v % 10);
        v /= 10;
    } while (v);
    o.append(p, size_t(e - p));
}

void app_i(std::string &o, int64_t v) {
    if (v < 0) {
        o += '-';
        app_u(o, uint64_t(0) - uint64_t(v));
    } else {
        app_u(o, uint64_t(v));
    }
}

// printf("%.4f") of a float: directly for a multiple of 1/16 below 2^24 in magnitude (all
// gen.py writes; exact: 1/16 = 0.0625), through snprintf for any other value.
void app_f32(std::string &o, float f) {
    if (std::isfinite(f) && std::fabs(f) < 16777216.0f) {
        double x = std::fabs(double(f)) * 16.0;   // exact
        if (x == std::floor(x)) {
            uint64_t n = uint64_t(x);
            if (std::signbit(f)) o += '-';   // -0.0 too: "-0.0000", as printf and Python
            app_u(o, n / 16);
            unsigned frac = unsigned(n % 16) * 625;   // the four decimals
            char d[5] = {'.', char('0' + frac / 1000), char('0' + frac / 100 % 10), char('0' + frac / 10 % 10),
                         char('0' + frac % 10)};
            o.append(d, 5);
            return;
        }
    }
    char buf[64];
    int k = std::snprintf(buf, sizeof buf, "%.4f", double(f));
    if (k < 0 || size_t(k) >= sizeof buf)   // only a value no log can hold (>= 1e58)
        throw std::runtime_error("an f32 value too large to print");
    o.append(buf, size_t(k));
}

// strtof of [-]digits[.digits] (checked by the caller): directly when the value is a
// multiple of 1/16 below 2^24 with at most 9 digits (exact both ways), else strtof.
float parse_f32(const char *p, size_t n) {
    bool neg = n && p[0] == '-';
    uint64_t m = 0, pow10 = 1;
    int digits = 0;
    bool frac = false;
    for (size_t i = neg ? 1 : 0; i < n; i++) {
        if (p[i] == '.') {
            frac = true;
            continue;
        }
        if (++digits > 9) break;
        m = m * 10 + uint64_t(p[i] - '0');
        if (frac) pow10 *= 10;
    }
    if (digits <= 9 && (m * 16) % pow10 == 0 && m * 16 / pow10 < (uint64_t(1) << 24)) {
        float f = float(m * 16 / pow10) / 16.0f;   // exact
        return neg ? -f : f;
    }
    char tmp[48];
    std::memcpy(tmp, p, n);   // n <= 40, checked by the caller
    tmp[n] = 0;
    return std::strtof(tmp, nullptr);
}

// -- the run-time dictionary --------------------------------------------------------------

struct DAttr {
    uint16_t id, kind;
    uint8_t type, max_len;
    uint16_t since;
    std::string name;
};
struct DKind {
    uint16_t id, since, retired;   // retired 0: live
    std::string name;
    std::vector<uint16_t> attrs;   // in dictionary order
};

// -- digest -------------------------------------------------------------------------------

struct Fnv {
    uint64_t h = 0xcbf29ce484222325ull;
    void bytes(const void *p, size_t n) {
        const unsigned char *b = static_cast<const unsigned char *>(p);
        for (size_t i = 0; i < n; i++) {
            h ^= b[i];
            h *= 0x100000001b3ull;
        }
    }
    void u64(uint64_t v) {
        unsigned char b[8];
        for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
        bytes(b, 8);
    }
    void str(const std::string &s) {
        u64(s.size());
        bytes(s.data(), s.size());
    }
};

// -- what a benchmark reports per interval ------------------------------------------------

struct IntervalStats {
    bool done = false;
    double elapsed_s = 0, user_s = 0, sys_s = 0, backlog_commit_s = 0, interval_commit_s = 0;
    double majflt = 0, minflt = 0;
    uint64_t file_bytes = 0, alloc_bytes = 0, requests = 0;
    uint64_t cut_file_bytes = 0;   // st_size at the cut point (marker 3, the backlog committed)
};

double seconds(const timeval &tv) { return double(tv.tv_sec) + double(tv.tv_usec) * 1e-6; }

struct Options {
    std::string log, out, dir, system;
    std::string fault;   // --labflow_inject_fault
    bool verify = false, list = false;
    double deadline_s = 0;   // --labflow_deadline: 0 = none
};

// --labflow_inject_fault (tests): a Store that passes every call on to the system's but
// gets one thing wrong, so that the verify mode's checks are seen to fail.
//   queue   every queue() answer lacks its last material (a queue check fails)
//   reopen  after a reopen, material 1 claims one step more (the digests differ)
class FaultyStore final : public lf::Store {
public:
    FaultyStore(std::unique_ptr<lf::Store> s, std::string fault, bool reopened)
        : s_(std::move(s)), fault_(std::move(fault)), reopened_(reopened) {}
    const char *name() const override { return s_->name(); }
    std::vector<std::string> files() const override { return s_->files(); }
    void size_hint(uint64_t m) override { s_->size_hint(m); }
    void commit() override { s_->commit(); }
    void close() override { s_->close(); }
    void dict_kind(const lf::KindEntry &k) override { s_->dict_kind(k); }
    void dict_attr(const lf::AttrEntry &a) override { s_->dict_attr(a); }
    void dict_load(std::vector<lf::KindEntry> &k, std::vector<lf::AttrEntry> &a) override { s_->dict_load(k, a); }
    uint32_t dict_version() override { return s_->dict_version(); }
    void mat_insert(const lf::MatRec &m) override { s_->mat_insert(m); }
    void mat_set_state(uint32_t oid, uint8_t st) override { s_->mat_set_state(oid, st); }
    bool mat_get(uint32_t oid, lf::MatRec &out) override {
        bool ok = s_->mat_get(oid, out);
        if (ok && oid == 1 && reopened_ && fault_ == "reopen") out.nsteps++;
        return ok;
    }
    uint32_t mat_by_name(const char *n) override { return s_->mat_by_name(n); }
    uint32_t mat_count() override { return s_->mat_count(); }
    void step_insert(const lf::StepRec &st) override { s_->step_insert(st); }
    bool step_get(uint32_t oid, lf::StepRec &out) override { return s_->step_get(oid, out); }
    uint32_t step_count() override { return s_->step_count(); }
    uint32_t latest(uint32_t m, uint16_t k) override { return s_->latest(m, k); }
    size_t queue(uint8_t st, size_t n, uint32_t *out) override {
        size_t k = s_->queue(st, n, out);
        return fault_ == "queue" && k ? k - 1 : k;
    }
    void hist(uint32_t m, const std::function<void(uint32_t)> &v) override { s_->hist(m, v); }
    void step_mats(uint32_t st, const std::function<void(uint32_t)> &v) override { s_->step_mats(st, v); }
    void report1(uint64_t t0, uint64_t t1, uint64_t *c) override { s_->report1(t0, t1, c); }
    void report2(uint64_t c[lf::NSTATES], uint64_t o[lf::NSTATES]) override { s_->report2(c, o); }

private:
    std::unique_ptr<lf::Store> s_;
    std::string fault_;
    bool reopened_;
};

// -- the replayer -------------------------------------------------------------------------

class Replayer {
public:
    Replayer(const Options &o, const lf::SystemInfo &sys) : opt_(o), sys_(sys) {}
    ~Replayer() {
        if (in_) std::fclose(in_);
        if (out_) std::fclose(out_);
    }

    // open the log, read its header, make the database; false (after a message) on error
    bool start();
    // replay through MARK k 11 of interval k (1-based); false once the replay has failed
    bool run_interval(int k);
    // replay the rest of the log and check END and the end of the file
    bool run_to_end();
    // --labflow_verify: 0 or 3
    int verify();
    // commit and close the database; false on a Store error
    bool finish();

    const IntervalStats &stats(int k) const { return stats_[k - 1]; }
    bool failed() const { return !error_.empty(); }
    bool past_deadline() const { return past_deadline_; }
    const std::string &error() const { return error_; }

private:
    enum Phase { BUILD, OPEN, RUN, REPORTS, CLOSE };

    bool next_line();
    void split();
    // run requests until `stop` says so (checked after each line); false on failure
    template <class Stop>
    bool run(Stop stop);
    void request();
    void marker();
    void file_sizes(uint64_t *apparent, uint64_t *allocated) const;
    void fail(const std::string &msg);

    // requests
    void op_addkind();
    void op_addattr();
    void op_split();
    void op_mat();
    void op_step();
    void op_state();
    void op_queue();
    void op_look();
    void op_latest();
    void op_laststep();
    void op_hist();
    void op_stepmats();
    void op_report1();
    void op_report2();

    // dictionary
    uint16_t new_kind(const Tok &name);
    void new_attr(uint16_t kind, const Tok &name, uint8_t type, uint8_t max_len);
    const DKind &kind_named(const Tok &t);
    void check_dict_name(const Tok &t, const char *what);
    void bump_version();
    // decode a payload with (kind, version): visit(attr, value text); throws on a mismatch
    template <class Visit>
    void decode(uint32_t step, uint16_t kind, uint16_t ver, const uint8_t *p, uint32_t n, Visit visit);
    void value_text(const DAttr &a, const uint8_t *v, uint16_t n, std::string &out);
    void rebuild_dict(const std::vector<lf::KindEntry> &ks, const std::vector<lf::AttrEntry> &as);

    uint32_t mat_tok(const Tok &t);
    void emit();

    // verify
    uint64_t digest(std::vector<std::string> &problems);

    const Options &opt_;
    const lf::SystemInfo &sys_;
    std::unique_ptr<lf::Store> store_;
    FILE *in_ = nullptr;
    FILE *out_ = nullptr;
    std::string error_;
    bool past_deadline_ = false;
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();

    char line_[kMaxLine + 1];   // the one line buffer: a line, its newline dropped, NUL after
    char inbuf_[1 << 16];       // the file, a block at a time
    size_t bpos_ = 0, bend_ = 0;
    size_t len_ = 0;
    uint64_t lineno_ = 0;
    Tok tok_[kMaxTokens];
    size_t ntok_ = 0;

    // header
    uint64_t seed_ = 0, memory_ = 0, interval_len_ = 0;

    // dictionary
    std::vector<DKind> kinds_;
    std::vector<DAttr> attrs_;
    std::unordered_map<std::string, uint16_t> kind_by_name_;
    std::unordered_map<std::string, std::vector<uint16_t>> attrs_named_;
    uint32_t version_ = 0;
    std::string key_;   // lookup key, reused

    // counts and checks the log needs
    uint32_t n_mat_ = 0, n_step_ = 0;
    uint64_t n_involves_ = 0;
    uint64_t last_when_ = 0;
    bool any_step_ = false;
    bool ended_ = false;

    // intervals
    Phase phase_ = BUILD;
    int expect_ = 0;
    int nintervals_ = 0;          // opened (markers 1-4 seen)
    uint64_t requests_ = 0;       // of the open interval
    IntervalStats stats_[kIntervals];
    Clock::time_point t4_;
    rusage ru4_{};

    // scratch, reused
    std::string o_;               // the query output line
    std::string payload_;
    std::string val_;
    std::vector<uint32_t> ids_;
    uint32_t mats_[kMaxTokens];
    uint32_t sorted_[kMaxTokens];
    std::vector<uint64_t> counts_;
};

void Replayer::fail(const std::string &msg) {
    if (error_.empty()) error_ = msg;
}

bool Replayer::start() {
    in_ = std::fopen(opt_.log.c_str(), "rb");
    if (!in_) {
        fail(opt_.log + ": cannot open: " + std::strerror(errno));
        return false;
    }
    setvbuf(in_, nullptr, _IONBF, 0);   // next_line reads blocks of its own
    if (!opt_.out.empty()) {
        out_ = std::fopen(opt_.out.c_str(), "wb");
        if (!out_) {
            fail(opt_.out + ": cannot create: " + std::strerror(errno));
            return false;
        }
        static char outbuf[1 << 20];
        setvbuf(out_, outbuf, _IOFBF, sizeof outbuf);
    }
    try {
        if (!next_line()) bad("an empty file, not a LABFLOW1 log");
        split();
        if (ntok_ != 5 || !tok_[0].is("LABFLOW1") || !tok_[1].is("1")) bad("not a LABFLOW1 version 1 log");
        const char *keys[3] = {"seed=", "memory=", "interval="};
        uint64_t *vals[3] = {&seed_, &memory_, &interval_len_};
        for (int i = 0; i < 3; i++) {
            size_t kl = std::strlen(keys[i]);
            const Tok &t = tok_[2 + i];
            if (t.n <= kl || std::memcmp(t.p, keys[i], kl) != 0)
                bad(std::string("not a LABFLOW1 version 1 log (expected ") + keys[i] + "...)");
            *vals[i] = num(Tok{t.p + kl, t.n - kl}, keys[i]);
        }
        if (interval_len_ == 0) bad("interval=0");
    } catch (const std::exception &e) {
        fail(opt_.log + ": line " + std::to_string(lineno_) + ": " + e.what());
        return false;
    }
    try {
        store_ = sys_.make(opt_.dir, true);
        if (!store_) throw std::runtime_error("the factory made no database");
        if (!opt_.fault.empty()) store_.reset(new FaultyStore(std::move(store_), opt_.fault, false));
        store_->size_hint(memory_);
    } catch (const std::exception &e) {
        fail(sys_.name + ": cannot make the database in " + opt_.dir + ": " + e.what());
        return false;
    }
    return true;
}

// The next line into line_ (without its newline); false at the end of the file. The file
// is read in blocks (inbuf_); a line is checked and copied into the one line buffer.
bool Replayer::next_line() {
    len_ = 0;
    for (;;) {
        if (bpos_ == bend_) {
            bpos_ = 0;
            bend_ = std::fread(inbuf_, 1, sizeof inbuf_, in_);
            if (bend_ == 0) {
                if (std::ferror(in_)) bad(std::string("read error: ") + std::strerror(errno));
                if (len_ == 0) return false;
                lineno_++;
                bad("the last line has no newline (a truncated log?)");
            }
        }
        const char *start = inbuf_ + bpos_;
        size_t avail = bend_ - bpos_;
        const char *nl = static_cast<const char *>(std::memchr(start, '\n', avail));
        size_t take = nl ? size_t(nl - start) : avail;
        if (len_ + take >= kMaxLine) {   // with its newline, longer than kMaxLine
            lineno_++;
            bad("longer than " + std::to_string(kMaxLine) + " bytes");
        }
        for (size_t i = 0; i < take; i++) {
            unsigned char c = static_cast<unsigned char>(start[i]);
            if (c < 0x20 || c > 0x7e) {
                lineno_++;
                bad("byte " + std::to_string(c) + " at column " + std::to_string(len_ + i + 1) +
                    " is not printable ASCII");
            }
        }
        std::memcpy(line_ + len_, start, take);
        len_ += take;
        bpos_ += take;
        if (nl) {
            bpos_++;
            break;
        }
    }
    line_[len_] = 0;
    lineno_++;
    return true;
}

void Replayer::split() {
    ntok_ = 0;
    size_t i = 0;
    if (len_ == 0) bad("an empty line");
    while (i <= len_) {
        const char *sp = static_cast<const char *>(std::memchr(line_ + i, ' ', len_ - i));
        size_t j = sp ? size_t(sp - line_) : len_;
        if (j == i) bad("an empty token (two spaces, or a space at either end)");
        if (ntok_ == kMaxTokens) bad("too many tokens");
        tok_[ntok_++] = Tok{line_ + i, j - i};
        i = j + 1;
    }
}

template <class Stop>
bool Replayer::run(Stop stop) {
    if (failed()) return false;
    try {
        for (uint32_t n = 0; !stop(); n++) {
            // a run that thrashes is not continued, as the paper did not continue its runs
            // that thrashed: checked every 1,024 lines, it stops cleanly so that the
            // intervals already measured are reported
            if (opt_.deadline_s > 0 && (n & 1023) == 0 &&
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count() >
                    opt_.deadline_s) {
                past_deadline_ = true;
                fail("not continued: past the deadline of " + std::to_string(int(opt_.deadline_s)) +
                     " s (--labflow_deadline) at line " + std::to_string(lineno_));
                return false;
            }
            if (!next_line()) {
                if (!ended_) {
                    lineno_++;
                    bad("the log has no END line (truncated?)");
                }
                break;
            }
            if (ended_) bad("text after END");
            split();
            request();
        }
    } catch (const std::exception &e) {
        std::string line(line_, std::min<size_t>(len_, 80));
        fail(opt_.log + ": line " + std::to_string(lineno_) + ": " + e.what() +
             (len_ ? " [" + line + (len_ > 80 ? "...]" : "]") : std::string()));
        return false;
    }
    return true;
}

bool Replayer::run_interval(int k) {
    if (stats_[k - 1].done) {
        fail("interval " + std::to_string(k) + " was replayed already (the replay goes forward once: "
             "no repetitions)");
        return false;
    }
    return run([&] { return stats_[k - 1].done || ended_; }) &&
           (stats_[k - 1].done || (fail("the log ended before interval " + std::to_string(k)), false));
}

bool Replayer::run_to_end() {
    // to END, then past it: nothing may follow
    bool ok = run([&] { return false; });
    if (!ok) return false;
    try {
        uint32_t m = store_->mat_count(), s = store_->step_count();
        if (m != n_mat_ || s != n_step_)
            throw std::runtime_error("after END the store holds " + std::to_string(m) + " materials and " +
                                     std::to_string(s) + " steps, the log made " + std::to_string(n_mat_) +
                                     " and " + std::to_string(n_step_));
    } catch (const std::exception &e) {
        fail(std::string(sys_.name) + ": " + e.what());
        return false;
    }
    return true;
}

void Replayer::request() {
    const Tok &op = tok_[0];
    if (op.is("MARK")) {
        marker();
        return;
    }
    if (op.is("REPORT1") || op.is("REPORT2")) {
        bool r1 = op.is("REPORT1");
        if (phase_ == RUN && r1) {
            if (requests_ != interval_len_)
                bad("interval " + std::to_string(nintervals_) + " has " + std::to_string(requests_) +
                    " requests before its reports, not " + std::to_string(interval_len_));
            phase_ = REPORTS;
            expect_ = 0;
        }
        if (phase_ != REPORTS) bad(op.str() + " outside an interval's reports");
        if (r1) {
            if (expect_ != 0) bad("REPORT1 twice");
            expect_ = 1;
            op_report1();
        } else {
            if (expect_ != 1) bad("REPORT2 before REPORT1");
            op_report2();
            phase_ = CLOSE;
            expect_ = 0;
        }
        return;
    }
    if (op.is("END")) {
        if (phase_ != BUILD) bad("END inside an interval");
        if (nintervals_ != kIntervals)
            bad(std::to_string(nintervals_) + " intervals, not " + std::to_string(kIntervals));
        if (ntok_ != 4) bad("END takes materials, steps, involves");
        uint64_t m = num(tok_[1], "materials"), s = num(tok_[2], "steps"), i = num(tok_[3], "involves");
        if (m != n_mat_ || s != n_step_ || i != n_involves_)
            bad("END totals " + std::to_string(m) + " " + std::to_string(s) + " " + std::to_string(i) +
                " but the log made " + std::to_string(n_mat_) + " " + std::to_string(n_step_) + " " +
                std::to_string(n_involves_));
        ended_ = true;
        return;
    }
    bool read = op.is("QUEUE") || op.is("LOOK") || op.is("LATEST") || op.is("LASTSTEP") || op.is("HIST") ||
                op.is("STEPMATS");
    if (phase_ == OPEN || phase_ == REPORTS || phase_ == CLOSE) bad("request between an interval's markers");
    if (phase_ == RUN) {
        if (++requests_ > interval_len_)
            bad("interval " + std::to_string(nintervals_) + " has more than " + std::to_string(interval_len_) +
                " requests");
    } else if (read) {
        bad("a read-only request outside the intervals");
    }
    if (op.is("STEP")) op_step();
    else if (op.is("STATE")) op_state();
    else if (op.is("LATEST")) op_latest();
    else if (op.is("QUEUE")) op_queue();
    else if (op.is("LOOK")) op_look();
    else if (op.is("LASTSTEP")) op_laststep();
    else if (op.is("HIST")) op_hist();
    else if (op.is("STEPMATS")) op_stepmats();
    else if (op.is("MAT")) op_mat();
    else if (op.is("ADDKIND")) op_addkind();
    else if (op.is("ADDATTR")) op_addattr();
    else if (op.is("SPLIT")) op_split();
    else bad("unknown request " + op.str());
}

// The store's files: apparent bytes (st_size) and allocated bytes (st_blocks * 512), summed.
void Replayer::file_sizes(uint64_t *apparent, uint64_t *allocated) const {
    *apparent = *allocated = 0;
    for (const std::string &f : store_->files()) {
        struct stat sb;
        std::string path = opt_.dir + "/" + f;
        if (::stat(path.c_str(), &sb) != 0)
            throw std::runtime_error(std::string(sys_.name) + " names a file it does not have: " + path);
        *apparent += uint64_t(sb.st_size);
        *allocated += uint64_t(sb.st_blocks) * 512;
    }
}

// The interval markers (model.py's _interval_marker) and what the driver measures at them.
void Replayer::marker() {
    if (ntok_ != 4 && ntok_ != 5) bad("MARK takes interval, query, action [label]");
    uint64_t k = num(tok_[1], "interval", 1000), q = num(tok_[2], "query", 1000);
    const Tok &action = tok_[3];
    static const struct { int q; const char *a; } kOpen[] = {{1, "BASELINE"}, {2, "COMMIT"}, {3, "MEASURE"},
                                                               {4, "BASELINE"}};
    static const struct { int q; const char *a; } kClose[] = {
        {7, "MEASURE"}, {8, "BASELINE"}, {9, "COMMIT"}, {10, "MEASURE"}, {11, "DBSIZE"}};
    if (phase_ == BUILD) {
        if (nintervals_ == 0 && k == 0 && q == 1 && action.is("BASELINE") && lineno_ == 2) return;
        if (k != uint64_t(nintervals_ + 1) || q != 1 || !action.is("BASELINE"))
            bad("expected the next interval's MARK k 1 BASELINE");
        if (nintervals_ == kIntervals) bad("more than " + std::to_string(kIntervals) + " intervals");
        phase_ = OPEN;
        expect_ = 1;
        return;
    }
    if (phase_ == OPEN) {
        if (k != uint64_t(nintervals_ + 1) || q != uint64_t(kOpen[expect_].q) || !action.is_c(kOpen[expect_].a))
            bad("expected MARK " + std::to_string(nintervals_ + 1) + " " + std::to_string(kOpen[expect_].q) + " " +
                kOpen[expect_].a);
        IntervalStats &st = stats_[nintervals_];
        if (q == 2) {   // commit of the backlog
            auto t = Clock::now();
            store_->commit();
            st.backlog_commit_s = std::chrono::duration<double>(Clock::now() - t).count();
        } else if (q == 3) {   // the database at the cut point: what the log's byte model estimated
            uint64_t alloc = 0;
            file_sizes(&st.cut_file_bytes, &alloc);
        }
        if (++expect_ == 4) {
            nintervals_++;
            phase_ = RUN;
            requests_ = 0;
            getrusage(RUSAGE_SELF, &ru4_);
            t4_ = Clock::now();
        }
        return;
    }
    if (phase_ != CLOSE || k != uint64_t(nintervals_) || q != uint64_t(kClose[expect_].q) ||
        !action.is_c(kClose[expect_].a))
        bad("marker out of place (an interval is 4 markers, its requests, REPORT1, REPORT2, then markers 7..11)");
    IntervalStats &st = stats_[nintervals_ - 1];
    if (q == 7) {
        st.elapsed_s = std::chrono::duration<double>(Clock::now() - t4_).count();
        rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        st.user_s = seconds(ru.ru_utime) - seconds(ru4_.ru_utime);
        st.sys_s = seconds(ru.ru_stime) - seconds(ru4_.ru_stime);
        st.majflt = double(ru.ru_majflt - ru4_.ru_majflt);
        st.minflt = double(ru.ru_minflt - ru4_.ru_minflt);
        st.requests = requests_;
    } else if (q == 9) {
        auto t = Clock::now();
        store_->commit();
        st.interval_commit_s = std::chrono::duration<double>(Clock::now() - t).count();
    } else if (q == 11) {
        file_sizes(&st.file_bytes, &st.alloc_bytes);
    }
    if (++expect_ == 5) {
        st.done = true;
        phase_ = BUILD;
    }
}

// -- dictionary ---------------------------------------------------------------------------

void Replayer::bump_version() {
    if (version_ >= kMaxId) bad("more than " + std::to_string(kMaxId) + " schema changes");
    version_++;
}

void Replayer::check_dict_name(const Tok &t, const char *what) {
    if (t.n > lf::kDictNameMax)
        bad(std::string(what) + " name longer than " + std::to_string(lf::kDictNameMax) + " characters");
    for (size_t i = 0; i < t.n; i++)
        if (t.p[i] == '=' || t.p[i] == ',' || t.p[i] == ':')
            bad(std::string(what) + " name " + t.str() + " holds '=', ',' or ':'");
}

uint16_t Replayer::new_kind(const Tok &name) {
    check_dict_name(name, "step kind");
    key_.assign(name.p, name.n);
    if (kind_by_name_.count(key_)) bad("step kind " + key_ + " exists");
    if (kinds_.size() >= kMaxId) bad("too many step kinds");
    DKind k{uint16_t(kinds_.size()), uint16_t(version_), 0, key_, {}};
    kinds_.push_back(k);
    kind_by_name_.emplace(key_, k.id);
    store_->dict_kind(lf::KindEntry{k.id, k.since, 0, k.name});
    return k.id;
}

void Replayer::new_attr(uint16_t kind, const Tok &name, uint8_t type, uint8_t max_len) {
    check_dict_name(name, "attribute");
    DKind &k = kinds_[kind];
    for (uint16_t a : k.attrs)
        if (name.is(attrs_[a].name)) bad(k.name + " already has attribute " + name.str());
    if (attrs_.size() >= kMaxId) bad("too many attributes");
    DAttr a{uint16_t(attrs_.size()), kind, type, max_len, uint16_t(version_), name.str()};
    attrs_.push_back(a);
    k.attrs.push_back(a.id);
    attrs_named_[a.name].push_back(a.id);
    store_->dict_attr(lf::AttrEntry{a.id, a.kind, a.type, a.max_len, a.since, a.name});
}

const DKind &Replayer::kind_named(const Tok &t) {
    key_.assign(t.p, t.n);
    auto it = kind_by_name_.find(key_);
    if (it == kind_by_name_.end()) bad("no step kind " + key_);
    return kinds_[it->second];
}

void Replayer::op_addkind() {
    if (ntok_ != 2) bad("ADDKIND takes a kind");
    bump_version();
    new_kind(tok_[1]);
}

void Replayer::op_addattr() {
    if (ntok_ != 4) bad("ADDATTR takes kind, attribute, type");
    const DKind &k = kind_named(tok_[1]);
    if (k.retired) bad("step kind " + k.name + " was split");
    const Tok &t = tok_[3];
    uint8_t type = 0, max_len = 0;
    if (t.is("u8")) type = lf::T_U8;
    else if (t.is("i32")) type = lf::T_I32;
    else if (t.is("f32")) type = lf::T_F32;
    else if (t.is("var")) type = lf::T_VAR;
    else if (t.n > 3 && std::memcmp(t.p, "str", 3) == 0) {
        uint64_t n = num(Tok{t.p + 3, t.n - 3}, "a str<N> length", 255);
        if (n < 1) bad("unknown type " + t.str() + " (str<N> takes 1 <= N <= 255)");
        type = lf::T_STR;
        max_len = uint8_t(n);
    } else {
        bad("unknown type " + t.str());
    }
    uint16_t id = k.id;
    bump_version();
    new_attr(id, tok_[2], type, max_len);
}

void Replayer::op_split() {
    if (ntok_ < 2) bad("SPLIT takes a kind and its parts");
    uint16_t old = kind_named(tok_[1]).id;
    if (kinds_[old].retired) bad("step kind " + kinds_[old].name + " was split");
    bump_version();
    kinds_[old].retired = uint16_t(version_);
    {
        const DKind &k = kinds_[old];
        store_->dict_kind(lf::KindEntry{k.id, k.since, k.retired, k.name});
    }
    std::vector<uint16_t> taken;
    for (size_t i = 2; i < ntok_; i++) {
        const Tok &part = tok_[i];
        const char *eq = static_cast<const char *>(std::memchr(part.p, '=', part.n));
        if (!eq) bad("a SPLIT part is <new kind>=<attribute>,..");
        uint16_t nk = new_kind(Tok{part.p, size_t(eq - part.p)});
        const char *p = eq + 1, *end = part.p + part.n;
        for (;;) {
            const char *c = static_cast<const char *>(std::memchr(p, ',', size_t(end - p)));
            Tok name{p, size_t((c ? c : end) - p)};
            const DAttr *src = nullptr;
            for (uint16_t a : kinds_[old].attrs)
                if (name.is(attrs_[a].name)) src = &attrs_[a];
            if (!src) bad(kinds_[old].name + " has no attribute " + name.str());
            uint8_t type = src->type, max_len = src->max_len;
            taken.push_back(src->id);
            new_attr(nk, name, type, max_len);
            if (!c) break;
            p = c + 1;
        }
    }
    std::vector<uint16_t> all = kinds_[old].attrs;
    std::sort(all.begin(), all.end());
    std::sort(taken.begin(), taken.end());
    if (taken != all) bad("a split must give each attribute of the kind to one new kind");
}

// -- writes -------------------------------------------------------------------------------

uint32_t Replayer::mat_tok(const Tok &t) {
    uint64_t m = num(t, "material");
    if (m < 1 || m > n_mat_) bad("no material " + t.str());
    return uint32_t(m);
}

void Replayer::op_mat() {
    if (ntok_ != 3) bad("MAT takes name, kind");
    const Tok &name = tok_[1];
    if (name.n > lf::kNameMax) bad("a material name longer than " + std::to_string(lf::kNameMax) + " characters");
    lf::MatRec m;
    std::memcpy(m.name, name.p, name.n);
    m.name[name.n] = 0;
    if (tok_[2].is("sample")) m.kind = lf::SAMPLE, m.state = lf::RECEIVED;
    else if (tok_[2].is("segment")) m.kind = lf::SEGMENT, m.state = lf::NEW;
    else bad("no material kind " + tok_[2].str());
    if (store_->mat_by_name(m.name) != 0) bad(std::string("material ") + m.name + " exists");
    if (n_mat_ == UINT32_MAX) bad("too many materials");
    m.oid = n_mat_ + 1;
    store_->mat_insert(m);
    n_mat_++;
}

void Replayer::op_step() {
    if (ntok_ < 5) bad("STEP takes kind, who, when, materials [attributes]");
    const DKind &k = kind_named(tok_[1]);
    if (k.retired) bad("step kind " + k.name + " was split");
    lf::StepRec s;
    s.kind = k.id;
    s.schema_ver = uint16_t(version_);
    int who = -1;
    for (size_t i = 0; i < lf::kWhoCount; i++)
        if (tok_[2].is_c(lf::kWhoNames[i])) who = int(i);
    if (who < 0) bad("unknown who " + tok_[2].str());
    s.who = uint8_t(who);
    s.when = num(tok_[3], "when");
    if (any_step_ && s.when <= last_when_) bad("when " + tok_[3].str() + " does not increase");
    // materials: m1,..,mk
    uint32_t nm = 0;
    const char *p = tok_[4].p, *end = p + tok_[4].n;
    for (;;) {
        const char *c = static_cast<const char *>(std::memchr(p, ',', size_t(end - p)));
        if (nm == kMaxTokens) bad("too many materials");
        mats_[nm++] = mat_tok(Tok{p, size_t((c ? c : end) - p)});
        if (!c) break;
        p = c + 1;
    }
    std::copy(mats_, mats_ + nm, sorted_);
    std::sort(sorted_, sorted_ + nm);
    if (std::adjacent_find(sorted_, sorted_ + nm) != sorted_ + nm) bad("a material twice in one step");
    // attributes: exactly the kind's, in dictionary order (every attribute of a live kind
    // has since <= the current version)
    size_t na = ntok_ - 5;
    if (na != k.attrs.size()) {
        std::string have;
        for (uint16_t a : k.attrs) have += (have.empty() ? "" : ",") + attrs_[a].name;
        bad(std::to_string(na) + " attributes but " + k.name + " has " + std::to_string(k.attrs.size()) +
            " (" + have + ")");
    }
    payload_.clear();
    for (size_t i = 0; i < na; i++) {
        const DAttr &a = attrs_[k.attrs[i]];
        const Tok &t = tok_[5 + i];
        const char *eq = static_cast<const char *>(std::memchr(t.p, '=', t.n));
        if (!eq || !Tok{t.p, size_t(eq - t.p)}.is(a.name))
            bad("attribute " + std::to_string(i + 1) + " is not " + a.name + "=<value> (" + k.name +
                "'s attributes, in order)");
        Tok v{eq + 1, size_t(t.p + t.n - eq - 1)};
        unsigned char b[4];
        const unsigned char *val = b;
        size_t n = 0;
        if (a.type == lf::T_U8) {
            b[0] = uint8_t(num(v, a.name.c_str(), 255));
            n = 1;
        } else if (a.type == lf::T_I32) {
            bool neg = v.n && v.p[0] == '-';
            uint64_t x = num(neg ? Tok{v.p + 1, v.n - 1} : v, a.name.c_str(), neg ? 0x80000000ull : 0x7fffffffull);
            int32_t i32 = neg ? int32_t(-int64_t(x)) : int32_t(x);
            std::memcpy(b, &i32, 4);   // little-endian hosts only (x86-64, arm64)
            n = 4;
        } else if (a.type == lf::T_F32) {
            // [-]digits[.digits]: what gen.py writes; strtof then reads it exactly
            size_t j = v.n && v.p[0] == '-' ? 1 : 0, digits = 0;
            bool dot = false;
            for (; j < v.n; j++) {
                if (v.p[j] >= '0' && v.p[j] <= '9') digits++;
                else if (v.p[j] == '.' && !dot) dot = true;
                else break;
            }
            if (j != v.n || digits == 0 || v.n > 40) bad("not an f32 value for " + a.name + ": '" + v.str() + "'");
            float f = parse_f32(v.p, v.n);
            std::memcpy(b, &f, 4);
            n = 4;
        } else {
            if (a.type == lf::T_STR && v.n > a.max_len)
                bad(a.name + " longer than its str" + std::to_string(a.max_len));
            val = reinterpret_cast<const unsigned char *>(v.p);
            n = v.n;   // < kMaxLine: fits the u16 length
        }
        unsigned char h[5] = {uint8_t(a.id), uint8_t(a.id >> 8), a.type, uint8_t(n), uint8_t(n >> 8)};
        payload_.append(reinterpret_cast<const char *>(h), 5);
        payload_.append(reinterpret_cast<const char *>(val), n);
    }
    s.oid = n_step_ + 1;
    s.mats = mats_;
    s.nmat = nm;
    s.payload = reinterpret_cast<const uint8_t *>(payload_.data());
    s.payload_len = uint32_t(payload_.size());
    if (n_step_ == UINT32_MAX) bad("too many steps");
    store_->step_insert(s);
    n_step_++;
    n_involves_ += nm;
    last_when_ = s.when;
    any_step_ = true;
}

void Replayer::op_state() {
    if (ntok_ != 3) bad("STATE takes material, state");
    uint32_t m = mat_tok(tok_[1]);
    int s = state_of(tok_[2]);
    lf::MatRec r;
    if (!store_->mat_get(m, r)) throw std::runtime_error(std::string(sys_.name) + " lost material " + tok_[1].str());
    if (r.kind >= lf::NMATKINDS || r.state >= lf::NSTATES)
        throw std::runtime_error(std::string(sys_.name) + " returned a material with kind/state out of range");
    if (terminal(r.state))
        bad("material " + tok_[1].str() + " is " + lf::kStateNames[r.state] + ", a terminal state");
    if (!state_of_line(r.kind, s))
        bad(std::string(lf::kStateNames[s]) + " is not a state of a " + lf::kMatKindNames[r.kind]);
    store_->mat_set_state(m, uint8_t(s));
}

// -- reads --------------------------------------------------------------------------------

void Replayer::emit() {
    o_ += '\n';
    if (out_ && std::fwrite(o_.data(), 1, o_.size(), out_) != o_.size())
        throw std::runtime_error(opt_.out + ": write error: " + std::strerror(errno));
}

void Replayer::value_text(const DAttr &a, const uint8_t *v, uint16_t n, std::string &out) {
    switch (a.type) {
    case lf::T_U8:
        app_u(out, v[0]);
        return;
    case lf::T_I32: {
        int32_t x;
        std::memcpy(&x, v, 4);
        app_i(out, x);
        return;
    }
    case lf::T_F32: {
        float f;
        std::memcpy(&f, v, 4);
        app_f32(out, f);
        return;
    }
    default:
        out.append(reinterpret_cast<const char *>(v), n);
    }
}

// model.decode: the payload holds exactly the layout's attributes, in order, with their
// types and sizes.
template <class Visit>
void Replayer::decode(uint32_t step, uint16_t kind, uint16_t ver, const uint8_t *p, uint32_t n, Visit visit) {
    auto corrupt = [&](const std::string &what) {
        throw std::runtime_error(std::string(sys_.name) + ": step " + std::to_string(step) + "'s payload: " + what);
    };
    if (kind >= kinds_.size()) corrupt("kind " + std::to_string(kind) + " is not in the dictionary");
    uint32_t pos = 0;
    for (uint16_t aid : kinds_[kind].attrs) {
        const DAttr &a = attrs_[aid];
        if (a.since > ver) continue;
        if (n - pos < 5) corrupt("ends before attribute " + a.name);
        uint16_t id = uint16_t(p[pos] | p[pos + 1] << 8), len = uint16_t(p[pos + 3] | p[pos + 4] << 8);
        uint8_t code = p[pos + 2];
        pos += 5;
        if (id != a.id || code != a.type)
            corrupt("attribute " + std::to_string(id) + " type " + std::to_string(code) + " where the layout has " +
                    a.name);
        size_t want = a.type == lf::T_U8 ? 1 : (a.type == lf::T_I32 || a.type == lf::T_F32) ? 4 : len;
        if (len != want || n - pos < len || (a.type == lf::T_STR && len > a.max_len))
            corrupt("attribute " + a.name + " has a bad length");
        visit(a, p + pos, len);
        pos += len;
    }
    if (pos != n) corrupt(std::to_string(n - pos) + " bytes after the layout's attributes");
}

void Replayer::op_queue() {
    if (ntok_ != 3) bad("QUEUE takes state, n");
    int s = state_of(tok_[1]);
    uint64_t n = std::min<uint64_t>(num(tok_[2], "n"), n_mat_);
    ids_.resize(n);
    size_t got = store_->queue(uint8_t(s), n, ids_.data());
    if (got > n) throw std::runtime_error(std::string(sys_.name) + ": queue wrote more than asked");
    o_ = "Q";
    for (size_t i = 0; i < got; i++) {
        o_ += ' ';
        app_u(o_, ids_[i]);
    }
    emit();
}

void Replayer::op_look() {
    if (ntok_ != 2) bad("LOOK takes a name");
    const Tok &name = tok_[1];
    uint32_t m = 0;
    if (name.n <= lf::kNameMax) {   // a longer name is no material's
        char buf[lf::kNameMax + 1];
        std::memcpy(buf, name.p, name.n);
        buf[name.n] = 0;
        m = store_->mat_by_name(buf);
    }
    lf::MatRec r;
    if (m == 0) {
        o_ = "L absent";
    } else {
        if (m > n_mat_ || !store_->mat_get(m, r) || r.kind >= lf::NMATKINDS || r.state >= lf::NSTATES)
            throw std::runtime_error(std::string(sys_.name) + ": the name index gives material " +
                                     std::to_string(m) + ", which it cannot give back");
        o_ = "L ";
        app_u(o_, m);
        o_ += ' ';
        o_ += lf::kMatKindNames[r.kind];
        o_ += ' ';
        o_ += lf::kStateNames[r.state];
    }
    emit();
}

// model.latest_value: for each attribute of that name, the newest step of its kind on m,
// if that step's version carries the attribute; the newest such step wins.
void Replayer::op_latest() {
    if (ntok_ != 3) bad("LATEST takes material, attribute");
    uint32_t m = mat_tok(tok_[1]);
    key_.assign(tok_[2].p, tok_[2].n);
    auto it = attrs_named_.find(key_);
    const DAttr *best = nullptr;
    uint64_t best_when = 0;
    uint32_t best_step = 0;
    uint16_t best_ver = 0;
    if (it != attrs_named_.end())
        for (uint16_t aid : it->second) {
            const DAttr &a = attrs_[aid];
            uint32_t s = store_->latest(m, a.kind);
            if (s == 0) continue;
            lf::StepRec r;
            if (s > n_step_ || !store_->step_get(s, r))
                throw std::runtime_error(std::string(sys_.name) + ": latest gives step " + std::to_string(s) +
                                         ", which it cannot give back");
            if (r.schema_ver >= a.since && (!best || r.when > best_when)) {
                best = &a;
                best_when = r.when;
                best_step = s;
                best_ver = r.schema_ver;
                payload_.assign(reinterpret_cast<const char *>(r.payload), r.payload_len);
            }
        }
    if (!best) {
        o_ = "A absent";
    } else {
        o_ = "A ";
        decode(best_step, best->kind, best_ver, reinterpret_cast<const uint8_t *>(payload_.data()),
               uint32_t(payload_.size()), [&](const DAttr &a, const uint8_t *v, uint16_t n) {
                   if (&a == best) value_text(a, v, n, o_);
               });
    }
    emit();
}

void Replayer::op_laststep() {
    if (ntok_ != 3) bad("LASTSTEP takes material, kind");
    uint32_t m = mat_tok(tok_[1]);
    const DKind &k = kind_named(tok_[2]);
    uint32_t s = store_->latest(m, k.id);
    lf::StepRec r;
    if (s == 0) {
        o_ = "S absent";
    } else {
        if (s > n_step_ || !store_->step_get(s, r) || r.who >= lf::kWhoCount)
            throw std::runtime_error(std::string(sys_.name) + ": latest gives step " + std::to_string(s) +
                                     ", which it cannot give back");
        o_ = "S ";
        app_u(o_, s);
        o_ += ' ';
        app_u(o_, r.when);
        o_ += ' ';
        o_ += lf::kWhoNames[r.who];
        decode(s, r.kind, r.schema_ver, r.payload, r.payload_len, [&](const DAttr &a, const uint8_t *v, uint16_t n) {
            o_ += ' ';
            o_ += a.name;
            o_ += '=';
            value_text(a, v, n, o_);
        });
    }
    emit();
}

void Replayer::op_hist() {
    if (ntok_ != 2) bad("HIST takes a material");
    uint32_t m = mat_tok(tok_[1]);
    ids_.clear();
    store_->hist(m, [&](uint32_t s) { ids_.push_back(s); });
    o_ = "H ";
    app_u(o_, ids_.size());
    for (uint32_t s : ids_) {
        lf::StepRec r;
        if (s == 0 || s > n_step_ || !store_->step_get(s, r) || r.kind >= kinds_.size() || r.who >= lf::kWhoCount)
            throw std::runtime_error(std::string(sys_.name) + ": the history of material " + std::to_string(m) +
                                     " holds step " + std::to_string(s) + ", which it cannot give back");
        o_ += ' ';
        o_ += kinds_[r.kind].name;
        o_ += ':';
        app_u(o_, r.when);
        o_ += ':';
        o_ += lf::kWhoNames[r.who];
    }
    emit();
}

void Replayer::op_stepmats() {
    if (ntok_ != 2) bad("STEPMATS takes a step");
    uint64_t s = num(tok_[1], "step");
    if (s < 1 || s > n_step_) bad("no step " + tok_[1].str());
    o_ = "M";
    uint32_t prev = 0;
    bool ordered = true;
    store_->step_mats(uint32_t(s), [&](uint32_t m) {
        ordered = ordered && m > prev;
        prev = m;
        o_ += ' ';
        app_u(o_, m);
    });
    if (!ordered) throw std::runtime_error(std::string(sys_.name) + ": step_mats not in oid order");
    emit();
}

void Replayer::op_report1() {
    if (ntok_ != 3) bad("REPORT1 takes t0, t1");
    uint64_t t0 = num(tok_[1], "t0"), t1 = num(tok_[2], "t1");
    counts_.assign(kinds_.size(), 0);
    store_->report1(t0, t1, counts_.data());
    o_ = "R1";
    for (size_t k = 0; k < kinds_.size(); k++) {
        o_ += ' ';
        o_ += kinds_[k].name;
        o_ += '=';
        app_u(o_, counts_[k]);
    }
    emit();
}

void Replayer::op_report2() {
    if (ntok_ != 1) bad("REPORT2 takes no argument");
    uint64_t count[lf::NSTATES], oldest[lf::NSTATES];
    std::fill(count, count + lf::NSTATES, 0);   // as labflow.h says the caller does
    std::fill(oldest, oldest + lf::NSTATES, UINT64_MAX);
    store_->report2(count, oldest);
    o_ = "R2";
    for (int s = 0; s < lf::NSTATES; s++) {
        o_ += ' ';
        o_ += lf::kStateNames[s];
        o_ += '=';
        app_u(o_, count[s]);
        o_ += '/';
        if (oldest[s] == UINT64_MAX) o_ += '-';
        else app_u(o_, oldest[s]);
    }
    emit();
}

// -- verify -------------------------------------------------------------------------------

void Replayer::rebuild_dict(const std::vector<lf::KindEntry> &ks, const std::vector<lf::AttrEntry> &as) {
    kinds_.clear();
    attrs_.clear();
    kind_by_name_.clear();
    attrs_named_.clear();
    version_ = 0;
    for (const lf::KindEntry &e : ks) {
        if (e.id == kinds_.size()) {
            kinds_.push_back(DKind{e.id, e.since, e.retired, e.name, {}});
            kind_by_name_.emplace(e.name, e.id);
        } else if (e.id < kinds_.size() && kinds_[e.id].name == e.name && e.retired) {
            kinds_[e.id].retired = e.retired;
        } else {
            throw std::runtime_error("dict_load: kind entry " + std::to_string(e.id) + " (" + e.name + ") out of order");
        }
        version_ = std::max<uint32_t>(version_, std::max(e.since, e.retired));
    }
    for (const lf::AttrEntry &e : as) {
        if (e.id != attrs_.size() || e.kind >= kinds_.size() || e.type < lf::T_U8 || e.type > lf::T_VAR)
            throw std::runtime_error("dict_load: attribute entry " + std::to_string(e.id) + " (" + e.name +
                                     ") out of order or of no kind");
        attrs_.push_back(DAttr{e.id, e.kind, e.type, e.max_len, e.since, e.name});
        kinds_[e.kind].attrs.push_back(e.id);
        attrs_named_[e.name].push_back(e.id);
        version_ = std::max<uint32_t>(version_, e.since);
    }
}

// A digest of everything the Store holds, read through its primitives, and the workload's
// invariants (spec section 6) checked on the way; what fails goes to `problems`. FNV-1a/64,
// integers as 8 little-endian bytes, a dictionary name as its length then its bytes, in
// this order: the counts and the dictionary version;
// each kind (id, since, retired, name) with its attributes (id, kind, type, max_len, since,
// name); each step (oid, kind, schema_ver, who, when, payload length and bytes, its
// materials, their number); each material (oid, kind, state, nsteps, name bytes, name
// length, its history, then latest(m, k) for every kind k); each queue (length, oids).
// Read through the primitives only, it is the same for every system holding the same
// records (tests/bench/test_labflow_replay.py computes it from the reference model too).
uint64_t Replayer::digest(std::vector<std::string> &problems) {
    lf::Store &st = *store_;
    Fnv h;
    auto problem = [&](const std::string &p) {
        if (problems.size() < 20) problems.push_back(p);
    };
    uint32_t nm = st.mat_count(), ns = st.step_count();
    if (nm != n_mat_ || ns != n_step_)
        problem("counts: " + std::to_string(nm) + " materials, " + std::to_string(ns) + " steps; the log made " +
                std::to_string(n_mat_) + ", " + std::to_string(n_step_));
    h.u64(nm);
    h.u64(ns);
    // the dictionary
    h.u64(version_);
    for (const DKind &k : kinds_) {
        h.u64(k.id);
        h.u64(k.since);
        h.u64(k.retired);
        h.str(k.name);
        for (uint16_t a : k.attrs) {
            const DAttr &d = attrs_[a];
            h.u64(d.id);
            h.u64(d.kind);
            h.u64(d.type);
            h.u64(d.max_len);
            h.u64(d.since);
            h.str(d.name);
        }
    }
    // steps: record, payload (decoded exactly with its version), materials
    uint64_t involves = 0, prev_when = 0;
    std::vector<uint64_t> when_of(size_t(ns) + 1, 0);
    std::vector<uint16_t> kind16(size_t(ns) + 1, 0);
    for (uint32_t s = 1; s <= ns; s++) {
        lf::StepRec r;
        if (!st.step_get(s, r)) {
            problem("step " + std::to_string(s) + " missing");
            continue;
        }
        h.u64(r.oid);
        h.u64(r.kind);
        h.u64(r.schema_ver);
        h.u64(r.who);
        h.u64(r.when);
        h.u64(r.payload_len);
        h.bytes(r.payload, r.payload_len);
        kind16[s] = r.kind;
        when_of[s] = r.when;
        if (r.oid != s || r.kind >= kinds_.size() || r.who >= lf::kWhoCount || r.schema_ver > version_) {
            problem("step " + std::to_string(s) + ": oid, kind, who or version out of range");
            continue;
        }
        const DKind &k = kinds_[r.kind];
        if (r.schema_ver < k.since || (k.retired && r.schema_ver >= k.retired))
            problem("step " + std::to_string(s) + " recorded when its kind " + k.name + " was not live");
        if (s > 1 && r.when <= prev_when) problem("step " + std::to_string(s) + ": when does not increase");
        prev_when = r.when;
        try {
            decode(s, r.kind, r.schema_ver, r.payload, r.payload_len, [](const DAttr &, const uint8_t *, uint16_t) {});
        } catch (const std::exception &e) {
            problem(e.what());
        }
        uint32_t prev = 0, n = 0;
        bool ok = true;
        st.step_mats(s, [&](uint32_t m) {
            ok = ok && m > prev && m <= nm;
            prev = m;
            n++;
            h.u64(m);
        });
        h.u64(n);
        if (!ok || n == 0) problem("step " + std::to_string(s) + ": materials not in oid order, unknown, or none");
        involves += n;
    }
    if (involves != n_involves_)
        problem("involves: " + std::to_string(involves) + " rows, the log made " + std::to_string(n_involves_));
    // materials: record, history (length nsteps, in `when` order), newest step per kind
    std::vector<uint8_t> state_of_mat(size_t(nm) + 1, 0xff);
    std::vector<uint32_t> newest(kinds_.size());
    uint64_t sum_nsteps = 0;
    for (uint32_t m = 1; m <= nm; m++) {
        lf::MatRec r;
        if (!st.mat_get(m, r)) {
            problem("material " + std::to_string(m) + " missing");
            continue;
        }
        size_t nl = strnlen(r.name, lf::kNameMax + 1);
        h.u64(r.oid);
        h.u64(r.kind);
        h.u64(r.state);
        h.u64(r.nsteps);
        h.bytes(r.name, std::min(nl, lf::kNameMax));
        h.u64(nl);
        state_of_mat[m] = r.state;
        if (r.oid != m || r.kind >= lf::NMATKINDS || r.state >= lf::NSTATES || nl > lf::kNameMax ||
            !state_of_line(r.kind, r.state))
            problem("material " + std::to_string(m) + ": oid, kind, state or name out of range");
        if (nl <= lf::kNameMax && st.mat_by_name(r.name) != m)
            problem(std::string("material ") + std::to_string(m) + ": its name " + r.name + " finds another");
        ids_.clear();
        st.hist(m, [&](uint32_t s) { ids_.push_back(s); });
        if (ids_.size() != r.nsteps || ids_.empty())
            problem("material " + std::to_string(m) + ": history of " + std::to_string(ids_.size()) +
                    " steps, nsteps " + std::to_string(r.nsteps));
        sum_nsteps += r.nsteps;
        std::fill(newest.begin(), newest.end(), 0);
        uint64_t pw = 0;
        for (size_t i = 0; i < ids_.size(); i++) {
            uint32_t s = ids_[i];
            h.u64(s);
            if (s == 0 || s > ns) {
                problem("material " + std::to_string(m) + ": history holds no step " + std::to_string(s));
                continue;
            }
            if (i && when_of[s] < pw) problem("material " + std::to_string(m) + ": history out of `when` order");
            pw = when_of[s];
            if (kind16[s] < newest.size()) newest[kind16[s]] = s;
        }
        for (uint16_t k = 0; k < kinds_.size(); k++) {
            uint32_t l = st.latest(m, k);
            h.u64(l);
            if (l != newest[k])
                problem("material " + std::to_string(m) + ": latest of " + kinds_[k].name + " is " +
                        std::to_string(l) + ", its history's newest " + std::to_string(newest[k]));
        }
    }
    if (sum_nsteps != n_involves_) problem("the materials' nsteps add up to " + std::to_string(sum_nsteps));
    // queues: in oid order, every material in exactly the queue of its state
    std::vector<uint8_t> seen(size_t(nm) + 1, 0);
    uint64_t total = 0;
    ids_.resize(nm);
    for (int s = 0; s < lf::NSTATES; s++) {
        size_t n = st.queue(uint8_t(s), nm, ids_.data());
        h.u64(n);
        total += n;
        for (size_t i = 0; i < n && i < nm; i++) {
            uint32_t m = ids_[i];
            h.u64(m);
            if (m == 0 || m > nm || (i && m <= ids_[i - 1]) || state_of_mat[m] != s || seen[m]++)
                problem(std::string("queue ") + lf::kStateNames[s] + " holds " + std::to_string(m) +
                        " out of order, twice, or not in that state");
        }
    }
    if (total != nm) problem("the queues hold " + std::to_string(total) + " materials, not " + std::to_string(nm));
    return h.h;
}

int Replayer::verify() {
    std::vector<std::string> problems;
    char hex[2][20];
    uint64_t d[2] = {0, 0};
    try {
        store_->commit();
        if (sys_.persistent) {   // the store's own dictionary must be the log's
            std::vector<lf::KindEntry> ks;
            std::vector<lf::AttrEntry> as;
            store_->dict_load(ks, as);
            std::vector<DKind> kinds = kinds_;
            std::vector<DAttr> attrs = attrs_;
            uint32_t version = version_;
            rebuild_dict(ks, as);
            bool same = kinds.size() == kinds_.size() && attrs.size() == attrs_.size() && version == version_;
            for (size_t i = 0; same && i < kinds.size(); i++)
                same = kinds[i].name == kinds_[i].name && kinds[i].since == kinds_[i].since &&
                       kinds[i].retired == kinds_[i].retired && kinds[i].attrs == kinds_[i].attrs;
            for (size_t i = 0; same && i < attrs.size(); i++)
                same = attrs[i].name == attrs_[i].name && attrs[i].kind == attrs_[i].kind &&
                       attrs[i].type == attrs_[i].type && attrs[i].max_len == attrs_[i].max_len &&
                       attrs[i].since == attrs_[i].since;
            if (!same) problems.push_back("dict_load does not give back the log's dictionary");
        }
        d[0] = digest(problems);
        std::snprintf(hex[0], sizeof hex[0], "%016" PRIx64, d[0]);
        std::fprintf(stderr, "labflow verify: %s digest %s (%u materials, %u steps, %" PRIu64 " involves, %zu kinds)\n",
                    sys_.name.c_str(), hex[0], n_mat_, n_step_, n_involves_, kinds_.size());
        if (sys_.persistent) {
            store_->close();
            store_.reset();
            store_ = sys_.make(opt_.dir, false);
            if (!store_) throw std::runtime_error("the factory did not reopen the database");
            if (!opt_.fault.empty()) store_.reset(new FaultyStore(std::move(store_), opt_.fault, true));
            std::vector<lf::KindEntry> ks;
            std::vector<lf::AttrEntry> as;
            store_->dict_load(ks, as);
            rebuild_dict(ks, as);
            std::vector<std::string> again;
            d[1] = digest(again);
            for (auto &p : again) problems.push_back("reopened: " + p);
            std::snprintf(hex[1], sizeof hex[1], "%016" PRIx64, d[1]);
            std::fprintf(stderr, "labflow verify: %s reopened digest %s\n", sys_.name.c_str(), hex[1]);
            if (d[1] != d[0])
                problems.push_back(std::string("the reopened database's digest ") + hex[1] + " differs from " + hex[0]);
        } else {
            std::fprintf(stderr, "labflow verify: %s is transient: no reopen\n", sys_.name.c_str());
        }
    } catch (const std::exception &e) {
        problems.push_back(std::string(sys_.name) + ": " + e.what());
    }
    std::fflush(stdout);
    for (const std::string &p : problems) std::cerr << "labflow verify FAILED: " << p << "\n";
    if (problems.empty()) std::fprintf(stderr, "labflow verify: %s ok\n", sys_.name.c_str());
    return problems.empty() ? 0 : 3;
}

bool Replayer::finish() {
    try {
        if (out_) {
            if (std::fclose(out_) != 0) throw std::runtime_error(opt_.out + ": write error");
            out_ = nullptr;
        }
        if (store_) {
            store_->commit();
            store_->close();
            store_.reset();
        }
    } catch (const std::exception &e) {
        fail(std::string(sys_.name) + ": " + e.what());
        return false;
    }
    return true;
}

// -- main ---------------------------------------------------------------------------------

Replayer *g_rep;
bool g_reported = false;

void report_failure() {
    if (!g_reported && g_rep->failed()) {
        std::cerr << "labflow: " << g_rep->error() << std::endl;
        g_reported = true;
    }
}

void bench_interval(benchmark::State &state, int k) {
    for (auto _ : state) {
        if (!g_rep->run_interval(k)) {
            report_failure();
            state.SkipWithError(g_rep->error().c_str());
            return;
        }
        const IntervalStats &s = g_rep->stats(k);
        state.SetIterationTime(s.elapsed_s);
        state.counters["user_s"] = s.user_s;
        state.counters["sys_s"] = s.sys_s;
        state.counters["majflt"] = s.majflt;
        state.counters["minflt"] = s.minflt;
        state.counters["backlog_commit_s"] = s.backlog_commit_s;
        state.counters["interval_commit_s"] = s.interval_commit_s;
        state.counters["file_bytes"] = double(s.file_bytes);
        state.counters["alloc_bytes"] = double(s.alloc_bytes);
        state.counters["cut_file_bytes"] = double(s.cut_file_bytes);
        state.counters["requests"] = double(s.requests);
    }
}

bool dir_is_empty(const std::string &dir) {
    DIR *d = opendir(dir.c_str());
    if (!d) return false;
    bool empty = true;
    while (dirent *e = readdir(d))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) empty = false;
    closedir(d);
    return empty;
}

using benchmain::remove_tree;

}  // namespace

int main(int argc, char **argv) {
    Options o;
    benchflags::take(argc, argv, "labflow", "labflow_", [&](const std::string &k, const std::string &v) {
        if (k == "labflow_log") o.log = v;
        else if (k == "labflow_out") o.out = v;
        else if (k == "labflow_dir") o.dir = v;
        else if (k == "labflow_system") o.system = v;
        else if (k == "labflow_verify") o.verify = v.empty() || v == "1" || v == "true";
        else if (k == "labflow_deadline") {
            char *end = nullptr;
            o.deadline_s = std::strtod(v.c_str(), &end);
            if (v.empty() || *end || !(o.deadline_s >= 0)) return false;   // usage: exit 2
        }
        else if (k == "labflow_inject_fault" && (v == "queue" || v == "reopen")) o.fault = v;
        else return false;
        return true;
    }, &o.list);
    auto &reg = lf::systems();
    // --benchmark_list_tests: the names only, of the system chosen or of every system, and
    // no replay (a runner asks the binary which systems it holds)
    bool list_tests = false;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "--benchmark_list_tests" ||
            (a.rfind("--benchmark_list_tests=", 0) == 0 && a != "--benchmark_list_tests=false" &&
             a != "--benchmark_list_tests=0"))
            list_tests = true;
    }
    if (list_tests) {
        if (!benchmain::init(argc, argv)) return 2;
        for (const lf::SystemInfo &s : reg)
            if (o.system.empty() || s.name == o.system)
                for (const char *cut : kCutNames)
                    benchmark::RegisterBenchmark(("labflow/" + s.name + "/" + cut).c_str(),
                                                 [](benchmark::State &st) {
                                                     for (auto _ : st) st.SkipWithError("listed only");
                                                 })
                        ->Iterations(1)
                        ->UseManualTime()
                        ->Unit(benchmark::kMillisecond);
        benchmark::RunSpecifiedBenchmarks();
        benchmark::Shutdown();
        return 0;
    }
    if (o.list) {
        for (const lf::SystemInfo &s : reg) std::cout << s.name << (s.persistent ? " persistent" : " transient") << "\n";
        return 0;
    }
    const lf::SystemInfo *sys = nullptr;
    for (const lf::SystemInfo &s : reg)
        if (s.name == o.system) sys = &s;
    if (!sys) {
        std::cerr << "labflow: --labflow_system=NAME names one of:";
        for (const lf::SystemInfo &s : reg) std::cerr << " " << s.name;
        std::cerr << (o.system.empty() ? " (none given)\n" : (" (not " + o.system + ")\n"));
        return 2;
    }
    if (o.log.empty()) {
        std::cerr << "labflow: --labflow_log=PATH is required\n";
        return 2;
    }
    if (!benchmain::init(argc, argv)) return 2;

    std::string tmp_root;
    if (o.dir.empty()) {
        o.dir = tmp_root = benchmain::temp_dir("labflow", "labflow");
        if (o.dir.empty()) return 2;
    } else if (::mkdir(o.dir.c_str(), 0755) != 0 && !(errno == EEXIST && dir_is_empty(o.dir))) {
        std::cerr << "labflow: --labflow_dir=" << o.dir << ": "
                  << (errno == EEXIST ? "exists and is not an empty directory" : std::strerror(errno)) << "\n";
        return 2;
    }

    int rc = 0;
    {
        Replayer rep(o, *sys);
        g_rep = &rep;
        if (!rep.start()) {
            report_failure();
            rc = 1;
        } else {
            benchmark::AddCustomContext("labflow_log", o.log);
            benchmark::AddCustomContext("labflow_system", sys->name);
            benchmark::AddCustomContext("labflow_dir", o.dir);
            for (int k = 1; k <= kIntervals; k++)
                benchmark::RegisterBenchmark(("labflow/" + sys->name + "/" + kCutNames[k - 1]).c_str(),
                                             [k](benchmark::State &st) { bench_interval(st, k); })
                    ->Iterations(1)
                    ->UseManualTime()
                    ->Unit(benchmark::kMillisecond);
            benchmark::RunSpecifiedBenchmarks();
            benchmark::Shutdown();
            if (!rep.failed()) rep.run_to_end();
            if (rep.failed()) {
                report_failure();
                rc = rep.past_deadline() ? 4 : 1;
            } else if (o.verify) {
                rc = rep.verify();
            }
            if (!rep.finish() && rc == 0) {
                report_failure();
                rc = 1;
            }
        }
    }
    if (!tmp_root.empty()) remove_tree(tmp_root);
    return rc;
}
