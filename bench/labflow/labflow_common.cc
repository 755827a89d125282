// labflow_common.cc -- what every LabFlow-1 replay binary links once: the fixed names
// (states, material kinds, who) in the numbering of gen.py, and the registry of systems
// that each system's file fills with a static lf::Registration.
#include "labflow.h"

namespace lf {

const char *const kStateNames[NSTATES] = {"received", "prepped",   "measured", "passed", "new",
                                          "amplified", "sequenced", "released", "failed"};
const char *const kMatKindNames[NMATKINDS] = {"sample", "segment"};
const char *const kWhoNames[kWhoCount] = {"ada",  "barbara", "claude",   "dana",    "edsger", "frances",
                                          "grace", "hedy",   "ivan",     "jean",    "ken",    "leslie",
                                          "margaret", "niklaus", "olga", "radia"};

std::vector<SystemInfo> &systems() {
    static std::vector<SystemInfo> r;
    return r;
}

Registration::Registration(const char *name, bool persistent, StoreFactory make) {
    systems().push_back(SystemInfo{name, persistent, std::move(make)});
}

}  // namespace lf
