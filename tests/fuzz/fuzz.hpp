/* Fuzz targets of the C++ core: each takes bytes, runs them through a
 * parser the module feeds with what it does not control (Redis' replies,
 * configuration text, client key values) and checks what the parser
 * promises, not only that it does not crash. Each is run by libFuzzer
 * (tests/fuzz/libfuzzer_main.cpp, `make fuzz`) and, over the corpus kept
 * in tests/fuzz/corpus/TARGET/ (seeds and every input that once failed),
 * by the unit tests (tests/fuzz_corpus_test.cpp). */
#pragma once

#include <cstddef>
#include <cstdint>

namespace rl::fuzz {

/* A broken promise: libFuzzer's driver aborts (a crash it keeps), the
 * unit tests' throws (a failure naming the input). */
[[noreturn]] void fail(const char* what, const char* file, int line);

#define FUZZ_CHECK(cond) \
    ((cond) ? (void) 0 : ::rl::fuzz::fail(#cond, __FILE__, __LINE__))

/* Reads the input from the front, as a fuzz target picks its shape. */
class Input {
public:
    Input(const uint8_t* data, size_t size) : p_(data), left_(size) {}

    uint8_t byte() {
        if (left_ == 0) {
            return 0;
        }
        left_--;
        return *p_++;
    }

    /* up to n bytes (fewer at the end) */
    const char* take(size_t n, size_t* got) {
        *got = n < left_ ? n : left_;
        const char* s = reinterpret_cast<const char*>(p_);
        p_ += *got;
        left_ -= *got;
        return s;
    }

    const char* rest(size_t* got) { return take(left_, got); }

private:
    const uint8_t* p_;
    size_t left_;
};

void reply(const uint8_t* data, size_t size);
void trailer(const uint8_t* data, size_t size);
void cluster(const uint8_t* data, size_t size);
void rate(const uint8_t* data, size_t size);
void stateKey(const uint8_t* data, size_t size);
void api(const uint8_t* data, size_t size);
void fleet(const uint8_t* data, size_t size);
void timeZone(const uint8_t* data, size_t size);

struct Target {
    const char* name;   /* its corpus: tests/fuzz/corpus/NAME */
    void (*run)(const uint8_t* data, size_t size);
};

inline constexpr Target kTargets[] = {
    {"reply", reply},
    {"trailer", trailer},
    {"cluster", cluster},
    {"rate", rate},
    {"state_key", stateKey},
    {"api", api},
    {"fleet", fleet},
    {"time_zone", timeZone},
};

}  // namespace rl::fuzz
