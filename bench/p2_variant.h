// p2_variant.h -- the head of every driver of one p2gen-generated data manager
// (bench/tpcb/tpcb_driver.cc, bench/oo7/oo7_p2.cc, bench/range/range_driver.cc,
// bench/labflow/labflow_p2.cc), each compiled once per variant as users build theirs:
//
//   c++ -DP2_VARIANT=<prefix> -DP2_HEADER='"<prefix>.h"' -DP2_NAME='"NAME"' ...
//       -D<PREFIX>_INLINE -I<generated> -c <driver>.cc
//
// It includes the variant's generated header and defines P2(name), the API's
// <prefix>_name, and P2_CAT (P2_PERSISTENT defaults to 0), and the open every driver does.
#pragma once

#include <stdexcept>
#include <string>

#ifndef P2_VARIANT
#error "compile with -DP2_VARIANT=<prefix> -DP2_HEADER='\"<prefix>.h\"' -DP2_NAME=... (see the driver's head)"
#endif
#ifndef P2_PERSISTENT
#define P2_PERSISTENT 0
#endif

#include P2_HEADER

#define P2_CAT_(a, b) a##b
#define P2_CAT(a, b) P2_CAT_(a, b)
#define P2(name) P2_CAT(P2_VARIANT, _##name)

namespace {   // internal linkage: every variant's object has its own

// P2(open) of dir (NULL: a transient database) into *db. A failed open calls
// failed(rc) while *db still holds its error message, then closes *db and sets it to NULL.
// Returns the open's code.
template <class Failed>
int p2_open(P2(db) **db, const char *dir, Failed failed) {
    int rc = P2(open)(db, dir);
    if (rc != P2_OK) {
        failed(rc);
        P2(close)(*db);
        *db = nullptr;
    }
    return rc;
}

// p2_open, a failure thrown as "<P2_NAME> open: <message>"
inline void p2_open_or_throw(P2(db) **db, const char *dir) {
    std::string msg;
    if (p2_open(db, dir, [&](int) { msg = std::string(P2_NAME) + " open: " + P2(errmsg)(*db); }) != P2_OK)
        throw std::runtime_error(msg);
}

}  // namespace
