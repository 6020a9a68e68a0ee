package idem

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// CacheOptions bound Options.Cache, the execution environment's cache of
// completed responses. It is off unless both bounds are positive.
type CacheOptions struct {
	MaxEntries int // the most responses kept
	MaxBytes   int // the most bytes kept: each response's body and headers, with its key and fingerprint
}

// cached is one completed response, kept no longer than its record.
type cached struct {
	fingerprint string
	resp        Response
	expiresAt   int64 // epoch seconds, as the record's expires_at
	size        int
}

// responseCache is an LRU of completed responses, bounded in entries and
// bytes. Only completed records enter it, so what it answers is what the
// table would: the same response or the same 422.
//
// deleted remembers the records this Store's Delete removed (key and lease
// token, the most recent MaxEntries of them), so that a call that read one
// before the delete cannot put it back in after.
type responseCache struct {
	mu      sync.Mutex
	lru     *simplelru.LRU[string, cached]
	deleted *simplelru.LRU[string, struct{}]
	bytes   int
	max     int
}

func newResponseCache(o CacheOptions) *responseCache {
	if o.MaxEntries <= 0 || o.MaxBytes <= 0 {
		return nil
	}
	c := &responseCache{max: o.MaxBytes}
	c.lru, _ = simplelru.NewLRU(o.MaxEntries, func(_ string, v cached) { c.bytes -= v.size }) // size > 0: no error
	c.deleted, _ = simplelru.NewLRU[string, struct{}](o.MaxEntries, nil)
	return c
}

// forget drops pk's entry and keeps token, the deleted record's, out of
// the cache from now on.
func (c *responseCache) forget(pk, token string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(pk)
	c.deleted.Add(deletedKey(pk, token), struct{}{})
}

// deletedKey names one deleted record: its key and its lease token.
func deletedKey(pk, token string) string { return pk + "\x00" + token }

// get is the live entry of pk, if any. A nil cache has none.
func (c *responseCache) get(pk string, now time.Time) (cached, bool) {
	if c == nil {
		return cached{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.lru.Get(pk)
	if ok && v.expiresAt < now.Unix() {
		c.lru.Remove(pk)
		return cached{}, false
	}
	return v, ok // an entry is never changed: the caller clones what it hands on
}

// put keeps a completed response, of the record under token, as the record
// keeps it (without its cookies), evicting the least recently used entries
// until the bytes fit; a response larger than the whole cache is not kept,
// nor one of a record Delete removed.
func (c *responseCache) put(pk, token, fp string, resp Response, expiresAt int64) {
	if c == nil {
		return
	}
	resp = withoutCookies(resp)
	v := cached{fingerprint: fp, resp: resp, expiresAt: expiresAt, size: len(pk) + len(fp) + len(resp.Body)}
	for k, h := range resp.Header {
		v.size += len(k) + len(h)
	}
	if v.size > c.max {
		return
	}
	v.resp = cloneResponse(resp) // not the one the caller goes on to hold
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deleted.Contains(deletedKey(pk, token)) {
		return
	}
	c.lru.Remove(pk)
	c.lru.Add(pk, v)
	c.bytes += v.size
	for c.bytes > c.max {
		c.lru.RemoveOldest()
	}
}

// cloneResponse copies what a caller may write to: the cache shares no
// header map, cookie or body with any caller, so a change to an answer
// never reaches a later replay (nor races with another caller's).
func cloneResponse(r Response) Response {
	r.Header = maps.Clone(r.Header)
	r.Cookies = slices.Clone(r.Cookies)
	r.Body = slices.Clone(r.Body)
	return r
}
