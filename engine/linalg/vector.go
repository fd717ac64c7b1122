package linalg

import "fmt"

// Dot returns the inner product of x and y, which must have the same length.
func Dot(x, y []float32) float32 {
	if len(x) != len(y) {
		panic(fmt.Sprintf("linalg.Dot: lengths %d and %d differ", len(x), len(y)))
	}
	return dot(x, y)
}

// Axpy computes y += alpha*x; x and y must have the same length.
func Axpy(alpha float32, x, y []float32) {
	if len(x) != len(y) {
		panic(fmt.Sprintf("linalg.Axpy: lengths %d and %d differ", len(x), len(y)))
	}
	axpy(alpha, x, y)
}

// Scale computes x *= alpha.
func Scale(alpha float32, x []float32) {
	scale(alpha, x)
}
