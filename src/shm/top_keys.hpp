/* top_keys.cpp: each rule's top limited keys, read. */
#pragma once

#include "ngx.hpp"

#include "core/top_keys.hpp"

namespace rl::shm {

/* The rule's list (room for top::kListMax entries), most limited
 * first. */
size_t topKeys(const ngx_http_rl_rule_t *rule, top::Entry *out);

}  // namespace rl::shm
