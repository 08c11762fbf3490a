/* Every fuzz target (tests/fuzz/) over its corpus, tests/fuzz/corpus/
 * TARGET/: the seeds and every input that once broke a promise or
 * crashed, kept as regressions. `make fuzz` runs the same targets under
 * libFuzzer, for new inputs. */
#include "fuzz/fuzz.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace rl::fuzz {

void fail(const char* what, const char* file, int line) {
    throw std::runtime_error(std::string(what) + " (" + file + ":" +
                             std::to_string(line) + ")");
}

}  // namespace rl::fuzz

namespace {

namespace fs = std::filesystem;

fs::path corpusDir(const char* target) {
    return fs::path(__FILE__).parent_path() / "fuzz" / "corpus" / target;
}

class FuzzCorpus : public testing::TestWithParam<rl::fuzz::Target> {};

TEST_P(FuzzCorpus, EveryInputKeepsThePromises) {
    const rl::fuzz::Target& t = GetParam();
    fs::path dir = corpusDir(t.name);
    ASSERT_TRUE(fs::is_directory(dir)) << dir;
    size_t inputs = 0;
    for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
        if (!e.is_regular_file()) {
            continue;
        }
        std::ifstream f(e.path(), std::ios::binary);
        std::vector<uint8_t> data((std::istreambuf_iterator<char>(f)),
                                  std::istreambuf_iterator<char>());
        try {
            t.run(data.data(), data.size());
        } catch (const std::exception& ex) {
            ADD_FAILURE() << e.path() << ": " << ex.what();
        }
        inputs++;
    }
    EXPECT_GT(inputs, 0u) << "no seed in " << dir;
}

INSTANTIATE_TEST_SUITE_P(
    Targets, FuzzCorpus, testing::ValuesIn(rl::fuzz::kTargets),
    [](const testing::TestParamInfo<rl::fuzz::Target>& target) {
        return std::string(target.param.name);
    });

}  // namespace
