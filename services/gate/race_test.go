//go:build race

package gate

// raceEnabled scales the payments scenario down under the race detector,
// which finds races in code paths, not in volume.
const raceEnabled = true
