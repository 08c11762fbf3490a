/* nginx's slab sizes as the embedded store reads them
 * (src/core/slab.hpp). */

#include "core/slab.hpp"

#include <gtest/gtest.h>

namespace {

constexpr size_t kPage = 4096;

TEST(SlabBlock, ChunksOfAPowerOfTwoUpToHalfAPageThenPages) {
    EXPECT_EQ(rl::slabBlock(1, kPage).chunk, 8u);
    EXPECT_EQ(rl::slabBlock(8, kPage).chunk, 8u);
    EXPECT_EQ(rl::slabBlock(135, kPage).chunk, 256u);
    EXPECT_EQ(rl::slabBlock(256, kPage).chunk, 256u);
    EXPECT_EQ(rl::slabBlock(2048, kPage).chunk, 2048u);
    EXPECT_EQ(rl::slabBlock(2048, kPage).pages, 0u);
    EXPECT_EQ(rl::slabBlock(2049, kPage).chunk, 0u);
    EXPECT_EQ(rl::slabBlock(2049, kPage).pages, 1u);
    EXPECT_EQ(rl::slabBlock(4096, kPage).pages, 1u);
    EXPECT_EQ(rl::slabBlock(32147, kPage).pages, 8u);   /* 4000 times */
    EXPECT_EQ(rl::slabBlock(32769, kPage).pages, 9u);
}

TEST(SlabBlock, WhatMakesRoom) {
    rl::SlabBlock small = rl::slabBlock(135, kPage);
    rl::SlabBlock other = rl::slabBlock(600, kPage);
    rl::SlabBlock page = rl::slabBlock(3000, kPage);
    rl::SlabBlock big = rl::slabBlock(32147, kPage);
    /* a chunk: one of its size, or a page */
    EXPECT_TRUE(rl::makesRoomFor(small, small));
    EXPECT_FALSE(rl::makesRoomFor(other, small));
    EXPECT_TRUE(rl::makesRoomFor(page, small));
    EXPECT_TRUE(rl::makesRoomFor(big, small));
    /* pages: as many or more, never chunks */
    EXPECT_FALSE(rl::makesRoomFor(small, page));
    EXPECT_TRUE(rl::makesRoomFor(page, page));
    EXPECT_FALSE(rl::makesRoomFor(page, big));
    EXPECT_FALSE(rl::makesRoomFor(small, big));
    EXPECT_TRUE(rl::makesRoomFor(big, big));
    EXPECT_TRUE(rl::makesRoomFor(rl::slabBlock(40000, kPage), big));
}

TEST(SlabPages, AsNgxSlabInitCountsThem) {
    EXPECT_EQ(rl::slabPages(1000, kPage), 0u);
    /* 1 MB: 254 pages of 4096 bytes and their 24-byte descriptors, less
     * the pool's header and the first page's alignment */
    EXPECT_EQ(rl::slabPages(1 << 20, kPage), 253u);
    EXPECT_EQ(rl::slabPages(10 << 20, kPage), 2543u);
}

TEST(StatesThatFit, ChunksAPageOrPagesAState) {
    /* the zone: a 1 MB zone holds 4000 small states... */
    EXPECT_EQ(rl::statesThatFit(1 << 20, 135, kPage), 252u * 16);
    /* ...and 31 of a 4000r/m sliding_log (8 pages each) */
    EXPECT_EQ(rl::statesThatFit(1 << 20, 32147, kPage), 31u);
    EXPECT_EQ(rl::statesThatFit(32768, 32147, kPage), 0u);
    EXPECT_EQ(rl::statesThatFit(1 << 20, 0, kPage), 0u);
}

}  // namespace
