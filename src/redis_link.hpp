/* A worker's connection to one zone's Redis (see redis_link.cpp). */
#pragma once

#include "ngx.hpp"

namespace rl {

class Link;

/* One request's script call, queued or in flight. Owned by the link (a
 * free list), so a reply arriving after its request went away finds a
 * live object whose group is NULL. */
struct Call {
    Link                 *link;
    ngx_http_rl_group_t  *group;
    Call                 *next;
};

/* The requests of one event-loop turn, sent as one script call. */
inline constexpr size_t kMaxBatch = 64;

struct Batch {
    Link                 *link;
    size_t                n;
    Call                 *calls[kMaxBatch];
    size_t                rules[kMaxBatch];  /* to find each part */
    Batch                *next;
};

}  // namespace rl
