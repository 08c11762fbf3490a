/*
 * api/wait.cpp: an operator API request held for its Redis commands
 * (see api/wait.hpp).
 */

#include "wait.hpp"

#include "redis/link.hpp"

namespace rl::api {

/* A command in flight, hiredis' privdata: freed by its callback. */
struct WaitCall {
    Wait *w;            /* NULL once the request let go of it */
    ngx_uint_t ask;
};

namespace {

void letGo(Wait *w) {
    for (ngx_uint_t i = 0; i < w->asks; i++) {
        if (w->calls[i] != nullptr) {
            w->calls[i]->w = nullptr;
            w->calls[i] = nullptr;
        }
    }
    w->pending = 0;
    if (w->timer.timer_set) {
        ngx_del_timer(&w->timer);
    }
}

void cleanup(void *data) noexcept {
    letGo(static_cast<Wait *>(data));
}

void finish(Wait *w) {
    ngx_http_request_t *r = w->r;
    ngx_connection_t *c = r->connection;
    letGo(w);
    ngx_http_finalize_request(r, w->conclude(w));
    ngx_http_run_posted_requests(c);
}

void onTimer(ngx_event_t *ev) noexcept {
    auto *w = static_cast<Wait *>(ev->data);
    w->timedOut = true;
    finish(w);
}

void onReply(redisAsyncContext *ac, void *reply, void *data) noexcept {
    auto *c = static_cast<WaitCall *>(data);
    Wait *w = c->w;
    ngx_uint_t ask = c->ask;
    ngx_free(c);
    Link::heardMoved(ac, static_cast<const redisReply *>(reply));
    if (w == nullptr) {
        return;     /* the request went, or its time was up */
    }
    w->calls[ask] = nullptr;
    w->pending--;
    /* (a NULL reply: the connection is going, ac->data with it) */
    w->replied(w, ask, static_cast<const redisReply *>(reply),
               reply != nullptr ? static_cast<Link *>(ac->data) : nullptr);
    if (w->pending == 0) {
        finish(w);
    }
}

}  // namespace

Wait *waitFor(ngx_http_request_t *r, void *data,
              void (*replied)(Wait *, ngx_uint_t, const redisReply *,
                              Link *),
              ngx_int_t (*conclude)(Wait *), ngx_uint_t asks) {
    WaitCall **calls = nullptr;
    if (asks > 4) {
        calls = static_cast<WaitCall **>(
            ngx_pcalloc(r->pool, asks * sizeof(WaitCall *)));
        if (calls == nullptr) {
            return nullptr;
        }
    }
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(r->pool, sizeof(Wait));
    if (cln == nullptr) {
        return nullptr;
    }
    auto *w = static_cast<Wait *>(cln->data);
    ngx_memzero(w, sizeof(Wait));
    w->calls = calls != nullptr ? calls : w->few;
    w->asks = asks > 4 ? asks : 4;
    w->r = r;
    w->replied = replied;
    w->conclude = conclude;
    w->data = data;
    w->timer.handler = onTimer;
    w->timer.data = w;
    w->timer.log = r->connection->log;
    cln->handler = cleanup;
    return w;
}

bool waitSend(Wait *w, Link *link, ngx_uint_t ask, int argc,
              const char **argv, const size_t *len) {
    if (ask >= w->asks) {
        return false;
    }
    auto *c = static_cast<WaitCall *>(
        ngx_alloc(sizeof(WaitCall), w->r->connection->log));
    if (c == nullptr) {
        return false;
    }
    *c = {w, ask};
    if (link == nullptr ||
        !link->operatorCommand(onReply, c, argc, argv, len)) {
        ngx_free(c);
        return false;
    }
    w->calls[ask] = c;
    w->pending++;
    return true;
}

ngx_int_t waitHold(Wait *w, ngx_msec_t ms) {
    ngx_add_timer(&w->timer, ms);
    w->r->main->count++;
    return NGX_DONE;
}

}  // namespace rl::api
