/* A Redis Cluster zone's store, per worker: its slot map, learned with
 * CLUSTER SLOTS from the seeds or any node, and a link per master node
 * (src/redis_link.hpp). A call goes to the link of its slot's master; a
 * MOVED reply updates that slot and sends the call on, an ASK reply
 * sends it once with ASKING. The map is asked again on MOVED, on an
 * unknown slot and, every second, while a master is unreachable (until
 * the cluster fails over to a replica and the map says so). */
#pragma once

#include "redis_link.hpp"

namespace rl {

class Cluster : public Store {
public:
    Cluster(ngx_http_rl_zone_t **zones, ngx_uint_t nzones, ngx_str_t label,
            ngx_log_t *log);
    ~Cluster() override;

    /* connects the seeds; false when out of memory */
    bool start();
    Link *route(ngx_uint_t slot) override;
    void writeNow() override;

    /* from its links */
    void nodeReady(Link *link);
    void nodeChanged();
    /* a call's group, redirected: false when it cannot go on */
    bool redirect(ngx_http_rl_group_t *group, const Redirect &to,
                  Link *from);
    /* MOVED to a refund: the slot's new node, for its retry */
    void moved(const Redirect &to, Link *from);
    /* CLUSTERDOWN and the like: the map may be wrong */
    void doubt();
    /* where an ASK says, NULL if nowhere known */
    Link *asked(const Redirect &to, Link *from);
    void slotsReplied(Link *link, const redisReply *reply);
    void refreshDue();
    void askTimedOut();

private:
    struct Node {
        ngx_http_rl_server_t server;
        u_char host[NGX_SOCKADDR_STRLEN + 1];
        u_char addr[NGX_SOCKADDR_STRLEN + 8];
        Link *link;
        uint16_t index;             /* in nodes_, + 1: as slots_ says */
        bool seed;
        bool mapped;
    };

    /* the node at host:port (numeric), made if new; NULL if the host
     * is no address or out of memory */
    Node *node(ngx_str_t host, ngx_int_t port);
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
