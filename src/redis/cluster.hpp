/* A Redis Cluster zone's store, per worker: its slot map, learned with
 * CLUSTER SLOTS from the seeds or any node, and a link per master node
 * (src/redis/link.hpp). A call goes to the link of its slot's master
 * (before a map is read, to a seed's, which waits for its handshake); a
 * MOVED reply updates that slot and sends the call on, an ASK reply
 * sends it once with ASKING. The map is asked again on MOVED, on an
 * unknown slot and, every second, while a master is unreachable (until
 * the cluster fails over to a replica and the map says so). Each node is
 * its link's locator (locator.hpp): its address, a seed's looked up
 * again through a resolver; the links tell the cluster of their state,
 * their MOVED and ASK replies, and the maps they read (Slots). */
#pragma once

#include "link.hpp"

namespace rl {

class Cluster : public Store, public Slots {
public:
    Cluster(ngx_http_rl_zone_t **zones, ngx_uint_t nzones, ngx_str_t label,
            const Resolving &resolving, ngx_log_t *log);
    ~Cluster() override;

    /* connects the seeds; false when out of memory */
    bool start();
    Link *route(ngx_uint_t slot) override;
    void writeNow() override;

    /* from its links */
    void nodeReady(Link *link);
    void nodeChanged();
    /* Slots */
    bool redirect(ngx_http_rl_group_t *group, const Redirect &to,
                  Link *from) override;
    void moved(const Redirect &to, Link *from) override;
    void doubt() override;
    Link *asked(const Redirect &to, Link *from) override;
    void slotsReplied(Link *link, const redisReply *reply) override;
    void refreshDue();
    void askTimedOut();

private:
    /* its address, as the cluster gave it (a seed's, as written) */
    struct NodeText {
        NodeText(ngx_str_t h, ngx_int_t p, ngx_str_t n) : name(n) {
            text.set(h, p);
        }
        ServerText text;
        ngx_str_t name;
    };

    /* a node: where its link connects, and what the link tells */
    struct Node : NodeText, AddressLocator {
        Node(Cluster *c, ngx_str_t host, ngx_int_t port, ngx_str_t name,
             const Resolving &resolving);
        void ready(Link *) override { cluster->nodeReady(link); }
        bool upChanged(Link *) override {
            cluster->nodeChanged();
            return true;
        }
        Slots *slots() override { return cluster; }

        Cluster *cluster;
        Link *link = nullptr;
        uint16_t index = 0;         /* in nodes_, + 1: as slots_ says */
        bool seed = false;
        bool mapped = false;
    };

    /* the node at host:port (numeric), made if new; NULL if the host
     * is no address or out of memory; name: a seed's host as written */
    Node *node(ngx_str_t host, ngx_int_t port, ngx_str_t name = {0, nullptr});
    Node *node(const Redirect &to, Link *from);
    /* timer: may connect the seeds again */
    void refresh(bool timer);
    void later(ngx_msec_t ms);
    bool apply(Link *link, const redisReply *reply);
    /* a MOVED: the slot is the node's from now */
    void assign(uint16_t slot, Node *n);

    ngx_http_rl_zone_t *zone_;
    ngx_http_rl_zone_t **zones_;
    ngx_uint_t nzones_;
    ngx_str_t label_;
    Resolving resolving_;
    ngx_log_t *log_;
    Node **nodes_ = nullptr;
    ngx_uint_t nnodes_ = 0;
    ngx_uint_t capNodes_ = 0;
    uint16_t *slots_ = nullptr;     /* node index + 1, 0: not known */
    uint16_t *next_ = nullptr;      /* the map being read */
    ngx_event_t refresh_;
    ngx_event_t askTimer_;          /* CLUSTER SLOTS unanswered */
    Link *askLink_ = nullptr;       /* the node asked: CLUSTER SLOTS is out */
    ngx_uint_t lastAsked_ = 0;
    ngx_msec_t askedAt_ = 0;
    bool stale_ = true;             /* the map must be asked again */
    bool known_ = false;            /* a map was read */
    bool movedMeanwhile_ = false;   /* a MOVED while a map was asked */
    bool mapErrors_ = false;        /* logged: no map, none read since */
    bool hostnames_ = false;        /* logged: a node named, not numbered */
    bool exiting_ = false;
};

}  // namespace rl
