/* A host name looked up again through nginx's own resolver
 * (src/redis/name_lookup.cpp), the `resolver` of the http block: non-blocking,
 * on the event loop, its answers cached as the resolver's valid= says.
 * A name of the configuration starts with the address it had when the
 * configuration was loaded; a name a server announced (a sentinel's
 * master) with none. A lookup that fails leaves the last address in
 * use, and says so once (a warning), until one succeeds again. */
#pragma once

#include "ngx.hpp"

namespace rl {

/* The resolver names are looked up with, and how long a lookup may take
 * (the resolver's timeout, at most the zone's connect_timeout). */
struct Resolving {
    ngx_resolver_t *resolver = nullptr;
    ngx_msec_t timeout = 0;
};

class NameLookup {
public:
    using Done = void (*)(void *data);

    /* name: the host as written (empty: an address, nothing to look up);
     * host: its address when the configuration was loaded (numeric), or
     * empty: none known yet */
    NameLookup(ngx_str_t name, ngx_str_t host, const Resolving &resolving,
               ngx_str_t label, ngx_log_t *log);
    ~NameLookup() { cancel(); }
    NameLookup(const NameLookup &) = delete;
    NameLookup &operator=(const NameLookup &) = delete;

    /* a name, and a resolver to ask */
    bool on() const { return name_.len > 0 && resolving_.resolver; }
    /* Looks the name up: done(data) once host() is the address to use
     * (the new one, or the last), maybe before start() returns. */
    void start(Done done, void *data);
    /* no done() for a lookup under way */
    void cancel();
    /* numeric, NUL-terminated; empty while no lookup succeeded (and
     * none was known) */
    ngx_str_t host() const { return {hostLen_, const_cast<u_char *>(host_)}; }
    ngx_str_t name() const { return name_; }
    /* why the last lookup failed */
    const char *why() const { return why_; }

private:
    static void handler(ngx_resolver_ctx_t *ctx) noexcept;
    bool answered(const ngx_resolver_addr_t *addrs, ngx_uint_t naddrs);
    void failed(const char *why);
    void finish();

    ngx_str_t name_;
    Resolving resolving_;
    ngx_str_t label_;
    ngx_log_t *log_;
    ngx_resolver_ctx_t *ctx_ = nullptr;
    Done done_ = nullptr;
    void *data_ = nullptr;
    bool failing_ = false;      /* warned: the last address in use */
    const char *why_ = "";
    size_t hostLen_ = 0;
    u_char host_[NGX_SOCKADDR_STRLEN + 1];
};

}  // namespace rl
