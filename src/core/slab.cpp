/*
 * slab.cpp: nginx's slab allocator's sizes, as the embedded store needs
 * them (see slab.hpp).
 */

#include "slab.hpp"

namespace rl {
namespace {

/* ngx_slab_pool_t and its per-size slots and stats, ngx_slab_page_t:
 * at most these on a 64-bit build (nginx 1.22 to 1.26) */
constexpr size_t kPoolHeader = 200;
constexpr size_t kPerSize = 24 + 32;
constexpr size_t kPageDescriptor = 24;
constexpr size_t kMinChunk = 8;

}  // namespace

SlabBlock slabBlock(size_t bytes, size_t pageSize) {
    if (bytes > pageSize / 2) {
        return {0, (bytes + pageSize - 1) / pageSize};
    }
    size_t chunk = kMinChunk;
    while (chunk < bytes) {
        chunk <<= 1;
    }
    return {chunk, 0};
}

bool makesRoomFor(const SlabBlock &freed, const SlabBlock &wanted) {
    if (wanted.chunk > 0) {
        return freed.pages > 0 || freed.chunk == wanted.chunk;
    }
    return freed.pages >= wanted.pages;
}

size_t slabPages(size_t zoneBytes, size_t pageSize) {
    size_t sizes = 0;
    for (size_t s = kMinChunk; s < pageSize; s <<= 1) {
        sizes++;
    }
    size_t header = kPoolHeader + sizes * kPerSize;
    if (zoneBytes <= header + pageSize) {
        return 0;
    }
    size_t pages = (zoneBytes - header) / (pageSize + kPageDescriptor);
    /* the first page is aligned: at most one is lost to it */
    return pages > 0 ? pages - 1 : 0;
}

size_t statesThatFit(size_t zoneBytes, size_t stateBytes, size_t pageSize,
                     size_t reservedPages) {
    size_t pages = slabPages(zoneBytes, pageSize);
    if (pages <= reservedPages || stateBytes == 0) {
        return 0;
    }
    pages -= reservedPages;
    SlabBlock b = slabBlock(stateBytes, pageSize);
    return b.pages > 0 ? pages / b.pages : pages * (pageSize / b.chunk);
}

}  // namespace rl
