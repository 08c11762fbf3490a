/*
 * batch.cpp: queued calls, the argument vector of a batch, and its
 * reply's parts (see batch.hpp; the layout is src/core/script.hpp's).
 */

#include "batch.hpp"

#include "core/reply.hpp"
#include "core/script.hpp"

namespace rl {

void CallQueue::push(Call *call) {
    call->next = nullptr;
    if (tail_ != nullptr) {
        tail_->next = call;
    } else {
        head_ = call;
    }
    tail_ = call;
}

Call *CallQueue::take() {
    Call *first = head_;
    Call *last = head_;
    ngx_uint_t requests = 1;
    ngx_uint_t keys = last->rules;
    while (last->next != nullptr && requests < kMaxBatchRequests &&
           keys + last->next->rules <= kMaxBatchKeys)
    {
        last = last->next;
        requests++;
        keys += last->rules;
    }
    head_ = last->next;
    if (head_ == nullptr) {
        tail_ = nullptr;
    }
    last->next = nullptr;
    return first;
}

BatchCommand::~BatchCommand() {
    ngx_free(buf_);
}

namespace {

/* what "$len\r\n" and the closing "\r\n" add to an argument, at most */
constexpr size_t kBulkOverhead = 1 + NGX_INT64_LEN + 2 + 2;

u_char *decimal(u_char *p, size_t v) {
    u_char digits[NGX_INT64_LEN];
    u_char *d = digits + sizeof(digits);
    do {
        *--d = static_cast<u_char>('0' + v % 10);
        v /= 10;
    } while (v != 0);
    return ngx_cpymem(p, d, digits + sizeof(digits) - d);
}

/* one argument: "$len\r\n" arg "\r\n" */
u_char *bulk(u_char *p, const void *data, size_t len) {
    *p++ = '$';
    p = decimal(p, len);
    *p++ = '\r';
    *p++ = '\n';
    p = ngx_cpymem(p, data, len);
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

}  // namespace

/* "*argc\r\n", then the command, the script, the key count, every
 * request's keys, every request's block with its age for its `now` */
size_t BatchCommand::build(Call *first, bool eval, int64_t nowUs,
                           ngx_log_t *log) {
    size_t scriptLen = RL_SHA_LEN;
    const char *script = eval ? rl_script_text(&scriptLen) : rl_script_sha();

    /* each request brings its keys and its block: argc - 3 arguments */
    size_t args = 3;
    size_t keys = 0;
    size_t size = 1 + NGX_INT64_LEN + 2 + 3 * kBulkOverhead + 7 + scriptLen +
                  NGX_INT64_LEN;
    for (Call *c = first; c != nullptr; c = c->next) {
        ngx_http_rl_group_t *g = c->group;
        if (g == nullptr) {
            continue;
        }
        args += g->argc - 3;
        keys += g->nrules;
        for (size_t i = 3; i < g->argc; i++) {
            size += kBulkOverhead + g->argvlen[i];
        }
        size += NGX_INT64_LEN + 1;  /* "-A" in place of "" */
    }
    if (keys == 0) {
        return 0;
    }
    if (size > bufCap_) {
        size_t cap = size < 4096 ? 4096 : size * 2;
        auto *buf = static_cast<u_char *>(ngx_alloc(cap, log));
        if (buf == nullptr) {
            return 0;
        }
        ngx_free(buf_);
        buf_ = buf;
        bufCap_ = cap;
    }

    u_char *p = buf_;
    *p++ = '*';
    p = decimal(p, args);
    *p++ = '\r';
    *p++ = '\n';
    p = eval ? bulk(p, "EVAL", 4) : bulk(p, "EVALSHA", 7);
    p = bulk(p, script, scriptLen);
    u_char text[NGX_INT64_LEN + 1];
    p = bulk(p, text, decimal(text, keys) - text);

    for (Call *c = first; c != nullptr; c = c->next) {
        ngx_http_rl_group_t *g = c->group;
        if (g == nullptr) {
            continue;
        }
        for (size_t k = argvNowIndex(g->nrules) - 1 - g->nrules;
             k < argvNowIndex(g->nrules) - 1; k++)
        {
            p = bulk(p, g->argv[k], g->argvlen[k]);
        }
    }

    for (Call *c = first; c != nullptr; c = c->next) {
        ngx_http_rl_group_t *g = c->group;
        if (g == nullptr) {
            continue;
        }
        size_t now = argvNowIndex(g->nrules);
        p = bulk(p, g->argv[now - 1], g->argvlen[now - 1]);  /* its count */
        int64_t waited = nowUs - g->sent_us;
        size_t len = 0;  /* "": Redis' TIME itself */
        if (waited > 0) {
            text[0] = '-';
            len = decimal(text + 1, static_cast<size_t>(waited)) - text;
        }
        p = bulk(p, text, len);
        for (size_t k = now + 1; k < g->argc; k++) {
            p = bulk(p, g->argv[k], g->argvlen[k]);
        }
    }
    return static_cast<size_t>(p - buf_);
}

const redisReply *replyPart(const redisReply *reply, size_t *at,
                            ngx_uint_t rules, redisReply *slice) {
    if (reply == nullptr || reply->type != REDIS_REPLY_STRING ||
        reply->str == nullptr)
    {
        return reply;
    }
    size_t len = replyBytes(rules);
    size_t from = *at;
    *at += len;
    if (from + len > reply->len) {
        return reply;  /* too short: decodes as malformed */
    }
    ngx_memzero(slice, sizeof(redisReply));
    slice->type = REDIS_REPLY_STRING;
    slice->len = len;
    slice->str = reply->str + from;
    return slice;
}

}  // namespace rl
