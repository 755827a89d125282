// bench_main.h -- what the benchmark binaries' main() functions share (bench/tpcb/tpcb_main.cc,
// bench/oo7/oo7_main.cc, bench/range/range_main.cc, bench/labflow/labflow_main.cc): handing
// argv to Google Benchmark, a scratch directory for the database files (made, removed),
// comma lists for the JSON context, running the benchmarks and the exit status.
#pragma once

#include <benchmark/benchmark.h>
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "flags.h"

namespace benchmain {

// Google Benchmark takes what is left of argv (the drivers' own flags taken out first):
// false if an argument is unknown to it (main exits 2).
inline bool init(int &argc, char **argv) {
    benchmark::Initialize(&argc, argv);
    return !benchmark::ReportUnrecognizedArguments(argc, argv);
}

// A fresh directory $TMPDIR/<stem>.XXXXXX (TMPDIR unset or empty: /tmp); "" after saying
// why on stderr (`<prog>: cannot create a directory from ...`; main exits 2).
inline std::string temp_dir(const char *prog, const char *stem) {
    const char *t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/" + stem + ".XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back(0);
    if (!mkdtemp(buf.data())) {
        std::cerr << prog << ": cannot create a directory from " << tmpl << "\n";
        return "";
    }
    return buf.data();
}

// The one T of the binary (its configuration, its registry of systems), made on first use
// (also by a static initialiser of another object file)
template <class T>
T &the() {
    static T t;
    return t;
}

// dir and everything below it removed (what cannot be is left)
inline void remove_tree(const std::string &dir) {
    if (DIR *d = opendir(dir.c_str())) {
        while (dirent *e = readdir(d)) {
            if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, "..")) continue;
            std::string p = dir + "/" + e->d_name;
            struct stat sb;
            if (lstat(p.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode)) remove_tree(p);
            else ::unlink(p.c_str());
        }
        closedir(d);
    }
    ::rmdir(dir.c_str());
}

// The directory the database files go in: dir as given (made if need be), or, dir empty, a
// fresh one (temp_dir) that dir and root (what main removes at exit) are set to; false if
// it cannot be made (main exits 2).
inline bool scratch_dir(const char *prog, const char *stem, std::string &dir, std::string &root) {
    if (!dir.empty()) {
        ::mkdir(dir.c_str(), 0755);
        return true;
    }
    dir = root = temp_dir(prog, stem);
    return !dir.empty();
}

// main()'s tail: the registered benchmarks run, then `release` (what they left open or
// loaded), the scratch directory main made removed (root; "" if it made none), and the exit
// status: 3 if `failures` (an int, or an atomic one, read after the runs) counts failed
// runs (said on stderr: `<prog>: N run(s) FAILED`), else 0.
template <class Count, class Release>
int run(const char *prog, const Count &failures, const std::string &root, Release release) {
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    release();
    if (!root.empty()) remove_tree(root);
    int failed = failures;
    if (failed > 0) {
        std::cerr << prog << ": " << failed << " run(s) FAILED\n";
        return 3;
    }
    return 0;
}

// "a,b,c": the items (anything a stream writes) joined by commas
template <class C>
std::string join(const C &items) {
    std::ostringstream out;
    const char *sep = "";
    for (const auto &x : items) {
        out << sep << x;
        sep = ",";
    }
    return out.str();
}

}  // namespace benchmain
