/* Where a link connects to (src/redis/locator.cpp): the one thing that differs
 * between a fixed address, a host name looked up through nginx's
 * resolver, the master a set of sentinels names (redis/sentinel.cpp) and
 * a cluster slot's node (redis/cluster.cpp). A link asks its locator
 * where its server is each time it connects, and the locator tells it
 * when the server moved; the link itself only connects, does the
 * handshake (redis/connection.cpp) and pipelines calls
 * (redis/link.cpp). */
#pragma once

#include "name_lookup.hpp"

namespace rl {

class Link;
struct Redirect;

/* A server's address in buffers of its own: its host (numeric, NUL-
 * terminated), port, and host:port for logs ([host]:port for IPv6). */
struct ServerText {
    void set(ngx_str_t host, ngx_int_t port);
    bool same(const ServerText &o) const {
        return port == o.port && hostLen == o.hostLen &&
               ngx_memcmp(host, o.host, hostLen) == 0;
    }
    ngx_http_rl_server_t server(ngx_str_t name = {0, nullptr}) const {
        return {{hostLen, const_cast<u_char *>(host)}, port,
                {addrLen, const_cast<u_char *>(addr)}, name};
    }

    u_char host[NGX_SOCKADDR_STRLEN + 1];
    u_char addr[NGX_SOCKADDR_STRLEN + 8];
    size_t hostLen = 0;
    size_t addrLen = 0;
    ngx_int_t port = 0;
};

/* a host that is an address (IPv4 or IPv6), not a name */
bool numericHost(ngx_str_t host);
/* a host name a server may announce (letters, digits, '-', '.', '_'),
 * short enough for a ServerText; not an address */
bool hostName(ngx_str_t host);

/* A Redis Cluster's slot map, as the links of its nodes meet it: MOVED
 * and ASK replies, CLUSTER SLOTS answers (redis/cluster.hpp). */
class Slots {
public:
    virtual ~Slots() = default;
    /* a call's group, redirected: false when it cannot go on */
    virtual bool redirect(ngx_http_rl_group_t *group, const Redirect &to,
                          Link *from) = 0;
    /* MOVED to a refund: the slot's new node, for its retry */
    virtual void moved(const Redirect &to, Link *from) = 0;
    /* where an ASK says, NULL if nowhere known */
    virtual Link *asked(const Redirect &to, Link *from) = 0;
    /* CLUSTERDOWN and the like: the map may be wrong */
    virtual void doubt() = 0;
    virtual void slotsReplied(Link *link, const redisReply *reply) = 0;
};

class Locator {
public:
    virtual ~Locator() = default;

    /* Finds where the link's server is now and says so, before it
     * returns or later: link->located(server) (NULL, with why, when
     * nowhere is known). One locate at a time per link; the server
     * given stays valid until the next. */
    virtual void locate(Link *link) = 0;
    /* The link goes: no answer is given any more. */
    virtual void cancel() {}
    /* what the link's log lines name before a server is located */
    virtual ngx_str_t what() const { return {0, nullptr}; }
    /* ROLE must say "master" (a sentinel's answer may be stale). */
    virtual bool wantsMaster() const { return false; }
    /* The server can move: a READONLY reply (a master turned replica)
     * sends the link to locate it again. */
    virtual bool follows() const { return false; }

    /* What the link tells: its handshake is done (ready), it went up
     * or down (upChanged: true when the locator keeps rl_store_up, as
     * a cluster does for all its masters; false: the link's zones
     * follow the link), the server located was not the master. */
    virtual void ready(Link *) {}
    virtual bool upChanged(Link *) { return false; }
    virtual void refused(Link *) {}

    /* A cluster node's: the map its MOVED and ASK replies update. */
    virtual Slots *slots() { return nullptr; }
};

/* A server at an address of the configuration: as resolved when it was
 * loaded, or, for a host name where the http block has a resolver,
 * looked up again through it at each connect (its last address when
 * the lookup fails). redis=, and a cluster's nodes. */
class AddressLocator : public Locator {
public:
    /* server's strings live as long as this; addr: a numeric server's
     * (a cluster node's) is made again from each address looked up */
    AddressLocator(const ngx_http_rl_server_t &server, bool numericAddr,
                   const Resolving &resolving, ngx_str_t label,
                   ngx_log_t *log);

    void locate(Link *link) override;
    void cancel() override;
    ngx_str_t what() const override { return server_.addr; }
    /* a name followed: the address it had may be a replica now */
    bool wantsMaster() const override { return lookup_.on(); }
    bool follows() const override { return lookup_.on(); }

    const ngx_http_rl_server_t &server() const { return server_; }

protected:
    ngx_http_rl_server_t server_;

private:
    static void looked(void *data) noexcept;

    NameLookup lookup_;
    Link *link_ = nullptr;
    bool numericAddr_;
    ServerText text_;           /* a numeric server's, looked up */
};

}  // namespace rl
