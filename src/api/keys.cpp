/*
 * api/keys.cpp: one key value of a rule, read or changed by an operator
 * (SPEC section 8), in the rule's own store and key encoding.
 *
 * Redis zones: the key's state is read by the script itself (lua/rl.lua)
 * with a cost of 0, which counts nothing and writes nothing, so
 * remaining and reset read as the next request's headers would; its
 * block and override (the string PREFIX{VALUE}) are read and written by
 * lua/api.lua, atomically; a reset deletes the rule's state keys. The
 * commands go on the worker's connection to the key's server (its slot,
 * in a cluster) as they are, beside the requests' batches; the request
 * waits for their replies (or the zone's timeout, a second at least),
 * held by nginx's own count, and a pool cleanup lets them go if it goes
 * first. A write, once Redis took it, drops what this instance caches of
 * the key (its deny cache entries, its leases), and is logged. A credit
 * (SPEC section 12) is the script's own call ("credit"), followed on the
 * same connection by the state's read, which its answer shows.
 *
 * Embedded zones answer at once, from shared memory.
 */

#include "api.hpp"
#include "state_call.hpp"
#include "wait.hpp"

#include <new>
#include <type_traits>

#include "core/cluster.hpp"
#include "core/key_text.hpp"
#include "core/top_keys.hpp"
#include "core/outcome.hpp"
#include "core/override_text.hpp"
#include "core/reply.hpp"
#include "core/script.hpp"
#include "core/state_key.hpp"
#include "shm/key_caches.hpp"
#include "shm/live.hpp"
#include "redis/link.hpp"
#include "shm/marks.hpp"

namespace rl::api {
namespace {

/* The replies an operation waits for. */
enum Ask : uint8_t { kState = 0, kMark = 1, kWrite = 2 };

constexpr ngx_msec_t kMinWait = 1000;

/* A key's read or write, in the request's pool. */
struct Operation {
    ngx_http_request_t *r;
    Wait *wait;                 /* its commands out (api/wait.hpp) */
    RuleSet set;
    std::string_view value;
    Route route;
    Method method;
    Change change;
    ngx_str_t block;            /* PREFIX{VALUE} */
    Args *state;                /* the state's read, for a retry */
    bool retried;
    bool retriedWrite;          /* a credit, once */
    ngx_int_t anchor;           /* ?anchor=: the key's billing day, 0 */
    /* what came back */
    const char *failure;        /* NULL, or why the store could not */
    rl_outcome_t *outcomes;     /* per state of the name (set.n) */
    int allowed;
    int64_t markKind;           /* lua/api.lua read: 0, 1 block, 2 over */
    ngx_str_t markText;
    int64_t markTtlMs;
    int64_t markLimit;
    ngx_str_t old;              /* a write's old string */
    bool hadOld;
    int64_t deleted;            /* a reset's state keys that were there */
};

static_assert(std::is_trivially_destructible<Operation>::value,
              "an operation lives in r->pool");

ngx_str_t copy(ngx_pool_t *pool, const char *s, size_t n) {
    auto *p = static_cast<u_char *>(ngx_pnalloc(pool, n + 1));
    if (p == nullptr) {
        return {0, nullptr};
    }
    ngx_memcpy(p, s, n);
    p[n] = '\0';
    return {n, p};
}

ngx_http_rl_zone_t *zoneOf(const Operation *op) {
    return op->set.first->zone;
}

/* State k's period bounds now, if it is a calendar rule's (in out),
 * for the key's billing day (?anchor=, an anchor variable's rules; else
 * the rule's own anchor, or the 1st); NULL for others. */
const int64_t *boundsOf(const Operation *op, size_t k, int64_t *out) {
    const ngx_http_rl_rule_t *rule = op->set.rules[k];
    if (rule->calendar == nullptr) {
        return nullptr;
    }
    ngx_http_rl_calendar_bounds_at(rule, op->anchor,
                                   ngx_http_rl_calendar_now(rule->zone),
                                   out);
    return out;
}

/* ----------------------------------------------------------------- */
/* answers                                                            */

int64_t secondsOf(int64_t ms) {
    return ms <= 0 ? 0 : (ms + 999) / 1000;
}

/* GET: {"key", "limit", "remaining", "reset", "blocked", "override"}
 * of the rule (of those of that name) that binds, as headers say; a
 * credit's answer has "credit" (its units) after "key". */
ngx_int_t answerState(Operation *op) {
    size_t n = op->set.n;
    size_t b = rl_binding_rule(op->outcomes, n, op->allowed);
    const rl_outcome_t &o = op->outcomes[b];
    /* an override's N, or the N in force (a live limit's) */
    int64_t limit = o.limit > 0 ? o.limit
                                : static_cast<int64_t>(
                                      live::limitOf(op->set.rules[b]));
    Json out(op->r->pool);
    keyValue(out.raw("{\"key\":"), op->set, op->value);
    if (op->route == Route::Credit) {
        out.raw(",\"credit\":").num(op->change.units);
    }
    out.raw(",\"limit\":").num(limit)
        .raw(",\"remaining\":").num(o.remaining > 0 ? o.remaining : 0)
        .raw(",\"reset\":")
        .num(secondsOf(op->allowed ? o.reset_ms : o.retry_ms))
        .raw(",\"blocked\":");
    if (op->markKind == 1) {
        out.raw("{\"ttl\":")
            .num(op->markTtlMs < 0 ? -1 : secondsOf(op->markTtlMs))
            .raw(",\"reason\":").str(viewOf(op->markText)).raw("}");
    } else {
        out.raw("null");
    }
    out.raw(",\"override\":");
    if (op->markLimit > 0) {
        out.num(op->markLimit);
    } else {
        out.raw("null");
    }
    out.raw("}\n");
    return send(op->r, NGX_HTTP_OK, out);
}

/* The write, logged at notice: who, what, and what was there before. */
void logWrite(Operation *op) {
    ngx_http_request_t *r = op->r;
    char key[keyTextMax(64)];
    size_t klen = keyText(key, 64, op->value, op->set.address);
    char was[64 + 3];
    size_t wlen = op->hadOld ? printable(was, 64, viewOf(op->old)) : 0;
    u_char detail[128 + 3 + 64];
    u_char *d = detail, *end = detail + sizeof(detail);
    const char *what = "reset";
    if (op->route == Route::Block) {
        what = op->method == Method::Post ? "blocked" : "unblocked";
    } else if (op->route == Route::Override) {
        what = op->method == Method::Put ? "set the override of"
                                         : "removed the override of";
    } else if (op->route == Route::Credit) {
        what = "credited";
    }
    if (op->route == Route::Block && op->method == Method::Post) {
        char reason[128 + 3];
        size_t rlen = printable(reason, 128, op->change.reason);
        d = ngx_slprintf(d, end, ", reason \"%*s\"", rlen, reason);
    }
    if (op->change.limit > 0) {
        d = ngx_slprintf(d, end, " to %L", op->change.limit);
    }
    if (op->change.units > 0) {
        d = ngx_slprintf(d, end, " with %L unit%s", op->change.units,
                         op->change.units == 1 ? "" : "s");
    }
    if (op->change.ttl > 0) {
        d = ngx_slprintf(d, end, " for %L s", op->change.ttl);
    }
    if (op->route == Route::Key) {
        d = ngx_slprintf(d, end, " (%L states forgotten)",
                         op->deleted);
    } else if (op->route == Route::Credit) {
        d = ngx_slprintf(d, end, " (remaining now %L)",
                         op->outcomes[rl_binding_rule(op->outcomes, op->set.n,
                                                      op->allowed)]
                             .remaining);
    } else {
        d = ngx_slprintf(d, end, " (was: %s%*s%s)",
                         op->hadOld ? "\"" : "nothing", wlen, was,
                         op->hadOld ? "\"" : "");
    }
    ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                  "rl_api: %V %s key \"%*s\" of rule \"%V\" in zone "
                  "\"%V\"%*s",
                  &r->connection->addr_text, what, klen, key,
                  &op->set.first->name, &zoneOf(op)->name,
                  static_cast<size_t>(d - detail), detail);
}

/* Every write of a key, once its store took it: logged, and in the
 * zone's audit (SPEC section 11), whence the other instances learn it
 * within a second (a Redis zone's). */
void recordWrite(Operation *op) {
    logWrite(op);
    ngx_http_rl_zone_t *z = zoneOf(op);
    if (ngx_http_rl_embedded(z)) {
        return;
    }
    const char *action = "reset";
    if (op->route == Route::Credit) {
        action = "credit";
    } else if (op->route == Route::Block) {
        action = op->method == Method::Post ? "block" : "unblock";
    } else if (op->route == Route::Override) {
        action = op->method == Method::Put ? "override" : "unoverride";
    }
    Json detail(op->r->pool);
    detail.raw("{");
    if (op->route == Route::Key) {
        detail.raw("\"states\":").num(op->deleted);
    } else if (op->route == Route::Credit) {
        detail.raw("\"units\":").num(op->change.units);
    } else if (op->method != Method::Delete) {
        if (op->change.limit > 0) {
            detail.raw("\"limit\":").num(op->change.limit).raw(",");
        }
        detail.raw("\"ttl\":");
        if (op->change.ttl > 0) {
            detail.num(op->change.ttl);
        } else {
            detail.raw("null");
        }
        if (op->route == Route::Block) {
            detail.raw(",\"reason\":").str(op->change.reason);
        }
    }
    detail.raw("}");
    /* the key as the API shows it (an address, or printable) */
    char text[keyTextMax(top::kValueMax)];
    size_t n = keyText(text, sizeof(text) - 3, op->value, op->set.address);
    auditKeyWrite(op->r, z, action, viewOf(op->set.first->name), {text, n},
                  op->value, flatten(op->r->pool, detail));
}

/* A write Redis took (or the embedded store did): what this instance
 * caches of the key goes, the write is logged and answered. */
ngx_int_t answerWrite(Operation *op) {
    ngx_http_request_t *r = op->r;
    ngx_str_t value = {op->value.size(), reinterpret_cast<u_char *>(
                                             const_cast<char *>(
                                                 op->value.data()))};
    bool one = op->route == Route::Key || op->route == Route::Credit;
    shm::forgetKey(mainConf(r), zoneOf(op), one ? &op->set.first->name : nullptr,
              &value);
    recordWrite(op);
    if (op->route == Route::Credit) {
        return answerState(op);     /* what the key has now */
    }
    if (op->route == Route::Block && op->method == Method::Post) {
        Json out(r->pool);
        keyValue(out.raw("{\"key\":"), op->set, op->value)
            .raw(",\"blocked\":{\"ttl\":")
            .num(op->change.ttl > 0 ? op->change.ttl : -1)
            .raw(",\"reason\":").str(op->change.reason).raw("}}\n");
        return send(r, NGX_HTTP_CREATED, out);
    }
    if (op->route == Route::Override && op->method == Method::Put) {
        Json out(r->pool);
        keyValue(out.raw("{\"key\":"), op->set, op->value)
            .raw(",\"override\":").num(op->change.limit)
            .raw(",\"ttl\":")
            .num(op->change.ttl > 0 ? op->change.ttl : -1).raw("}\n");
        return send(r, NGX_HTTP_OK, out);
    }
    return sendEmpty(r, NGX_HTTP_NO_CONTENT);
}

ngx_int_t unavailable(Operation *op, const char *why) {
    return sendError(op->r, {503, "StoreUnavailable", why});
}

/* ----------------------------------------------------------------- */
/* the embedded store                                                 */

/* What a block's string says: its reason, "blocked" for none; never a
 * first word "limit", which would make it an override (isOverride():
 * what lua/rl.lua reads as one, "limit" and any white space). */
bool blockText(ngx_pool_t *pool, std::string_view *reason) {
    std::string_view r = *reason;
    if (r.empty()) {
        *reason = "blocked";
        return true;
    }
    if (rl::isOverride(r)) {
        auto *p = static_cast<char *>(ngx_pnalloc(pool, 9 + r.size()));
        if (p == nullptr) {
            return false;
        }
        ngx_memcpy(p, "blocked: ", 9);
        ngx_memcpy(p + 9, r.data(), r.size());
        *reason = {p, 9 + r.size()};
    }
    return true;
}


ngx_int_t embedded(Operation *op) {
    ngx_http_rl_zone_t *z = zoneOf(op);
    ngx_str_t value = {op->value.size(), reinterpret_cast<u_char *>(
                                             const_cast<char *>(
                                                 op->value.data()))};
    std::string_view name = viewOf(op->set.first->name);
    if (op->route == Route::Key && op->method == Method::Delete) {
        for (size_t k = 0; k < op->set.n; k++) {
            op->deleted += ngx_http_rl_shm_forget(z, op->set.rules[k],
                                                  &value);
        }
        return answerWrite(op);
    }
    if (op->route == Route::Credit) {
        for (size_t k = 0; k < op->set.n; k++) {
            int64_t bounds[3];
            if (ngx_http_rl_shm_credit(z, op->set.rules[k], &value,
                                       boundsOf(op, k, bounds),
                                       op->change.units) != NGX_OK) {
                return unavailable(op, "the zone has no room for the key");
            }
        }
    }
    if (op->route == Route::Key || op->route == Route::Credit) {
        for (size_t k = 0; k < op->set.n; k++) {
            int64_t bounds[3];
            ngx_http_rl_shm_peek(z, op->set.rules[k], &value,
                                 boundsOf(op, k, bounds),
                                 &op->outcomes[k]);
        }
        auto *reason = static_cast<char *>(ngx_pnalloc(op->r->pool, 512));
        if (reason == nullptr) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        size_t len;
        marks::View v = marks::zoneRead(z, op->value, name, reason, 512,
                                        &len);
        op->markKind = v.kind;
        op->markText = {len, reinterpret_cast<u_char *>(reason)};
        op->markTtlMs = v.ttlMs;
        op->markLimit = static_cast<int64_t>(v.limit);
        /* blocked: every rule rejects, none is asked */
        op->allowed = v.kind == 1 ? 0 : 1;
        return op->route == Route::Credit ? answerWrite(op)
                                          : answerState(op);
    }
    marks::Op what = op->route == Route::Block
                         ? (op->method == Method::Post ? marks::Op::Block
                                                       : marks::Op::Unblock)
                         : (op->method == Method::Put ? marks::Op::Override
                                                      : marks::Op::Unoverride);
    if (what == marks::Op::Block &&
        !blockText(op->r->pool, &op->change.reason)) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    auto *old = static_cast<char *>(ngx_pnalloc(op->r->pool, 512));
    size_t oldLen = 0;
    if (old == nullptr ||
        !marks::zoneWrite(z, op->value, what, name,
                          static_cast<uint64_t>(op->change.limit > 0
                                                    ? op->change.limit : 0),
                          op->change.ttl * 1000, op->change.reason, old, 512,
                          &oldLen)) {
        return unavailable(op, "the zone has no room for the mark");
    }
    op->hadOld = oldLen > 0;
    op->old = {oldLen, reinterpret_cast<u_char *>(old)};
    return answerWrite(op);
}

/* ----------------------------------------------------------------- */
/* Redis                                                              */

/* The answer, once every reply is in (or the time is up). */
ngx_int_t conclude(Wait *w) {
    auto *op = static_cast<Operation *>(w->data);
    bool write = op->route != Route::Key || op->method == Method::Delete;
    /* (a credit is a write) */
    if (w->timedOut && write) {
        ngx_log_error(NGX_LOG_WARN, op->r->connection->log, 0,
                      "rl_api: no answer from Redis to a write of rule "
                      "\"%V\" in time: it may still be applied",
                      &op->set.first->name);
    }
    if (w->timedOut) {
        return unavailable(op, write ? "Redis did not answer in time: the "
                                       "write may still be applied when it "
                                       "does"
                                     : "Redis did not answer in time");
    }
    if (op->failure != nullptr) {
        return unavailable(op, op->failure);
    }
    return op->route == Route::Key && op->method != Method::Delete
               ? answerState(op)
               : answerWrite(op);  /* a credit's shows the state too */
}

bool sendOn(Link *link, Operation *op, Ask ask, Args &a) {
    return !a.full && waitSend(op->wait, link, ask, a.argc, a.argv, a.len);
}

/* The state's read: the script with a cost of 0 for each rule of the
 * name (EVALSHA sha 2n keys block-keys head specs); a credit: the
 * script's "credit" of `units` in each. */
Args *stateArgs(Operation *op, bool eval, uint64_t units = 0) {
    ngx_pool_t *pool = op->r->pool;
    size_t n = op->set.n;
    /* calendar rules' bounds, now (their records carry them) */
    auto **bounds = static_cast<const int64_t **>(
        ngx_pcalloc(pool, n * sizeof(int64_t *)));
    auto *all = static_cast<int64_t *>(ngx_palloc(pool,
                                                  3 * n * sizeof(int64_t)));
    auto *values = static_cast<std::string_view *>(
        ngx_palloc(pool, n * sizeof(std::string_view)));
    auto *specs = static_cast<std::string_view *>(
        ngx_palloc(pool, n * sizeof(std::string_view)));
    if (bounds == nullptr || all == nullptr || values == nullptr ||
        specs == nullptr) {
        return nullptr;
    }
    for (size_t k = 0; k < n; k++) {
        bounds[k] = boundsOf(op, k, &all[3 * k]);
        values[k] = op->value;
        /* at the live limit, if any, as the next request is decided */
        specs[k] = viewOf(*live::specOf(op->set.rules[k], false));
    }
    return statesCall(pool, zoneOf(op)->prefix,
                      {n, op->set.rules, values, bounds, specs}, eval, units);
}

/* lua/api.lua: EVAL text 1 PREFIX{VALUE} op args... */
Args *apiArgs(Operation *op, std::string_view what) {
    Args *a = makeArgs(op->r->pool, 8);
    if (a == nullptr) {
        return nullptr;
    }
    a->push("EVAL", 4);
    a->push(apiScriptText());
    a->push("1", 1);
    a->push(viewOf(op->block));
    a->push(what);
    return a;
}

/* A number as an argument, in the pool. */
bool pushNumber(ngx_pool_t *pool, Args *a, int64_t v) {
    auto *p = static_cast<u_char *>(ngx_pnalloc(pool, NGX_INT64_LEN + 1));
    if (p == nullptr) {
        return false;
    }
    a->push(p, static_cast<size_t>(ngx_http_rl_decimal(p, v) - p));
    return true;
}

/* The commands of the operation, sent: false when none could go. */
bool start(Operation *op, Link *link) {
    ngx_pool_t *pool = op->r->pool;
    std::string_view name = viewOf(op->set.first->name);
    Args *a = nullptr;
    switch (op->route) {
    case Route::Credit:
        /* the credit, then the state's read that its answer shows, on
         * one connection: in that order */
        a = stateArgs(op, false, static_cast<uint64_t>(op->change.units));
        op->state = stateArgs(op, false);
        if (a == nullptr || op->state == nullptr) {
            return false;
        }
        return sendOn(link, op, kWrite, *a) &&
               sendOn(link, op, kState, *op->state);
    case Route::Key:
        if (op->method != Method::Delete) {
            op->state = stateArgs(op, false);
            a = apiArgs(op, "read");
            if (op->state == nullptr || a == nullptr) {
                return false;
            }
            a->push(name);
            return sendOn(link, op, kState, *op->state) &&
                   sendOn(link, op, kMark, *a);
        }
        /* a reset: the rule's state keys go */
        op->state = stateArgs(op, false);
        if (op->state == nullptr) {
            return false;
        }
        a = makeArgs(pool, 1 + op->set.n);
        if (a == nullptr) {
            return false;
        }
        a->push("DEL", 3);
        for (size_t k = 0; k < op->set.n; k++) {
            a->push(op->state->argv[3 + k], op->state->len[3 + k]);
        }
        break;
    case Route::Block:
        if (op->method == Method::Post) {
            a = apiArgs(op, "block");
            if (a == nullptr || !blockText(pool, &op->change.reason)) {
                return false;
            }
            a->push(op->change.reason);
            if (!pushNumber(pool, a, op->change.ttl * 1000)) {
                return false;
            }
        } else {
            a = apiArgs(op, "unblock");
        }
        break;
    case Route::Override:
        a = apiArgs(op, op->method == Method::Put ? "override"
                                                  : "unoverride");
        if (a == nullptr) {
            return false;
        }
        a->push(name);
        if (op->method == Method::Put &&
            (!pushNumber(pool, a, op->change.limit) ||
             !pushNumber(pool, a, op->change.ttl * 1000))) {
            return false;
        }
        break;
    default:
        return false;
    }
    return a != nullptr && sendOn(link, op, kWrite, *a);
}

/* The script's reply to the state's read: its figures, the limits an
 * override gave. */
void readState(Operation *op, const redisReply *reply) {
    bool allowed = false;
    if (!readStates(op->r->pool, reply, op->set.n, op->outcomes, &allowed)) {
        op->failure = "Redis sent no reply of the script's";
        return;
    }
    op->allowed = allowed ? 1 : 0;
}

/* lua/api.lua's read: { kind, text, ttl_ms, n } */
void readMark(Operation *op, const redisReply *reply) {
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 4 ||
        reply->element[0]->type != REDIS_REPLY_INTEGER ||
        reply->element[1]->type != REDIS_REPLY_STRING ||
        reply->element[2]->type != REDIS_REPLY_INTEGER ||
        reply->element[3]->type != REDIS_REPLY_INTEGER) {
        op->failure = "Redis sent no reply of lua/api.lua's";
        return;
    }
    op->markKind = reply->element[0]->integer;
    op->markText = copy(op->r->pool, reply->element[1]->str,
                        reply->element[1]->len);
    op->markTtlMs = reply->element[2]->integer;
    op->markLimit = reply->element[3]->integer;
}

void replied(Wait *w, ngx_uint_t ask, const redisReply *reply, Link *link) {
    auto *op = static_cast<Operation *>(w->data);
    if (reply == nullptr) {
        op->failure = "the connection to Redis was lost";
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        if (ask == kState && isNoScript(reply) && !op->retried) {
            /* Redis lost the script: once more, with its text */
            op->retried = true;
            op->state = stateArgs(op, true);
            if (op->state != nullptr && sendOn(link, op, kState, *op->state)) {
                return;
            }
        }
        if (ask == kWrite && op->route == Route::Credit &&
            isNoScript(reply) && !op->retriedWrite) {
            /* the credit too (the read after it is sent again after) */
            op->retriedWrite = true;
            Args *a = stateArgs(op, true,
                                static_cast<uint64_t>(op->change.units));
            if (a != nullptr && sendOn(link, op, kWrite, *a)) {
                return;
            }
        }
        ngx_str_t why = copy(op->r->pool, reply->str, reply->len);
        op->failure = why.data != nullptr
                          ? reinterpret_cast<const char *>(why.data)
                          : "Redis answered an error";
        return;
    }
    switch (ask) {
    case kState:
        readState(op, reply);
        break;
    case kMark:
        readMark(op, reply);
        break;
    default:
        if (reply->type == REDIS_REPLY_INTEGER) {
            op->deleted = reply->integer;   /* DEL */
        }
        op->hadOld = reply->type == REDIS_REPLY_STRING;
        if (op->hadOld) {
            op->old = copy(op->r->pool, reply->str, reply->len);
        }
    }
}

Link *linkOf(ngx_http_request_t *r, const Operation *op) {
    ngx_http_rl_main_conf_t *rmcf = mainConf(r);
    ngx_http_rl_zone_t *z = zoneOf(op);
    if (rmcf->stores == nullptr || rmcf->stores[z->index] == nullptr) {
        return nullptr;
    }
    ngx_uint_t slot = z->nseeds > 0 ? valueSlot(op->value) : 0;
    return reinterpret_cast<Link *>(
        ngx_http_rl_store_route(rmcf->stores[z->index], slot));
}

}  // namespace

ngx_int_t keyOperation(ngx_http_request_t *r, const RuleSet &set,
                       std::string_view value, Route route, Method method,
                       const Change &change) {
    void *room = ngx_pcalloc(r->pool, sizeof(Operation));
    if (room == nullptr) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    auto *op = new (room) Operation{};
    op->r = r;
    op->set = set;
    op->value = value;
    op->route = route;
    op->method = method;
    op->change = change;
    op->anchor = change.anchor;
    op->outcomes = static_cast<rl_outcome_t *>(
        ngx_pcalloc(r->pool, (set.n + 1) * sizeof(rl_outcome_t)));
    if (op->outcomes == nullptr) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    ngx_http_rl_zone_t *z = zoneOf(op);

    if (ngx_http_rl_embedded(z)) {
        return embedded(op);
    }

    /* PREFIX{VALUE}: the key value's block and override */
    op->block.data = static_cast<u_char *>(
        ngx_pnalloc(r->pool, z->prefix.len + 2 + kMaxValueTag));
    if (op->block.data == nullptr) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    u_char *p = ngx_cpymem(op->block.data, z->prefix.data, z->prefix.len);
    *p++ = '{';
    p = reinterpret_cast<u_char *>(
        writeValueTag(reinterpret_cast<char *>(p), value));
    *p++ = '}';
    op->block.len = static_cast<size_t>(p - op->block.data);

    Link *link = linkOf(r, op);
    if (link == nullptr || !link->usable()) {
        return unavailable(op, "Redis cannot be reached now");
    }
    op->wait = waitFor(r, op, replied, conclude);
    if (op->wait == nullptr) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    if (!start(op, link)) {
        /* (what went is let go with the request's pool) */
        return unavailable(op, "the command could not be sent to Redis");
    }
    return waitHold(op->wait, z->timeout > kMinWait ? z->timeout : kMinWait);
}

}  // namespace rl::api
