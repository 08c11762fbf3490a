/* The embedded script, its SHA1 and the EVALSHA / EVAL argument vector:
 *
 *   EVALSHA sha n key_1..key_n  n now  alg_1 limit_1 window_1 burst_1
 *           cost_1 delay_1 ... alg_n ... delay_n  [refund]             */

#include "core/script.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/sha1.hpp"

namespace {

using namespace std::string_literals;

/* The argv as strings (pointer + length), with a guard entry after the
 * announced count that fillArgv must leave alone. */
struct Argv {
    explicit Argv(size_t rules, bool refund = false)
        : count(rl::argvCount(rules, refund)),
          argv(count + 1, kGuard),
          argvlen(count + 1, 12345) {}

    std::vector<std::string> strings() const {
        std::vector<std::string> out;
        for (size_t i = 0; i < count; i++) {
            EXPECT_NE(argv[i], nullptr) << "argv[" << i << "]";
            out.emplace_back(argv[i] == nullptr ? "" : argv[i], argvlen[i]);
        }
        return out;
    }

    void expectGuardIntact() const {
        EXPECT_EQ(argv[count], kGuard) << "wrote past argvCount entries";
        EXPECT_EQ(argvlen[count], 12345u) << "wrote past argvCount entries";
    }

    static constexpr const char* kGuard = "guard";
    size_t count;
    std::vector<const char*> argv;
    std::vector<size_t> argvlen;
};

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return {};
    }
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/* lua/ next to this file's tests/ directory. */
std::string luaDir() {
    std::string file = __FILE__;
    size_t slash = file.find_last_of('/');
    std::string dir = slash == std::string::npos ? "." : file.substr(0, slash);
    return dir + "/../lua/";
}

TEST(Script, TextHoldsEveryAlgorithmAndTheDriver) {
    std::string_view text = rl::scriptText();
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text.find('\0'), std::string_view::npos);
    for (const char* a : {"fixed_window", "sliding_window", "sliding_log",
                          "token_bucket", "leaky_bucket", "gcra"}) {
        EXPECT_NE(text.find("LOAD['"s + a + "']"), std::string_view::npos)
            << a;
    }
    EXPECT_NE(text.find("redis.call('TIME')"), std::string_view::npos);
    EXPECT_EQ(text.substr(text.size() - 1), "\n");
}

/* The build embeds the lua/ files byte for byte (quotes, backslashes). */
TEST(Script, TextEmbedsTheLuaFilesVerbatim) {
    for (const char* name :
         {"fixed_window.lua", "sliding_window.lua", "sliding_log.lua",
          "token_bucket.lua", "leaky_bucket.lua", "gcra.lua", "meter.lua",
          "rl.lua"}) {
        std::string source = readFile(luaDir() + name);
        if (source.empty()) {
            GTEST_SKIP() << "lua sources not found at " << luaDir();
        }
        EXPECT_NE(rl::scriptText().find(source), std::string_view::npos)
            << name << " is not embedded verbatim";
    }
    /* The driver comes last. */
    std::string driver = readFile(luaDir() + "rl.lua");
    std::string_view text = rl::scriptText();
    ASSERT_GE(text.size(), driver.size());
    EXPECT_EQ(text.substr(text.size() - driver.size()), driver);
}

TEST(Script, ShaIsSha1OfTheText) {
    std::string_view sha = rl::scriptSha();
    ASSERT_EQ(sha.size(), 40u);
    std::string expect(40, '?');
    rl::toHex(rl::sha1(rl::scriptText()), expect.data(), expect.size());
    EXPECT_EQ(sha, expect);
    for (char c : sha) {
        EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << sha;
    }
    /* Computed once: the same storage every time. */
    EXPECT_EQ(rl::scriptSha().data(), sha.data());
}

TEST(Script, ArgvCount) {
    EXPECT_EQ(rl::kArgsPerRule, 2u);
    EXPECT_EQ(rl::argvCount(1), 8u);
    EXPECT_EQ(rl::argvCount(3), 14u);
    EXPECT_EQ(rl::argvCount(1, false), 8u);
    EXPECT_EQ(rl::argvCount(1, true), 9u);
    EXPECT_EQ(rl::argvCount(3, true), 15u);
    EXPECT_EQ(rl::argvCount(rl::kMaxRulesPerCall),
              5 + 3 * rl::kMaxRulesPerCall);
    static_assert(rl::argvCount(2) == 11, "usable at compile time");
}

TEST(Script, NowIndex) {
    /* command, script, n, n keys, n, now */
    EXPECT_EQ(rl::argvNowIndex(1), 5u);
    EXPECT_EQ(rl::argvNowIndex(3), 7u);
    static_assert(rl::argvNowIndex(2) == 6, "usable at compile time");
}

const std::string_view kOneKey[] = {"rl:{10.0.0.1}:0123456789abcdef"};
const rl::RuleArgs kOneRule[] = {{"fixed_window 10 1000000 0 0 0", "1"}};

const std::string_view kThreeKeys[] = {"k:{a}:1111111111111111",
                                       "k:{a}:2222222222222222",
                                       "k:{a}:3333333333333333"};
const rl::RuleArgs kThreeRules[] = {
    {"fixed_window 10 1000000 0 0 0", "1"},
    {"gcra 100 60000000 5 3 1", "2"},
    {"token_bucket 1000 86400000000 1000 0 0", "1"}};

std::vector<std::string> threeRuleTail() {
    return {"fixed_window 10 1000000 0 0 0", "1",
            "gcra 100 60000000 5 3 1", "2",
            "token_bucket 1000 86400000000 1000 0 0", "1"};
}

TEST(Script, OneRuleEvalsha) {
    Argv a(1);
    rl::fillArgv(a.argv.data(), a.argvlen.data(), "EVALSHA", rl::scriptSha(),
                 "1", kOneKey, kOneRule, 1);
    std::vector<std::string> expect = {
        "EVALSHA", std::string(rl::scriptSha()), "1",
        "rl:{10.0.0.1}:0123456789abcdef", "1", "",
        "fixed_window 10 1000000 0 0 0", "1"};
    EXPECT_EQ(a.strings(), expect);
    a.expectGuardIntact();
}

TEST(Script, OneRuleEval) {
    Argv a(1);
    rl::fillArgv(a.argv.data(), a.argvlen.data(), "EVAL", rl::scriptText(),
                 "1", kOneKey, kOneRule, 1);
    std::vector<std::string> expect = {
        "EVAL", std::string(rl::scriptText()), "1",
        "rl:{10.0.0.1}:0123456789abcdef", "1", "",
        "fixed_window 10 1000000 0 0 0", "1"};
    EXPECT_EQ(a.strings(), expect);
    a.expectGuardIntact();
}

TEST(Script, ThreeRulesEvalsha) {
    Argv a(3);
    rl::fillArgv(a.argv.data(), a.argvlen.data(), "EVALSHA", rl::scriptSha(),
                 "3", kThreeKeys, kThreeRules, 3);
    std::vector<std::string> expect = {
        "EVALSHA", std::string(rl::scriptSha()), "3",
        "k:{a}:1111111111111111", "k:{a}:2222222222222222",
        "k:{a}:3333333333333333", "3", ""};
    for (const std::string& s : threeRuleTail()) {
        expect.push_back(s);
    }
    EXPECT_EQ(a.strings(), expect);
    a.expectGuardIntact();
}

TEST(Script, ThreeRulesEval) {
    Argv a(3);
    rl::fillArgv(a.argv.data(), a.argvlen.data(), "EVAL", rl::scriptText(),
                 "3", kThreeKeys, kThreeRules, 3);
    std::vector<std::string> expect = {
        "EVAL", std::string(rl::scriptText()), "3",
        "k:{a}:1111111111111111", "k:{a}:2222222222222222",
        "k:{a}:3333333333333333", "3", ""};
    for (const std::string& s : threeRuleTail()) {
        expect.push_back(s);
    }
    EXPECT_EQ(a.strings(), expect);
    a.expectGuardIntact();
}

/* A refund sends the decision's time and a trailing "refund". */
TEST(Script, OneRuleRefund) {
    Argv a(1, true);
    rl::fillArgv(a.argv.data(), a.argvlen.data(), "EVALSHA", rl::scriptSha(),
                 "1", kOneKey, kOneRule, 1, "1700000000123456", true);
    std::vector<std::string> expect = {
        "EVALSHA", std::string(rl::scriptSha()), "1",
        "rl:{10.0.0.1}:0123456789abcdef", "1", "1700000000123456",
        "fixed_window 10 1000000 0 0 0", "1", "refund"};
    EXPECT_EQ(a.strings(), expect);
    a.expectGuardIntact();
}

TEST(Script, ThreeRulesEvalRefund) {
    Argv a(3, true);
    rl::fillArgv(a.argv.data(), a.argvlen.data(), "EVAL", rl::scriptText(),
                 "3", kThreeKeys, kThreeRules, 3, "42", true);
    std::vector<std::string> expect = {
        "EVAL", std::string(rl::scriptText()), "3",
        "k:{a}:1111111111111111", "k:{a}:2222222222222222",
        "k:{a}:3333333333333333", "3", "42"};
    for (const std::string& s : threeRuleTail()) {
        expect.push_back(s);
    }
    expect.push_back("refund");
    EXPECT_EQ(a.strings(), expect);
    a.expectGuardIntact();
}

/* Tests decide at a time of their choosing: `now` without "refund". */
TEST(Script, DecisionWithATime) {
    Argv a(1);
    rl::fillArgv(a.argv.data(), a.argvlen.data(), "EVALSHA", rl::scriptSha(),
                 "1", kOneKey, kOneRule, 1, "1700000000000000");
    EXPECT_EQ(a.strings()[rl::argvNowIndex(1)], "1700000000000000");
    EXPECT_EQ(a.strings().back(), "1"); /* the cost, not "refund" */
    a.expectGuardIntact();
}

/* The C arrays the module passes give the same vector. */
TEST(Script, CArraysGiveTheSameVector) {
    Argv a(3, true);
    rl::fillArgv(a.argv.data(), a.argvlen.data(), "EVALSHA", rl::scriptSha(),
                 "3", kThreeKeys, kThreeRules, 3, "42", true);
    const char* keys[3];
    size_t keyLens[3];
    const char* args[3 * rl::kArgsPerRule];
    size_t argLens[3 * rl::kArgsPerRule];
    for (size_t k = 0; k < 3; k++) {
        keys[k] = kThreeKeys[k].data();
        keyLens[k] = kThreeKeys[k].size();
        args[2 * k] = kThreeRules[k].spec.data();
        argLens[2 * k] = kThreeRules[k].spec.size();
        args[2 * k + 1] = kThreeRules[k].cost.data();
        argLens[2 * k + 1] = kThreeRules[k].cost.size();
    }
    Argv b(3, true);
    rl::fillArgv(b.argv.data(), b.argvlen.data(), "EVALSHA", rl::scriptSha(),
                 "3", keys, keyLens, args, argLens, 3, "42", true);
    EXPECT_EQ(a.strings(), b.strings());
    b.expectGuardIntact();
}

/* Keys are passed by length: NUL bytes survive. */
TEST(Script, BinaryKeysKeepTheirLength) {
    std::string key = "rl:{\x7f\0\0\x01}:0123456789abcdef"s;
    std::string_view keys[] = {key};
    Argv a(1);
    rl::fillArgv(a.argv.data(), a.argvlen.data(), "EVALSHA", rl::scriptSha(),
                 "1", keys, kOneRule, 1);
    EXPECT_EQ(a.argvlen[3], key.size());
    EXPECT_EQ(a.strings()[3], key);
}

/* The empty `now` asks the script for Redis' TIME: a zero-length
 * argument, but still a valid pointer for hiredis. */
TEST(Script, NowIsEmptyByDefault) {
    std::string_view keys[] = {"a", "b"};
    rl::RuleArgs rules[] = {{"fixed_window 1 1000 0 0 0", "1"},
                            {"fixed_window 2 2000 0 0 0", "1"}};
    Argv a(2);
    rl::fillArgv(a.argv.data(), a.argvlen.data(), "EVALSHA", rl::scriptSha(),
                 "2", keys, rules, 2);
    size_t now = rl::argvNowIndex(2);
    EXPECT_NE(a.argv[now], nullptr);
    EXPECT_EQ(a.argvlen[now], 0u);
    EXPECT_EQ(a.strings()[now - 1], "2");
}

}  // namespace
