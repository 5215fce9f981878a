//go:build !race

package gate_test

// raceEnabled scales the scenario's matrix down under the race detector.
const raceEnabled = false
