//go:build !amd64

package roofline

// Elsewhere there is no instruction loop: the peaks fall back to the engine's own products (Measure).
func fmaLoop() (func(int), float64, string) { return nil, 0, "" }

func dotLoop() (func(int), float64, string) { return nil, 0, "" }
