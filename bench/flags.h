// flags.h -- the benchmark drivers' own command-line flags (--tpcb_*, --oo7_*, --range_*,
// --labflow_*), taken out of argv before Google Benchmark sees the rest. Shared by the
// benchmark binaries' main() (through bench_main.h).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace benchflags {

// "3,6 9" -> {"3", "6", "9"}: commas or spaces separate
inline std::vector<std::string> split(const std::string &s) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s + ",") {
        if (c == ',' || c == ' ') {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    return out;
}

// a non-negative decimal integer, or exit 2 with a message naming the program and flag
inline uint64_t to_u64(const char *prog, const std::string &flag, const std::string &v) {
    char *end = nullptr;
    errno = 0;
    unsigned long long x = std::strtoull(v.c_str(), &end, 10);
    if (v.empty() || *end || errno || v[0] == '-') {
        std::cerr << prog << ": --" << flag << ": not a non-negative integer: '" << v << "'\n";
        std::exit(2);
    }
    return x;
}

// Hand every --<prefix>KEY[=VALUE] of argv to apply(KEY, VALUE) (which returns false for
// an unknown key: exit 2) and keep the other arguments, in order, for Google Benchmark.
// With list: --<prefix>list[=V] sets *list (V other than 0: list the registered systems
// and exit) instead.
template <class Apply>
void take(int &argc, char **argv, const char *prog, const std::string &prefix, Apply apply,
          bool *list = nullptr) {
    int out = 1;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a.rfind("--" + prefix, 0) == 0) {
            size_t eq = a.find('=');
            std::string key = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
            std::string val = eq == std::string::npos ? "" : a.substr(eq + 1);
            if (list && key == prefix + "list") {
                *list = val.empty() || val != "0";
            } else if (!apply(key, val)) {
                std::cerr << prog << ": unknown option " << a << "\n";
                std::exit(2);
            }
        } else {
            argv[out++] = argv[i];
        }
    }
    argc = out;
    argv[argc] = nullptr;
}

}  // namespace benchflags
