//go:build race

package engine

// raceEnabled: the race detector is on; its sync.Pool drops a share of what is put back, so allocation
// counts measure the detector as much as the code.
const raceEnabled = true
