/* libFuzzer's entry for one target, named at build time:
 * clang++ -fsanitize=fuzzer -DRL_FUZZ_TARGET=reply ... (tests/fuzz/run) */
#include "fuzz.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifndef RL_FUZZ_TARGET
#error "RL_FUZZ_TARGET names the target (tests/fuzz/fuzz.hpp kTargets)"
#endif

#define RL_FUZZ_STR2(x) #x
#define RL_FUZZ_STR(x) RL_FUZZ_STR2(x)

namespace rl::fuzz {

void fail(const char* what, const char* file, int line) {
    std::fprintf(stderr, "broken promise: %s (%s:%d)\n", what, file, line);
    std::abort();
}

namespace {

void (*target())(const uint8_t*, size_t) {
    for (const Target& t : kTargets) {
        if (std::strcmp(t.name, RL_FUZZ_STR(RL_FUZZ_TARGET)) == 0) {
            return t.run;
        }
    }
    std::fprintf(stderr, "no fuzz target %s\n", RL_FUZZ_STR(RL_FUZZ_TARGET));
    std::abort();
}

}  // namespace
}  // namespace rl::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static void (*run)(const uint8_t*, size_t) = rl::fuzz::target();
    run(data, size);
    return 0;
}
