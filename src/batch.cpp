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
    ngx_free(argv_);
    ngx_free(lens_);
    ngx_free(ages_);
    ngx_free(buf_);
}

bool BatchCommand::reserve(size_t args, size_t requests, ngx_log_t *log) {
    if (args > cap_) {
        size_t cap = args < 256 ? 256 : args * 2;
        auto **argv = static_cast<const char **>(
            ngx_alloc(cap * sizeof(char *), log));
        auto *lens = static_cast<size_t *>(ngx_alloc(cap * sizeof(size_t), log));
        if (argv == nullptr || lens == nullptr) {
            ngx_free(argv);
            ngx_free(lens);
            return false;
        }
        ngx_free(argv_);
        ngx_free(lens_);
        argv_ = argv;
        lens_ = lens;
        cap_ = cap;
    }
    size_t ages = requests * (NGX_INT64_LEN + 1);
    if (ages > agesCap_) {
        auto *buf = static_cast<u_char *>(ngx_alloc(ages, log));
        if (buf == nullptr) {
            return false;
        }
        ngx_free(ages_);
        ages_ = buf;
        agesCap_ = ages;
    }
    return true;
}

size_t BatchCommand::build(Call *first, bool eval, int64_t nowUs,
                           ngx_log_t *log) {
    /* each request brings its keys and its block: argc - 3 arguments */
    size_t args = 3;
    size_t requests = 0;
    size_t keys = 0;
    for (Call *c = first; c != nullptr; c = c->next) {
        if (c->group != nullptr) {
            args += c->group->argc - 3;
            keys += c->group->nrules;
            requests++;
        }
    }
    if (requests == 0 || !reserve(args, requests, log)) {
        return 0;
    }

    if (eval) {
        argv_[0] = "EVAL";
        lens_[0] = 4;
        argv_[1] = rl_script_text(&lens_[1]);
    } else {
        argv_[0] = "EVALSHA";
        lens_[0] = 7;
        argv_[1] = rl_script_sha();
        lens_[1] = RL_SHA_LEN;
    }
    argv_[2] = reinterpret_cast<char *>(keys_);
    lens_[2] = ngx_sprintf(keys_, "%uz", keys) - keys_;
    size_t i = 3;

    for (Call *c = first; c != nullptr; c = c->next) {
        ngx_http_rl_group_t *g = c->group;
        if (g == nullptr) {
            continue;
        }
        size_t at = argvNowIndex(g->nrules) - 1 - g->nrules;
        ngx_memcpy(&argv_[i], &g->argv[at], g->nrules * sizeof(char *));
        ngx_memcpy(&lens_[i], &g->argvlen[at], g->nrules * sizeof(size_t));
        i += g->nrules;
    }

    u_char *age = ages_;
    for (Call *c = first; c != nullptr; c = c->next) {
        ngx_http_rl_group_t *g = c->group;
        if (g == nullptr) {
            continue;
        }
        size_t now = argvNowIndex(g->nrules);
        argv_[i] = g->argv[now - 1];  /* its rule count */
        lens_[i] = g->argvlen[now - 1];
        i++;
        int64_t waited = nowUs - g->sent_us;
        argv_[i] = reinterpret_cast<char *>(age);
        if (waited > 0) {
            u_char *end = ngx_sprintf(age, "-%L", waited);
            lens_[i] = end - age;
            age = end;
        } else {
            lens_[i] = 0;  /* Redis' TIME itself */
        }
        i++;
        size_t rest = g->argc - now - 1;
        ngx_memcpy(&argv_[i], &g->argv[now + 1], rest * sizeof(char *));
        ngx_memcpy(&lens_[i], &g->argvlen[now + 1], rest * sizeof(size_t));
        i += rest;
    }
    return encode(i, log);
}

namespace {

u_char *decimal(u_char *p, size_t v) {
    u_char digits[NGX_INT64_LEN];
    u_char *d = digits + sizeof(digits);
    do {
        *--d = static_cast<u_char>('0' + v % 10);
        v /= 10;
    } while (v != 0);
    return ngx_cpymem(p, d, digits + sizeof(digits) - d);
}

}  // namespace

/* "*argc\r\n" then "$len\r\n" arg "\r\n" for each argument */
size_t BatchCommand::encode(size_t argc, ngx_log_t *log) {
    size_t size = 1 + NGX_INT64_LEN + 2;
    for (size_t i = 0; i < argc; i++) {
        size += 1 + NGX_INT64_LEN + 2 + lens_[i] + 2;
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
    p = decimal(p, argc);
    *p++ = '\r';
    *p++ = '\n';
    for (size_t i = 0; i < argc; i++) {
        *p++ = '$';
        p = decimal(p, lens_[i]);
        *p++ = '\r';
        *p++ = '\n';
        p = ngx_cpymem(p, argv_[i], lens_[i]);
        *p++ = '\r';
        *p++ = '\n';
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
