/* An operator API request held while its commands to Redis are out
 * (the fleet's reads and writes, api/fleet.cpp; a key's, api/keys.cpp;
 * a caller's quota, api/quota.cpp): each command's reply
 * is handed to the request's `replied`; once every reply is in, or its
 * time is up, `conclude` answers it. The request is held by nginx's own
 * count; a pool cleanup lets the commands go if the request goes first
 * (hiredis owns each command's privdata and frees it in its callback,
 * which it always calls: with NULL when the connection goes). */
#pragma once

#include "ngx.hpp"

namespace rl {
class Link;
}

namespace rl::api {

struct Wait;

struct WaitCall;

struct Wait {
    ngx_http_request_t *r;
    ngx_event_t timer;
    WaitCall **calls;       /* by ask: `asks` of them */
    ngx_uint_t asks;
    WaitCall *few[4];       /* (calls, for 4 asks at most) */
    ngx_uint_t pending;
    bool timedOut;
    /* reply: NULL when the connection went first; link: the one it went
     * on, NULL then */
    void (*replied)(Wait *w, ngx_uint_t ask, const redisReply *reply,
                    Link *link);
    /* the answer (what a content handler returns) */
    ngx_int_t (*conclude)(Wait *w);
    void *data;
};

/* A wait in the request's pool, with its cleanup, for commands of
 * `asks` kinds at once (one out of each at a time); NULL when out of
 * memory. */
Wait *waitFor(ngx_http_request_t *r, void *data,
              void (*replied)(Wait *, ngx_uint_t, const redisReply *,
                              Link *),
              ngx_int_t (*conclude)(Wait *), ngx_uint_t asks = 4);

/* Sends a command as `ask` (below the wait's asks); false when it
 * cannot go now. */
bool waitSend(Wait *w, Link *link, ngx_uint_t ask, int argc,
              const char **argv, const size_t *len);

/* Once the commands went: holds the request until they are answered
 * or `ms` passed; returns what the handler returns (NGX_DONE). */
ngx_int_t waitHold(Wait *w, ngx_msec_t ms);

}  // namespace rl::api
