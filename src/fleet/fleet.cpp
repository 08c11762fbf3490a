/*
 * fleet.cpp: worker 0's part in the fleet (see fleet.hpp): once a second
 * each Redis zone's live limits, trials and new audit entries; every
 * interval the instance's record. The instance's id lives in a small
 * shared memory zone ("rl_fleet_1"), drawn once when nginx starts and
 * kept across reloads, so that a reload is the same instance.
 */

#include "fleet.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "clock.hpp"
#include "core/cluster.hpp"
#include "core/script.hpp"
#include "publish.hpp"
#include "shm/key_caches.hpp"
#include "shm/live.hpp"
#include "redis/link.hpp"

namespace rl::fleet {
namespace {

constexpr ngx_msec_t kTickMs = 1000;
constexpr size_t kIdLen = 16;
/* The audit's first read takes the entries since the worker started
 * and this long before: a reload's worker 0 reads what its
 * predecessor's last turns missed. */
constexpr int64_t kFirstReadBackMs = 10000;

struct Shared {
    char id[kIdLen];
    int64_t startedMs;
};

/* A zone's part: its keys, the audit's last entry read, its turn. */
struct ZoneSync {
    struct Worker *w;
    ngx_http_rl_zone_t *zone;
    ngx_str_t keys[4];          /* live, trial, audit, seen */
    char last[48];              /* the audit's newest id read ("": none) */
    size_t lastLen;
    bool reading;               /* a sync is out */
    bool publishing;            /* a publication is out */
    ngx_msec_t publishedAt;
    bool published;
};

struct Worker {
    ngx_http_rl_main_conf_t *rmcf;
    ngx_pool_t *pool;
    /* per name and kind, the setting last refused (its sinceMs + 1; 0:
     * none): its warning is logged once, not each second */
    int64_t *refused;
    ngx_event_t tick;
    ZoneSync *zones;
    ngx_uint_t nzones;
    ngx_log_t *log;
    int64_t startedMs;          /* monotonic: the audit's first read */
    bool exiting;
};

Worker *workerOf(ngx_http_rl_main_conf_t *rmcf) {
    return static_cast<Worker *>(rmcf->fleet_worker);
}

Shared *sharedOf(ngx_http_rl_main_conf_t *rmcf) {
    if (rmcf->fleet_shm == nullptr) {
        return nullptr;
    }
    auto *pool = reinterpret_cast<ngx_slab_pool_t *>(
        rmcf->fleet_shm->shm.addr);
    return static_cast<Shared *>(pool->data);
}

using rl::viewOf;

std::string_view viewOf(const redisReply *r) {
    return r != nullptr && r->str != nullptr
               ? std::string_view(r->str, r->len) : std::string_view();
}

bool isArray(const redisReply *r, size_t n) {
    return r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements >= n;
}

/* ---------------------------------------------------------------- */
/* the settings read                                                 */

/* Whether this instance's rules of name i take a setting read from
 * Redis (another instance may define the name otherwise, or the entry
 * was made by hand); a refused one is warned of once. */
bool fits(ZoneSync *zs, ngx_uint_t i, live::Kind kind,
          const live::Setting &s) {
    auto *names = static_cast<ngx_http_rl_name_t *>(zs->w->rmcf->names.elts);
    int64_t &refused = zs->w->refused[i * 2 + static_cast<ngx_uint_t>(kind)];
    const char *why = nullptr;
    if (live::settingFits(&names[i], kind, s.limit,
                          live::ttlOf(s.untilMs, s.sinceMs), &why)) {
        refused = 0;
        return true;
    }
    if (refused != s.sinceMs + 1) {
        refused = s.sinceMs + 1;
        ngx_log_error(NGX_LOG_WARN, zs->w->log, 0,
                      "rl_fleet: %s of %L for rule \"%V\" in zone \"%V\" "
                      "(read from Redis) not applied: %s",
                      kind == live::Kind::Limit ? "live limit" : "trial",
                      s.limit, &names[i].first->name, &zs->zone->name, why);
    }
    return false;
}

/* The zone's names of a hash's settings, applied: a name the hash has
 * is set, any other cleared (a setting deleted, or ended). */
void applySettings(ZoneSync *zs, live::Kind kind, const redisReply *list,
                   int64_t redisNowMs) {
    ngx_http_rl_main_conf_t *rmcf = zs->w->rmcf;
    auto *names = static_cast<ngx_http_rl_name_t *>(rmcf->names.elts);
    for (ngx_uint_t i = 0; i < rmcf->names.nelts; i++) {
        ngx_http_rl_name_t *name = &names[i];
        if (name->first->zone != zs->zone) {
            continue;
        }
        live::Setting s;
        int64_t endsIn = 0;
        for (size_t k = 0; k + 1 < list->elements; k += 2) {
            if (viewOf(list->element[k]) != viewOf(name->first->name)) {
                continue;
            }
            if (parseSetting(viewOf(list->element[k + 1]), &s.limit,
                             &s.untilMs, &s.sinceMs, &s.by, &s.reason) &&
                (s.untilMs == 0 || s.untilMs > redisNowMs)) {
                endsIn = s.untilMs != 0 ? s.untilMs - redisNowMs : 0;
            } else {
                s = live::Setting();
            }
            break;
        }
        if (s.limit >= 0 && !fits(zs, i, kind, s)) {
            s = live::Setting();
        }
        if (live::write(name, kind, s, endsIn)) {
            ngx_log_error(NGX_LOG_NOTICE, zs->w->log, 0,
                          "rl_fleet: %s of rule \"%V\" in zone \"%V\" %s "
                          "(read from Redis)",
                          kind == live::Kind::Limit ? "live limit"
                                                    : "trial",
                          &name->first->name, &zs->zone->name,
                          s.limit >= 0 ? "set" : "cleared");
        }
    }
}

/* An audit entry of another instance's: what it changed of a key
 * value, this instance forgets too (SPEC section 11: within a second
 * everywhere). */
void applyEntry(ZoneSync *zs, const redisReply *entry) {
    if (!isArray(entry, 2) || !isArray(entry->element[1], 0)) {
        return;
    }
    const redisReply *f = entry->element[1];
    std::string_view id, action, rule, value;
    bool hasValue = false;
    for (size_t k = 0; k + 1 < f->elements; k += 2) {
        std::string_view name = viewOf(f->element[k]);
        std::string_view v = viewOf(f->element[k + 1]);
        if (name == "id") {
            id = v;
        } else if (name == "action") {
            action = v;
        } else if (name == "rule") {
            rule = v;
        } else if (name == "value") {
            value = v;
            hasValue = true;
        }
    }
    if (!hasValue || value.empty() || id == instanceId(zs->w->rmcf)) {
        return;     /* no key, or this instance's own write */
    }
    ngx_str_t v = {value.size(),
                   reinterpret_cast<u_char *>(const_cast<char *>(
                       value.data()))};
    ngx_str_t r = {rule.size(), reinterpret_cast<u_char *>(
                                    const_cast<char *>(rule.data()))};
    bool one = action == "reset" || action == "credit";
    shm::forgetKey(zs->w->rmcf, zs->zone, one ? &r : nullptr, &v);
}

void synced(redisAsyncContext *ac, void *reply, void *data) noexcept {
    auto *zs = static_cast<ZoneSync *>(data);
    auto *r = static_cast<const redisReply *>(reply);
    zs->reading = false;
    if (!zs->w->exiting) {
        Link::heardMoved(ac, r);
    }
    if (zs->w->exiting || !isArray(r, 5) ||
        r->element[0]->type != REDIS_REPLY_INTEGER ||
        !isArray(r->element[1], 0) || !isArray(r->element[2], 0) ||
        !isArray(r->element[3], 0)) {
        return;     /* Redis cannot answer: the settings read last stay */
    }
    int64_t now = r->element[0]->integer;
    applySettings(zs, live::Kind::Limit, r->element[1], now);
    applySettings(zs, live::Kind::Trial, r->element[2], now);
    const redisReply *entries = r->element[3];
    for (size_t k = 0; k < entries->elements; k++) {
        applyEntry(zs, entries->element[k]);
    }
    std::string_view last = viewOf(r->element[4]);
    if (!last.empty() && last.size() < sizeof(zs->last)) {
        ngx_memcpy(zs->last, last.data(), last.size());
        zs->lastLen = last.size();
    }
}

void sync(ZoneSync *zs) {
    Link *link = linkOf(zs->w->rmcf, zs->zone);
    if (zs->reading || link == nullptr) {
        return;
    }
    Eval c(zs->keys, "sync");
    /* no entry read yet: those since this worker started (on Redis'
     * clock, whatever this host's says), none skipped */
    c.arg({zs->last, zs->lastLen})
        .num(monotonicUs() / 1000 - zs->w->startedMs + kFirstReadBackMs);
    zs->reading = link->operatorCommand(synced, zs, c.argc(), c.argv(),
                                        c.len());
}

/* ---------------------------------------------------------------- */
/* the record                                                        */

void publishedReply(redisAsyncContext *ac, void *reply,
                    void *data) noexcept {
    auto *zs = static_cast<ZoneSync *>(data);
    zs->publishing = false;
    auto *r = static_cast<const redisReply *>(reply);
    if (!zs->w->exiting) {
        Link::heardMoved(ac, r);
    }
    if (r != nullptr && r->type == REDIS_REPLY_ERROR && !zs->w->exiting) {
        ngx_log_error(NGX_LOG_WARN, zs->w->log, 0,
                      "rl_fleet: the record of zone \"%V\" was not "
                      "published: %*s", &zs->zone->name, r->len, r->str);
    }
}

void publish(ZoneSync *zs) {
    Worker *w = zs->w;
    Link *link = linkOf(w->rmcf, zs->zone);
    if (zs->publishing || link == nullptr) {
        return;
    }
    ngx_pool_t *pool = ngx_create_pool(16384, w->log);
    if (pool == nullptr) {
        return;
    }
    ngx_str_t identity, record;
    if (publish::identity(pool, w->rmcf, &identity) &&
        publish::record(pool, w->rmcf, zs->zone, &record)) {
        int64_t interval = static_cast<int64_t>(w->rmcf->fleet_interval);
        Eval c(zs->keys, "publish");
        c.arg(instanceId(w->rmcf)).arg(identity).arg(record)
            .num(3 * interval).num(publish::kKeepMs + 3 * interval);
        /* (hiredis copies the arguments) */
        zs->publishing = link->operatorCommand(publishedReply, zs, c.argc(),
                                               c.argv(), c.len());
        if (zs->publishing) {
            zs->publishedAt = ngx_current_msec;
            zs->published = true;
        }
    }
    ngx_destroy_pool(pool);
}

/* ---------------------------------------------------------------- */

void onTick(ngx_event_t *ev) noexcept {
    auto *w = static_cast<Worker *>(ev->data);
    if (w->exiting || ngx_exiting) {
        return;
    }
    live::sweep(w->rmcf);
    for (ngx_uint_t i = 0; i < w->nzones; i++) {
        ZoneSync *zs = &w->zones[i];
        sync(zs);
        if (!zs->published ||
            ngx_current_msec - zs->publishedAt >= w->rmcf->fleet_interval) {
            publish(zs);
        }
    }
    ngx_add_timer(&w->tick, kTickMs);
}

/* 16 hex digits from /dev/urandom (the time and pid if it fails). */
void drawId(char *out) {
    uint64_t v = 0;
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd < 0 || read(fd, &v, sizeof(v)) != static_cast<ssize_t>(sizeof(v))) {
        v = static_cast<uint64_t>(realtimeUs()) ^
            (static_cast<uint64_t>(ngx_pid) << 40);
    }
    if (fd >= 0) {
        close(fd);
    }
    static const char kHex[] = "0123456789abcdef";
    for (size_t i = 0; i < kIdLen; i++) {
        out[i] = kHex[(v >> (4 * i)) & 15];
    }
}

}  // namespace

ngx_str_t key(ngx_pool_t *pool, const ngx_http_rl_zone_t *zone,
              std::string_view suffix) {
    static constexpr std::string_view kTag = "{fleet}:";
    size_t len = zone->prefix.len + kTag.size() + zone->name.len + 1 +
                 suffix.size();
    auto *p = static_cast<u_char *>(ngx_pnalloc(pool, len));
    if (p == nullptr) {
        return {0, nullptr};
    }
    u_char *q = ngx_cpymem(p, zone->prefix.data, zone->prefix.len);
    q = ngx_cpymem(q, kTag.data(), kTag.size());
    q = ngx_cpymem(q, zone->name.data, zone->name.len);
    *q++ = ':';
    ngx_memcpy(q, suffix.data(), suffix.size());
    return {len, p};
}

bool keys(ngx_pool_t *pool, const ngx_http_rl_zone_t *zone,
          ngx_str_t out[4]) {
    static const std::string_view kSuffix[4] = {"live", "trial", "audit",
                                                "seen"};
    for (int k = 0; k < 4; k++) {
        out[k] = key(pool, zone, kSuffix[k]);
        if (out[k].data == nullptr) {
            return false;
        }
    }
    return true;
}

Eval::Eval(const ngx_str_t keys[4], std::string_view op) {
    arg("EVAL").arg(fleetScriptText()).arg("4");
    for (int k = 0; k < 4; k++) {
        arg(keys[k]);
    }
    arg(op);
}

Eval &Eval::arg(std::string_view s) {
    if (argc_ < kMax) {
        argv_[argc_] = s.data();
        len_[argc_++] = s.size();
    }
    return *this;
}

Eval &Eval::num(int64_t v) {
    if (nnums_ == 4) {
        return *this;
    }
    u_char *p = nums_[nnums_++];
    return arg({reinterpret_cast<char *>(p),
                static_cast<size_t>(ngx_http_rl_decimal(p, v) - p)});
}

Link *linkOf(ngx_http_rl_main_conf_t *rmcf, const ngx_http_rl_zone_t *zone) {
    if (ngx_http_rl_embedded(zone) || rmcf->stores == nullptr ||
        rmcf->stores[zone->index] == nullptr) {
        return nullptr;
    }
    ngx_uint_t slot = 0;
    if (zone->nseeds > 0) {
        /* the slot of the fleet's keys: PREFIX{fleet}:... */
        u_char text[NGX_HTTP_RL_MAX_PREFIX + 8];
        u_char *p = ngx_cpymem(text, zone->prefix.data, zone->prefix.len);
        p = ngx_cpymem(p, "{fleet}", 7);
        slot = keySlot({reinterpret_cast<char *>(text),
                        static_cast<size_t>(p - text)});
    }
    auto *link = reinterpret_cast<Link *>(
        ngx_http_rl_store_route(rmcf->stores[zone->index], slot));
    return link != nullptr && link->usable() ? link : nullptr;
}

std::string_view instanceName(ngx_http_rl_main_conf_t *rmcf) {
    std::string_view n = viewOf(rmcf->fleet_name);
    return n.size() > NGX_HTTP_RL_MAX_NAME ? n.substr(0, NGX_HTTP_RL_MAX_NAME)
                                           : n;
}

std::string_view instanceId(ngx_http_rl_main_conf_t *rmcf) {
    Shared *sh = sharedOf(rmcf);
    return sh != nullptr ? std::string_view(sh->id, kIdLen)
                         : std::string_view("0000000000000000");
}

int64_t startedMs(ngx_http_rl_main_conf_t *rmcf) {
    Shared *sh = sharedOf(rmcf);
    return sh != nullptr ? sh->startedMs : 0;
}

bool parseSetting(std::string_view text, int64_t *limit, int64_t *untilMs,
                  int64_t *sinceMs, std::string_view *by,
                  std::string_view *reason) {
    std::string_view f[5];
    size_t n = 0;
    while (n < 4) {
        size_t tab = text.find('\t');
        if (tab == std::string_view::npos) {
            return false;
        }
        f[n++] = text.substr(0, tab);
        text.remove_prefix(tab + 1);
    }
    f[4] = text;
    int64_t *nums[3] = {limit, untilMs, sinceMs};
    for (size_t k = 0; k < 3; k++) {
        if (f[k].empty() || f[k].size() > 15) {
            return false;
        }
        int64_t v = 0;
        for (char c : f[k]) {
            if (c < '0' || c > '9') {
                return false;
            }
            v = v * 10 + (c - '0');
        }
        *nums[k] = v;
    }
    *by = f[3];
    *reason = f[4];
    return true;
}

}  // namespace rl::fleet

using rl::fleet::Shared;
using rl::fleet::Worker;
using rl::fleet::ZoneSync;

extern "C" {

ngx_int_t ngx_http_rl_fleet_init_zone(ngx_shm_zone_t *shm_zone,
                                      void *data) noexcept {
    auto *pool = reinterpret_cast<ngx_slab_pool_t *>(shm_zone->shm.addr);
    if (shm_zone->shm.exists || data != nullptr) {
        return NGX_OK;  /* (a reload: the same instance) */
    }
    auto *sh = static_cast<Shared *>(ngx_slab_calloc(pool, sizeof(Shared)));
    if (sh == nullptr) {
        return NGX_ERROR;
    }
    rl::fleet::drawId(sh->id);
    sh->startedMs = rl::realtimeUs() / 1000;
    pool->data = sh;
    return NGX_OK;
}

ngx_int_t ngx_http_rl_fleet_conf(ngx_conf_t *cf,
                                 ngx_http_rl_main_conf_t *rmcf) noexcept {
    static ngx_str_t name = ngx_string("rl_fleet_1");
    rmcf->fleet_shm = ngx_shared_memory_add(cf, &name, 8 * ngx_pagesize,
                                            &ngx_http_rl_module);
    if (rmcf->fleet_shm == nullptr) {
        return NGX_ERROR;
    }
    rmcf->fleet_shm->init = ngx_http_rl_fleet_init_zone;
    rmcf->fleet_shm->data = rmcf;
    return NGX_OK;
}

ngx_int_t ngx_http_rl_fleet_init(ngx_cycle_t *cycle,
                                 ngx_http_rl_main_conf_t *rmcf) noexcept {
    if (!rmcf->fleet || ngx_worker != 0) {
        return NGX_OK;  /* one worker of the instance does it */
    }
    auto **zones = static_cast<ngx_http_rl_zone_t **>(rmcf->zones.elts);
    ngx_uint_t n = 0;
    for (ngx_uint_t i = 0; i < rmcf->zones.nelts; i++) {
        n += ngx_http_rl_embedded(zones[i]) ? 0 : 1;
    }
    if (n == 0) {
        return NGX_OK;
    }
    ngx_pool_t *pool = ngx_create_pool(4096, cycle->log);
    if (pool == nullptr) {
        return NGX_ERROR;
    }
    auto *w = static_cast<Worker *>(ngx_pcalloc(pool, sizeof(Worker)));
    auto *zs = static_cast<ZoneSync *>(
        ngx_pcalloc(pool, n * sizeof(ZoneSync)));
    auto *refused = static_cast<int64_t *>(
        ngx_pcalloc(pool, (rmcf->names.nelts * 2 + 1) * sizeof(int64_t)));
    if (w == nullptr || zs == nullptr || refused == nullptr) {
        ngx_destroy_pool(pool);
        return NGX_ERROR;
    }
    w->rmcf = rmcf;
    w->pool = pool;
    w->refused = refused;
    w->log = cycle->log;
    w->startedMs = rl::monotonicUs() / 1000;
    w->zones = zs;
    for (ngx_uint_t i = 0; i < rmcf->zones.nelts; i++) {
        if (ngx_http_rl_embedded(zones[i])) {
            continue;
        }
        ZoneSync *z = &zs[w->nzones++];
        z->w = w;
        z->zone = zones[i];
        if (!rl::fleet::keys(pool, zones[i], z->keys)) {
            ngx_destroy_pool(pool);
            return NGX_ERROR;
        }
    }
    rl::initTimer(&w->tick, rl::fleet::onTick, w, cycle->log);
    /* the first turn soon after the links connect */
    ngx_add_timer(&w->tick, 100);
    rmcf->fleet_worker = w;
    return NGX_OK;
}

void ngx_http_rl_fleet_exit(ngx_http_rl_main_conf_t *rmcf) noexcept {
    Worker *w = rl::fleet::workerOf(rmcf);
    if (w != nullptr) {
        w->exiting = true;
        rl::stopTimer(&w->tick);
    }
}

void ngx_http_rl_fleet_free(ngx_http_rl_main_conf_t *rmcf) noexcept {
    Worker *w = rl::fleet::workerOf(rmcf);
    if (w != nullptr) {
        rmcf->fleet_worker = nullptr;
        ngx_destroy_pool(w->pool);
    }
}

}  // extern "C"
