package idem

import (
	"testing"
	"time"
)

// A call that read a record before Delete removed it must not put the
// deleted response back into the cache after; a new record under the key
// (another lease token) is cached as ever.
func TestCacheKeepsADeletedRecordOut(t *testing.T) {
	c := newResponseCache(CacheOptions{MaxEntries: 10, MaxBytes: 1 << 16})
	exp := time.Now().Add(time.Hour).Unix()
	c.put("pk", "t1", "fp", Response{StatusCode: 201}, exp)
	c.forget("pk", "t1")
	if _, ok := c.get("pk", time.Now()); ok {
		t.Fatal("the deleted entry is still answered")
	}
	c.put("pk", "t1", "fp", Response{StatusCode: 201}, exp) // read before the delete, put after
	if _, ok := c.get("pk", time.Now()); ok {
		t.Fatal("the deleted record was put back")
	}
	c.put("pk", "t2", "fp2", Response{StatusCode: 200}, exp)
	if v, ok := c.get("pk", time.Now()); !ok || v.fingerprint != "fp2" {
		t.Fatalf("the new record under the key: %+v, %v; want it cached", v, ok)
	}
}

// A reader of a record slow across two deletes (the record, then another
// under the key) does not put the first back: every deleted record is kept
// out, not only the last.
func TestCacheKeepsEveryDeletedRecordOut(t *testing.T) {
	c := newResponseCache(CacheOptions{MaxEntries: 10, MaxBytes: 1 << 16})
	exp := time.Now().Add(time.Hour).Unix()
	c.forget("pk", "t1")
	c.put("pk", "t2", "fp2", Response{StatusCode: 200}, exp)
	c.forget("pk", "t2")
	c.put("pk", "t1", "fp1", Response{StatusCode: 201}, exp) // read before the first delete
	if v, ok := c.get("pk", time.Now()); ok {
		t.Fatalf("the first deleted record answered from the cache: %+v", v)
	}
}

// CacheOptions' doc: the cache is off unless both bounds are positive. A
// zero bound is no cache at all (a nil one, which every call treats as a
// miss), never a cache that cannot hold an entry.
func TestCacheIsOffUnlessBothBoundsArePositive(t *testing.T) {
	for _, o := range []CacheOptions{{}, {MaxEntries: 10}, {MaxBytes: 1 << 16}, {MaxEntries: -1, MaxBytes: 1 << 16}, {MaxEntries: 10, MaxBytes: -1}} {
		if c := newResponseCache(o); c != nil {
			t.Errorf("%+v: a cache, want none", o)
		}
	}
	if newResponseCache(CacheOptions{MaxEntries: 1, MaxBytes: 1}) == nil {
		t.Error("{1 1}: no cache, want one")
	}
}

// An entry is the record's response for as long as the record is: to the
// second the record expires in (record.expired: expires_at before now, in
// epoch seconds), and no longer.
func TestCacheAnswersUntilTheRecordExpires(t *testing.T) {
	c := newResponseCache(CacheOptions{MaxEntries: 10, MaxBytes: 1 << 16})
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	c.put("pk", "t1", "fp", Response{StatusCode: 201}, exp.Unix())
	rec := &record{ExpiresAt: exp.Unix()}
	for _, now := range []time.Time{exp, exp.Add(999 * time.Millisecond), exp.Add(time.Second)} {
		_, cached := c.get("pk", now)
		if live := !rec.expired(now); cached != live {
			t.Errorf("at expires_at%+v: cached %v, the record live %v", now.Sub(exp), cached, live)
		}
	}
}

// The bytes bound counts what an entry holds (its key, fingerprint, body
// and headers), an entry of exactly the bound is kept, one byte more is
// not, and entries are evicted, least recently used first, until the rest
// fit.
func TestCacheCountsEveryByteOfAnEntryAndEvictsTheLeastRecentlyUsed(t *testing.T) {
	resp := Response{StatusCode: 201, Body: []byte("0123456789"), Header: map[string]string{"Location": "/o/1"}}
	size := len("pk1") + len("fp") + len(resp.Body) + len("Location") + len("/o/1")
	exp := time.Now().Add(time.Hour).Unix()
	c := newResponseCache(CacheOptions{MaxEntries: 10, MaxBytes: size})
	c.put("pk1", "t", "fp", resp, exp)
	if _, ok := c.get("pk1", time.Now()); !ok || c.bytes != size {
		t.Fatalf("an entry of exactly the bound: kept %v, %d bytes counted; want kept, %d", ok, c.bytes, size)
	}
	c = newResponseCache(CacheOptions{MaxEntries: 10, MaxBytes: size - 1})
	c.put("pk1", "t", "fp", resp, exp)
	if _, ok := c.get("pk1", time.Now()); ok || c.bytes != 0 {
		t.Fatalf("an entry a byte over the bound: kept %v, %d bytes; want neither", ok, c.bytes)
	}
	c = newResponseCache(CacheOptions{MaxEntries: 10, MaxBytes: 2 * size})
	c.put("pk1", "t", "fp", resp, exp)
	c.put("pk2", "t", "fp", resp, exp)
	c.get("pk1", time.Now()) // pk2 is now the least recently used
	c.put("pk3", "t", "fp", resp, exp)
	_, one := c.get("pk1", time.Now())
	_, two := c.get("pk2", time.Now())
	_, three := c.get("pk3", time.Now())
	if !one || two || !three || c.bytes != 2*size {
		t.Fatalf("after a third entry: pk1 %v, pk2 %v, pk3 %v, %d bytes; want pk2 evicted, %d bytes", one, two, three, c.bytes, 2*size)
	}
}
