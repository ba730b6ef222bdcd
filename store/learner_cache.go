package store

import "sync"

// learnerCache keeps one value per recent learner, loaded from the
// database: the learner's progress, quiz records and measured results,
// which every lesson page view reads. This process is the only writer of
// those tables, so a cache invalidated by each write stays exact while
// keeping SQLite off the hot path of the lesson page.
type learnerCache[V any] struct {
	mu  sync.Mutex
	gen uint64 // bumped on every invalidation; a load started before it is not stored
	max int
	m   map[string]V
}

// learnerCacheMax bounds memory: past it a cache starts over (it is only a cache).
const learnerCacheMax = 20000

func newLearnerCache[V any](max int) *learnerCache[V] {
	return &learnerCache[V]{max: max, m: map[string]V{}}
}

func (c *learnerCache[V]) get(learner string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[learner]
	return v, ok
}

// load returns the cached value, or loads it with fn and caches it unless
// a write invalidated the cache meanwhile (the value may be stale then).
func (c *learnerCache[V]) load(learner string, fn func() (V, error)) (V, error) {
	if v, ok := c.get(learner); ok {
		return v, nil
	}
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	v, err := fn()
	if err != nil {
		return v, err
	}
	c.put(learner, v, gen)
	return v, nil
}

// generation is the invalidation count, for a put of a value read now.
func (c *learnerCache[V]) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *learnerCache[V]) put(learner string, v V, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.m) >= c.max {
		c.m = map[string]V{}
	}
	c.m[learner] = v
}

// invalidate forgets the learner's value. Writers defer it, so it runs
// after their transaction committed.
func (c *learnerCache[V]) invalidate(learner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.m, learner)
}

// invalidateAll forgets every learner's value, for writes that do not
// know which learner they touch.
func (c *learnerCache[V]) invalidateAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.m)
}
