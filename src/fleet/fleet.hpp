/* The fleet (SPEC section 11): the instances on one Redis seen as one.
 *
 * One worker of each instance (worker 0) keeps, for each Redis zone,
 * the fleet's keys in step with this instance: once a second it reads
 * the zone's live limits and trials into shared memory (live.hpp) and
 * the audit's new entries, dropping what this instance caches of the
 * keys they name (deny cache, leases); every `interval` it publishes the
 * instance's record (fleet_record.hpp). Nothing of it is on a request's
 * path: each is one EVAL of lua/fleet.lua on the worker's connection to
 * the zone's Redis (in a Cluster, the node of the fleet's hash tag,
 * PREFIX{fleet}), and a Redis that cannot answer skips a turn. The
 * operator API reads and writes the same keys (api/fleet.cpp). */
#pragma once

#include "ngx.hpp"

#include <string_view>

namespace rl {
class Link;
}

namespace rl::fleet {

/* The fleet's keys of a zone: PREFIX{fleet}:ZONE:SUFFIX (one hash tag).
 * NULL data when out of memory. */
ngx_str_t key(ngx_pool_t *pool, const ngx_http_rl_zone_t *zone,
              std::string_view suffix);

/* The zone's fleet keys, in lua/fleet.lua's order (live, trial, audit,
 * seen), in the pool; false when out of memory. */
bool keys(ngx_pool_t *pool, const ngx_http_rl_zone_t *zone,
          ngx_str_t out[4]);

/* An EVAL of lua/fleet.lua: "EVAL text 4 KEYS OP args..." (the views
 * must live until it is sent: hiredis copies them then). */
class Eval {
public:
    static constexpr int kMax = 40;

    Eval(const ngx_str_t keys[4], std::string_view op);

    Eval &arg(std::string_view s);
    Eval &arg(const ngx_str_t &s) {
        return arg({reinterpret_cast<const char *>(s.data), s.len});
    }
    /* a number, kept in the call */
    Eval &num(int64_t v);

    int argc() const { return argc_; }
    const char **argv() { return argv_; }
    const size_t *len() const { return len_; }

private:
    const char *argv_[kMax];
    size_t len_[kMax];
    int argc_ = 0;
    u_char nums_[4][NGX_INT64_LEN];
    int nnums_ = 0;
};

/* The worker's link to the node that holds the zone's fleet keys, or
 * NULL (no Redis zone, or none known now). */
Link *linkOf(ngx_http_rl_main_conf_t *rmcf, const ngx_http_rl_zone_t *zone);

/* This instance: its name, its id (random, drawn when nginx started,
 * kept across reloads) and start (ms of the epoch). */
std::string_view instanceName(ngx_http_rl_main_conf_t *rmcf);
std::string_view instanceId(ngx_http_rl_main_conf_t *rmcf);
int64_t startedMs(ngx_http_rl_main_conf_t *rmcf);

/* A setting as lua/fleet.lua keeps it, read: false if it is no such. */
bool parseSetting(std::string_view text, int64_t *limit, int64_t *untilMs,
                  int64_t *sinceMs, std::string_view *by,
                  std::string_view *reason);

}  // namespace rl::fleet
