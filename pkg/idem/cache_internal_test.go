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
