//go:build !linux

package prefault

func populate[T any](s []T) error { return nil }
