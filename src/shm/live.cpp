/*
 * live.cpp: live limits and trials (see live.hpp). The table in shared
 * memory ("rl_live_1": an entry per zone and name, its settings, a
 * trial's figures and top keys), and what each worker makes of it: per
 * rule, in the worker's own memory, its spec at the live limit and its
 * trial's shadow rule, made again when the entry's version moves. The
 * request path reads one number while no setting exists anywhere.
 */

#include "live.hpp"

#include "clock.hpp"
#include "core/algorithm.hpp"
#include "core/top_keys.hpp"
#include "labels.hpp"

namespace rl::live {
namespace {

/* A setting in shared memory. */
struct Stored {
    int64_t limit;              /* -1: none */
    int64_t untilMs;
    int64_t sinceMs;
    int64_t endsUs;             /* monotonic, 0: no end */
    uint16_t byLen;
    uint16_t reasonLen;
    char by[kMaxBy];
    char reason[kMaxReason];
};

struct Entry {
    labels::Labels labels;      /* first: its zone and rule name */
    ngx_atomic_t version;       /* moves (under the mutex) on a change */
    Stored settings[2];         /* Kind::Limit, Kind::Trial */
    ngx_atomic_t trialPassed;
    ngx_atomic_t trialRejected;
    top::Sketch *trialTop;      /* while a trial runs (if there was room) */
};

struct Table {
    ngx_uint_t generation;      /* one more per configuration */
    ngx_atomic_t active;        /* settings there are (ended or not) */
    ngx_uint_t capacity;
    ngx_slab_pool_t *pool;
    Entry entries[1];
};

/* What a worker makes of its rule's entry (in cf->pool: its own copy
 * once forked). */
struct RuleLive {
    Head head;                  /* first: what the request path reads */
    const ngx_http_rl_rule_t *rule;
    Table *table;               /* set by the zone's init */
    Entry *entry;
    ngx_atomic_uint_t seen;     /* entry->version the rest follows */
    int64_t limit;              /* -1: none */
    int64_t endsUs;
    uint32_t crc;               /* the deny cache's, at the live limit */
    ngx_str_t spec;             /* at the live limit */
    ngx_str_t drySpec;
    int64_t trialEndsUs;
    bool trial;
    ngx_http_rl_rule_t shadow;  /* the trial's: a dry run at its N */
};

/* Trials keep their top keys in the zone: room for this many at once. */
constexpr size_t kTrialSketches = 16;

ngx_uint_t capacityFor(ngx_uint_t names) {
    return (names + 16) / 16 * 16;
}

RuleLive *liveOf(const ngx_http_rl_rule_t *rule) {
    return static_cast<RuleLive *>(rule->live);
}

Entry *entryOf(const ngx_http_rl_name_t *name) {
    return static_cast<Entry *>(name->live);
}

Table *tableOf(const ngx_http_rl_name_t *name) {
    return liveOf(name->first) != nullptr ? liveOf(name->first)->table
                                          : nullptr;
}

bool live(const Stored &s, int64_t now) {
    return s.limit >= 0 && (s.endsUs == 0 || now < s.endsUs);
}

/* The rule's burst at N: its default follows N. */
uint64_t burstAt(const ngx_http_rl_rule_t *rule, uint64_t n) {
    return rule->burst_follows ? n : rule->burst;
}

void writeSpecAt(u_char *p, const ngx_http_rl_rule_t *rule, uint64_t n,
                 int dry) {
    (void) rl_spec_write(p, static_cast<int>(rule->algorithm),
                         reinterpret_cast<const char *>(rule->name.data),
                         rule->name.len, n, rule->window_us,
                         burstAt(rule, n), rule->delay, dry,
                         static_cast<int>(rule->burst_follows),
                         rule->calendar != nullptr ? 1 : 0);
}

/* The entry's settings, copied under the lock when its version moved,
 * and what they make: the specs at the live limit, the trial's
 * shadow. */
void refresh(RuleLive *l) {
    ngx_atomic_uint_t v = l->entry->version;
    if (v == l->seen) {
        return;
    }
    ngx_shmtx_lock(&l->table->pool->mutex);
    Stored limit = l->entry->settings[0];
    Stored trial = l->entry->settings[1];
    l->seen = l->entry->version;
    ngx_shmtx_unlock(&l->table->pool->mutex);

    const ngx_http_rl_rule_t *rule = l->rule;
    l->limit = limit.limit;
    l->endsUs = limit.endsUs;
    if (l->limit >= 0) {
        auto n = static_cast<uint64_t>(l->limit);
        writeSpecAt(l->spec.data, rule, n, 0);
        writeSpecAt(l->drySpec.data, rule, n, 1);
        uint32_t crc;
        ngx_crc32_init(crc);
        ngx_crc32_update(&crc, reinterpret_cast<u_char *>(
                                   const_cast<uint32_t *>(&rule->config_crc)),
                         sizeof(uint32_t));
        ngx_crc32_update(&crc, reinterpret_cast<u_char *>(&n), sizeof(n));
        ngx_crc32_final(crc);
        l->crc = crc;
    }
    /* (a calendar rule's record would carry its period's bounds too:
     * no trial of one, SPEC section 12) */
    l->trial = trial.limit >= 0 &&
               rule->algorithm != RL_ALGORITHM_CONCURRENCY &&
               rule->calendar == nullptr;
    l->trialEndsUs = trial.endsUs;
    if (l->trial) {
        auto n = static_cast<uint64_t>(trial.limit);
        ngx_http_rl_rule_t &s = l->shadow;
        s.limit = n;
        s.burst = burstAt(rule, n);
        /* a dry run in the rule's place (rl_core.h: a trial's) */
        writeSpecAt(s.spec.data, rule, n, 2);
        writeSpecAt(s.dry_spec.data, rule, n, 2);
    }
}

/* The rule's live state now (quiet() said something is set somewhere):
 * NULL for a trial's shadow, which is what it is. */
RuleLive *current(const ngx_http_rl_rule_t *rule) {
    RuleLive *l = liveOf(rule);
    if (l->entry == nullptr || rule == &l->shadow) {
        return nullptr;
    }
    refresh(l);
    return l;
}

bool limited(const RuleLive *l) {
    return l->limit >= 0 && (l->endsUs == 0 || monotonicUs() < l->endsUs);
}

void bind(ngx_http_rl_name_t *name, labels::Labels *entry, bool fresh,
          void *) {
    auto *e = reinterpret_cast<Entry *>(entry);
    if (fresh) {
        e->version++;
        e->settings[0].limit = -1;
        e->settings[1].limit = -1;
        e->trialPassed = 0;
        e->trialRejected = 0;
        e->trialTop = nullptr;
    }
    name->live = e;
}

/* A setting changed, under the lock: the count of settings there are. */
void account(Table *t, const Stored &before, const Stored &after) {
    if (before.limit < 0 && after.limit >= 0) {
        t->active++;
    } else if (before.limit >= 0 && after.limit < 0) {
        t->active--;
    }
}

void copyText(char *to, uint16_t *len, size_t cap, std::string_view from) {
    size_t n = from.size() < cap ? from.size() : cap;
    if (n > 0) {    /* an empty view may have no data: memcpy's UB */
        ngx_memcpy(to, from.data(), n);
    }
    *len = static_cast<uint16_t>(n);
}

/* A trial set, ended or changed, under the lock: its figures and top
 * keys start again when it is another trial (another start) or none. */
void restartTrial(ngx_slab_pool_t *pool, Entry *e, const Stored &was,
                  const Stored &next) {
    if (next.limit >= 0 && was.limit >= 0 && was.sinceMs == next.sinceMs) {
        return;     /* the same trial, its N or end changed */
    }
    e->trialPassed = 0;
    e->trialRejected = 0;
    if (next.limit < 0) {
        if (e->trialTop != nullptr) {
            ngx_slab_free_locked(pool, e->trialTop);
            e->trialTop = nullptr;
        }
        return;
    }
    if (e->trialTop == nullptr) {
        e->trialTop = static_cast<top::Sketch *>(
            ngx_slab_alloc_locked(pool, sizeof(top::Sketch)));
    }
    if (e->trialTop != nullptr) {
        top::init(e->trialTop);
    }
}

/* A reload: the settings the table kept that the names' rules, as
 * configured now, cannot take (a rule changed: a fixed_window's live
 * limit of 1e9 would make a sliding_log's log of 8 GB) are cleared, as
 * the fleet ignores such a setting read from Redis. An embedded zone's
 * is warned of here; a Redis zone's by the fleet, once it reads it
 * again. */
void clearUnfit(ngx_http_rl_main_conf_t *rmcf, ngx_log_t *log) {
    auto *names = static_cast<ngx_http_rl_name_t *>(rmcf->names.elts);
    for (ngx_uint_t i = 0; i < rmcf->names.nelts; i++) {
        ngx_http_rl_name_t *name = &names[i];
        Entry *e = entryOf(name);
        Table *t = tableOf(name);
        for (int k = 0; e != nullptr && t != nullptr && k < 2; k++) {
            auto kind = static_cast<Kind>(k);
            ngx_shmtx_lock(&t->pool->mutex);
            Stored s = e->settings[k];
            ngx_shmtx_unlock(&t->pool->mutex);
            const char *why = nullptr;
            if (s.limit < 0 ||
                settingFits(name, kind, s.limit, ttlOf(s.untilMs, s.sinceMs),
                            &why)) {
                continue;
            }
            (void) write(name, kind, Setting(), 0);
            if (ngx_http_rl_embedded(name->first->zone)) {
                ngx_log_error(NGX_LOG_WARN, log, 0,
                              "rl_api: %s of %L for rule \"%V\" in zone "
                              "\"%V\" (kept across a reload) not applied: "
                              "%s",
                              kind == Kind::Limit ? "live limit" : "trial",
                              s.limit, &name->first->name,
                              &name->first->zone->name, why);
            }
        }
    }
}

}  // namespace

size_t tableSize(ngx_http_rl_main_conf_t *rmcf) {
    size_t table = offsetof(Table, entries) +
                   capacityFor(rmcf->names.nelts) * sizeof(Entry);
    size_t sketches = kTrialSketches * (sizeof(top::Sketch) + 64);
    /* the slab pool's own pages and descriptors */
    return table + sketches + (table + sketches) / 32 + 64 * 1024;
}

bool prepare(ngx_conf_t *cf, ngx_http_rl_main_conf_t *rmcf) {
    auto **rules = static_cast<ngx_http_rl_rule_t **>(rmcf->rules.elts);
    for (ngx_uint_t i = 0; i < rmcf->rules.nelts; i++) {
        ngx_http_rl_rule_t *rule = rules[i];
        auto *l = static_cast<RuleLive *>(
            ngx_pcalloc(cf->pool, sizeof(RuleLive)));
        size_t len = rule->spec.len;
        auto *p = static_cast<u_char *>(ngx_pnalloc(cf->pool, 4 * len));
        if (l == nullptr || p == nullptr) {
            return false;
        }
        l->rule = rule;
        l->seen = ~ngx_atomic_uint_t(0);
        l->limit = -1;
        l->spec = {len, p};
        l->drySpec = {len, p + len};
        /* the trial's shadow: the rule, a dry run on a state of its own
         * (its id made of the name and a NUL, which no name holds) that
         * counts nowhere but in the trial's figures */
        ngx_http_rl_rule_t &s = l->shadow;
        s = *rule;
        s.spec = {len, p + 2 * len};
        s.dry_spec = {len, p + 3 * len};
        s.dry_run = 1;
        s.charge_cv = nullptr;
        s.stats = nullptr;
        s.top = nullptr;
        s.live = l;
        char name[NGX_HTTP_RL_MAX_NAME + 6];
        ngx_memcpy(name, rule->name.data, rule->name.len);
        ngx_memcpy(name + rule->name.len, "\0trial", 6);
        size_t alen;
        const char *alg = rl_algorithm_name(
            static_cast<int>(rule->algorithm), &alen);
        if (rl_rule_id(reinterpret_cast<char *>(rule->zone->name.data),
                       rule->zone->name.len, name, rule->name.len + 6, alg,
                       alen, rule->window_us,
                       reinterpret_cast<char *>(rule->key.value.data),
                       rule->key.value.len, s.id) != 0) {
            return false;
        }
        rule->live = l;
    }
    return true;
}

const ngx_str_t *liveSpecOf(const ngx_http_rl_rule_t *rule, bool dry) {
    RuleLive *l = current(rule);
    if (l == nullptr || !limited(l)) {
        return dry ? &rule->dry_spec : &rule->spec;
    }
    return dry ? &l->drySpec : &l->spec;
}

uint64_t liveLimitOf(const ngx_http_rl_rule_t *rule) {
    RuleLive *l = current(rule);
    if (l == nullptr || !limited(l)) {
        return rule->limit;
    }
    return static_cast<uint64_t>(l->limit);
}

uint32_t liveCrc(const ngx_http_rl_rule_t *rule) {
    RuleLive *l = current(rule);
    if (l == nullptr || !limited(l)) {
        return rule->config_crc;
    }
    return l->crc;
}

ngx_http_rl_rule_t *liveTrialOf(const ngx_http_rl_rule_t *rule) {
    RuleLive *l = current(rule);
    if (l == nullptr || !l->trial ||
        (l->trialEndsUs != 0 && monotonicUs() >= l->trialEndsUs)) {
        return nullptr;
    }
    return &l->shadow;
}

const ngx_http_rl_rule_t *shadowed(const ngx_http_rl_rule_t *shadow) {
    return liveOf(shadow)->rule;
}

void trialCount(const ngx_http_rl_rule_t *shadow, bool rejected,
                const ngx_str_t *value) {
    RuleLive *l = liveOf(shadow);
    Entry *e = l->entry;
    (void) ngx_atomic_fetch_add(rejected ? &e->trialRejected
                                         : &e->trialPassed, 1);
    if (!rejected) {
        return;
    }
    ngx_slab_pool_t *pool = l->table->pool;
    uint32_t hash = ngx_murmur_hash2(value->data, value->len);
    int64_t epoch = static_cast<int64_t>(ngx_current_msec) / top::kEpochMs;
    ngx_shmtx_lock(&pool->mutex);
    if (e->trialTop != nullptr) {
        top::reject(e->trialTop, hash,
                    {reinterpret_cast<const char *>(value->data),
                     value->len},
                    epoch);
    }
    ngx_shmtx_unlock(&pool->mutex);
}

Setting read(const ngx_http_rl_name_t *name, Kind kind, char *by,
             char *reason) {
    Setting out;
    Entry *e = entryOf(name);
    Table *t = tableOf(name);
    if (e == nullptr || t == nullptr) {
        return out;
    }
    ngx_shmtx_lock(&t->pool->mutex);
    const Stored &s = e->settings[static_cast<int>(kind)];
    if (live(s, monotonicUs())) {
        out.limit = s.limit;
        out.untilMs = s.untilMs;
        out.sinceMs = s.sinceMs;
        ngx_memcpy(by, s.by, s.byLen);
        ngx_memcpy(reason, s.reason, s.reasonLen);
        out.by = {by, s.byLen};
        out.reason = {reason, s.reasonLen};
    }
    ngx_shmtx_unlock(&t->pool->mutex);
    return out;
}

void trialFigures(const ngx_http_rl_name_t *name, int64_t *passed,
                  int64_t *rejected) {
    Entry *e = entryOf(name);
    *passed = e != nullptr ? static_cast<int64_t>(e->trialPassed) : 0;
    *rejected = e != nullptr ? static_cast<int64_t>(e->trialRejected) : 0;
}

bool write(const ngx_http_rl_name_t *name, Kind kind, const Setting &s,
           int64_t endsInMs) {
    Entry *e = entryOf(name);
    Table *t = tableOf(name);
    if (e == nullptr || t == nullptr) {
        return false;
    }
    Stored next{};
    next.limit = s.limit;
    if (s.limit >= 0) {
        next.untilMs = s.untilMs;
        next.sinceMs = s.sinceMs;
        next.endsUs = endsInMs > 0 ? monotonicUs() + endsInMs * 1000 : 0;
        copyText(next.by, &next.byLen, kMaxBy, s.by);
        copyText(next.reason, &next.reasonLen, kMaxReason, s.reason);
    }
    ngx_slab_pool_t *pool = t->pool;
    ngx_shmtx_lock(&pool->mutex);
    Stored &was = e->settings[static_cast<int>(kind)];
    bool same = was.limit == next.limit &&
                (next.limit < 0 ||
                 (was.untilMs == next.untilMs &&
                  was.sinceMs == next.sinceMs && was.byLen == next.byLen &&
                  was.reasonLen == next.reasonLen &&
                  ngx_memcmp(was.by, next.by, next.byLen) == 0 &&
                  ngx_memcmp(was.reason, next.reason, next.reasonLen) == 0));
    /* the fleet reads a setting again each second: its end, made on this
     * host's clock each time, moves by the round trip's jitter */
    int64_t drift = next.endsUs - was.endsUs;
    bool moved = (next.endsUs == 0) != (was.endsUs == 0) ||
                 drift > 1000000 || drift < -1000000;
    if (kind == Kind::Trial && !same) {
        restartTrial(pool, e, was, next);
    }
    account(t, was, next);
    if (!same || moved) {
        was = next;
        e->version++;
    }
    ngx_shmtx_unlock(&pool->mutex);
    return !same;
}

void sweep(ngx_http_rl_main_conf_t *rmcf) {
    auto *names = static_cast<ngx_http_rl_name_t *>(rmcf->names.elts);
    Table *t = rmcf->names.nelts > 0 ? tableOf(&names[0]) : nullptr;
    if (t == nullptr || t->active == 0) {
        return;
    }
    int64_t now = monotonicUs();
    Setting none;
    for (ngx_uint_t i = 0; i < rmcf->names.nelts; i++) {
        Entry *e = entryOf(&names[i]);
        for (int k = 0; e != nullptr && k < 2; k++) {
            const Stored &s = e->settings[k];
            if (s.limit >= 0 && s.endsUs != 0 && now >= s.endsUs) {
                (void) write(&names[i], static_cast<Kind>(k), none, 0);
            }
        }
    }
}

size_t trialTop(const ngx_http_rl_name_t *name, void *entries) {
    Entry *e = entryOf(name);
    Table *t = tableOf(name);
    if (e == nullptr || t == nullptr) {
        return 0;
    }
    int64_t epoch = static_cast<int64_t>(ngx_current_msec) / top::kEpochMs;
    ngx_shmtx_lock(&t->pool->mutex);
    size_t n = e->trialTop != nullptr
                   ? top::list(e->trialTop, epoch,
                               static_cast<top::Entry *>(entries))
                   : 0;
    ngx_shmtx_unlock(&t->pool->mutex);
    return n;
}

int64_t ttlOf(int64_t untilMs, int64_t sinceMs) {
    if (untilMs == 0) {
        return 0;
    }
    return untilMs > sinceMs ? untilMs - sinceMs : -1;
}

bool settingFits(const ngx_http_rl_name_t *name, Kind kind, int64_t n,
                 int64_t ttlMs, const char **why) {
    const ngx_http_rl_rule_t *first = name->first;
    if (n < 0 || n > kMaxLimit) {
        *why = "the limit is not a whole number from 0 to 1e9";
        return false;
    }
    if (kind == Kind::Trial && (ttlMs <= 0 || ttlMs > kMaxTrialTtlS * 1000)) {
        *why = "a trial ends by itself within a day (ttl 1 to 86400 s)";
        return false;
    }
    if (ttlMs < 0 || ttlMs > kMaxLimitTtlS * 1000) {
        *why = "a live limit's ttl is at most ten years, or none";
        return false;
    }
    if (kind == Kind::Trial && first->algorithm == RL_ALGORITHM_CONCURRENCY) {
        *why = "a concurrency= rule takes no trial: its slots are held, not "
               "counted in a window";
        return false;
    }
    if (kind == Kind::Trial && first->calendar != nullptr) {
        *why = "a calendar rule takes no trial: a trial ends within a day, "
               "its periods are longer";
        return false;
    }
    if (n == 0 && first->algorithm == RL_ALGORITHM_CONCURRENCY) {
        *why = "a concurrency= rule's limit is at least 1";
        return false;
    }
    if (n == 0) {
        return true;    /* rejects every request */
    }
    for (ngx_uint_t i = 0; i < name->nrules; i++) {
        const ngx_http_rl_rule_t *rule = name->rules[i];
        auto u = static_cast<uint64_t>(n);
        int alg = static_cast<int>(rule->algorithm);
        if ((alg == RL_ALGORITHM_CONCURRENCY &&
             u > NGX_HTTP_RL_MAX_CONCURRENCY) ||
            (rule->algorithm ==
                 static_cast<ngx_uint_t>(Algorithm::SlidingLog) &&
             u > 100000)) {
            *why = "the limit is above what the rule's algorithm keeps "
                   "(sliding_log and concurrency=: 100000)";
            return false;
        }
        uint64_t burst = burstAt(rule, u);
        uint64_t cost = rule->cost_cv != nullptr ? burst + 1 : rule->cost;
        if (alg != RL_ALGORITHM_CONCURRENCY &&
            !rl_algorithm_exact(alg, u, rule->window_us, burst, rule->delay,
                                cost)) {
            *why = "the limit is too large for exact arithmetic over the "
                   "rule's window";
            return false;
        }
        if (rule->cost_cv == nullptr &&
            rule->cost > rl_algorithm_capacity(alg, u, burst)) {
            *why = "the limit is below the rule's cost: no request would "
                   "pass (0 rejects every request)";
            return false;
        }
    }
    return true;
}

}  // namespace rl::live

extern "C" ngx_int_t ngx_http_rl_live_prepare(
    ngx_conf_t *cf, ngx_http_rl_main_conf_t *rmcf) noexcept {
    return rl::live::prepare(cf, rmcf) ? NGX_OK : NGX_ERROR;
}

extern "C" size_t ngx_http_rl_live_size(
    ngx_http_rl_main_conf_t *rmcf) noexcept {
    return rl::live::tableSize(rmcf);
}

/* The zone's init: the master (or a lone process) before the workers
 * exist. Entries kept find their name again; each rule of the name
 * learns its entry. */
extern "C" ngx_int_t ngx_http_rl_live_init_zone(ngx_shm_zone_t *shm_zone,
                                                void *data) noexcept {
    using namespace rl::live;
    auto *rmcf = static_cast<ngx_http_rl_main_conf_t *>(shm_zone->data);
    auto *pool = reinterpret_cast<ngx_slab_pool_t *>(shm_zone->shm.addr);
    Table *t;
    if (shm_zone->shm.exists || data != nullptr) {
        t = static_cast<Table *>(pool->data);
    } else {
        ngx_uint_t cap = capacityFor(rmcf->names.nelts);
        t = static_cast<Table *>(ngx_slab_calloc(
            pool, offsetof(Table, entries) + cap * sizeof(Entry)));
        if (t == nullptr) {
            return NGX_ERROR;
        }
        t->capacity = cap;
        t->pool = pool;
        pool->data = t;
        pool->log_nomem = 0;
    }
    ngx_uint_t gen = ++t->generation;
    if (!rl::labels::claim(reinterpret_cast<u_char *>(t->entries),
                           sizeof(Entry), t->capacity, gen, rmcf,
                           shm_zone->shm.log, bind, nullptr)) {
        return NGX_ERROR;
    }
    /* entries no name has now: their settings no longer count */
    ngx_atomic_uint_t active = 0;
    for (ngx_uint_t k = 0; k < t->capacity; k++) {
        Entry &e = t->entries[k];
        if (e.labels.generation == gen) {
            active += (e.settings[0].limit >= 0 ? 1 : 0) +
                      (e.settings[1].limit >= 0 ? 1 : 0);
        }
    }
    t->active = active;
    auto **rules = static_cast<ngx_http_rl_rule_t **>(rmcf->rules.elts);
    for (ngx_uint_t i = 0; i < rmcf->rules.nelts; i++) {
        auto *l = static_cast<RuleLive *>(rules[i]->live);
        if (l != nullptr && rules[i]->named->live != nullptr) {
            l->head.active = &t->active;
            l->table = t;
            l->entry = static_cast<Entry *>(rules[i]->named->live);
        }
    }
    clearUnfit(rmcf, shm_zone->shm.log);
    return NGX_OK;
}
