/* The usage histogram's buckets (src/core/usage.hpp). */

#include "core/usage.hpp"

#include <gtest/gtest.h>

namespace {

using rl::usage::bucket;

TEST(Usage, Buckets) {
    /* limit 10: used after the request = 10 - remaining */
    EXPECT_EQ(bucket(10, 10), 0u);  /* nothing used */
    EXPECT_EQ(bucket(10, 9), 0u);   /* 0.1 */
    EXPECT_EQ(bucket(10, 8), 1u);   /* 0.2 */
    EXPECT_EQ(bucket(4, 3), 1u);    /* 0.25: le 0.25 */
    EXPECT_EQ(bucket(10, 5), 2u);   /* 0.5 */
    EXPECT_EQ(bucket(10, 4), 3u);   /* 0.6 */
    EXPECT_EQ(bucket(10, 1), 4u);   /* 0.9 */
    EXPECT_EQ(bucket(10, 0), 5u);   /* 1 */
    EXPECT_EQ(bucket(10, -5), 6u);  /* in debt: beyond 1 */
    EXPECT_EQ(bucket(10, 20), 0u);  /* a bucket larger than N */
    EXPECT_EQ(bucket(0, 0), 6u);
    EXPECT_EQ(bucket(1000000000, 0), 5u);
    EXPECT_EQ(bucket(1000000000, 100000000), 4u);
}

}  // namespace
