/* How nginx's slab allocator (src/core/ngx_slab.c) serves a block, as
 * the embedded store needs to know it when its zone is full: which
 * freed block makes room for a new one, and how many states of a size
 * a zone holds. Sizes are the pool's: chunks of a power of two from 8
 * bytes to half a page, whole pages beyond. */
#pragma once

#include <cstddef>

namespace rl {

/* What the pool gives for a request of some bytes: a chunk of `chunk`
 * bytes (pages 0), or `pages` whole pages (chunk 0). */
struct SlabBlock {
    size_t chunk;
    size_t pages;
};

SlabBlock slabBlock(size_t bytes, size_t pageSize);

/* Whether freeing `freed` gives the pool room for `wanted` for sure: a
 * chunk of the same size (its page takes chunks of that size again),
 * or pages, as many as wanted or more for pages (a chunk of another
 * size frees its page only with the page's last chunk). */
bool makesRoomFor(const SlabBlock &freed, const SlabBlock &wanted);

/* The pages a shared memory zone of `zoneBytes` gives its slab pool
 * (less the pool's header, its page descriptors and the alignment of
 * the first page), as ngx_slab_init() counts them. */
size_t slabPages(size_t zoneBytes, size_t pageSize);

/* How many states of `stateBytes` each a zone of `zoneBytes` holds at
 * most, with `reservedPages` kept for the store's own data. */
size_t statesThatFit(size_t zoneBytes, size_t stateBytes, size_t pageSize,
                     size_t reservedPages = 1);

}  // namespace rl
