package s3

// RecentHits is how many reads the store answered from the files it kept.
func (s *Store) RecentHits() int64 { return s.recentHits.Load() }
