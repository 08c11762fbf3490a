/* A keyed table in shared memory, in least-recently-used order: what the
 * embedded store (shm/store.cpp), the deny cache (deny_cache.cpp) and the
 * lease table (lease.cpp) each keep. An entry starts with an
 * LruNode; its key text lives in the same slab block, after the fields
 * of its owner (keyAfter()). The index is plain data in shared memory,
 * set up once by init(); the caller holds the lock that guards it.
 */
#pragma once

#include "ngx.hpp"

namespace rl {

struct LruNode {
    ngx_str_node_t  sn;
    ngx_queue_t     queue;
};

/* The text of an entry's key: after its owner's struct of `size` bytes
 * (and any array the owner keeps there, `extra` bytes). */
inline u_char *keyAfter(void *entry, size_t size, size_t extra = 0) {
    return static_cast<u_char *>(entry) + size + extra;
}

class LruIndex {
public:
    void init();

    bool empty() const { return ngx_queue_empty(&queue_); }

    /* The entry of this key, made the most recently used unless not
     * `touch`; NULL if none. */
    LruNode *find(const ngx_str_t &key, uint32_t hash, bool touch = true);

    /* Links a new entry, the most recently used, its key copied to
     * `text` (room the caller made in the entry's block). */
    void add(LruNode *n, const ngx_str_t &key, u_char *text, uint32_t hash);

    void touch(LruNode *n);
    void remove(LruNode *n);

    /* The least recently used entry, NULL if none. */
    LruNode *oldest();
    /* The entry used next after n, NULL if n is the most recent. */
    LruNode *newer(LruNode *n);

    /* From the cold end, at most `max` entries for which go(entry)
     * (removed here, then freed by it) says true; stops at the first it
     * says false. Returns how many went. */
    template <typename F>
    ngx_uint_t dropOldest(ngx_uint_t max, F go) {
        ngx_uint_t i = 0;
        for (; i < max; i++) {
            LruNode *n = oldest();
            if (n == nullptr || !go(n)) {
                break;
            }
        }
        return i;
    }

private:
    ngx_rbtree_t        rbtree_;
    ngx_rbtree_node_t   sentinel_;
    ngx_queue_t         queue_;
};

/* The same, with its entries in one of kQueues queues, by the size of
 * their slab block (the embedded store: a full zone makes room for a
 * new entry from the entries whose memory it can take, which are at the
 * cold end of its own queue, not among thousands of smaller ones; its
 * last queue holds the entries it never evicts), and a sweep's place in
 * each queue. */
class LruQueues {
public:
    static constexpr ngx_uint_t kQueues = 11;

    void init();

    bool empty(ngx_uint_t q) const { return ngx_queue_empty(&queues_[q]); }
    LruNode *find(const ngx_str_t &key, uint32_t hash);
    void add(LruNode *n, const ngx_str_t &key, u_char *text, uint32_t hash,
             ngx_uint_t q);
    /* n in queue q: the most recently used of it */
    void touch(LruNode *n, ngx_uint_t q);
    void remove(LruNode *n, ngx_uint_t q);
    /* n from queue `from` to queue `to`: the most recently used of it */
    void move(LruNode *n, ngx_uint_t from, ngx_uint_t to);
    LruNode *oldest(ngx_uint_t q);
    /* the entry of q used next after n, NULL if n is the most recent */
    LruNode *newer(LruNode *n, ngx_uint_t q);
    /* The next entry of q a sweep looks at: going round the queue from
     * its least recently used (the place kept across calls); NULL if q
     * is empty. */
    LruNode *sweepNext(ngx_uint_t q);

private:
    ngx_rbtree_t        rbtree_;
    ngx_rbtree_node_t   sentinel_;
    ngx_queue_t         queues_[kQueues];
    LruNode            *sweep_[kQueues];
};

/* `size` bytes of the pool (its mutex held when `locked`), making room
 * with evict() (how many entries it freed, 0 when it cannot) while the
 * pool is full, at most `tries` times. */
template <typename F>
void *allocate(ngx_slab_pool_t *pool, size_t size, bool locked,
               ngx_uint_t tries, F evict) {
    auto alloc = [&]() {
        return locked ? ngx_slab_alloc_locked(pool, size)
                      : ngx_slab_alloc(pool, size);
    };
    void *p = alloc();
    for (ngx_uint_t i = 0; p == nullptr && i < tries; i++) {
        if (evict() == 0) {
            break;
        }
        p = alloc();
    }
    return p;
}

}  // namespace rl
