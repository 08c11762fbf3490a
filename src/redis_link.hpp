/* A worker's connection to one zone's Redis (see redis_link.cpp). */
#pragma once

#include "ngx.hpp"

namespace rl {

class Link;

/* One script call in flight. Owned by the link (a free list), so a
 * reply arriving after its request went away finds a live object whose
 * group is NULL. */
struct Call {
    Link                 *link;
    ngx_http_rl_group_t  *group;
    Call                 *next;
};

}  // namespace rl
