/*
 * batch.cpp: queued calls, the command of a batch, and its reply's parts
 * (see batch.hpp; the layout is src/core/script.hpp's).
 */

#include "batch.hpp"

#include <new>

#include "clock.hpp"
#include "core/reply.hpp"
#include "core/script.hpp"
#include "core/state_key.hpp"
#include "link.hpp"

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

Call *CallQueue::takeAll() {
    Call *first = head_;
    head_ = nullptr;
    tail_ = nullptr;
    return first;
}

void CallQueue::append(CallQueue *other) {
    if (other->head_ == nullptr) {
        return;
    }
    if (tail_ != nullptr) {
        tail_->next = other->head_;
    } else {
        head_ = other->head_;
    }
    tail_ = other->tail_;
    other->head_ = nullptr;
    other->tail_ = nullptr;
}

SlotBuckets::~SlotBuckets() {
    ngx_free(buckets_);
    ngx_free(table_);
}

bool SlotBuckets::fill(CallQueue *q, ngx_log_t *log) {
    Call *all = q->takeAll();
    size_t n = 0;
    for (Call *c = all; c != nullptr; c = c->next) {
        n++;
    }
    size_t table = 64;
    while (table < 2 * n) {
        table <<= 1;
    }
    if (n > capBuckets_ || table > capTable_) {
        auto *b = static_cast<Bucket *>(ngx_alloc(n * sizeof(Bucket), log));
        auto *t = static_cast<uint32_t *>(
            ngx_calloc(table * sizeof(uint32_t), log));
        if (b == nullptr || t == nullptr) {
            ngx_free(b);
            ngx_free(t);
            for (Call *c = all; c != nullptr;) {
                Call *next = c->next;
                q->push(c);
                c = next;
            }
            return false;
        }
        ngx_free(buckets_);
        ngx_free(table_);
        buckets_ = b;
        table_ = t;
        capBuckets_ = n;
        capTable_ = table;
    }
    size_t mask = capTable_ - 1;
    nbuckets_ = 0;
    at_ = 0;
    for (Call *c = all; c != nullptr;) {
        Call *next = c->next;
        uint32_t key = static_cast<uint32_t>(c->slot) * 4 +
                       (c->asking ? 2 : 0) + (c->single ? 1 : 0);
        size_t h = (key * 2654435761u) & mask;
        while (table_[h] != 0 && buckets_[table_[h] - 1].key != key) {
            h = (h + 1) & mask;
        }
        if (table_[h] == 0) {
            Bucket *b = &buckets_[nbuckets_++];
            new (&b->calls) CallQueue();
            b->key = key;
            b->pos = h;
            table_[h] = static_cast<uint32_t>(nbuckets_);
        }
        buckets_[table_[h] - 1].calls.push(c);
        c = next;
    }
    for (size_t i = 0; i < nbuckets_; i++) {
        table_[buckets_[i].pos] = 0;
    }
    return true;
}

void SlotBuckets::gather(CallQueue *across) {
    for (size_t i = at_; i < nbuckets_; i++) {
        if ((buckets_[i].key & 3) == 0) {
            across->append(&buckets_[i].calls);
        }
    }
}

Call *SlotBuckets::next() {
    while (at_ < nbuckets_ && buckets_[at_].calls.empty()) {
        at_++;
    }
    return at_ < nbuckets_ ? buckets_[at_].calls.take() : nullptr;
}

BatchCommand::~BatchCommand() {
    ngx_free(buf_);
    ngx_free(keys_);
    ngx_free(specs_);
    ngx_free(ruleKey_);
    ngx_free(ruleSpec_);
}

namespace {

/* what "$len\r\n" and the closing "\r\n" add to an argument, at most */
constexpr size_t kBulkOverhead = 1 + NGX_INT64_LEN + 2 + 2;

u_char *decimal(u_char *p, size_t v) {
    return ngx_http_rl_decimal(p, static_cast<int64_t>(v));
}

/* "$len\r\n", the caller writes the argument, then ends() */
u_char *bulkStart(u_char *p, size_t len) {
    *p++ = '$';
    p = decimal(p, len);
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

u_char *bulkEnd(u_char *p) {
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

/* one argument: "$len\r\n" arg "\r\n" */
u_char *bulk(u_char *p, const void *data, size_t len) {
    return bulkEnd(ngx_cpymem(bulkStart(p, len), data, len));
}

template <class T>
bool grow(T **array, size_t cap, ngx_log_t *log) {
    auto *a = static_cast<T *>(ngx_alloc(cap * sizeof(T), log));
    if (a == nullptr) {
        return false;
    }
    ngx_free(*array);
    *array = a;
    return true;
}

}  // namespace

size_t BatchCommand::keyIndex(const ngx_str_t *key) {
    size_t h = ngx_murmur_hash2(key->data, key->len) & (kSlots - 1);
    while (slots_[h] != 0) {
        const ngx_str_t *k = keys_[slots_[h] - 1];
        if (k->len == key->len && ngx_memcmp(k->data, key->data, k->len) == 0)
        {
            return slots_[h];
        }
        h = (h + 1) & (kSlots - 1);
    }
    keys_[nkeys_++] = key;
    slots_[h] = static_cast<uint16_t>(nkeys_);
    used_[nkeys_ - 1] = static_cast<uint16_t>(h);
    return nkeys_;
}

/* the same spec is the same rule's (or its dry run's) bytes: the few
 * of a call are told apart by address */
size_t BatchCommand::specIndex(const ngx_str_t *spec) {
    for (size_t s = 0; s < nspecs_; s++) {
        if (specs_[s] == spec) {
            return s + 1;
        }
    }
    specs_[nspecs_++] = spec;
    return nspecs_;
}

bool BatchCommand::index(Call *first, size_t rules, bool across,
                         ngx_log_t *log) {
    static_assert(kSlots >= 2 * (kMaxBatchKeys + kMaxRulesPerCall),
                  "the key table stays at most half full");
    if (rules > cap_) {
        size_t cap = rules < 64 ? 64 : rules;
        if (!grow(&keys_, cap, log) || !grow(&specs_, cap, log) ||
            !grow(&ruleKey_, cap, log) || !grow(&ruleSpec_, cap, log))
        {
            cap_ = 0;
            return false;
        }
        cap_ = cap;
    }
    for (size_t u = 0; u < nkeys_; u++) {
        slots_[used_[u]] = 0;
    }
    nkeys_ = 0;
    nspecs_ = 0;
    ngroups_ = 0;
    size_t i = 0;
    int slot = -1;
    size_t from = 0;    /* the slot's first key */
    for (Call *c = first; c != nullptr; c = c->next) {
        ngx_http_rl_group_t *g = c->group;
        if (g == nullptr) {
            continue;
        }
        if (across && c->slot != slot) {
            /* a slot's keys are together: its calls are (gather()),
             * and a key is of one slot */
            if (nkeys_ > from) {
                groupKeys_[ngroups_++] = static_cast<uint16_t>(nkeys_ - from);
            }
            slot = c->slot;
            from = nkeys_;
        }
        for (ngx_uint_t k = 0; k < ngx_http_rl_records(g); k++, i++) {
            ruleKey_[i] = static_cast<uint32_t>(keyIndex(&g->keys[k]));
            ruleSpec_[i] = static_cast<uint32_t>(specIndex(g->specs[k]));
        }
    }
    if (across && nkeys_ > from) {
        groupKeys_[ngroups_++] = static_cast<uint16_t>(nkeys_ - from);
    }
    return true;
}

namespace {

/* Rule k of the group's record: its slot for a concurrency rule, its
 * signed units in a charge, else its cost; a calendar rule's bounds
 * after it, a trial's place (its rule's record) likewise. */
unsigned char *record(unsigned char *p, const ngx_http_rl_group_t *g,
                      ngx_uint_t k, size_t key, size_t spec, CallKind kind,
                      const uint64_t *costs) {
    if ((g->held >> k) & 1) {
        return slotRecord(p, key, spec, g->slot_id);
    }
    if (kind == CallKind::Charge || kind == CallKind::Credit) {
        p = chargeRecord(p, key, spec, static_cast<int64_t>(costs[k]));
    } else {
        p = ruleRecord(p, key, spec, costs[k]);
    }
    if (k >= g->nrules) {
        return placeRecord(p, g->trials[k - g->nrules].place + 1);
    }
    if ((g->calendar >> k) & 1) {
        p = boundsRecord(p, &g->bounds[3 * k]);
    }
    return p;
}

/* The bounds a group's calendar rules add to its records, and its
 * trials' places. */
size_t boundsBytes(const ngx_http_rl_group_t *g) {
    return kBoundsBytes *
               static_cast<size_t>(__builtin_popcountll(g->calendar)) +
           kPlaceBytes * g->ntrials;
}

}  // namespace

/* "*argc\r\n", the command, the script, the key count, the keys, the
 * head (each request's rule count and age, each rule's key, spec and
 * cost), the specs */
size_t BatchCommand::build(Call *first, bool eval, int64_t nowUs,
                           ngx_log_t *log, CallKind kind, bool across) {
    bool refund = kind == CallKind::Refund;
    bool own = kind != CallKind::Decide;
    size_t requests = 0;
    size_t rules = 0;
    size_t extra = 0;   /* calendar rules' bounds */
    for (Call *c = first; c != nullptr; c = c->next) {
        if (c->group != nullptr) {
            requests++;
            rules += ngx_http_rl_records(c->group);
            extra += boundsBytes(c->group);
        } else {
            c->rules = 0;   /* gone before it left: no part in the reply */
        }
    }
    if (rules == 0 || !index(first, rules, across, log)) {
        return 0;
    }

    std::string_view script = across ? (eval ? crossSlotScriptText()
                                             : crossSlotScriptSha())
                                     : (eval ? scriptText() : scriptSha());
    size_t headLen = requestBytes(0) * requests +
                     (requestBytes(1) - requestBytes(0)) * rules + extra;
    size_t mapLen = across ? nkeys_ : 0;
    size_t argc = 4 + 2 * nkeys_ + nspecs_ + (own ? 1 : 0) + (across ? 1 : 0);
    size_t size = 1 + NGX_INT64_LEN + 2 + 7 + script.size() + NGX_INT64_LEN +
                  headLen + mapLen + argc * kBulkOverhead + 6;
    for (size_t k = 0; k < nkeys_; k++) {
        size += 2 * keys_[k]->len;
    }
    for (size_t s = 0; s < nspecs_; s++) {
        size += specs_[s]->len;
    }
    if (size > bufCap_) {
        size_t cap = size < 4096 ? 4096 : size * 2;
        if (!grow(&buf_, cap, log)) {
            bufCap_ = 0;
            return 0;
        }
        bufCap_ = cap;
    }

    u_char *p = buf_;
    *p++ = '*';
    p = decimal(p, argc);
    *p++ = '\r';
    *p++ = '\n';
    p = eval ? bulk(p, "EVAL", 4) : bulk(p, "EVALSHA", 7);
    p = bulk(p, script.data(), script.size());
    if (across) {
        p = bulk(p, "0", 1);    /* no key declared: they are arguments */
    } else {
        u_char text[NGX_INT64_LEN];
        p = bulk(p, text, decimal(text, 2 * nkeys_) - text);
    }
    for (size_t k = 0; k < nkeys_; k++) {
        p = bulk(p, keys_[k]->data, keys_[k]->len);
    }
    /* each key's block key: its first bytes */
    for (size_t k = 0; k < nkeys_; k++) {
        p = bulk(p, keys_[k]->data, blockKeyLength(keys_[k]->len));
    }

    p = bulkStart(p, headLen);
    size_t i = 0;
    for (Call *c = first; c != nullptr; c = c->next) {
        ngx_http_rl_group_t *g = c->group;
        if (g == nullptr) {
            continue;
        }
        /* t = -A: the request waited A us (0: Redis' TIME itself); its
         * time is then the reply's clock less A; a refund's, its own */
        int64_t waited = nowUs - g->sent_us;
        g->age_us = waited > 0 ? waited : 0;
        int64_t t = refund ? g->now_us : -g->age_us;
        if (ngx_http_rl_nginx_clock && !refund) {
            /* tests: nginx's (faked) clock, when the request came */
            t = realtimeUs() - g->age_us;
            g->now_us = t;
        }
        p = requestHead(p, ngx_http_rl_records(g), t,
                        own ? 0 : g->lease_ask);
        for (ngx_uint_t k = 0; k < ngx_http_rl_records(g); k++, i++) {
            p = record(p, g, k, ruleKey_[i], ruleSpec_[i], kind, g->costs);
        }
    }
    p = bulkEnd(p);

    for (size_t s = 0; s < nspecs_; s++) {
        p = bulk(p, specs_[s]->data, specs_[s]->len);
    }
    if (own) {
        std::string_view word = callWord(kind);
        p = bulk(p, word.data(), word.size());
    }
    if (across) {
        /* the map: a byte a key, 1 where a slot's keys start */
        p = bulkStart(p, mapLen);
        for (size_t g = 0; g < ngroups_; g++) {
            *p++ = 1;
            ngx_memzero(p, groupKeys_[g] - 1u);
            p += groupKeys_[g] - 1u;
        }
        p = bulkEnd(p);
    }
    return static_cast<size_t>(p - buf_);
}

Call *sendRefund(Link *link, ngx_http_rl_group_t *g, bool asking, bool eval,
                 int64_t thenUs, const uint64_t *costs, CallKind kind) {
    /* hiredis copies the arguments: they live on the stack */
    constexpr size_t kMaxArgs = 5 + 3 * kMaxRulesPerCall;
    const char *argv[kMaxArgs];
    size_t argvlen[kMaxArgs];
    u_char count[NGX_INT64_LEN];
    u_char head[requestBytes(kMaxRulesPerCall) +
                kBoundsBytes * kMaxRulesPerCall];
    ngx_uint_t n = ngx_http_rl_records(g);
    if (n > kMaxRulesPerCall) {
        return nullptr;
    }
    ngx_uint_t argc = 5 + 3 * n;
    if (eval) {
        argv[0] = "EVAL";
        argvlen[0] = 4;
        argv[1] = rl_script_text(&argvlen[1]);
    } else {
        argv[0] = "EVALSHA";
        argvlen[0] = 7;
        argv[1] = rl_script_sha();
        argvlen[1] = RL_SHA_LEN;
    }
    argv[2] = reinterpret_cast<char *>(count);
    argvlen[2] = static_cast<size_t>(decimal(count, 2 * n) - count);
    /* keys (then their block keys) and specs in rule order, each rule
     * its own record; a renewal or a charge at Redis' time less how long
     * it waited since it first left (t = -A), as in a batch */
    int64_t waited = monotonicUs() - g->sent_us;
    int64_t t = kind == CallKind::Refund ? thenUs
                : (ngx_http_rl_nginx_clock ? realtimeUs() : 0) -
                      (waited > 0 ? waited : 0);
    u_char *p = requestHead(head, n, t);
    for (ngx_uint_t k = 0; k < n; k++) {
        argv[3 + k] = reinterpret_cast<char *>(g->keys[k].data);
        argvlen[3 + k] = g->keys[k].len;
        argv[3 + n + k] = argv[3 + k];
        argvlen[3 + n + k] = blockKeyLength(g->keys[k].len);
        argv[4 + 2 * n + k] = reinterpret_cast<char *>(g->specs[k]->data);
        argvlen[4 + 2 * n + k] = g->specs[k]->len;
        p = record(p, g, k, k + 1, k + 1, kind, costs);
    }
    argv[3 + 2 * n] = reinterpret_cast<char *>(head);
    argvlen[3 + 2 * n] = static_cast<size_t>(p - head);
    std::string_view word = callWord(kind);
    argv[argc - 1] = word.data();
    argvlen[argc - 1] = word.size();
    return link->refund(g, static_cast<int>(argc), argv, argvlen, asking);
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
