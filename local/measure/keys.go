package measure

import (
	"math/rand/v2"
	"strconv"
)

// Keys is a load run's Idempotency-Keys, n requests drawn from seed: each,
// with probability dup, repeats the key of one of the last 64 logical
// operations (often still in flight under load), else starts a new one.
// Keys read prefix+"op-"+i, i the operation's number from 0; ops is how
// many operations the keys hold.
func Keys(n int, dup float64, seed uint64, prefix string) (keys []string, ops int) {
	rng := rand.New(rand.NewPCG(seed, 42))
	for range n {
		if ops > 0 && rng.Float64() < dup {
			keys = append(keys, prefix+"op-"+strconv.Itoa(ops-1-rng.IntN(min(ops, 64))))
			continue
		}
		keys = append(keys, prefix+"op-"+strconv.Itoa(ops))
		ops++
	}
	return keys, ops
}
