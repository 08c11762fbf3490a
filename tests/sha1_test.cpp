/* SHA-1 against known vectors; the lengths around the 55/56 and 64
 * byte padding edges were computed with sha1sum. */

#include "core/sha1.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace {

std::string hexOf(std::string_view data) {
    std::string out(40, '?');
    rl::toHex(rl::sha1(data), out.data(), out.size());
    return out;
}

/* "abcdefghijklmnopqrstuvwxyzabc..." cut to n bytes. */
std::string alphabet(size_t n) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; i++) {
        s[i] = static_cast<char>('a' + i % 26);
    }
    return s;
}

TEST(Sha1, Fips180Vectors) {
    EXPECT_EQ(hexOf(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    EXPECT_EQ(hexOf("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    EXPECT_EQ(hexOf("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    EXPECT_EQ(hexOf("The quick brown fox jumps over the lazy dog"),
              "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12");
}

TEST(Sha1, MillionA) {
    EXPECT_EQ(hexOf(std::string(1000000, 'a')),
              "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

struct LengthCase {
    size_t length;
    const char* hex;
};

class Sha1Length : public testing::TestWithParam<LengthCase> {};

/* 55 bytes: padding and length fit one block; 56..63: the length
 * spills into a second block; 64: a full block then padding alone. */
TEST_P(Sha1Length, MatchesSha1sum) {
    EXPECT_EQ(hexOf(alphabet(GetParam().length)), GetParam().hex);
}

INSTANTIATE_TEST_SUITE_P(
    Sha1, Sha1Length,
    testing::Values(
        LengthCase{55, "a617d006d1ca12671785098a19a87fe58443bde9"},
        LengthCase{56, "4ad5bb7ae3c4024768d364b77c52128ea3cffebe"},
        LengthCase{63, "fc8a5ab77259625085ead3ec96515b3b8d933fad"},
        LengthCase{64, "93249d4c2f8903ebf41ac358473148ae6ddd7042"},
        LengthCase{65, "cf2a63cc308225cf07b498d2309a01dd0df52f67"},
        LengthCase{119, "edd0f1133d0e4ca5f3e98bb7e0295f31d20d2cdb"},
        LengthCase{120, "23a58eee587aa1f50d19a969ab36a3fe3e88c393"},
        LengthCase{128, "3698f9beb7cdf5b1e1ce786672fb234143d4df89"}),
    [](const testing::TestParamInfo<LengthCase>& p) {
        return "length" + std::to_string(p.param.length);
    });

TEST(Sha1, BinaryInputWithNul) {
    EXPECT_EQ(hexOf(std::string_view("a\0b", 3)),
              "4a3dec2d1f8245280855c42db0ee4239f917fdb8");
    EXPECT_NE(hexOf(std::string_view("a\0b", 3)),
              hexOf(std::string_view("a\0c", 3)));
}

TEST(Sha1, UnalignedInput) {
    std::string buffer = "x" + alphabet(65);
    EXPECT_EQ(hexOf(std::string_view(buffer).substr(1)),
              "cf2a63cc308225cf07b498d2309a01dd0df52f67");
}

TEST(Sha1, DigestBytes) {
    rl::Sha1Digest d = rl::sha1("abc");
    EXPECT_EQ(d[0], 0xa9);
    EXPECT_EQ(d[1], 0x99);
    EXPECT_EQ(d[19], 0x9d);
}

TEST(Sha1, ToHexWritesOnlyTheCharsAskedFor) {
    rl::Sha1Digest d = rl::sha1("abc");
    std::string out(48, '#');
    rl::toHex(d, out.data(), 16);
    EXPECT_EQ(out, "a9993e364706816a" + std::string(32, '#'));

    out.assign(48, '#');
    rl::toHex(d, out.data(), 40);
    EXPECT_EQ(out, "a9993e364706816aba3e25717850c26c9cd0d89d########");

    out.assign(48, '#');
    rl::toHex(d, out.data(), 0);
    EXPECT_EQ(out, std::string(48, '#'));
}

TEST(Sha1, ToHexIsLowercase) {
    std::string hex = hexOf("abc");
    for (char c : hex) {
        EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << hex;
    }
}

}  // namespace
