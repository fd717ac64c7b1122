package activities

import "testing"

func TestStateCacheServesOnlyTheExactResumePoint(t *testing.T) {
	c := stateCache{max: 2}
	a, b, d := &trainState{}, &trainState{}, &trainState{}
	c.put("job-a", 3, 10, a)
	if got := c.take("job-a", 3, 11); got != nil {
		t.Fatal("a state after 10 steps served a resume after 11")
	}
	if got := c.take("job-a", 3, 10); got != nil {
		t.Fatal("a mismatched take must drop the entry: the job moved on elsewhere")
	}
	c.put("job-a", 3, 10, a)
	if got := c.take("job-a", 4, 10); got != nil {
		t.Fatal("served across base steps")
	}
	c.put("job-a", 3, 10, a)
	c.put("job-b", 0, 5, b)
	if got := c.take("job-a", 3, 10); got != a {
		t.Fatal("the exact resume point was not served")
	}
	if got := c.take("job-a", 3, 10); got != nil {
		t.Fatal("a state was served twice: the trainer updates it in place")
	}
	c.put("job-a", 3, 12, a)
	c.put("job-d", 0, 1, d) // evicts the oldest, job-b
	if c.take("job-b", 0, 5) != nil || c.take("job-d", 0, 1) != d || c.take("job-a", 3, 12) != a {
		t.Fatal("eviction kept the wrong entries")
	}
}
