/*
 * shm/lru.cpp: the keyed LRU table that the embedded store, the deny
 * cache and the lease table keep in shared memory (see shm/lru.hpp).
 */

#include "lru.hpp"

namespace rl {
namespace {

LruNode *lookup(ngx_rbtree_t *rbtree, const ngx_str_t &key, uint32_t hash) {
    return reinterpret_cast<LruNode *>(ngx_str_rbtree_lookup(
        rbtree, const_cast<ngx_str_t *>(&key), hash));
}

/* in the tree, its key copied to text; the most recent of queue */
void link(ngx_rbtree_t *rbtree, ngx_queue_t *queue, LruNode *n,
          const ngx_str_t &key, u_char *text, uint32_t hash) {
    ngx_memcpy(text, key.data, key.len);
    n->sn.str.len = key.len;
    n->sn.str.data = text;
    n->sn.node.key = hash;
    ngx_rbtree_insert(rbtree, &n->sn.node);
    ngx_queue_insert_head(queue, &n->queue);
}

/* the most recent of queue (a hot key's stays: no write to share) */
void moveToHead(ngx_queue_t *queue, LruNode *n) {
    if (ngx_queue_head(queue) != &n->queue) {
        ngx_queue_remove(&n->queue);
        ngx_queue_insert_head(queue, &n->queue);
    }
}

LruNode *last(ngx_queue_t *queue) {
    if (ngx_queue_empty(queue)) {
        return nullptr;
    }
    return ngx_queue_data(ngx_queue_last(queue), LruNode, queue);
}

LruNode *before(ngx_queue_t *queue, LruNode *n) {
    ngx_queue_t *q = ngx_queue_prev(&n->queue);
    if (q == ngx_queue_sentinel(queue)) {
        return nullptr;
    }
    return ngx_queue_data(q, LruNode, queue);
}

}  // namespace

void LruIndex::init() {
    ngx_rbtree_init(&rbtree_, &sentinel_, ngx_str_rbtree_insert_value);
    ngx_queue_init(&queue_);
}

LruNode *LruIndex::find(const ngx_str_t &key, uint32_t hash, bool touch) {
    LruNode *n = lookup(&rbtree_, key, hash);
    if (n != nullptr && touch) {
        this->touch(n);
    }
    return n;
}

void LruIndex::add(LruNode *n, const ngx_str_t &key, u_char *text,
                   uint32_t hash) {
    link(&rbtree_, &queue_, n, key, text, hash);
}

void LruIndex::touch(LruNode *n) {
    moveToHead(&queue_, n);
}

void LruIndex::remove(LruNode *n) {
    ngx_queue_remove(&n->queue);
    ngx_rbtree_delete(&rbtree_, &n->sn.node);
}

LruNode *LruIndex::newer(LruNode *n) {
    return before(&queue_, n);
}

LruNode *LruIndex::oldest() {
    return last(&queue_);
}

void LruQueues::init() {
    ngx_rbtree_init(&rbtree_, &sentinel_, ngx_str_rbtree_insert_value);
    for (ngx_uint_t q = 0; q < kQueues; q++) {
        ngx_queue_init(&queues_[q]);
        sweep_[q] = nullptr;
    }
}

LruNode *LruQueues::find(const ngx_str_t &key, uint32_t hash) {
    return lookup(&rbtree_, key, hash);
}

void LruQueues::add(LruNode *n, const ngx_str_t &key, u_char *text,
                    uint32_t hash, ngx_uint_t q) {
    link(&rbtree_, &queues_[q], n, key, text, hash);
}

void LruQueues::touch(LruNode *n, ngx_uint_t q) {
    if (sweep_[q] == n) {
        sweep_[q] = newer(n, q);
    }
    moveToHead(&queues_[q], n);
}

void LruQueues::remove(LruNode *n, ngx_uint_t q) {
    if (sweep_[q] == n) {
        sweep_[q] = newer(n, q);
    }
    ngx_queue_remove(&n->queue);
    ngx_rbtree_delete(&rbtree_, &n->sn.node);
}

void LruQueues::move(LruNode *n, ngx_uint_t from, ngx_uint_t to) {
    if (sweep_[from] == n) {
        sweep_[from] = newer(n, from);
    }
    ngx_queue_remove(&n->queue);
    ngx_queue_insert_head(&queues_[to], &n->queue);
}

LruNode *LruQueues::oldest(ngx_uint_t q) {
    return last(&queues_[q]);
}

LruNode *LruQueues::newer(LruNode *n, ngx_uint_t q) {
    return before(&queues_[q], n);
}

LruNode *LruQueues::sweepNext(ngx_uint_t q) {
    LruNode *n = sweep_[q] != nullptr ? sweep_[q] : oldest(q);
    if (n != nullptr) {
        sweep_[q] = newer(n, q);
    }
    return n;
}

}  // namespace rl
