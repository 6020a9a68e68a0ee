package dynamolocal

// LoopbackUp is what the helper does first in its namespace, for the tests'
// probe of whether this machine gives one (namespaces).
func LoopbackUp() error { return loopbackUp() }
