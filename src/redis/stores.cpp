/*
 * redis/stores.cpp: per worker, the store of each Redis zone, shared by
 * the zones that can share it: a link to one server (redis=, where its
 * locator finds it: the address, or a name looked up again; sentinel=,
 * the master the sentinels name), or a cluster's links and slot map
 * (cluster=); and the C ABI the request path and the leases reach them
 * through.
 */

#include <new>

#include "cluster.hpp"
#include "link.hpp"
#include "sentinel.hpp"

using rl::AddressLocator;
using rl::Cluster;
using rl::Link;
using rl::Locator;
using rl::Resolving;
using rl::Sentinels;
using rl::Store;

namespace {

/* Zones that can share one store: the same server (or the same cluster
 * seeds, or the same sentinels and master name, and their credentials),
 * user, password and db, the same TLS settings, and the same timeouts
 * (a link is stalled, and dropped, by the timeouts of its zones: a zone
 * that waits longer keeps its own). */
bool sameStore(const ngx_http_rl_zone_t *a, const ngx_http_rl_zone_t *b) {
    auto eq = [](const ngx_str_t &x, const ngx_str_t &y) {
        return x.len == y.len &&
               (x.len == 0 || ngx_memcmp(x.data, y.data, x.len) == 0);
    };
    const ngx_http_rl_tls_t &s = a->tls, &t = b->tls;
    bool sameTls = s.enabled == t.enabled &&
                   (!s.enabled ||
                    (s.verify == t.verify &&
                     eq(s.server_name, t.server_name) && eq(s.ca, t.ca) &&
                     eq(s.cert, t.cert) && eq(s.key, t.key)));
    bool sameSentinels = (a->nsentinels > 0) == (b->nsentinels > 0) &&
                         (a->nsentinels == 0 ||
                          (eq(a->addr, b->addr) && eq(a->master, b->master) &&
                           eq(a->sentinel_username, b->sentinel_username) &&
                           eq(a->sentinel_password, b->sentinel_password)));
    return sameTls && sameSentinels && (a->nseeds > 0) == (b->nseeds > 0) &&
           (a->nseeds == 0 || eq(a->addr, b->addr)) &&
           a->port == b->port && eq(a->host, b->host) &&
           eq(a->username, b->username) && eq(a->password, b->password) &&
           a->db == b->db && a->timeout == b->timeout &&
           a->connect_timeout == b->connect_timeout;
}

/* The http block's resolver, for the zone: a lookup takes at most the
 * resolver's timeout, and no longer than connecting may. */
Resolving resolvingFor(const ngx_http_rl_main_conf_t *rmcf,
                       const ngx_http_rl_zone_t *zone) {
    Resolving r;
    r.resolver = rmcf->resolver;
    r.timeout = rmcf->resolver_timeout < zone->connect_timeout
                    ? rmcf->resolver_timeout : zone->connect_timeout;
    return r;
}

/* A server's store: its link, connecting, and where it connects to
 * (the link's own locator). */
Store *linkStore(ngx_http_rl_zone_t **zones, ngx_uint_t n, ngx_str_t label,
                 const Resolving &resolving, ngx_log_t *log) {
    const ngx_http_rl_zone_t *z = zones[0];
    bool sentinel = z->nsentinels > 0;
    void *at = ngx_alloc(sentinel ? sizeof(Sentinels)
                                  : sizeof(AddressLocator), log);
    void *mem = ngx_alloc(sizeof(Link), log);
    if (at == nullptr || mem == nullptr) {
        ngx_free(at);
        ngx_free(mem);
        return nullptr;
    }
    Locator *locator;
    if (sentinel) {
        locator = new (at) Sentinels(zones[0], label, resolving, log);
    } else {
        ngx_http_rl_server_t server = {z->host, z->port, z->addr,
                                       z->name_host};
        locator = new (at) AddressLocator(server, false, resolving, label,
                                          log);
    }
    Link *link = new (mem) Link(zones, n, label, locator, true, log);
    link->connect();
    return link;
}

Store *clusterStore(ngx_http_rl_zone_t **zones, ngx_uint_t n,
                    ngx_str_t label, const Resolving &resolving,
                    ngx_log_t *log) {
    void *mem = ngx_alloc(sizeof(Cluster), log);
    if (mem == nullptr) {
        return nullptr;
    }
    Cluster *cluster = new (mem) Cluster(zones, n, label, resolving, log);
    if (!cluster->start()) {
        cluster->~Cluster();
        ngx_free(mem);
        return nullptr;
    }
    return cluster;
}

}  // namespace

extern "C" {

ngx_int_t ngx_http_rl_stores_init(ngx_cycle_t *cycle,
                                  ngx_http_rl_main_conf_t *rmcf) noexcept {
    ngx_uint_t n = rmcf->zones.nelts;
    auto **zones = static_cast<ngx_http_rl_zone_t **>(rmcf->zones.elts);

    rmcf->stores = static_cast<ngx_http_rl_store_t **>(
        ngx_pcalloc(cycle->pool, n * sizeof(ngx_http_rl_store_t *)));
    auto **members = static_cast<ngx_http_rl_zone_t **>(
        ngx_palloc(cycle->pool, n * sizeof(ngx_http_rl_zone_t *)));
    if (rmcf->stores == nullptr || members == nullptr) {
        return NGX_ERROR;
    }
    for (ngx_uint_t i = 0; i < n; i++) {
        if (ngx_http_rl_embedded(zones[i]) || rmcf->stores[i] != nullptr) {
            continue; /* no connection, or the one of a zone before it */
        }
        /* the zones on this server: zones[i] and those after it */
        ngx_uint_t m = 0;
        size_t len = sizeof("rl_zones ") - 1;
        for (ngx_uint_t j = i; j < n; j++) {
            if (j == i || (!ngx_http_rl_embedded(zones[j]) &&
                           sameStore(zones[i], zones[j]))) {
                members[m++] = zones[j];
                len += zones[j]->name.len + sizeof("\"\", ") - 1;
            }
        }
        auto **own = static_cast<ngx_http_rl_zone_t **>(
            ngx_palloc(cycle->pool, m * sizeof(ngx_http_rl_zone_t *)));
        auto *text = static_cast<u_char *>(ngx_pnalloc(cycle->pool, len));
        if (own == nullptr || text == nullptr) {
            return NGX_ERROR;
        }
        ngx_memcpy(own, members, m * sizeof(ngx_http_rl_zone_t *));
        u_char *p = m > 1 ? ngx_cpymem(text, "rl_zones ", 9)
                          : ngx_cpymem(text, "rl_zone ", 8);
        for (ngx_uint_t k = 0; k < m; k++) {
            p = ngx_sprintf(p, k > 0 ? ", \"%V\"" : "\"%V\"",
                            &own[k]->name);
        }
        ngx_str_t label = {static_cast<size_t>(p - text), text};
        Resolving resolving = resolvingFor(rmcf, zones[i]);
        Store *store = zones[i]->nseeds > 0
                           ? clusterStore(own, m, label, resolving,
                                          cycle->log)
                           : linkStore(own, m, label, resolving, cycle->log);
        if (store == nullptr) {
            return NGX_ERROR;
        }
        for (ngx_uint_t k = 0; k < m; k++) {
            rmcf->stores[own[k]->index] =
                reinterpret_cast<ngx_http_rl_store_t *>(store);
        }
    }
    return NGX_OK;
}

void ngx_http_rl_stores_free(ngx_http_rl_main_conf_t *rmcf) noexcept {
    if (rmcf->stores == nullptr) {
        return;
    }
    ngx_uint_t n = rmcf->zones.nelts;
    for (ngx_uint_t i = 0; i < n; i++) {
        Store *store = reinterpret_cast<Store *>(rmcf->stores[i]);
        if (store == nullptr) {
            continue;
        }
        for (ngx_uint_t j = i + 1; j < n; j++) {    /* its other zones' */
            if (rmcf->stores[j] == rmcf->stores[i]) {
                rmcf->stores[j] = nullptr;
            }
        }
        store->~Store();
        ngx_free(store);
        rmcf->stores[i] = nullptr;
    }
    rmcf->stores = nullptr;
}

void ngx_http_rl_stores_write(ngx_http_rl_main_conf_t *rmcf) noexcept {
    if (rmcf->stores == nullptr) {
        return;
    }
    for (ngx_uint_t i = 0; i < rmcf->zones.nelts; i++) {
        Store *store = reinterpret_cast<Store *>(rmcf->stores[i]);
        bool seen = store == nullptr;
        for (ngx_uint_t j = 0; j < i && !seen; j++) {
            seen = rmcf->stores[j] == rmcf->stores[i];  /* shared */
        }
        if (!seen) {
            store->writeNow();
        }
    }
}

ngx_http_rl_link_t *ngx_http_rl_store_route(ngx_http_rl_store_t *store,
                                            ngx_uint_t slot) noexcept {
    return reinterpret_cast<ngx_http_rl_link_t *>(
        reinterpret_cast<Store *>(store)->route(slot));
}

ngx_int_t ngx_http_rl_link_usable(ngx_http_rl_link_t *link) noexcept {
    return reinterpret_cast<Link *>(link)->usable() ? 1 : 0;
}

ngx_http_rl_call_t *ngx_http_rl_link_send(ngx_http_rl_link_t *link,
                                          ngx_http_rl_group_t *group) noexcept {
    return reinterpret_cast<ngx_http_rl_call_t *>(
        reinterpret_cast<Link *>(link)->send(group));
}

void ngx_http_rl_call_detach(ngx_http_rl_call_t *call) noexcept {
    reinterpret_cast<rl::Call *>(call)->group = nullptr;
}

void ngx_http_rl_call_timed_out(ngx_http_rl_call_t *call) noexcept {
    auto *c = reinterpret_cast<rl::Call *>(call);
    c->group = nullptr;
    c->link->timedOut();
}

ngx_http_rl_call_t *ngx_http_rl_link_refund(ngx_http_rl_link_t *link,
                                            ngx_http_rl_group_t *group,
                                            ngx_uint_t asking,
                                            ngx_uint_t argc,
                                            const char **argv,
                                            const size_t *argvlen) noexcept {
    return reinterpret_cast<ngx_http_rl_call_t *>(
        reinterpret_cast<Link *>(link)->refund(
            group, static_cast<int>(argc), argv, argvlen, asking != 0));
}

}  // extern "C"
