//go:build openblas && !cgo

package linalg

// The openblas build tag needs cgo to link libopenblas; without it the build fails here rather than silently
// falling back to the Go kernels.
var _ = theOpenblasBuildTagNeedsCGO_ENABLED1
