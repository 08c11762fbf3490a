/*
 * name_lookup.cpp: a host name looked up through nginx's resolver (see
 * name_lookup.hpp), the way proxy_pass with variables does it:
 * ngx_resolve_start(), ngx_resolve_name(), the answer in the handler,
 * ngx_resolve_name_done(). A cached answer comes before
 * ngx_resolve_name() returns.
 *
 * Of several addresses, the one in use stays while the name still has
 * it (the resolver rotates its answers); else the first is taken.
 */

#include "name_lookup.hpp"

namespace rl {

NameLookup::NameLookup(ngx_str_t name, ngx_str_t host,
                       const Resolving &resolving, ngx_str_t label,
                       ngx_log_t *log)
    : name_(name), resolving_(resolving), label_(label), log_(log) {
    hostLen_ = host.len < NGX_SOCKADDR_STRLEN ? host.len : NGX_SOCKADDR_STRLEN;
    ngx_memcpy(host_, host.data, hostLen_);
    host_[hostLen_] = '\0';
}

void NameLookup::start(Done done, void *data) {
    cancel();
    done_ = done;
    data_ = data;
    ngx_resolver_ctx_t temp;
    ngx_memzero(&temp, sizeof(temp));
    temp.name = name_;
    ngx_resolver_ctx_t *ctx = ngx_resolve_start(resolving_.resolver, &temp);
    if (ctx == nullptr || ctx == NGX_NO_RESOLVER) {
        failed("no resolver context");
        return;
    }
    if (ctx == &temp) {     /* a number after all */
        if (answered(temp.addrs, temp.naddrs)) {
            finish();
        }
        return;
    }
    ctx->name = name_;
    ctx->handler = handler;
    ctx->data = this;
    ctx->timeout = resolving_.timeout;
    ctx->cancelable = 1;    /* a worker that exits is not held */
    ctx_ = ctx;
    /* the handler may run, and end ctx, before this returns */
    if (ngx_resolve_name(ctx) != NGX_OK) {
        ctx_ = nullptr;     /* freed by the resolver */
        failed("cannot ask the resolver");
    }
}

void NameLookup::cancel() {
    if (ctx_ != nullptr) {
        ngx_resolver_ctx_t *ctx = ctx_;
        ctx_ = nullptr;
        ngx_resolve_name_done(ctx);
    }
    done_ = nullptr;
}

void NameLookup::handler(ngx_resolver_ctx_t *ctx) noexcept {
    auto *self = static_cast<NameLookup *>(ctx->data);
    ngx_int_t state = ctx->state;
    self->ctx_ = nullptr;
    if (state != NGX_OK) {
        /* the words before the context (and its name) go */
        const char *why = ngx_resolver_strerror(state);
        ngx_resolve_name_done(ctx);
        self->failed(why);
        return;
    }
    bool ok = self->answered(ctx->addrs, ctx->naddrs);
    ngx_resolve_name_done(ctx);
    if (ok) {
        self->finish();
    } else {
        self->failed("no address");
    }
}

/* The address to use, of those the name has now: false if none. */
bool NameLookup::answered(const ngx_resolver_addr_t *addrs,
                          ngx_uint_t naddrs) {
    if (naddrs == 0) {
        return false;
    }
    u_char text[NGX_SOCKADDR_STRLEN + 1];
    size_t len = 0;
    ngx_uint_t pick = 0;
    for (ngx_uint_t i = 0; i < naddrs; i++) {
        len = ngx_sock_ntop(addrs[i].sockaddr, addrs[i].socklen, text,
                            NGX_SOCKADDR_STRLEN, 0);
        if (len == hostLen_ && ngx_memcmp(text, host_, len) == 0) {
            pick = i;
            break;
        }
    }
    len = ngx_sock_ntop(addrs[pick].sockaddr, addrs[pick].socklen, text,
                        NGX_SOCKADDR_STRLEN, 0);
    text[len] = '\0';
    if (failing_) {
        failing_ = false;
        ngx_log_error(NGX_LOG_NOTICE, log_, 0,
                      "%V: the resolver resolves \"%V\" again",
                      &label_, &name_);
    }
    if (len != hostLen_ || ngx_memcmp(text, host_, len) != 0) {
        if (hostLen_ > 0) {
            ngx_log_error(NGX_LOG_NOTICE, log_, 0,
                          "%V: \"%V\" resolves to %s now (was %s)",
                          &label_, &name_, text, host_);
        }
        ngx_memcpy(host_, text, len + 1);
        hostLen_ = len;
    }
    return true;
}

void NameLookup::finish() {
    Done done = done_;
    done_ = nullptr;
    if (done != nullptr) {
        done(data_);
    }
}

/* (why: a string of the resolver's or a literal, kept for why()) */
void NameLookup::failed(const char *why) {
    why_ = why;
    if (hostLen_ == 0) {
        finish();   /* no address at all: the caller says why */
        return;
    }
    if (!failing_) {
        failing_ = true;
        ngx_log_error(NGX_LOG_WARN, log_, 0,
                      "%V: the resolver did not resolve \"%V\" (%s): "
                      "its last address, %s, stays in use",
                      &label_, &name_, why, host_);
    }
    finish();
}

}  // namespace rl
