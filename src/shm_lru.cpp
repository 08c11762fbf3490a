/*
 * shm_lru.cpp: the keyed LRU table that the embedded store, the deny
 * cache and the lease table keep in shared memory (see shm_lru.hpp).
 */

#include "shm_lru.hpp"

namespace rl {

void LruIndex::init() {
    ngx_rbtree_init(&rbtree_, &sentinel_, ngx_str_rbtree_insert_value);
    ngx_queue_init(&queue_);
}

LruNode *LruIndex::find(const ngx_str_t &key, uint32_t hash, bool touch) {
    auto *n = reinterpret_cast<LruNode *>(ngx_str_rbtree_lookup(
        &rbtree_, const_cast<ngx_str_t *>(&key), hash));
    if (n != nullptr && touch) {
        this->touch(n);
    }
    return n;
}

void LruIndex::add(LruNode *n, const ngx_str_t &key, u_char *text,
                   uint32_t hash) {
    ngx_memcpy(text, key.data, key.len);
    n->sn.str.len = key.len;
    n->sn.str.data = text;
    n->sn.node.key = hash;
    ngx_rbtree_insert(&rbtree_, &n->sn.node);
    ngx_queue_insert_head(&queue_, &n->queue);
}

void LruIndex::touch(LruNode *n) {
    if (ngx_queue_head(&queue_) == &n->queue) {
        return;     /* a hot key's: no write to share between workers */
    }
    ngx_queue_remove(&n->queue);
    ngx_queue_insert_head(&queue_, &n->queue);
}

void LruIndex::remove(LruNode *n) {
    ngx_queue_remove(&n->queue);
    ngx_rbtree_delete(&rbtree_, &n->sn.node);
}

LruNode *LruIndex::oldest() {
    if (ngx_queue_empty(&queue_)) {
        return nullptr;
    }
    return ngx_queue_data(ngx_queue_last(&queue_), LruNode, queue);
}

}  // namespace rl
