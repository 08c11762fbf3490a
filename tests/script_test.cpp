/* The embedded script, its SHA1 and the packed numbers of a call
 * (src/core/script.hpp). */

#include "core/script.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/reply.hpp"
#include "core/sha1.hpp"

namespace {

using namespace std::string_literals;

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
        EXPECT_NE(text.find("name == '"s + a + "' then"),
                  std::string_view::npos)
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
          "bucket.lua", "rl.lua"}) {
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

/* The numbers of a call: little-endian IEEE doubles, exact for every
 * integer below 2^53. */
TEST(Script, PutDoubleIsLittleEndian) {
    unsigned char b[16];
    EXPECT_EQ(rl::putDouble(b, 1.0), b + 8);
    const unsigned char one[] = {0, 0, 0, 0, 0, 0, 0xf0, 0x3f};
    EXPECT_EQ(std::memcmp(b, one, 8), 0);
    for (double v : {0.0, -27.0, 1e15, 9007199254740991.0}) {
        rl::putDouble(b + 8, v);
        EXPECT_EQ(rl::doubleAt(reinterpret_cast<char*>(b), 1), v);
    }
}

TEST(Script, SpecIsItsNumbersThenTheAlgorithmAndTheRule) {
    std::string spec(rl::specBytes("token_bucket", "api 2"), '?');
    auto* p = reinterpret_cast<unsigned char*>(spec.data());
    EXPECT_EQ(rl::writeSpec(p, "token_bucket", "api 2", 10, 1000000, 20, 0,
                            true, false),
              p + spec.size());
    EXPECT_EQ(spec.size(), 48u + 12u + 5u);
    const double want[] = {10, 1000000, 20, 0, 1, 12};
    for (size_t i = 0; i < rl::kSpecNumbers; i++) {
        EXPECT_EQ(rl::doubleAt(spec.data(), i), want[i]) << i;
    }
    EXPECT_EQ(spec.substr(48), "token_bucketapi 2");
    rl::writeSpec(p, "token_bucket", "api 2", 10, 1000000, 20, 0, false,
                  false);
    EXPECT_EQ(rl::doubleAt(spec.data(), 4), 0);
    rl::writeSpec(p, "token_bucket", "api 2", 10, 1000000, 10, 0, false,
                  true);
    EXPECT_EQ(rl::doubleAt(spec.data(), 4), 2);
    rl::writeSpec(p, "token_bucket", "api 2", 10, 1000000, 10, 0, true,
                  true);
    EXPECT_EQ(rl::doubleAt(spec.data(), 4), 3);
    /* a trial's (SPEC section 11): a dry run in its rule's place */
    rl::writeSpec(p, "token_bucket", "api 2", 10, 1000000, 10, 0, true,
                  false, false, true);
    EXPECT_EQ(rl::doubleAt(spec.data(), 4), 9);
    std::string place(rl::kPlaceBytes, '?');
    auto* q = reinterpret_cast<unsigned char*>(place.data());
    EXPECT_EQ(rl::placeRecord(q, 3), q + place.size());
    EXPECT_EQ(rl::doubleAt(place.data(), 0), 3);
}

/* A request of n rules: n and t, then each rule's key, spec and cost. */
TEST(Script, RequestRecords) {
    static_assert(rl::requestBytes(1) == 40, "n t k s c");
    EXPECT_EQ(rl::requestBytes(3), 88u);
    std::string head(rl::requestBytes(2), '?');
    auto* p = reinterpret_cast<unsigned char*>(head.data());
    unsigned char* end = rl::requestHead(p, 2, -27);
    end = rl::ruleRecord(end, 1, 2, 3);
    end = rl::ruleRecord(end, 4, 1, 0);
    EXPECT_EQ(end, p + head.size());
    const double want[] = {2, -27, 1, 2, 3, 4, 1, 0};
    for (size_t i = 0; i < 8; i++) {
        EXPECT_EQ(rl::doubleAt(head.data(), i), want[i]) << i;
    }
}

}  // namespace
